#include "chat/jinja_value.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace pagedllm::jinja {

const Value* Arguments::get(size_t index, const char* name) const {
  for (const auto& [k, v] : named) {
    if (k == name) return &v;
  }
  return index < positional.size() ? &positional[index] : nullptr;
}

const Value* Object::find(const std::string& key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

Value Object::key_value(const std::string& key) const {
  for (const auto& [k, v] : typed_keys) {
    if (k == key) return v;
  }
  return Value(key);
}

void Object::set(const std::string& key, Value v) {
  for (auto& [k, old] : items) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  items.emplace_back(key, std::move(v));
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}
Value::Value(bool b) : kind_(Kind::kBool), b_(b) {}
Value::Value(int64_t v) : kind_(Kind::kInt), i_(v) {}
Value::Value(double v) : kind_(Kind::kFloat), d_(v) {}
Value::Value(std::string s)
    : kind_(Kind::kString), s_(std::make_shared<std::string>(std::move(s))) {}
Value::Value(Array a) : kind_(Kind::kArray), a_(std::make_shared<Array>(std::move(a))) {}
Value::Value(std::shared_ptr<Object> o) : kind_(Kind::kObject), o_(std::move(o)) {}
Value::Value(Function f) : kind_(Kind::kFunction), f_(std::make_shared<Function>(std::move(f))) {}

Value Value::markup(std::string s) {
  Value v(std::move(s));
  v.markup_ = true;
  return v;
}

Value Value::generator(Array a) {
  Value v(std::move(a));
  v.generator_ = true;
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned:
      return Value(static_cast<int64_t>(j.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float:
      return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      Array a;
      for (const auto& e : j) a.push_back(from_json(e));
      return Value(std::move(a));
    }
    case nlohmann::ordered_json::value_t::object: {
      auto o = std::make_shared<Object>();
      for (const auto& [k, v] : j.items()) o->items.emplace_back(k, from_json(v));
      return Value(std::move(o));
    }
    default:
      return Value();
  }
}

bool Value::is_callable() const {
  return kind_ == Kind::kFunction || (kind_ == Kind::kObject && o_->call);
}

int64_t Value::as_int() const {
  if (kind_ == Kind::kFloat) return static_cast<int64_t>(d_);
  if (kind_ == Kind::kBool) return b_ ? 1 : 0;
  return i_;
}

double Value::as_double() const {
  if (kind_ == Kind::kInt) return static_cast<double>(i_);
  if (kind_ == Kind::kBool) return b_ ? 1.0 : 0.0;
  return d_;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return b_;
    case Kind::kInt:
      return i_ != 0;
    case Kind::kFloat:
      return d_ != 0.0;
    case Kind::kString:
      return !s_->empty();
    case Kind::kArray:
      return !a_->empty();
    case Kind::kObject:
      return !o_->items.empty() || o_->is_namespace;
    case Kind::kFunction:
      return true;
  }
  return false;
}

Array Value::iterate() const {
  switch (kind_) {
    case Kind::kArray:
      return *a_;
    case Kind::kObject: {
      Array keys;
      for (const auto& [k, v] : o_->items) keys.push_back(o_->key_value(k));
      return keys;
    }
    case Kind::kString: {
      Array chars;
      for (size_t i = 0; i < s_->size();) {
        const auto lead = static_cast<unsigned char>((*s_)[i]);
        const size_t n = lead < 0x80 ? 1 : (lead >> 5) == 6 ? 2 : (lead >> 4) == 14 ? 3 : 4;
        chars.emplace_back(s_->substr(i, n));
        i += n;
      }
      return chars;
    }
    case Kind::kUndefined:
    case Kind::kNone:
      return {};
    default:
      throw TemplateError("object of type " + repr() + " is not iterable");
  }
}

std::string python_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest round-trip digits, laid out as Python's repr does: positional for exponents
  // -4..15, scientific ("1e+16", "1e-05") otherwise.
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  const std::string sci(buf, end);
  const size_t e = sci.find('e');
  const bool negative = sci[0] == '-';
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < e; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  const int exponent = std::stoi(sci.substr(e + 1));
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(exponent) + 1 - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(exponent) + 1) + "." +
             digits.substr(static_cast<size_t>(exponent) + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out + exp_buf;
}

namespace {

std::string python_string_repr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char c : s) {
    if (c == quote || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  out += quote;
  return out;
}

void json_string(const std::string& s, std::string& out) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void to_json_into(const Value& v, int indent, int depth, std::string& out) {
  auto newline = [&](int d) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * d), ' ');
  };
  const char* item_sep = indent < 0 ? ", " : ",";
  switch (v.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      out += "null";
      break;
    case Value::Kind::kBool:
      out += v.as_bool() ? "true" : "false";
      break;
    case Value::Kind::kInt:
      out += std::to_string(v.as_int());
      break;
    case Value::Kind::kFloat: {
      const double d = v.as_double();
      out += std::isnan(d)   ? "NaN"
             : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity")
                             : python_float_repr(d);
      break;
    }
    case Value::Kind::kString:
      json_string(v.as_string(), out);
      break;
    case Value::Kind::kArray: {
      if (v.array().empty()) {
        out += "[]";
        break;
      }
      out += '[';
      for (size_t i = 0; i < v.array().size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        to_json_into(v.array()[i], indent, depth + 1, out);
      }
      newline(depth);
      out += ']';
      break;
    }
    case Value::Kind::kObject: {
      if (v.object().items.empty()) {
        out += "{}";
        break;
      }
      out += '{';
      bool first = true;
      for (const auto& [k, item] : v.object().items) {
        if (!first) out += item_sep;
        first = false;
        newline(depth + 1);
        json_string(k, out);
        out += ": ";
        to_json_into(item, indent, depth + 1, out);
      }
      newline(depth);
      out += '}';
      break;
    }
    case Value::Kind::kFunction:
      throw TemplateError("a function cannot be converted to JSON");
  }
}

}  // namespace

std::string Value::to_json(int indent) const {
  if (generator_) throw TemplateError("Object of type generator is not JSON serializable");
  std::string out;
  to_json_into(*this, indent, 0, out);
  return out;
}

std::string Value::repr() const {
  switch (kind_) {
    case Kind::kString:
      return python_string_repr(*s_);
    case Kind::kUndefined:
      return "Undefined";
    default:
      break;
  }
  if (kind_ == Kind::kArray) {
    std::string out = "[";
    for (size_t i = 0; i < a_->size(); ++i) out += (i ? ", " : "") + (*a_)[i].repr();
    return out + "]";
  }
  if (kind_ == Kind::kObject) {
    std::string out = "{";
    bool first = true;
    for (const auto& [k, v] : o_->items) {
      out += (first ? "" : ", ") + o_->key_value(k).repr() + ": " + v.repr();
      first = false;
    }
    return out + "}";
  }
  return str();
}

std::string Value::str() const {
  if (generator_) return "<generator object>";
  switch (kind_) {
    case Kind::kUndefined:
      return "";
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return b_ ? "True" : "False";
    case Kind::kInt:
      return std::to_string(i_);
    case Kind::kFloat:
      return python_float_repr(d_);
    case Kind::kString:
      return *s_;
    case Kind::kFunction:
      return "<function>";
    default:
      return repr();
  }
}

bool Value::operator==(const Value& o) const {
  if (is_number() && o.is_number()) {
    if (kind_ == Kind::kInt && o.kind_ == Kind::kInt) return i_ == o.i_;
    return as_double() == o.as_double();
  }
  if ((kind_ == Kind::kBool && o.is_number()) || (is_number() && o.kind_ == Kind::kBool)) {
    return as_double() == o.as_double();
  }
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kBool:
      return b_ == o.b_;
    case Kind::kString:
      return *s_ == *o.s_;
    case Kind::kArray:
      return *a_ == *o.a_;
    case Kind::kObject: {
      if (o_->items.size() != o.o_->items.size()) return false;
      for (const auto& [k, v] : o_->items) {
        const Value* other = o.o_->find(k);
        if (!other || !(*other == v)) return false;
      }
      return true;
    }
    case Kind::kFunction:
      return f_ == o.f_;
    default:
      return false;
  }
}

bool Value::less(const Value& o) const {
  if ((is_number() || kind_ == Kind::kBool) && (o.is_number() || o.kind_ == Kind::kBool)) {
    return as_double() < o.as_double();
  }
  if (is_string() && o.is_string()) return *s_ < *o.s_;
  if (is_array() && o.is_array()) {
    return std::lexicographical_compare(a_->begin(), a_->end(), o.a_->begin(), o.a_->end(),
                                        [](const Value& x, const Value& y) { return x.less(y); });
  }
  throw TemplateError("cannot compare " + repr() + " with " + o.repr());
}

}  // namespace pagedllm::jinja
