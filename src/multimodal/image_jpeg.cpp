// JPEG through libjpeg-turbo with its defaults (islow DCT, fancy upsampling), as PIL decodes.
// libjpeg reports errors by longjmp, so the decoding runs in a function whose frame owns nothing
// that needs a destructor.
#include <cstdio>
// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>
// jerror.h after jpeglib.h: the message codes (JWRN_JPEG_EOF).
#include <jerror.h>

#include <algorithm>
#include <csetjmp>
#include <string>
#include <vector>

#include "multimodal/image.h"

namespace pagedllm {

namespace {

// Progressive files can ask for thousands of scans over the same pixels (a "scan bomb");
// libjpeg-turbo's own tools refuse more than this many.
constexpr int kMaxScans = 500;

struct JpegErrors {
  jpeg_error_mgr manager;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = "";
};

[[noreturn]] void jpeg_fail(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

// Warnings pass, as in PIL, except the end of data arriving early: libjpeg would fill the rest
// with gray, where PIL refuses the file as truncated.
void jpeg_message(j_common_ptr cinfo, int level) {
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) jpeg_fail(cinfo);
}

void jpeg_progress(j_common_ptr cinfo) {
  auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->input_scan_number > kMaxScans) {
    auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
    std::snprintf(errors->message, sizeof errors->message, "more than %d scans", kMaxScans);
    std::longjmp(errors->jump, 1);
  }
}

// PIL's cmyk2rgb on Adobe's inverted CMYK (PIL always reads CMYK JPEGs as "CMYK;I").
uint8_t cmyk_channel(int inverted_c, int inverted_k) {
  const int c = 255 - inverted_c, nk = inverted_k;  // nk = 255 - k
  const int t = c * nk + 128;
  const int v = nk - (((t >> 8) + t) >> 8);
  return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

void read_jpeg_body(jpeg_decompress_struct& cinfo, std::span<const uint8_t> bytes,
                    const ImageDecodeOptions& options, Image& image, std::vector<uint8_t>& row) {
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  check_image_size(cinfo.image_width, cinfo.image_height, options.max_pixels, "JPEG");
  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  const bool gray = cinfo.jpeg_color_space == JCS_GRAYSCALE;
  cinfo.out_color_space = cmyk ? JCS_CMYK : gray ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&cinfo);
  const int width = static_cast<int>(cinfo.output_width);
  image = Image(width, static_cast<int>(cinfo.output_height), gray ? 1 : 3);
  row.resize(static_cast<size_t>(width) * cinfo.output_components);
  while (cinfo.output_scanline < cinfo.output_height) {
    const size_t y = cinfo.output_scanline;
    JSAMPROW rows[1] = {row.data()};
    jpeg_read_scanlines(&cinfo, rows, 1);
    uint8_t* out = image.pixels.data() + y * width * image.channels;
    if (!cmyk) {
      std::copy(row.begin(), row.end(), out);
      continue;
    }
    for (int x = 0; x < width; ++x) {
      const uint8_t* p = &row[4 * x];
      for (int k = 0; k < 3; ++k) out[3 * x + k] = cmyk_channel(p[k], p[3]);
    }
  }
  // Not jpeg_finish_decompress: the pixels are complete, and PIL ignores what follows them.
}

// Returns false after a libjpeg error (the message is in errors.message). The work is in a
// callee, so no local of this frame is live across the longjmp.
bool read_jpeg(jpeg_decompress_struct& cinfo, JpegErrors& errors, std::span<const uint8_t> bytes,
               const ImageDecodeOptions& options, Image& image, std::vector<uint8_t>& row) {
  if (setjmp(errors.jump)) return false;
  read_jpeg_body(cinfo, bytes, options, image, row);
  return true;
}

}  // namespace

Image decode_jpeg(std::span<const uint8_t> bytes, const ImageDecodeOptions& options) {
  jpeg_decompress_struct cinfo{};
  JpegErrors errors;
  cinfo.err = jpeg_std_error(&errors.manager);
  errors.manager.error_exit = jpeg_fail;
  errors.manager.emit_message = jpeg_message;
  jpeg_progress_mgr progress{};
  progress.progress_monitor = jpeg_progress;
  jpeg_create_decompress(&cinfo);
  cinfo.progress = &progress;
  struct Destroy {
    jpeg_decompress_struct* cinfo;
    ~Destroy() { jpeg_destroy_decompress(cinfo); }
  } destroy{&cinfo};
  Image image;
  std::vector<uint8_t> row;
  if (!read_jpeg(cinfo, errors, bytes, options, image, row)) {
    throw ImageError(std::string("JPEG: ") + errors.message);
  }
  return image;
}

}  // namespace pagedllm
