// Jinja2's built-in filters and tests, Python's methods on str/list/dict, and the globals
// (range, namespace, dict) that chat templates use.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "chat/jinja_context.h"
#include "chat/jinja_strings.h"

namespace pagedllm::jinja {

namespace {

const Value* arg(const Arguments& a, size_t index, const char* name) {
  return a.get(index, name);
}

Value arg_or(const Arguments& a, size_t index, const char* name, Value fallback) {
  const Value* v = a.get(index, name);
  return v && !v->is_undefined() ? *v : fallback;
}

Value string_list(const std::vector<std::string>& parts) {
  Array a;
  for (const auto& p : parts) a.emplace_back(p);
  return Value(std::move(a));
}

// attribute= lookups accept dotted paths ("function.name") and integer indices.
Value attribute_path(const Value& v, const std::string& path) {
  Value cur = v;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? dot : dot - start);
    cur = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit)
              ? get_item(cur, Value(static_cast<int64_t>(std::stoll(part))))
              : get_attribute(cur, part);
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

Array sorted(Array items, bool reverse, bool case_sensitive, const Value* attribute) {
  auto key = [&](const Value& v) {
    Value k = attribute && !attribute->is_none() && !attribute->is_undefined()
                  ? attribute_path(v, attribute->str())
                  : v;
    if (!case_sensitive && k.is_string()) return Value(to_lower(k.as_string()));
    return k;
  };
  std::stable_sort(items.begin(), items.end(),
                   [&](const Value& a, const Value& b) { return key(a).less(key(b)); });
  if (reverse) std::reverse(items.begin(), items.end());
  return items;
}

Value select_items(const Value& v, const Arguments& a, bool by_attribute, bool keep) {
  Array out;
  // Test arguments come after the attribute (selectattr) or the test name (select).
  Arguments test_args;
  const size_t first_test_arg = by_attribute ? 2 : 1;
  for (size_t i = first_test_arg; i < a.positional.size(); ++i) {
    test_args.positional.push_back(a.positional[i]);
  }
  const Value* test = by_attribute ? arg(a, 1, "") : arg(a, 0, "");
  for (const Value& item : v.iterate()) {
    const Value subject =
        by_attribute ? attribute_path(item, arg_or(a, 0, "", Value("")).str()) : item;
    const bool passed = test ? apply_test(test->str(), subject, test_args) : subject.truthy();
    if (passed == keep) out.push_back(item);
  }
  return Value::generator(std::move(out));
}

Value map_items(const Value& v, const Arguments& a, Context& ctx) {
  Array out;
  if (const Value* attribute = a.get(SIZE_MAX, "attribute")) {
    const Value* fallback = a.get(SIZE_MAX, "default");
    for (const Value& item : v.iterate()) {
      Value got = attribute_path(item, attribute->str());
      out.push_back(got.is_undefined() && fallback ? *fallback : got);
    }
    return Value::generator(std::move(out));
  }
  if (a.positional.empty()) throw TemplateError("map needs a filter name or attribute=");
  Arguments rest;
  rest.positional.assign(a.positional.begin() + 1, a.positional.end());
  rest.named = a.named;
  for (const Value& item : v.iterate()) {
    out.push_back(apply_filter(a.positional[0].str(), item, rest, ctx));
  }
  return Value::generator(std::move(out));
}

Value dict_items(const Value& v) {
  Array out;
  if (!v.is_object()) return Value(std::move(out));
  for (const auto& [k, item] : v.object().items) {
    out.emplace_back(Array{v.object().key_value(k), item});
  }
  return Value(std::move(out));
}

std::string indent_text(const std::string& s, const Arguments& a) {
  const Value width = arg_or(a, 0, "width", Value(4));
  const std::string pad =
      width.is_string() ? width.as_string() : std::string(static_cast<size_t>(width.as_int()), ' ');
  const bool first = arg_or(a, 1, "first", Value(false)).truthy();
  const bool blank = arg_or(a, 2, "blank", Value(false)).truthy();
  std::string out;
  size_t start = 0;
  bool first_line = true;
  while (true) {
    const size_t nl = s.find('\n', start);
    const std::string line = s.substr(start, nl == std::string::npos ? nl : nl - start);
    const bool indent = first_line ? first : (blank || !line.empty());
    out += (indent ? pad : "") + line;
    if (nl == std::string::npos) break;
    out += '\n';
    start = nl + 1;
    first_line = false;
  }
  return out;
}

Value length_of(const Value& v) {
  if (v.is_generator()) throw TemplateError("object of type 'generator' has no len()");
  if (v.is_string()) return Value(static_cast<int64_t>(codepoint_count(v.as_string())));
  if (v.is_array()) return Value(static_cast<int64_t>(v.array().size()));
  if (v.is_object()) return Value(static_cast<int64_t>(v.object().items.size()));
  if (v.is_undefined()) return Value(0);
  throw TemplateError("object of type " + v.repr() + " has no length");
}

Value unique(const Value& v) {
  Array out;
  for (const Value& item : v.iterate()) {
    if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
  }
  return Value(std::move(out));
}

Value round_value(const Value& v, const Arguments& a) {
  const int64_t precision = arg_or(a, 0, "precision", Value(0)).as_int();
  const std::string method = arg_or(a, 1, "method", Value("common")).str();
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.as_double() * scale;
  const double r = method == "ceil"    ? std::ceil(x)
                   : method == "floor" ? std::floor(x)
                                       : std::round(x);
  return Value(r / scale);
}

}  // namespace

Value apply_filter(const std::string& name, const Value& v, const Arguments& a, Context& ctx) {
  if (name == "trim") return Value(strip_chars(v.str(), arg(a, 0, "chars"), true, true));
  if (name == "tojson") {
    const Value* indent = arg(a, 0, "indent");
    return Value(
        v.to_json(indent && indent->is_number() ? static_cast<int>(indent->as_int()) : -1));
  }
  if (name == "string") return v.is_markup() ? v : Value(v.str());
  if (name == "length" || name == "count") return length_of(v);
  if (name == "first") {
    const Array items = v.iterate();
    return items.empty() ? Value() : items.front();
  }
  if (name == "last") {
    if (v.is_generator()) throw TemplateError("'generator' object is not reversible");
    const Array items = v.iterate();
    return items.empty() ? Value() : items.back();
  }
  if (name == "join") {
    const std::string sep = arg_or(a, 0, "d", Value("")).str();
    const Value* attribute = arg(a, 1, "attribute");
    std::string out;
    bool first = true;
    for (const Value& item : v.iterate()) {
      out += (first ? "" : sep) + (attribute ? attribute_path(item, attribute->str()) : item).str();
      first = false;
    }
    return Value(std::move(out));
  }
  if (name == "upper") return Value(to_upper(v.str()));
  if (name == "lower") return Value(to_lower(v.str()));
  if (name == "capitalize") return Value(capitalize(v.str()));
  if (name == "title") return Value(to_title(v.str()));
  if (name == "replace") {
    return Value(replace_all(v.str(), arg_or(a, 0, "old", Value("")).str(),
                             arg_or(a, 1, "new", Value("")).str(),
                             arg_or(a, 2, "count", Value(-1)).as_int()));
  }
  if (name == "items") return dict_items(v);
  if (name == "default" || name == "d") {
    const bool boolean = arg_or(a, 1, "boolean", Value(false)).truthy();
    if (v.is_undefined() || (boolean && !v.truthy()))
      return arg_or(a, 0, "default_value", Value(""));
    return v;
  }
  if (name == "selectattr") return select_items(v, a, true, true);
  if (name == "rejectattr") return select_items(v, a, true, false);
  if (name == "select") return select_items(v, a, false, true);
  if (name == "reject") return select_items(v, a, false, false);
  if (name == "map") return map_items(v, a, ctx);
  if (name == "dictsort") {
    Array pairs = dict_items(v).array();
    const bool by_value = arg_or(a, 1, "by", Value("key")).str() == "value";
    const Value index(static_cast<int64_t>(by_value ? 1 : 0));
    const bool case_sensitive = arg_or(a, 0, "case_sensitive", Value(false)).truthy();
    std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
      Value kx = get_item(x, index), ky = get_item(y, index);
      if (!case_sensitive && kx.is_string() && ky.is_string()) {
        kx = Value(to_lower(kx.as_string()));
        ky = Value(to_lower(ky.as_string()));
      }
      return kx.less(ky);
    });
    if (arg_or(a, 2, "reverse", Value(false)).truthy()) std::reverse(pairs.begin(), pairs.end());
    return Value(std::move(pairs));
  }
  if (name == "unique") return unique(v);
  if (name == "list") return Value(v.iterate());
  if (name == "int") {
    if (v.is_string()) {
      try {
        return Value(static_cast<int64_t>(std::stoll(v.as_string())));
      } catch (const std::exception&) {
        return arg_or(a, 0, "default", Value(0));
      }
    }
    return v.is_number() || v.kind() == Value::Kind::kBool ? Value(v.as_int())
                                                           : arg_or(a, 0, "default", Value(0));
  }
  if (name == "float") {
    if (v.is_string()) {
      try {
        return Value(std::stod(v.as_string()));
      } catch (const std::exception&) {
        return arg_or(a, 0, "default", Value(0.0));
      }
    }
    return v.is_number() ? Value(v.as_double()) : arg_or(a, 0, "default", Value(0.0));
  }
  if (name == "abs") {
    return v.kind() == Value::Kind::kInt ? Value(std::abs(v.as_int()))
                                         : Value(std::fabs(v.as_double()));
  }
  if (name == "round") return round_value(v, a);
  if (name == "safe") return Value::markup(v.str());
  if (name == "e" || name == "escape") {
    return v.is_markup() ? v : Value::markup(html_escape(v.str()));
  }
  if (name == "forceescape") return Value::markup(html_escape(v.str()));
  if (name == "indent") return Value(indent_text(v.str(), a));
  if (name == "reverse") {
    if (v.is_string()) {
      Array chars = v.iterate();
      std::string out;
      for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += it->as_string();
      return Value(std::move(out));
    }
    Array items = v.iterate();
    std::reverse(items.begin(), items.end());
    return Value(std::move(items));
  }
  if (name == "sort") {
    return Value(sorted(v.iterate(), arg_or(a, 0, "reverse", Value(false)).truthy(),
                        arg_or(a, 1, "case_sensitive", Value(false)).truthy(),
                        arg(a, 2, "attribute")));
  }
  if (name == "min" || name == "max") {
    Array items = sorted(v.iterate(), false, false, arg(a, 1, "attribute"));
    if (items.empty()) return Value();
    return name == "min" ? items.front() : items.back();
  }
  if (name == "sum") {
    Value total = arg_or(a, 1, "start", Value(0));
    const Value* attribute = arg(a, 0, "attribute");
    for (const Value& item : v.iterate()) {
      const Value x = attribute ? attribute_path(item, attribute->str()) : item;
      total = total.kind() == Value::Kind::kInt && x.kind() == Value::Kind::kInt
                  ? Value(total.as_int() + x.as_int())
                  : Value(total.as_double() + x.as_double());
    }
    return total;
  }
  if (name == "wordcount") return Value(static_cast<int64_t>(split(v.str(), nullptr, -1).size()));
  if (name == "format") return Value(percent_format(v.str(), a.positional));
  if (name == "attr") return get_attribute(v, arg_or(a, 0, "name", Value("")).str());
  if (name == "batch") {
    const int64_t size = std::max<int64_t>(1, arg_or(a, 0, "linecount", Value(1)).as_int());
    Array out, current;
    for (const Value& item : v.iterate()) {
      current.push_back(item);
      if (static_cast<int64_t>(current.size()) == size)
        out.emplace_back(std::exchange(current, {}));
    }
    if (!current.empty()) out.emplace_back(std::move(current));
    return Value(std::move(out));
  }
  throw TemplateError("unknown filter '" + name + "'");
}

bool apply_test(const std::string& name, const Value& v, const Arguments& a) {
  using K = Value::Kind;
  const Value* other = arg(a, 0, "");
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind() == K::kInt;
  if (name == "float") return v.kind() == K::kFloat;
  if (name == "boolean") return v.kind() == K::kBool;
  if (name == "true") return v.kind() == K::kBool && v.as_bool();
  if (name == "false") return v.kind() == K::kBool && !v.as_bool();
  if (name == "mapping") return v.is_object();
  if (name == "iterable") return v.is_array() || v.is_object() || v.is_string();
  if (name == "sequence") return v.is_array() || v.is_string() || v.is_object();
  if (name == "callable") return v.is_callable();
  if (name == "odd") return v.as_int() % 2 != 0;
  if (name == "even") return v.as_int() % 2 == 0;
  if (name == "lower") return v.is_string() && to_lower(v.as_string()) == v.as_string();
  if (name == "upper") return v.is_string() && to_upper(v.as_string()) == v.as_string();
  if (!other) throw TemplateError("test '" + name + "' needs an argument");
  if (name == "divisibleby") return other->as_int() != 0 && v.as_int() % other->as_int() == 0;
  if (name == "eq" || name == "equalto" || name == "==" || name == "sameas") return v == *other;
  if (name == "ne" || name == "!=") return !(v == *other);
  if (name == "lt" || name == "lessthan" || name == "<") return v.less(*other);
  if (name == "gt" || name == "greaterthan" || name == ">") return other->less(v);
  if (name == "le" || name == "<=") return !other->less(v);
  if (name == "ge" || name == ">=") return !v.less(*other);
  if (name == "in") {
    if (other->is_string())
      return v.is_string() && other->as_string().find(v.as_string()) != std::string::npos;
    for (const Value& item : other->iterate()) {
      if (item == v) return true;
    }
    return false;
  }
  throw TemplateError("unknown test '" + name + "'");
}

namespace {

Value bound(Function f) {
  return Value(std::move(f));
}

Value string_method(const std::string& s, const std::string& name) {
  if (name == "split" || name == "rsplit") {
    return bound([s](const Arguments& a) {
      return string_list(split(s, a.get(0, "sep"), arg_or(a, 1, "maxsplit", Value(-1)).as_int()));
    });
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const bool left = name != "rstrip", right = name != "lstrip";
    return bound([s, left, right](const Arguments& a) {
      return Value(strip_chars(s, a.get(0, "chars"), left, right));
    });
  }
  if (name == "startswith" || name == "endswith") {
    const bool start = name == "startswith";
    return bound([s, start](const Arguments& a) {
      const Value* p = a.get(0, "prefix");
      if (!p) throw TemplateError("startswith/endswith needs an argument");
      const Array options = p->is_array() ? p->array() : Array{*p};
      for (const Value& o : options) {
        const std::string& x = o.str();
        if (x.size() <= s.size() && s.compare(start ? 0 : s.size() - x.size(), x.size(), x) == 0) {
          return Value(true);
        }
      }
      return Value(false);
    });
  }
  if (name == "upper") return bound([s](const Arguments&) { return Value(to_upper(s)); });
  if (name == "lower") return bound([s](const Arguments&) { return Value(to_lower(s)); });
  if (name == "title") return bound([s](const Arguments&) { return Value(to_title(s)); });
  if (name == "capitalize") return bound([s](const Arguments&) { return Value(capitalize(s)); });
  if (name == "replace") {
    return bound([s](const Arguments& a) {
      return Value(replace_all(s, arg_or(a, 0, "old", Value("")).str(),
                               arg_or(a, 1, "new", Value("")).str(),
                               arg_or(a, 2, "count", Value(-1)).as_int()));
    });
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "count") {
    return bound([s, name](const Arguments& a) {
      const std::string x = arg_or(a, 0, "sub", Value("")).str();
      if (name == "count") {
        int64_t n = 0;
        for (size_t at = s.find(x); !x.empty() && at != std::string::npos;
             at = s.find(x, at + x.size()))
          ++n;
        return Value(n);
      }
      const size_t at = name == "rfind" ? s.rfind(x) : s.find(x);
      if (at == std::string::npos && name == "index") throw TemplateError("substring not found");
      return Value(at == std::string::npos ? int64_t{-1} : static_cast<int64_t>(at));
    });
  }
  if (name == "splitlines") {
    return bound([s](const Arguments&) {
      std::vector<std::string> lines;
      size_t start = 0;
      for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\n' || s[i] == '\r') {
          lines.push_back(s.substr(start, i - start));
          if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
          start = i + 1;
        }
      }
      if (start < s.size()) lines.push_back(s.substr(start));
      return string_list(lines);
    });
  }
  if (name == "isdigit" || name == "isalpha" || name == "isspace" || name == "isalnum") {
    return bound([s, name](const Arguments&) {
      if (s.empty()) return Value(false);
      return Value(std::all_of(s.begin(), s.end(), [&](char c) {
        const auto u = static_cast<unsigned char>(c);
        return name == "isdigit"   ? std::isdigit(u)
               : name == "isalpha" ? std::isalpha(u)
               : name == "isspace" ? std::isspace(u)
                                   : std::isalnum(u);
      }));
    });
  }
  if (name == "join") {
    return bound([s](const Arguments& a) {
      std::string out;
      bool first = true;
      for (const Value& item : arg_or(a, 0, "iterable", Value(Array{})).iterate()) {
        out += (first ? "" : s) + item.str();
        first = false;
      }
      return Value(std::move(out));
    });
  }
  if (name == "format")
    return bound([s](const Arguments& a) { return Value(python_format(s, a)); });
  if (name == "removeprefix" || name == "removesuffix") {
    const bool prefix = name == "removeprefix";
    return bound([s, prefix](const Arguments& a) {
      const std::string x = arg_or(a, 0, "x", Value("")).str();
      if (prefix && s.compare(0, x.size(), x) == 0) return Value(s.substr(x.size()));
      if (!prefix && x.size() <= s.size() && s.compare(s.size() - x.size(), x.size(), x) == 0) {
        return Value(s.substr(0, s.size() - x.size()));
      }
      return Value(s);
    });
  }
  return Value();
}

Value object_method(const Value& obj, const std::string& name) {
  if (name == "get") {
    return bound([obj](const Arguments& a) {
      const Value* key = a.get(0, "key");
      const Value* found = key ? obj.object().find(key->str()) : nullptr;
      return found ? *found : arg_or(a, 1, "default", Value::none());
    });
  }
  if (name == "items") return bound([obj](const Arguments&) { return dict_items(obj); });
  if (name == "keys") return bound([obj](const Arguments&) { return Value(obj.iterate()); });
  if (name == "values") {
    return bound([obj](const Arguments&) {
      Array out;
      for (const auto& [k, v] : obj.object().items) out.push_back(v);
      return Value(std::move(out));
    });
  }
  return Value();
}

Value array_method(const Value& list, const std::string& name) {
  if (name == "append") {
    return bound([list](const Arguments& a) {
      if (!a.positional.empty()) list.array().push_back(a.positional[0]);
      return Value::none();
    });
  }
  if (name == "index" || name == "count") {
    return bound([list, name](const Arguments& a) {
      const Value x = arg_or(a, 0, "x", Value());
      int64_t n = 0;
      for (size_t i = 0; i < list.array().size(); ++i) {
        if (list.array()[i] == x) {
          if (name == "index") return Value(static_cast<int64_t>(i));
          ++n;
        }
      }
      if (name == "index") throw TemplateError("value is not in list");
      return Value(n);
    });
  }
  return Value();
}

}  // namespace

Value get_attribute(const Value& object, const std::string& name) {
  if (object.is_object()) {
    if (const Value* v = object.object().find(name)) return *v;
    if (object.object().is_namespace) return Value();
    return object_method(object, name);
  }
  if (object.is_string()) return string_method(object.as_string(), name);
  if (object.is_array()) return array_method(object, name);
  return Value();
}

Value get_item(const Value& object, const Value& index) {
  if (object.is_generator()) throw TemplateError("'generator' object is not subscriptable");
  if (object.is_object()) {
    const Value* v = object.object().find(index.is_string() ? index.as_string() : index.str());
    return v ? *v : Value();
  }
  if (object.is_array() || object.is_string()) {
    if (!index.is_number()) {
      return index.is_string() ? get_attribute(object, index.as_string()) : Value();
    }
    const Array chars = object.is_string() ? object.iterate() : Array{};
    const Array& items = object.is_string() ? chars : object.array();
    int64_t i = index.as_int();
    if (i < 0) i += static_cast<int64_t>(items.size());
    if (i < 0 || i >= static_cast<int64_t>(items.size())) return Value();
    return items[static_cast<size_t>(i)];
  }
  return Value();
}

Value call_value(const Value& callee, const Arguments& args) {
  if (callee.kind() == Value::Kind::kFunction) return callee.function()(args);
  if (callee.is_object() && callee.object().call) return (*callee.object().call)(args);
  throw TemplateError("not callable: " + callee.repr());
}

void add_builtin_globals(std::unordered_map<std::string, Value>& globals) {
  globals["range"] = Value(Function([](const Arguments& a) {
    int64_t start = 0, stop = 0, step = 1;
    if (a.positional.size() == 1) {
      stop = a.positional[0].as_int();
    } else if (a.positional.size() >= 2) {
      start = a.positional[0].as_int();
      stop = a.positional[1].as_int();
      if (a.positional.size() >= 3) step = a.positional[2].as_int();
    }
    if (step == 0) throw TemplateError("range() step must not be zero");
    Array out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      if (out.size() >= 1000000) throw TemplateError("range() too large");
      out.emplace_back(i);
    }
    return Value(std::move(out));
  }));
  auto make_dict = [](bool is_namespace) {
    return Value(Function([is_namespace](const Arguments& a) {
      auto o = std::make_shared<Object>();
      o->is_namespace = is_namespace;
      if (!a.positional.empty() && a.positional[0].is_object())
        o->items = a.positional[0].object().items;
      for (const auto& [k, v] : a.named) o->set(k, v);
      return Value(std::move(o));
    }));
  };
  globals["namespace"] = make_dict(true);
  globals["dict"] = make_dict(false);
}

}  // namespace pagedllm::jinja
