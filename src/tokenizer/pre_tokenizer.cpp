#include "tokenizer/pre_tokenizer.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tokenizer/byte_level.h"
#include "tokenizer/replace_pattern.h"

namespace pagedllm {

const char* const kGpt2SplitRegex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

const std::string kMetaspace = "\xE2\x96\x81";  // U+2581

struct Span {
  size_t begin, end;
  bool matched;
};

// Cuts `word` into matched and unmatched spans covering it.
std::vector<Span> spans_of(const UnicodeRegex& regex, const std::string& word, bool invert) {
  std::vector<Span> spans;
  size_t last = 0;
  for (const auto& [b, e] : regex.find_all(word)) {
    if (b > last) spans.push_back({last, b, invert});
    spans.push_back({b, e, !invert});
    last = e;
  }
  if (last < word.size()) spans.push_back({last, word.size(), invert});
  return spans;
}

}  // namespace

SplitPreTokenizer::SplitPreTokenizer(const std::string& pattern, SplitBehavior behavior,
                                     bool invert)
    : regex_(pattern), behavior_(behavior), invert_(invert) {}

void SplitPreTokenizer::apply(std::vector<std::string>& words, bool) const {
  std::vector<std::string> out;
  out.reserve(words.size() * 2);
  for (const std::string& word : words) {
    const std::vector<Span> spans = spans_of(regex_, word, invert_);
    std::string pending;  // MergedWithNext: matches waiting for the next piece
    for (size_t i = 0; i < spans.size(); ++i) {
      const Span& s = spans[i];
      std::string piece = word.substr(s.begin, s.end - s.begin);
      switch (behavior_) {
        case SplitBehavior::kRemoved:
          if (!s.matched) out.push_back(std::move(piece));
          break;
        case SplitBehavior::kIsolated:
          out.push_back(std::move(piece));
          break;
        case SplitBehavior::kMergedWithPrevious:
          if (s.matched && i > 0) {
            out.back() += piece;
          } else {
            out.push_back(std::move(piece));
          }
          break;
        case SplitBehavior::kMergedWithNext:
          if (s.matched && i + 1 < spans.size()) {
            pending += piece;
          } else {
            out.push_back(pending + piece);
            pending.clear();
          }
          break;
        case SplitBehavior::kContiguous:
          if (s.matched && i > 0 && spans[i - 1].matched) {
            out.back() += piece;
          } else {
            out.push_back(std::move(piece));
          }
          break;
      }
    }
  }
  words = std::move(out);
}

ByteLevelPreTokenizer::ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
    : add_prefix_space_(add_prefix_space) {
  if (use_regex) {
    split_ = std::make_unique<SplitPreTokenizer>(kGpt2SplitRegex, SplitBehavior::kIsolated, false);
  }
}

void ByteLevelPreTokenizer::apply(std::vector<std::string>& words, bool text_start) const {
  if (add_prefix_space_ && !words.empty() && !words.front().empty() && words.front()[0] != ' ') {
    words.front().insert(0, " ");
  }
  if (split_) split_->apply(words, text_start);
  for (std::string& w : words) w = byte_level_encode(w);
}

namespace {

// Metaspace: spaces become "▁", a "▁" is prepended (always, or only at the text's start), and
// with split the text is cut before every "▁".
class MetaspacePreTokenizer : public PreTokenizer {
 public:
  MetaspacePreTokenizer(std::string replacement, std::string scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(std::move(scheme)), split_(split) {}

  void apply(std::vector<std::string>& words, bool text_start) const override {
    std::vector<std::string> out;
    for (size_t i = 0; i < words.size(); ++i) {
      std::string w;
      for (char c : words[i]) {
        if (c == ' ') {
          w += replacement_;
        } else {
          w += c;
        }
      }
      const bool prepend = scheme_ == "always" || (scheme_ == "first" && text_start && i == 0);
      if (prepend && w.compare(0, replacement_.size(), replacement_) != 0)
        w.insert(0, replacement_);
      if (!split_) {
        out.push_back(std::move(w));
        continue;
      }
      size_t start = 0;
      for (size_t at = w.find(replacement_, 1); at != std::string::npos;
           at = w.find(replacement_, at + 1)) {
        out.push_back(w.substr(start, at - start));
        start = at;
      }
      out.push_back(w.substr(start));
    }
    words = std::move(out);
  }
  bool keeps_every_byte() const override { return !replacement_.empty(); }

 private:
  std::string replacement_, scheme_;
  bool split_;
};

std::unique_ptr<PreTokenizer> isolate(const std::string& pattern, SplitBehavior behavior) {
  return std::make_unique<SplitPreTokenizer>(pattern, behavior, false);
}

SplitBehavior parse_behavior(const std::string& name) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  throw std::invalid_argument("unknown Split behavior '" + name + "'");
}

std::unique_ptr<PreTokenizer> make_metaspace(const nlohmann::json& spec) {
  std::string scheme = spec.value("prepend_scheme", std::string());
  if (scheme.empty()) scheme = spec.value("add_prefix_space", true) ? "always" : "never";
  return std::make_unique<MetaspacePreTokenizer>(spec.value("replacement", kMetaspace), scheme,
                                                 spec.value("split", true));
}

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& spec) {
  if (spec.is_null()) return nullptr;
  const std::string type = spec.at("type").get<std::string>();
  if (type == "Split") {
    const auto& pattern = spec.at("pattern");
    const std::string regex = pattern.contains("Regex")
                                  ? pattern.at("Regex").get<std::string>()
                                  : regex_escape(pattern.at("String").get<std::string>());
    return std::make_unique<SplitPreTokenizer>(
        regex, parse_behavior(spec.at("behavior").get<std::string>()), spec.value("invert", false));
  }
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevelPreTokenizer>(spec.value("add_prefix_space", true),
                                                   spec.value("use_regex", true));
  }
  if (type == "Metaspace") return make_metaspace(spec);
  if (type == "Digits") {
    return isolate(spec.value("individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)",
                   SplitBehavior::kIsolated);
  }
  if (type == "Punctuation") return isolate(R"(\p{P})", SplitBehavior::kIsolated);
  if (type == "WhitespaceSplit") return isolate(R"(\s+)", SplitBehavior::kRemoved);
  if (type == "Whitespace") {
    return std::make_unique<SplitPreTokenizer>(R"(\w+|[^\w\s]+)", SplitBehavior::kRemoved, true);
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (const auto& s : spec.at("pretokenizers")) {
      if (auto p = make_pre_tokenizer(s)) steps.push_back(std::move(p));
    }
    return std::make_unique<SequencePreTokenizer>(std::move(steps));
  }
  throw std::invalid_argument("unsupported pre_tokenizer type '" + type + "'");
}

}  // namespace pagedllm
