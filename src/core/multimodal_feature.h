// An image in a request, as the core sees it (vLLM's MultiModalFeatureSpec): where its
// embeddings go in the prompt and what identifies them. The pixels ride along for the worker's
// encoder; the core never reads them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pagedllm {

// What the vision encoder reads for one image: its patches and their grid (Qwen2-VL layout).
struct EncoderInput {
  std::vector<float> pixel_values;
  int64_t grid_t = 1;
  int64_t grid_h = 0;
  int64_t grid_w = 0;
};

struct MultiModalFeature {
  // The content hash: the encoder cache's key and an extra key of the prefix-cache blocks the
  // image's tokens fall in, so the same text with another image never shares KV.
  std::string identifier;
  // The placeholder tokens [offset, offset + length) of the prompt, one encoder output row each.
  int64_t offset = 0;
  int64_t length = 0;
  std::shared_ptr<const EncoderInput> input;

  int64_t end() const { return offset + length; }
};

}  // namespace pagedllm
