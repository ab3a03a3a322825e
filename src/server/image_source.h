// Where an image_url part's bytes come from: a data: URL (base64), an http(s):// URL fetched
// with libcurl, or a file:// path inside the one directory the server allows (vLLM's
// --allowed-local-media-path). The server runs this on its HTTP threads, never on the engine's.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace pagedllm::server {

struct ImageSourceOptions {
  double connect_timeout_s = 5;         // to open the connection
  double timeout_s = 10;                // for the whole transfer, redirects included
  size_t max_bytes = size_t{20} << 20;  // an image's bytes, whatever their source
  int max_redirects = 5;
  // Hosts http(s) URLs (and every redirect) may name, lower case (vLLM's
  // --allowed-media-domains); empty: any.
  std::vector<std::string> allowed_domains;
  // file:// URLs are refused unless this names a directory; only files under it are read.
  std::string allowed_local_media_path;
};

// A URL that gives no image bytes; what() is one line naming the reason.
class ImageSourceError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The bytes behind `url`. Throws ImageSourceError. A download also stops when the calling
// thread's interruption checks (util/interrupt.h) throw; their exception is rethrown.
std::vector<uint8_t> read_image_url(std::string_view url, const ImageSourceOptions& options);

// The directory for allowed_local_media_path, canonical (symlinks resolved); throws
// ImageSourceError when it is not an existing directory. serve checks its flag with it.
std::string canonical_media_directory(const std::string& path);

// The path of a file:// URL: "file:///a%20b" -> "/a b" ("file://localhost/..." too). Throws
// ImageSourceError for another host, a relative path, bad %-escapes or a NUL byte.
std::string file_url_path(std::string_view url);

}  // namespace pagedllm::server
