#include "tokenizer/corpus.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

namespace pagedllm::test {

namespace {

const std::vector<std::string> kFragments = {
    // English and contractions
    "Hello",
    "world",
    "The quick brown fox jumps over the lazy dog.",
    "I'm",
    "you'LL",
    "they've",
    "it's",
    "DON'T",
    "Once upon a time",
    "   indented",
    "end.",
    "e.g.",
    "U.S.A.",
    "naïve café",
    // code
    "def f(x):\n    return x**2\n",
    "for (int i = 0; i < n; ++i) {",
    "}\n",
    "std::vector<int>",
    "if (a != b && c >= d) { return -1; }",
    "console.log(`${x}`);",
    "#include <stdio.h>",
    "SELECT * FROM t WHERE id=42;",
    "a_b_c",
    "__init__",
    "0x7fff",
    "$HOME/.config",
    "=>",
    "::",
    // CJK and other scripts
    "日本語のテキスト",
    "中文字符测试",
    "한국어 문장입니다",
    "ｆｕｌｌｗｉｄｔｈ",
    "我爱你",
    "。、",
    "مرحبا بالعالم",
    "السلام عليكم",
    "नमस्ते दुनिया",
    "Привет, мир",
    "Γειά σου Κόσμε",
    "שלום",
    "ไทย",
    "Tiếng Việt có dấu",
    // emoji: plain, ZWJ sequences, skin tones, flags, keycaps
    "🙂",
    "👍🏽",
    "👨‍👩‍👧‍👦",
    "🏳️‍🌈",
    "🇯🇵",
    "1️⃣",
    "🤖🦙",
    "❤️",
    // whitespace runs
    " ",
    "  ",
    "    ",
    "\t",
    "\t\t",
    "\n",
    "\n\n",
    "\r\n",
    "\n \n",
    "   \n\n   ",
    "\u00a0",
    "\u3000",
    "\u2009",
    "\v",
    "\f",
    // digits
    "0",
    "12",
    "123",
    "1234",
    "1234567890",
    "3.14159",
    "1,000,000",
    "٣٤٥",
    "²",
    "Ⅻ",
    // special-token text
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|eot_id|>",
    "<|start_header_id|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|endoftext|>",
    "<s>",
    "</s>",
    "<unk>",
    "<|",
    "|>",
    "<think>",
    // odd Unicode: combining marks, zero-width, replacement, private use, noncharacters. (Not
    // U+FEFF: JavaScript's \s counts it as a space, Rust's and PCRE2's Unicode \s do not, so
    // transformers.js splits it differently from the Hugging Face tokenizers models run with.)
    "e\u0301",
    "\u0301",
    "a\u200bb",
    "\u200d",
    "\ufffd",
    "\ue000",
    "\uffff",
    "\ufffe",
    "\U0010fffd",
    "\u202e",
    "Å",
    "A\u030a",
    "ﬁ",
    "ß",
    "İ",
    "ſ",
    "\x01",
    "\x7f",
};

std::vector<std::string> generated_texts(size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const size_t parts = 1 + rng() % 8;
    std::string s;
    for (size_t p = 0; p < parts; ++p) {
      if (p > 0 && rng() % 3 == 0) s += ' ';
      s += kFragments[rng() % kFragments.size()];
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::string> doc_texts(size_t count) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/usr/share/doc", ec)) {
    const fs::path copyright = entry.path() / "copyright";
    if (fs::is_regular_file(copyright, ec)) files.push_back(copyright);
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> out;
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string line, paragraph;
    while (out.size() < count && std::getline(in, line)) {
      paragraph += line + "\n";
      if (line.empty() || paragraph.size() > 400) {
        if (paragraph.size() > 1) out.push_back(paragraph);
        paragraph.clear();
      }
    }
    if (out.size() >= count) break;
  }
  return out;
}

}  // namespace

std::vector<std::string> tokenizer_corpus(size_t generated, size_t from_docs, unsigned seed) {
  std::vector<std::string> corpus = generated_texts(generated, seed);
  for (std::string& s : doc_texts(from_docs)) {
    // Keep only valid UTF-8 (a few copyright files are Latin-1): the references take strings.
    try {
      (void)nlohmann::json(s).dump();
      corpus.push_back(std::move(s));
    } catch (const nlohmann::json::exception&) {
    }
  }
  return corpus;
}

void write_jsonl(const std::string& path, const std::vector<std::string>& texts) {
  std::ofstream out(path, std::ios::binary);
  for (const std::string& t : texts) out << nlohmann::json{{"text", t}}.dump() << "\n";
}

std::string run_command(const std::string& command) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    ADD_FAILURE() << "cannot run: " << command;
    return output;
  }
  std::array<char, 65536> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), n);
  const int status = pclose(pipe);
  EXPECT_EQ(status, 0) << "command failed: " << command;
  return output;
}

}  // namespace pagedllm::test
