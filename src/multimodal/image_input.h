// One image request part, ready for the engine: decoded, preprocessed, counted and hashed.
#pragma once

#include <cstdint>
#include <span>

#include "multimodal/image.h"
#include "multimodal/qwen2vl_image_processor.h"

namespace pagedllm {

// 128-bit XXH3 of what the encoder will see (vLLM's mm_hash): the grid and the pixel values.
// Equal pixels give equal hashes whatever file format carried them; other per-request pixel
// bounds give other pixels and so another hash. Prefix caching keys image blocks with it.
struct ImageHash {
  uint64_t low = 0;
  uint64_t high = 0;
  bool operator==(const ImageHash&) const = default;
};

ImageHash image_content_hash(const ProcessedImage& image);

struct PreparedImage {
  ProcessedImage processed;
  int64_t num_tokens = 0;  // <|image_pad|> tokens: num_image_tokens(grid, merge_size)
  ImageHash hash;
  int source_width = 0;  // as decoded, before resizing
  int source_height = 0;
};

// decode_image, qwen2vl_preprocess_image, num_image_tokens and image_content_hash in one call.
// Throws ImageError for bad bytes or sizes.
PreparedImage prepare_qwen2vl_image(std::span<const uint8_t> bytes,
                                    const Qwen2VLImageProcessorConfig& config,
                                    const ImagePixelOverrides& overrides = {},
                                    const ImageDecodeOptions& decode = {},
                                    AlphaHandling alpha = AlphaHandling::kDrop);

// The same for pixels already decoded.
PreparedImage prepare_qwen2vl_image(const Image& image, const Qwen2VLImageProcessorConfig& config,
                                    const ImagePixelOverrides& overrides = {},
                                    AlphaHandling alpha = AlphaHandling::kDrop);

}  // namespace pagedllm
