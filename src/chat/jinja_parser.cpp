// Recursive-descent parser for the Jinja2 subset, following Jinja2's operator precedence:
// conditional < or < and < not < comparisons < + - < ~ < * / // % < ** < unary, with postfix
// access, calls, filters and tests binding tightest.
#include <set>

#include "chat/jinja_ast.h"
#include "chat/jinja_lexer.h"

namespace pagedllm::jinja {

namespace {

template <typename T>
std::unique_ptr<T> node(int line) {
  auto n = std::make_unique<T>();
  n->line = line;
  return n;
}

class ExprParser {
 public:
  ExprParser(std::vector<Token> tokens, int line) : t_(std::move(tokens)), line_(line) {}

  const Token& peek(size_t ahead = 0) const { return t_[std::min(pos_ + ahead, t_.size() - 1)]; }
  bool at_end() const { return peek().kind == Token::kEnd; }
  bool is_op(const char* op, size_t ahead = 0) const {
    return peek(ahead).kind == Token::kOperator && peek(ahead).text == op;
  }
  bool is_name(const char* name, size_t ahead = 0) const {
    return peek(ahead).kind == Token::kName && peek(ahead).text == name;
  }
  Token next() { return t_[std::min(pos_++, t_.size() - 1)]; }
  [[noreturn]] void fail(const std::string& what) const {
    throw TemplateError("line " + std::to_string(line_) + ": " + what +
                        (at_end() ? " at end of tag" : " near '" + peek().text + "'"));
  }
  void expect_op(const char* op) {
    if (!is_op(op)) fail(std::string("expected '") + op + "'");
    ++pos_;
  }
  std::string expect_name() {
    if (peek().kind != Token::kName) fail("expected a name");
    return next().text;
  }
  void expect_end() {
    if (!at_end()) fail("unexpected token");
  }

  // Nesting is bounded so untrusted templates cannot exhaust the stack.
  struct Nesting {
    ExprParser& p;
    explicit Nesting(ExprParser& parser) : p(parser) {
      if (++p.depth_ > kMaxNesting) p.fail("expression nested too deeply");
    }
    ~Nesting() { --p.depth_; }
  };

  ExprPtr expression() {
    Nesting nesting(*this);
    ExprPtr value = or_expr();
    while (is_name("if")) {
      ++pos_;
      auto c = node<Conditional>(line_);
      c->then_value = std::move(value);
      c->condition = or_expr();
      if (is_name("else")) {
        ++pos_;
        c->else_value = or_expr();
      }
      value = std::move(c);
    }
    return value;
  }

  // An expression where a bare "if" ends it (for loop filters).
  ExprPtr or_expr() {
    ExprPtr left = and_expr();
    while (is_name("or")) {
      ++pos_;
      left = binary("or", std::move(left), and_expr());
    }
    return left;
  }

  CallArgs call_args() {  // after '('
    CallArgs args;
    while (!is_op(")")) {
      if (peek().kind == Token::kName && is_op("=", 1)) {
        std::string name = next().text;
        ++pos_;
        args.named.emplace_back(std::move(name), expression());
      } else {
        args.positional.push_back(expression());
      }
      if (!is_op(",")) break;
      ++pos_;
    }
    expect_op(")");
    return args;
  }

  std::vector<std::string> name_list() {
    std::vector<std::string> names;
    const bool parens = is_op("(");
    if (parens) ++pos_;
    names.push_back(expect_name());
    while (is_op(",")) {
      ++pos_;
      names.push_back(expect_name());
    }
    if (parens) expect_op(")");
    return names;
  }

 private:
  ExprPtr binary(const std::string& op, ExprPtr l, ExprPtr r) {
    auto b = node<Binary>(line_);
    b->op = op;
    b->left = std::move(l);
    b->right = std::move(r);
    return b;
  }

  ExprPtr and_expr() {
    ExprPtr left = not_expr();
    while (is_name("and")) {
      ++pos_;
      left = binary("and", std::move(left), not_expr());
    }
    return left;
  }

  ExprPtr not_expr() {
    Nesting nesting(*this);
    if (is_name("not")) {
      ++pos_;
      auto u = node<Unary>(line_);
      u->op = "not";
      u->operand = not_expr();
      return u;
    }
    return compare();
  }

  ExprPtr compare() {
    ExprPtr left = math1();
    while (true) {
      static const std::set<std::string> ops = {"==", "!=", "<", ">", "<=", ">="};
      if (peek().kind == Token::kOperator && ops.count(peek().text)) {
        const std::string op = next().text;
        left = binary(op, std::move(left), math1());
      } else if (is_name("in")) {
        ++pos_;
        left = binary("in", std::move(left), math1());
      } else if (is_name("not") && is_name("in", 1)) {
        pos_ += 2;
        left = binary("notin", std::move(left), math1());
      } else {
        return left;
      }
    }
  }

  ExprPtr math1() {
    ExprPtr left = concat();
    while (is_op("+") || is_op("-")) {
      const std::string op = next().text;
      left = binary(op, std::move(left), concat());
    }
    return left;
  }

  ExprPtr concat() {
    ExprPtr left = math2();
    while (is_op("~")) {
      ++pos_;
      left = binary("~", std::move(left), math2());
    }
    return left;
  }

  ExprPtr math2() {
    ExprPtr left = power();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const std::string op = next().text;
      left = binary(op, std::move(left), power());
    }
    return left;
  }

  ExprPtr power() {
    ExprPtr left = unary();
    while (is_op("**")) {
      ++pos_;
      left = binary("**", std::move(left), unary());
    }
    return left;
  }

  ExprPtr unary() {
    Nesting nesting(*this);
    if (is_op("-") || is_op("+")) {
      auto u = node<Unary>(line_);
      u->op = next().text;
      u->operand = unary();
      return filters(std::move(u));
    }
    return filters(postfix(primary()));
  }

  ExprPtr primary() {
    const Token tok = next();
    switch (tok.kind) {
      case Token::kString: {
        std::string s = tok.text;
        while (peek().kind == Token::kString) s += next().text;  // "a" "b"
        return literal(Value(std::move(s)));
      }
      case Token::kInt:
        try {
          return literal(Value(static_cast<int64_t>(std::stoll(tok.text))));
        } catch (const std::exception&) {
          fail("integer out of range");
        }
      case Token::kFloat:
        return literal(Value(std::stod(tok.text)));
      case Token::kName: {
        if (tok.text == "true" || tok.text == "True") return literal(Value(true));
        if (tok.text == "false" || tok.text == "False") return literal(Value(false));
        if (tok.text == "none" || tok.text == "None") return literal(Value::none());
        auto n = node<Name>(line_);
        n->name = tok.text;
        return n;
      }
      case Token::kOperator:
        if (tok.text == "(") return parenthesized();
        if (tok.text == "[") return list_literal();
        if (tok.text == "{") return dict_literal();
        break;
      case Token::kEnd:
        break;
    }
    --pos_;
    fail("expected a value");
  }

  ExprPtr literal(Value v) {
    auto l = node<Literal>(line_);
    l->value = std::move(v);
    return l;
  }

  ExprPtr parenthesized() {
    if (is_op(")")) {
      ++pos_;
      return node<ListExpr>(line_);
    }
    ExprPtr first = expression();
    if (!is_op(",")) {
      expect_op(")");
      return first;
    }
    auto tuple = node<ListExpr>(line_);
    tuple->items.push_back(std::move(first));
    while (is_op(",")) {
      ++pos_;
      if (is_op(")")) break;
      tuple->items.push_back(expression());
    }
    expect_op(")");
    return tuple;
  }

  ExprPtr list_literal() {
    auto list = node<ListExpr>(line_);
    while (!is_op("]")) {
      list->items.push_back(expression());
      if (!is_op(",")) break;
      ++pos_;
    }
    expect_op("]");
    return list;
  }

  ExprPtr dict_literal() {
    auto dict = node<DictExpr>(line_);
    while (!is_op("}")) {
      ExprPtr key = expression();
      expect_op(":");
      dict->items.emplace_back(std::move(key), expression());
      if (!is_op(",")) break;
      ++pos_;
    }
    expect_op("}");
    return dict;
  }

  ExprPtr postfix(ExprPtr value) {
    while (true) {
      if (is_op(".")) {
        ++pos_;
        auto a = node<Attribute>(line_);
        a->object = std::move(value);
        if (peek().kind == Token::kInt) {
          a->name = next().text;
        } else {
          a->name = expect_name();
        }
        value = std::move(a);
      } else if (is_op("[")) {
        ++pos_;
        value = subscript(std::move(value));
      } else if (is_op("(")) {
        ++pos_;
        auto c = node<Call>(line_);
        c->callee = std::move(value);
        c->args = call_args();
        value = std::move(c);
      } else {
        return value;
      }
    }
  }

  ExprPtr subscript(ExprPtr object) {
    ExprPtr start;
    if (!is_op(":")) start = expression();
    if (!is_op(":")) {
      expect_op("]");
      auto s = node<Subscript>(line_);
      s->object = std::move(object);
      s->index = std::move(start);
      return s;
    }
    auto s = node<Slice>(line_);
    s->object = std::move(object);
    s->start = std::move(start);
    ++pos_;
    if (!is_op(":") && !is_op("]")) s->stop = expression();
    if (is_op(":")) {
      ++pos_;
      if (!is_op("]")) s->step = expression();
    }
    expect_op("]");
    return s;
  }

  bool starts_test_argument() const {
    const Token& t = peek();
    if (t.kind == Token::kString || t.kind == Token::kInt || t.kind == Token::kFloat) return true;
    static const std::set<std::string> stop = {"and", "or", "else", "if", "not", "in", "is"};
    return t.kind == Token::kName && !stop.count(t.text);
  }

  ExprPtr filters(ExprPtr value) {
    while (true) {
      if (is_op("|")) {
        ++pos_;
        auto f = node<Filter>(line_);
        f->value = std::move(value);
        f->name = expect_name();
        if (is_op("(")) {
          ++pos_;
          f->args = call_args();
        }
        value = std::move(f);
      } else if (is_name("is")) {
        ++pos_;
        auto t = node<Test>(line_);
        t->value = std::move(value);
        if (is_name("not")) {
          ++pos_;
          t->negated = true;
        }
        t->name = expect_name();
        if (is_op("(")) {
          ++pos_;
          t->args = call_args();
        } else if (starts_test_argument()) {
          t->args.positional.push_back(postfix(primary()));
        }
        value = std::move(t);
      } else {
        return value;
      }
    }
  }

  std::vector<Token> t_;
  size_t pos_ = 0;
  int line_;
  int depth_ = 0;
  static constexpr int kMaxNesting = 64;
};

class TemplateParser {
 public:
  explicit TemplateParser(std::vector<Segment> segments) : s_(std::move(segments)) {}

  Body parse_all() {
    std::string end;
    Body body = parse_body({}, end);
    return body;
  }

 private:
  // Parses until a statement whose keyword is in `ends`; that keyword is returned in `end`,
  // with pending_ holding its parser (for "elif cond" and the like).
  Body parse_body(const std::set<std::string>& ends, std::string& end) {
    if (++nesting_ > 64) throw TemplateError("blocks nested too deeply");
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{nesting_};
    Body body;
    while (pos_ < s_.size()) {
      const Segment& seg = s_[pos_++];
      if (seg.kind == Segment::kText) {
        auto t = node<TextStmt>(seg.line);
        t->text = seg.content;
        body.push_back(std::move(t));
        continue;
      }
      ExprParser p(lex_expression(seg.content, seg.line), seg.line);
      if (seg.kind == Segment::kExpression) {
        auto o = node<OutputStmt>(seg.line);
        o->value = p.expression();
        p.expect_end();
        body.push_back(std::move(o));
        continue;
      }
      const std::string keyword = p.expect_name();
      if (ends.count(keyword)) {
        end = keyword;
        pending_ = std::make_unique<ExprParser>(std::move(p));
        return body;
      }
      body.push_back(statement(keyword, p, seg.line));
    }
    if (!ends.empty()) {
      throw TemplateError("unexpected end of template: missing {% " + *ends.rbegin() + " %}");
    }
    return body;
  }

  StmtPtr statement(const std::string& keyword, ExprParser& p, int line) {
    if (keyword == "if") return if_statement(p, line);
    if (keyword == "for") return for_statement(p, line);
    if (keyword == "set") return set_statement(p, line);
    if (keyword == "macro") return macro_statement(p, line);
    if (keyword == "call") return call_statement(p, line);
    if (keyword == "filter") return filter_statement(p, line);
    if (keyword == "break" || keyword == "continue") {
      p.expect_end();
      auto s = node<LoopControlStmt>(line);
      s->is_break = keyword == "break";
      return s;
    }
    if (keyword == "generation") {  // HF's assistant-mask marker: renders its body as is
      p.expect_end();
      auto s = node<IfStmt>(line);
      auto always = node<Literal>(line);
      always->value = Value(true);
      std::string end;
      s->branches.emplace_back(std::move(always), parse_body({"endgeneration"}, end));
      return s;
    }
    throw TemplateError("line " + std::to_string(line) + ": unsupported tag '" + keyword + "'");
  }

  StmtPtr if_statement(ExprParser& p, int line) {
    auto s = node<IfStmt>(line);
    ExprPtr condition = p.expression();
    p.expect_end();
    while (true) {
      std::string end;
      Body body = parse_body({"elif", "else", "endif"}, end);
      s->branches.emplace_back(std::move(condition), std::move(body));
      if (end == "endif") break;
      if (end == "else") {
        pending_->expect_end();
        Body else_body = parse_body({"endif"}, end);
        s->branches.emplace_back(nullptr, std::move(else_body));
        break;
      }
      condition = pending_->expression();
      pending_->expect_end();
    }
    return s;
  }

  StmtPtr for_statement(ExprParser& p, int line) {
    auto s = node<ForStmt>(line);
    s->targets = p.name_list();
    if (!p.is_name("in")) p.fail("expected 'in'");
    p.next();
    s->iterable = p.or_expr();
    if (p.is_name("if")) {
      p.next();
      s->filter = p.or_expr();
    }
    if (p.is_name("recursive")) {
      p.next();
      s->recursive = true;
    }
    p.expect_end();
    std::string end;
    s->body = parse_body({"else", "endfor"}, end);
    if (end == "else") s->else_body = parse_body({"endfor"}, end);
    return s;
  }

  StmtPtr set_statement(ExprParser& p, int line) {
    auto s = node<SetStmt>(line);
    s->targets.push_back(p.expect_name());
    if (p.is_op(".")) {
      p.next();
      s->attribute = p.expect_name();
    }
    while (p.is_op(",")) {
      p.next();
      s->targets.push_back(p.expect_name());
    }
    if (p.at_end()) {
      std::string end;
      s->body = parse_body({"endset"}, end);
      return s;
    }
    p.expect_op("=");
    s->value = p.expression();
    if (p.is_op(",")) {  // set a = 1, 2 -> a tuple
      auto tuple = node<ListExpr>(line);
      tuple->items.push_back(std::move(s->value));
      while (p.is_op(",")) {
        p.next();
        tuple->items.push_back(p.expression());
      }
      s->value = std::move(tuple);
    }
    p.expect_end();
    return s;
  }

  std::vector<std::pair<std::string, ExprPtr>> parameters(ExprParser& p) {
    std::vector<std::pair<std::string, ExprPtr>> params;
    p.expect_op("(");
    while (!p.is_op(")")) {
      std::string name = p.expect_name();
      ExprPtr fallback;
      if (p.is_op("=")) {
        p.next();
        fallback = p.expression();
      }
      params.emplace_back(std::move(name), std::move(fallback));
      if (!p.is_op(",")) break;
      p.next();
    }
    p.expect_op(")");
    return params;
  }

  StmtPtr macro_statement(ExprParser& p, int line) {
    auto s = node<MacroStmt>(line);
    s->name = p.expect_name();
    s->params = parameters(p);
    p.expect_end();
    std::string end;
    s->body = std::make_shared<Body>(parse_body({"endmacro"}, end));
    return s;
  }

  StmtPtr call_statement(ExprParser& p, int line) {
    auto s = node<CallBlockStmt>(line);
    if (p.is_op("(")) {
      for (auto& [name, fallback] : parameters(p)) s->caller_params.push_back(name);
    }
    s->call = p.expression();
    p.expect_end();
    std::string end;
    s->body = std::make_shared<Body>(parse_body({"endcall"}, end));
    return s;
  }

  StmtPtr filter_statement(ExprParser& p, int line) {
    auto s = node<FilterBlockStmt>(line);
    s->name = p.expect_name();
    if (p.is_op("(")) {
      p.next();
      s->args = p.call_args();
    }
    p.expect_end();
    std::string end;
    s->body = parse_body({"endfilter"}, end);
    return s;
  }

  std::vector<Segment> s_;
  size_t pos_ = 0;
  std::unique_ptr<ExprParser> pending_;
  int nesting_ = 0;
};

}  // namespace

Body parse_template(const std::string& source) {
  return TemplateParser(split_template(source)).parse_all();
}

}  // namespace pagedllm::jinja
