#include "multimodal/resize.h"

#include <cmath>
#include <string>
#include <vector>

namespace pagedllm {

namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

double bicubic_kernel(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

// For each output index: the first input index, how many inputs it reads, and their fixed-point
// weights (PIL's precompute_coeffs and normalize_coeffs_8bpc).
struct Coefficients {
  int taps = 0;  // weights per output index (the widest kernel)
  std::vector<int> first, count;
  std::vector<int32_t> weights;  // [out_size][taps]
};

Coefficients precompute(int in_size, int out_size) {
  constexpr double kSupport = 2.0;
  const double scale = static_cast<double>(in_size) / out_size;
  const double filter_scale = scale < 1.0 ? 1.0 : scale;
  const double support = kSupport * filter_scale;
  Coefficients k;
  k.taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  k.first.resize(out_size);
  k.count.resize(out_size);
  k.weights.assign(static_cast<size_t>(out_size) * k.taps, 0);
  std::vector<double> w(k.taps);
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = (xx + 0.5) * scale;
    const double inverse_scale = 1.0 / filter_scale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double sum = 0.0;
    for (int x = 0; x < xmax; ++x) {
      w[x] = bicubic_kernel((x + xmin - center + 0.5) * inverse_scale);
      sum += w[x];
    }
    for (int x = 0; x < xmax; ++x) {
      const double normalised = sum != 0.0 ? w[x] / sum : w[x];
      const double fixed = normalised * (1 << kPrecisionBits);
      k.weights[static_cast<size_t>(xx) * k.taps + x] =
          static_cast<int32_t>(normalised < 0 ? -0.5 + fixed : 0.5 + fixed);
    }
    k.first[xx] = xmin;
    k.count[xx] = xmax;
  }
  return k;
}

uint8_t clip8(int32_t sum) {
  const int32_t v = sum >> kPrecisionBits;  // arithmetic shift: floor, as PIL's clip8
  return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

Image resize_horizontal(const Image& in, int width) {
  const Coefficients k = precompute(in.width, width);
  Image out(width, in.height, in.channels);
  const int c = in.channels;
  for (int y = 0; y < in.height; ++y) {
    const uint8_t* row = &in.pixels[static_cast<size_t>(y) * in.width * c];
    uint8_t* dst = &out.pixels[static_cast<size_t>(y) * width * c];
    for (int xx = 0; xx < width; ++xx) {
      const int32_t* w = &k.weights[static_cast<size_t>(xx) * k.taps];
      const uint8_t* src = row + static_cast<size_t>(k.first[xx]) * c;
      for (int ch = 0; ch < c; ++ch) {
        int32_t sum = 1 << (kPrecisionBits - 1);
        for (int x = 0; x < k.count[xx]; ++x) sum += src[x * c + ch] * w[x];
        dst[xx * c + ch] = clip8(sum);
      }
    }
  }
  return out;
}

Image resize_vertical(const Image& in, int height) {
  const Coefficients k = precompute(in.height, height);
  Image out(in.width, height, in.channels);
  const size_t row_size = static_cast<size_t>(in.width) * in.channels;
  std::vector<int32_t> sums(row_size);
  for (int yy = 0; yy < height; ++yy) {
    const int32_t* w = &k.weights[static_cast<size_t>(yy) * k.taps];
    std::fill(sums.begin(), sums.end(), 1 << (kPrecisionBits - 1));
    for (int y = 0; y < k.count[yy]; ++y) {
      const uint8_t* src = &in.pixels[(k.first[yy] + y) * row_size];
      for (size_t i = 0; i < row_size; ++i) sums[i] += src[i] * w[y];
    }
    uint8_t* dst = &out.pixels[yy * row_size];
    for (size_t i = 0; i < row_size; ++i) dst[i] = clip8(sums[i]);
  }
  return out;
}

}  // namespace

Image resize_bicubic(const Image& image, int width, int height) {
  if (width <= 0 || height <= 0) {
    throw ImageError("resize: invalid target size " + std::to_string(width) + "x" +
                     std::to_string(height));
  }
  // PIL resamples horizontally first, then vertically from that uint8 result.
  const Image* source = &image;
  Image horizontal;
  if (width != image.width) {
    horizontal = resize_horizontal(image, width);
    source = &horizontal;
  }
  if (height != image.height) return resize_vertical(*source, height);
  return *source;
}

}  // namespace pagedllm
