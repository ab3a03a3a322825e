// A template's rendering is bounded: loops over huge ranges, loops nested within each other and
// output that grows without end stop with a TemplateError naming the limit, in moments rather
// than hours, and an ordinary template renders as before.
#include <gtest/gtest.h>

#include "chat/chat_template.h"

namespace pagedllm {
namespace {

std::string render(const std::string& source) {
  ChatTemplateInputs in;
  in.messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", "hi"}}});
  return ChatTemplate(source).render(in);
}

void expect_limit(const std::string& source, const std::string& limit) {
  try {
    render(source);
    FAIL() << "rendered without hitting a limit: " << source;
  } catch (const TemplateError& e) {
    EXPECT_NE(std::string(e.what()).find(limit), std::string::npos) << e.what();
  }
}

TEST(ChatTemplateLimits, NestedHugeLoopsStopAtTheStepLimit) {
  expect_limit("{% for i in range(1000000) %}{% for j in range(1000000) %}{% endfor %}{% endfor %}",
               "limit of 2000000 steps");
  expect_limit(
      "{% for m in messages %}{% for i in range(999999) %}{% for j in range(999999) %}"
      "{% if j > 5 %}{% endif %}{% endfor %}{% endfor %}{% endfor %}",
      "steps");
}

TEST(ChatTemplateLimits, OutputThatGrowsWithoutEndStops) {
  expect_limit("{% for i in range(100000) %}{{ 'x' * 100000 }}{% endfor %}", "MiB");
}

TEST(ChatTemplateLimits, OrdinaryTemplatesAreUnaffected) {
  EXPECT_EQ(render("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"), "<user>hi");
  // A loop of 100,000 steps stays well within the limit.
  EXPECT_EQ(render("{% set n = namespace(c=0) %}{% for i in range(100000) %}"
                   "{% set n.c = n.c + 1 %}{% endfor %}{{ n.c }}"),
            "100000");
}

}  // namespace
}  // namespace pagedllm
