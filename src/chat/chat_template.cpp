#include "chat/chat_template.h"

#include <ctime>

#include "chat/jinja_ast.h"
#include "chat/jinja_context.h"

namespace pagedllm {

namespace {

using jinja::Arguments;
using jinja::Function;
using jinja::Value;

std::tm date_for(const std::string& date) {
  std::tm tm{};
  if (date.empty()) {
    const std::time_t now = std::time(nullptr);
    localtime_r(&now, &tm);
    return tm;
  }
  int y = 0, m = 0, d = 0;
  if (std::sscanf(date.c_str(), "%d-%d-%d", &y, &m, &d) != 3 || m < 1 || m > 12 || d < 1 ||
      d > 31) {
    throw TemplateError("date must be YYYY-MM-DD, got '" + date + "'");
  }
  tm.tm_year = y - 1900;
  tm.tm_mon = m - 1;
  tm.tm_mday = d;
  std::mktime(&tm);  // fills in the weekday and day of the year
  return tm;
}

}  // namespace

struct ChatTemplate::Compiled {
  jinja::Body body;
};

ChatTemplate::ChatTemplate(const std::string& source)
    : compiled_(std::make_unique<Compiled>(Compiled{jinja::parse_template(source)})) {}
ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;

std::string ChatTemplate::render(const ChatTemplateInputs& in) const {
  std::unordered_map<std::string, Value> globals;
  jinja::add_builtin_globals(globals);
  for (const auto& [k, v] : in.extra.items()) globals[k] = Value::from_json(v);
  globals["messages"] = Value::from_json(in.messages);
  globals["tools"] = Value::from_json(in.tools);
  globals["add_generation_prompt"] = Value(in.add_generation_prompt);
  globals["bos_token"] = Value(in.bos_token);
  globals["eos_token"] = Value(in.eos_token);
  globals["raise_exception"] = Value(Function([](const Arguments& a) -> Value {
    throw TemplateError(a.positional.empty() ? "raise_exception" : a.positional[0].str());
  }));
  const std::tm tm = date_for(in.date);
  globals["strftime_now"] = Value(Function([tm](const Arguments& a) {
    const std::string fmt = a.positional.empty() ? "" : a.positional[0].str();
    char buf[256];
    const size_t n = std::strftime(buf, sizeof(buf), fmt.c_str(), &tm);
    return Value(std::string(buf, n));
  }));
  jinja::Context ctx(std::move(globals));
  ctx.push_scope();  // the template's own top level, above the inputs
  std::string out;
  jinja::render_body(compiled_->body, ctx, out);
  return out;
}

}  // namespace pagedllm
