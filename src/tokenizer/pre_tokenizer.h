// Hugging Face tokenizer.json pre-tokenizers: Split (regex or string, every behaviour, invert),
// ByteLevel, Metaspace, Digits, Punctuation, Whitespace(Split) and Sequence. They cut a
// normalized text segment into the words BPE runs on, and may rewrite them (ByteLevel maps
// bytes to characters, Metaspace spaces to "▁").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tokenizer/unicode_regex.h"

namespace pagedllm {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Refines `words` in place. `text_start`: the first word begins the whole input (no added
  // token before it), which Metaspace's prepend_scheme "first" looks at.
  virtual void apply(std::vector<std::string>& words, bool text_start) const = 0;
  // Whether every input byte survives into some word (Split's "Removed" drops matches).
  virtual bool keeps_every_byte() const { return true; }
  // Whether words come out byte-level encoded (every byte one of 256 characters).
  virtual bool byte_level() const { return false; }
};

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

class SplitPreTokenizer : public PreTokenizer {
 public:
  SplitPreTokenizer(const std::string& pattern, SplitBehavior behavior, bool invert);
  void apply(std::vector<std::string>& words, bool text_start) const override;
  bool keeps_every_byte() const override { return behavior_ != SplitBehavior::kRemoved; }

 private:
  UnicodeRegex regex_;
  SplitBehavior behavior_;
  bool invert_;
};

class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex);
  void apply(std::vector<std::string>& words, bool text_start) const override;
  bool byte_level() const override { return true; }

 private:
  bool add_prefix_space_;
  std::unique_ptr<SplitPreTokenizer> split_;
};

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps)
      : steps_(std::move(steps)) {}
  void apply(std::vector<std::string>& words, bool text_start) const override {
    for (const auto& step : steps_) step->apply(words, text_start);
  }
  bool keeps_every_byte() const override {
    for (const auto& step : steps_)
      if (!step->keeps_every_byte()) return false;
    return true;
  }
  bool byte_level() const override {
    for (const auto& step : steps_)
      if (step->byte_level()) return true;
    return false;
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

// nullptr for a null spec. Throws std::invalid_argument naming an unsupported type.
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& spec);

// GPT-2's split regex, which ByteLevel applies when use_regex is set.
extern const char* const kGpt2SplitRegex;

}  // namespace pagedllm
