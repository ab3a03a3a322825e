// Evaluation of expressions and rendering of statements.
#include <algorithm>
#include <cmath>

#include "chat/jinja_ast.h"
#include "chat/jinja_context.h"
#include "chat/jinja_strings.h"

namespace pagedllm::jinja {

namespace {

// Markup + str escapes the plain side (Python's Markup.__add__ / __radd__).
std::string escaped_unless_markup(const Value& v) {
  return v.is_markup() ? v.str() : html_escape(v.str());
}

Value arithmetic(const std::string& op, const Value& a, const Value& b, int line) {
  if (op == "+" && a.is_string() && b.is_string()) {
    if (a.is_markup() || b.is_markup()) {
      return Value::markup(escaped_unless_markup(a) + escaped_unless_markup(b));
    }
    return Value(a.as_string() + b.as_string());
  }
  if (op == "+" && a.is_array() && b.is_array()) {
    Array joined = a.array();
    joined.insert(joined.end(), b.array().begin(), b.array().end());
    return Value(std::move(joined));
  }
  if (op == "*" && a.is_string() && b.kind() == Value::Kind::kInt) {
    std::string s;
    for (int64_t i = 0; i < b.as_int() && s.size() < (1u << 24); ++i) s += a.as_string();
    return Value(std::move(s));
  }
  const bool numbers = (a.is_number() || a.kind() == Value::Kind::kBool) &&
                       (b.is_number() || b.kind() == Value::Kind::kBool);
  if (!numbers) fail_at(line, "unsupported operands for " + op + ": " + a.repr() + ", " + b.repr());
  const bool ints = a.kind() != Value::Kind::kFloat && b.kind() != Value::Kind::kFloat;
  if (op == "/") {
    if (b.as_double() == 0) fail_at(line, "division by zero");
    return Value(a.as_double() / b.as_double());
  }
  if (ints) {
    const int64_t x = a.as_int(), y = b.as_int();
    if (op == "+") return Value(x + y);
    if (op == "-") return Value(x - y);
    if (op == "*") return Value(x * y);
    if (op == "//" || op == "%") {
      if (y == 0) fail_at(line, "division by zero");
      int64_t q = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) --q, r += y;  // Python floors
      return Value(op == "//" ? q : r);
    }
    if (op == "**" && y >= 0) {
      int64_t result = 1;
      for (int64_t i = 0; i < y && i < 64; ++i) result *= x;
      return Value(result);
    }
  }
  const double x = a.as_double(), y = b.as_double();
  if (op == "+") return Value(x + y);
  if (op == "-") return Value(x - y);
  if (op == "*") return Value(x * y);
  if (op == "//") return Value(std::floor(x / y));
  if (op == "%") return Value(x - y * std::floor(x / y));
  return Value(std::pow(x, y));
}

bool contains(const Value& container, const Value& item, int line) {
  if (container.is_string()) {
    if (!item.is_string()) fail_at(line, "'in <string>' needs a string on the left");
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_array()) {
    for (const Value& v : container.array()) {
      if (v == item) return true;
    }
    return false;
  }
  if (container.is_object()) return item.is_string() && container.object().find(item.as_string());
  if (container.is_undefined() || container.is_none()) return false;
  fail_at(line, "argument of type " + container.repr() + " is not iterable");
}

}  // namespace

Value Context::lookup(const std::string& name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto found = it->find(name);
    if (found != it->end()) return found->second;
  }
  return Value();
}

std::vector<std::unordered_map<std::string, Value>> Context::enter_macro() {
  auto saved = scopes_;
  scopes_.resize(std::min<size_t>(2, scopes_.size()));  // inputs and the top level
  scopes_.emplace_back();
  return saved;
}

Value Name::eval(Context& ctx) const {
  return ctx.lookup(name);
}

Value ListExpr::eval(Context& ctx) const {
  Array a;
  for (const auto& e : items) a.push_back(e->eval(ctx));
  return Value(std::move(a));
}

Value DictExpr::eval(Context& ctx) const {
  auto o = std::make_shared<Object>();
  for (const auto& [k, v] : items) {
    const Value key = k->eval(ctx);
    const std::string name = key.is_string() ? key.as_string() : key.str();
    if (!key.is_string()) o->typed_keys.emplace_back(name, key);
    o->set(name, v->eval(ctx));
  }
  return Value(std::move(o));
}

Value Attribute::eval(Context& ctx) const {
  return get_attribute(object->eval(ctx), name);
}

Value Subscript::eval(Context& ctx) const {
  return get_item(object->eval(ctx), index->eval(ctx));
}

Value Slice::eval(Context& ctx) const {
  const Value obj = object->eval(ctx);
  const Array items = obj.is_string() ? obj.iterate() : obj.is_array() ? obj.array() : Array{};
  if (!obj.is_string() && !obj.is_array()) fail_at(line, "cannot slice " + obj.repr());
  const auto n = static_cast<int64_t>(items.size());
  const int64_t st = step ? step->eval(ctx).as_int() : 1;
  if (st == 0) fail_at(line, "slice step cannot be zero");
  auto bound = [&](const ExprPtr& e, int64_t fallback) {
    if (!e) return fallback;
    const Value v = e->eval(ctx);
    if (v.is_none()) return fallback;
    int64_t i = v.as_int();
    if (i < 0) i += n;
    return st > 0 ? std::clamp<int64_t>(i, 0, n) : std::clamp<int64_t>(i, -1, n - 1);
  };
  const int64_t from = bound(start, st > 0 ? 0 : n - 1), to = bound(stop, st > 0 ? n : -1);
  Array out;
  for (int64_t i = from; st > 0 ? i < to : i > to; i += st)
    out.push_back(items[static_cast<size_t>(i)]);
  if (!obj.is_string()) return Value(std::move(out));
  std::string s;
  for (const Value& c : out) s += c.as_string();
  return Value(std::move(s));
}

Arguments CallArgs::eval(Context& ctx) const {
  Arguments a;
  for (const auto& e : positional) a.positional.push_back(e->eval(ctx));
  for (const auto& [k, e] : named) a.named.emplace_back(k, e->eval(ctx));
  return a;
}

Value Call::eval(Context& ctx) const {
  const Value f = callee->eval(ctx);
  if (!f.is_callable()) fail_at(line, "not callable: " + f.repr());
  if (++ctx.call_depth > kMaxCallDepth) fail_at(line, "calls nested too deeply");
  Value result = call_value(f, args.eval(ctx));
  --ctx.call_depth;
  return result;
}

Value Filter::eval(Context& ctx) const {
  try {
    return apply_filter(name, value->eval(ctx), args.eval(ctx), ctx);
  } catch (const TemplateError& e) {
    if (std::string(e.what()).rfind("line ", 0) == 0) throw;
    fail_at(line, e.what());
  }
}

Value Test::eval(Context& ctx) const {
  try {
    return Value(apply_test(name, value->eval(ctx), args.eval(ctx)) != negated);
  } catch (const TemplateError& e) {
    if (std::string(e.what()).rfind("line ", 0) == 0) throw;
    fail_at(line, e.what());
  }
}

Value Unary::eval(Context& ctx) const {
  const Value v = operand->eval(ctx);
  if (op == "not") return Value(!v.truthy());
  if (!v.is_number()) fail_at(line, "bad operand for unary " + op + ": " + v.repr());
  if (op == "+") return v;
  return v.kind() == Value::Kind::kInt ? Value(-v.as_int()) : Value(-v.as_double());
}

Value Binary::eval(Context& ctx) const {
  if (op == "and") {
    Value l = left->eval(ctx);
    return l.truthy() ? right->eval(ctx) : l;
  }
  if (op == "or") {
    Value l = left->eval(ctx);
    return l.truthy() ? l : right->eval(ctx);
  }
  const Value l = left->eval(ctx), r = right->eval(ctx);
  // Without autoescape Jinja2 joins "~" as plain strings (str_join), Markup or not.
  if (op == "~") return Value(l.str() + r.str());
  if (op == "==") return Value(l == r);
  if (op == "!=") return Value(!(l == r));
  try {
    if (op == "<") return Value(l.less(r));
    if (op == ">") return Value(r.less(l));
    if (op == "<=") return Value(!r.less(l));
    if (op == ">=") return Value(!l.less(r));
  } catch (const TemplateError& e) {
    fail_at(line, e.what());
  }
  if (op == "in") return Value(contains(r, l, line));
  if (op == "notin") return Value(!contains(r, l, line));
  return arithmetic(op, l, r, line);
}

Value Conditional::eval(Context& ctx) const {
  if (condition->eval(ctx).truthy()) return then_value->eval(ctx);
  return else_value ? else_value->eval(ctx) : Value();
}

void render_body(const Body& body, Context& ctx, std::string& out) {
  for (const auto& stmt : body) {
    ctx.step(stmt->line);
    stmt->render(ctx, out);
    if (ctx.flow != Context::Flow::kNormal) return;
  }
}

void OutputStmt::render(Context& ctx, std::string& out) const {
  out += value->eval(ctx).str();
  if (out.size() > kMaxOutputBytes) {
    fail_at(line, "the output grew past " + std::to_string(kMaxOutputBytes >> 20) + " MiB");
  }
}

void IfStmt::render(Context& ctx, std::string& out) const {
  for (const auto& [condition, body] : branches) {
    if (!condition || condition->eval(ctx).truthy()) {
      render_body(body, ctx, out);
      return;
    }
  }
}

}  // namespace pagedllm::jinja
