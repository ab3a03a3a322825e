// The parsed form of a Jinja template: expressions evaluate to Values, statements write text.
// Evaluation lives in jinja_eval.cpp (expressions) and jinja_render.cpp (statements).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chat/jinja_value.h"

namespace pagedllm::jinja {

class Context;

struct Expr {
  virtual ~Expr() = default;
  virtual Value eval(Context& ctx) const = 0;
  int line = 0;
};
using ExprPtr = std::unique_ptr<Expr>;

struct Literal : Expr {
  Value value;
  Value eval(Context&) const override { return value; }
};
struct Name : Expr {
  std::string name;
  Value eval(Context& ctx) const override;
};
struct ListExpr : Expr {
  std::vector<ExprPtr> items;
  Value eval(Context& ctx) const override;
};
struct DictExpr : Expr {
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
  Value eval(Context& ctx) const override;
};
struct Attribute : Expr {  // obj.name
  ExprPtr object;
  std::string name;
  Value eval(Context& ctx) const override;
};
struct Subscript : Expr {  // obj[index]
  ExprPtr object, index;
  Value eval(Context& ctx) const override;
};
struct Slice : Expr {  // obj[start:stop:step]
  ExprPtr object, start, stop, step;
  Value eval(Context& ctx) const override;
};
struct CallArgs {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> named;
  Arguments eval(Context& ctx) const;
};
struct Call : Expr {
  ExprPtr callee;
  CallArgs args;
  Value eval(Context& ctx) const override;
};
struct Filter : Expr {  // value | name(args)
  ExprPtr value;
  std::string name;
  CallArgs args;
  Value eval(Context& ctx) const override;
};
struct Test : Expr {  // value is [not] name(args)
  ExprPtr value;
  std::string name;
  CallArgs args;
  bool negated = false;
  Value eval(Context& ctx) const override;
};
struct Unary : Expr {
  std::string op;  // "not", "-", "+"
  ExprPtr operand;
  Value eval(Context& ctx) const override;
};
struct Binary : Expr {
  std::string op;  // or and == != < > <= >= in notin + - * / // % ** ~
  ExprPtr left, right;
  Value eval(Context& ctx) const override;
};
struct Conditional : Expr {  // a if cond else b
  ExprPtr then_value, condition, else_value;
  Value eval(Context& ctx) const override;
};

struct Stmt {
  virtual ~Stmt() = default;
  virtual void render(Context& ctx, std::string& out) const = 0;
  int line = 0;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

void render_body(const Body& body, Context& ctx, std::string& out);

struct TextStmt : Stmt {
  std::string text;
  void render(Context&, std::string& out) const override { out += text; }
};
struct OutputStmt : Stmt {
  ExprPtr value;
  void render(Context& ctx, std::string& out) const override;
};
struct IfStmt : Stmt {
  std::vector<std::pair<ExprPtr, Body>> branches;  // condition null: else
  void render(Context& ctx, std::string& out) const override;
};
struct ForStmt : Stmt {
  std::vector<std::string> targets;
  ExprPtr iterable, filter;
  Body body, else_body;
  bool recursive = false;
  void render(Context& ctx, std::string& out) const override;
  void run(Context& ctx, const Value& items, int depth, std::string& out) const;
};
struct SetStmt : Stmt {
  std::vector<std::string> targets;  // a, or a, b (unpacking)
  std::string attribute;             // set ns.attr = ...
  ExprPtr value;                     // null: block set, body is the value
  Body body;
  void render(Context& ctx, std::string& out) const override;
};
struct MacroStmt : Stmt {
  std::string name;
  std::vector<std::pair<std::string, ExprPtr>> params;  // default may be null
  std::shared_ptr<Body> body;
  void render(Context& ctx, std::string& out) const override;
  Value make_function(Context& ctx) const;
};
struct CallBlockStmt : Stmt {  // {% call(args) macro(...) %} body {% endcall %}
  std::vector<std::string> caller_params;
  ExprPtr call;
  std::shared_ptr<Body> body;
  void render(Context& ctx, std::string& out) const override;
};
struct FilterBlockStmt : Stmt {
  std::string name;
  CallArgs args;
  Body body;
  void render(Context& ctx, std::string& out) const override;
};
struct LoopControlStmt : Stmt {
  bool is_break = false;
  void render(Context& ctx, std::string& out) const override;
};

// Throws TemplateError with the line of the first problem.
Body parse_template(const std::string& source);

}  // namespace pagedllm::jinja
