#include "multimodal/image_input.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include "multimodal/mrope.h"

namespace pagedllm {

ImageHash image_content_hash(const ProcessedImage& image) {
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  const int64_t shape[5] = {image.grid.t, image.grid.h, image.grid.w, image.num_patches,
                            image.patch_dim};
  XXH3_128bits_update(&state, shape, sizeof shape);
  XXH3_128bits_update(&state, image.pixel_values.data(), image.pixel_values.size() * sizeof(float));
  const XXH128_hash_t hash = XXH3_128bits_digest(&state);
  return {hash.low64, hash.high64};
}

PreparedImage prepare_qwen2vl_image(const Image& image, const Qwen2VLImageProcessorConfig& config,
                                    const ImagePixelOverrides& overrides, AlphaHandling alpha) {
  PreparedImage prepared;
  prepared.source_width = image.width;
  prepared.source_height = image.height;
  prepared.processed = qwen2vl_preprocess_image(image, config, overrides, alpha);
  prepared.num_tokens = num_image_tokens(prepared.processed.grid, config.merge_size);
  prepared.hash = image_content_hash(prepared.processed);
  return prepared;
}

PreparedImage prepare_qwen2vl_image(std::span<const uint8_t> bytes,
                                    const Qwen2VLImageProcessorConfig& config,
                                    const ImagePixelOverrides& overrides,
                                    const ImageDecodeOptions& decode, AlphaHandling alpha) {
  return prepare_qwen2vl_image(decode_image(bytes, decode), config, overrides, alpha);
}

}  // namespace pagedllm
