// Bicubic resampling equal to PIL's Image.resize(size, Image.BICUBIC) on 8-bit images, which
// Hugging Face's image processors call (Pillow's Resample.c, read for its arithmetic): a
// separable convolution, horizontal pass first, with the cubic kernel a = -0.5 stretched by the
// scale when shrinking (support 2 * scale), weights normalised per output pixel and then rounded
// to 22-bit fixed point, sums rounded and clipped to uint8 after each pass. A pass whose size
// does not change is skipped, as in PIL.
#pragma once

#include "multimodal/image.h"

namespace pagedllm {

// Any channel count; throws ImageError unless width, height > 0.
Image resize_bicubic(const Image& image, int width, int height);

}  // namespace pagedllm
