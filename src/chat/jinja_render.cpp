// Rendering of the statements that bind names: for loops (with loop.*), set, macro, call and
// filter blocks, break and continue.
#include <cstdint>

#include "chat/jinja_ast.h"
#include "chat/jinja_context.h"

namespace pagedllm::jinja {

namespace {

void bind_targets(Context& ctx, const std::vector<std::string>& targets, const Value& item,
                  int line) {
  if (targets.size() == 1) {
    ctx.set(targets[0], item);
    return;
  }
  const Array parts = item.is_array() ? item.array() : item.iterate();
  if (parts.size() != targets.size()) {
    fail_at(line, "cannot unpack " + std::to_string(parts.size()) + " values into " +
                      std::to_string(targets.size()) + " names");
  }
  for (size_t i = 0; i < targets.size(); ++i) ctx.set(targets[i], parts[i]);
}

std::shared_ptr<Object> loop_object(const Array& items, size_t i, int depth) {
  auto loop = std::make_shared<Object>();
  const auto n = static_cast<int64_t>(items.size());
  const auto k = static_cast<int64_t>(i);
  loop->set("index", Value(k + 1));
  loop->set("index0", Value(k));
  loop->set("revindex", Value(n - k));
  loop->set("revindex0", Value(n - k - 1));
  loop->set("first", Value(i == 0));
  loop->set("last", Value(k == n - 1));
  loop->set("length", Value(n));
  loop->set("depth", Value(depth));
  loop->set("depth0", Value(depth - 1));
  loop->set("previtem", i > 0 ? items[i - 1] : Value());
  loop->set("nextitem", k + 1 < n ? items[i + 1] : Value());
  loop->set("cycle", Value(Function([k](const Arguments& a) {
              if (a.positional.empty()) return Value();
              return a.positional[static_cast<size_t>(k) % a.positional.size()];
            })));
  return loop;
}

}  // namespace

void ForStmt::render(Context& ctx, std::string& out) const {
  run(ctx, iterable->eval(ctx), 1, out);
}

void ForStmt::run(Context& ctx, const Value& source, int depth, std::string& out) const {
  if (!source.is_undefined() && !source.is_none() && !source.is_array() && !source.is_object() &&
      !source.is_string()) {
    fail_at(line, source.repr() + " is not iterable");
  }
  ctx.push_scope();
  Array items;
  for (const Value& item : source.iterate()) {
    ctx.step(line);
    if (filter) {
      bind_targets(ctx, targets, item, line);
      if (!filter->eval(ctx).truthy()) continue;
    }
    items.push_back(item);
  }
  if (items.empty()) {
    render_body(else_body, ctx, out);
    ctx.pop_scope();
    return;
  }
  for (size_t i = 0; i < items.size(); ++i) {
    ctx.step(line);
    bind_targets(ctx, targets, items[i], line);
    auto loop = loop_object(items, i, depth);
    if (recursive) {
      loop->call = std::make_shared<Function>([this, &ctx, depth](const Arguments& a) {
        if (a.positional.empty()) return Value(std::string());
        if (++ctx.call_depth > kMaxCallDepth) fail_at(line, "recursive loop nested too deeply");
        std::string inner;
        run(ctx, a.positional[0], depth + 1, inner);
        --ctx.call_depth;
        return Value(std::move(inner));
      });
    }
    ctx.set("loop", Value(std::move(loop)));
    render_body(body, ctx, out);
    if (ctx.flow == Context::Flow::kBreak) {
      ctx.flow = Context::Flow::kNormal;
      break;
    }
    ctx.flow = Context::Flow::kNormal;
  }
  ctx.pop_scope();
}

void SetStmt::render(Context& ctx, std::string& out) const {
  (void)out;
  Value v;
  if (value) {
    v = value->eval(ctx);
  } else {
    std::string captured;
    render_body(body, ctx, captured);
    v = Value(std::move(captured));
  }
  if (!attribute.empty()) {
    const Value target = ctx.lookup(targets[0]);
    if (!target.is_object() || !target.object().is_namespace) {
      fail_at(line, "cannot set attribute '" + attribute + "' on " + targets[0] +
                        " (only a namespace() takes attributes)");
    }
    target.object().set(attribute, std::move(v));
    return;
  }
  bind_targets(ctx, targets, v, line);
}

Value MacroStmt::make_function(Context& ctx) const {
  return Value(Function([this, &ctx](const Arguments& a) {
    if (++ctx.call_depth > kMaxCallDepth) fail_at(line, "macro calls nested too deeply");
    auto saved = ctx.enter_macro();
    for (size_t i = 0; i < params.size(); ++i) {
      const auto& [name, fallback] = params[i];
      if (const Value* given = a.get(i, name.c_str())) {
        ctx.set(name, *given);
      } else {
        ctx.set(name, fallback ? fallback->eval(ctx) : Value());
      }
    }
    if (const Value* caller = a.get(SIZE_MAX, "caller")) ctx.set("caller", *caller);
    std::string rendered;
    try {
      render_body(*body, ctx, rendered);
    } catch (...) {
      ctx.leave_macro(std::move(saved));
      throw;
    }
    ctx.leave_macro(std::move(saved));
    --ctx.call_depth;
    return Value(std::move(rendered));
  }));
}

void MacroStmt::render(Context& ctx, std::string&) const {
  ctx.set(name, make_function(ctx));
}

void CallBlockStmt::render(Context& ctx, std::string& out) const {
  const auto* c = dynamic_cast<const Call*>(call.get());
  if (!c) fail_at(line, "{% call %} needs a macro call");
  Value caller(Function([this, &ctx](const Arguments& a) {
    ctx.push_scope();
    for (size_t i = 0; i < caller_params.size(); ++i) {
      const Value* given = a.get(i, caller_params[i].c_str());
      ctx.set(caller_params[i], given ? *given : Value());
    }
    std::string rendered;
    render_body(*body, ctx, rendered);
    ctx.pop_scope();
    return Value(std::move(rendered));
  }));
  const Value callee = c->callee->eval(ctx);
  if (!callee.is_callable()) fail_at(line, "not callable: " + callee.repr());
  Arguments args = c->args.eval(ctx);
  args.named.emplace_back("caller", std::move(caller));
  out += call_value(callee, args).str();
}

void FilterBlockStmt::render(Context& ctx, std::string& out) const {
  std::string inner;
  render_body(body, ctx, inner);
  out += apply_filter(name, Value(std::move(inner)), args.eval(ctx), ctx).str();
}

void LoopControlStmt::render(Context& ctx, std::string&) const {
  ctx.flow = is_break ? Context::Flow::kBreak : Context::Flow::kContinue;
}

}  // namespace pagedllm::jinja
