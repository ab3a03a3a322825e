// Values of the Jinja2 subset that chat templates use, with Python's semantics where templates
// can see them: truthiness, equality, str() and repr() of lists and dicts, json.dumps output.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace pagedllm::jinja {

// A template that cannot be parsed or rendered (including raise_exception); the message says
// where and why.
class TemplateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Value;
using Array = std::vector<Value>;
struct Object;
struct Arguments {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> named;
  const Value* get(size_t index, const char* name) const;  // positional index or by name
};
using Function = std::function<Value(const Arguments&)>;

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kArray, kObject, kFunction };

  Value() = default;  // undefined
  static Value none();
  Value(bool b);
  Value(int v) : Value(static_cast<int64_t>(v)) {}
  Value(int64_t v);
  Value(double v);
  Value(std::string s);
  Value(const char* s) : Value(std::string(s)) {}
  Value(Array a);
  Value(std::shared_ptr<Object> o);
  Value(Function f);
  static Value from_json(const nlohmann::ordered_json& j);
  // A string marked safe (Jinja2's Markup, from |safe or |escape): concatenating a plain
  // string to it HTML-escapes the plain one, as Python's Markup does.
  static Value markup(std::string s);
  // The lazy sequence Jinja2's map/select/reject filters return: it iterates like a list but
  // has no length, no index and is not JSON.
  static Value generator(Array a);
  bool is_markup() const { return markup_; }
  bool is_generator() const { return generator_; }

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_object() const { return kind_ == Kind::kObject; }
  bool is_callable() const;

  bool as_bool() const { return b_; }
  int64_t as_int() const;
  double as_double() const;
  const std::string& as_string() const { return *s_; }
  Array& array() const { return *a_; }
  Object& object() const { return *o_; }
  const Function& function() const { return *f_; }

  bool truthy() const;
  // The items a for loop walks: list elements, dict keys, string characters.
  Array iterate() const;
  // Python's str(): what {{ value }} prints.
  std::string str() const;
  // Python's repr(), used inside str() of lists and dicts.
  std::string repr() const;
  // json.dumps(value, ensure_ascii=False, indent=indent) (indent < 0: none).
  std::string to_json(int indent = -1) const;
  bool operator==(const Value& o) const;
  // Python ordering for numbers and strings; throws TemplateError for other kinds.
  bool less(const Value& o) const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool markup_ = false;
  bool generator_ = false;
  bool b_ = false;
  int64_t i_ = 0;
  double d_ = 0;
  std::shared_ptr<std::string> s_;
  std::shared_ptr<Array> a_;
  std::shared_ptr<Object> o_;
  std::shared_ptr<Function> f_;
};

// A dict (insertion-ordered, as Python's), a namespace(), or a loop object. `call` makes it
// callable too (a recursive loop).
struct Object {
  std::vector<std::pair<std::string, Value>> items;
  // Keys that were not strings ({4096: 512}), by their string form: iteration gives them back.
  std::vector<std::pair<std::string, Value>> typed_keys;
  bool is_namespace = false;
  std::shared_ptr<Function> call;

  const Value* find(const std::string& key) const;
  Value key_value(const std::string& key) const;
  void set(const std::string& key, Value v);
};

std::string python_float_repr(double d);

}  // namespace pagedllm::jinja
