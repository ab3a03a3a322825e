// Every chat template in ../shared/vectors/chat-templates renders byte for byte as Python's
// Jinja2 rendered it (expected/*.expected.json), for each conversation, with and without
// add_generation_prompt; where Jinja2 raised, pagedllm raises too.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "chat/chat_template.h"
#include "test_paths.h"

namespace pagedllm {
namespace {

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string templates_dir() {
  return test::shared_dir() + "/vectors/chat-templates";
}

// Called while the test list is built (ctest lists the tests before running any), so a missing
// directory gives no names here rather than an exception; TemplatesArePresent reports it.
std::vector<std::string> template_names() {
  std::vector<std::string> names;
  std::error_code missing;
  for (const auto& e : std::filesystem::directory_iterator(templates_dir(), missing)) {
    if (e.path().extension() == ".jinja") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class ChatTemplateVectors : public ::testing::TestWithParam<std::string> {};

TEST(ChatTemplateVectorsDir, TemplatesArePresent) {
  ASSERT_TRUE(std::filesystem::is_directory(templates_dir()))
      << templates_dir() << " is missing: clone the project beside ../shared or set "
      << "PAGEDLLM_SHARED_DIR";
  EXPECT_FALSE(template_names().empty());
}

TEST_P(ChatTemplateVectors, RendersAsPythonJinja2) {
  const std::string dir = templates_dir() + "/";
  const auto expected =
      nlohmann::ordered_json::parse(read_all(dir + "expected/" + GetParam() + ".expected.json"));
  const ChatTemplate tmpl(read_all(dir + GetParam() + ".jinja"));
  for (const auto& [conversation, messages] : expected["conversations"].items()) {
    for (bool gen : {false, true}) {
      const std::string key = conversation + (gen ? "|gen" : "|nogen");
      ChatTemplateInputs in;
      in.messages = messages;
      in.add_generation_prompt = gen;
      in.bos_token = "<s>";
      in.eos_token = "</s>";
      in.date = "2026-01-02";
      if (!expected["rendered"].contains(key)) {
        EXPECT_THROW(tmpl.render(in), TemplateError) << key;
        continue;
      }
      try {
        EXPECT_EQ(tmpl.render(in), expected["rendered"][key].get<std::string>()) << key;
      } catch (const TemplateError& e) {
        ADD_FAILURE() << key << ": " << e.what();
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shared, ChatTemplateVectors, ::testing::ValuesIn(template_names()),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace pagedllm
