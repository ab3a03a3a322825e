// libFuzzer target: an image_url part's URL as the server reads it (data: URLs, file:// paths
// confined to a directory, the refusal of other schemes), on arbitrary text. http(s) URLs are
// left out: the fuzzer does not reach the network. Only ImageSourceError may come out.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "server/image_source.h"

namespace {

bool is_http(std::string_view url) {
  auto lower = [](std::string_view s) {
    std::string out(s.substr(0, 8));
    for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    return out;
  };
  const std::string head = lower(url);
  return head.starts_with("http://") || head.starts_with("https://");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pagedllm::server;
  static const ImageSourceOptions options = [] {
    ImageSourceOptions o;
    o.max_bytes = 1 << 18;
    o.allowed_local_media_path = std::filesystem::temp_directory_path().string();
    return o;
  }();
  const std::string_view url(reinterpret_cast<const char*>(data), size);
  if (is_http(url)) return 0;
  try {
    if (read_image_url(url, options).size() > options.max_bytes) __builtin_trap();
  } catch (const ImageSourceError&) {
  }
  try {
    const std::string path = file_url_path(url);
    if (path.empty() || path[0] != '/' || path.find('\0') != std::string::npos) __builtin_trap();
  } catch (const ImageSourceError&) {
  }
  return 0;
}
