// Hugging Face tokenizer.json decoders (ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip
// and Sequence), run one token at a time so text can stream: each token's piece becomes bytes,
// and the steps that only touch the start of the text (Metaspace's prefix space, Strip after
// Fuse) apply only when the token starts the text.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tokenizer/replace_pattern.h"

namespace pagedllm {

class Decoder {
 public:
  struct Step {
    enum Kind { kByteLevel, kReplace, kByteFallback, kMetaspace, kStrip } kind;
    std::shared_ptr<ReplacePattern> replace;
    std::string content;           // Strip: the character; Metaspace: the replacement
    int start = 0, stop = 0;       // Strip counts
    bool text_start_only = false;  // Strip after Fuse; Metaspace's prefix removal
  };

  // nullptr spec: pieces are emitted as they are.
  explicit Decoder(const nlohmann::json& spec);
  Decoder() = default;
  static Decoder byte_level();

  // The bytes `piece` stands for; `text_start` when it is the first token of the text.
  std::string decode(const std::string& piece, bool text_start) const;

 private:
  void add(const nlohmann::json& spec, bool after_fuse);
  std::vector<Step> steps_;
};

}  // namespace pagedllm
