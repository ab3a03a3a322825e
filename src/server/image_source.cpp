#include "server/image_source.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <sstream>

#include "multimodal/data_url.h"
#include "util/interrupt.h"

namespace pagedllm::server {

namespace {

bool has_scheme(std::string_view url, std::string_view scheme) {
  if (url.size() < scheme.size()) return false;
  for (size_t i = 0; i < scheme.size(); ++i) {
    const char c = url[i];
    const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    if (lower != scheme[i]) return false;
  }
  return true;
}

// The URL as error messages quote it: long ones cut.
std::string quoted_url(std::string_view url) {
  constexpr size_t kLongest = 100;
  if (url.size() <= kLongest) return "'" + std::string(url) + "'";
  return "'" + std::string(url.substr(0, kLongest)) + "...'";
}

std::string seconds_text(double s) {
  std::ostringstream out;
  out << s << " s";
  return out.str();
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    const int hi = i + 2 < text.size() ? hex_digit(text[i + 1]) : -1;
    const int lo = i + 2 < text.size() ? hex_digit(text[i + 2]) : -1;
    if (hi < 0 || lo < 0) throw ImageSourceError("file URL: bad %-escape in the path");
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

// ---- file:// ----

std::string real_path(const std::string& path) {
  char resolved[PATH_MAX];
  if (!::realpath(path.c_str(), resolved))
    throw ImageSourceError("cannot open " + path + ": " + std::strerror(errno));
  return resolved;
}

std::vector<uint8_t> read_regular_file(const std::string& path, size_t max_bytes) {
  // O_NOFOLLOW: the path was resolved, so a symlink here appeared since; refuse it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) throw ImageSourceError("cannot open " + path + ": " + std::strerror(errno));
  std::unique_ptr<int, void (*)(int*)> closer(new int(fd), [](int* f) {
    ::close(*f);
    delete f;
  });
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw ImageSourceError(path + " is not a regular file");
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    throw ImageSourceError(path + " has " + std::to_string(st.st_size) +
                           " bytes, more than the limit of " + std::to_string(max_bytes));
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw ImageSourceError("cannot read " + path);
    done += static_cast<size_t>(n);
  }
  return bytes;
}

std::vector<uint8_t> read_file_url(std::string_view url, const ImageSourceOptions& options) {
  if (options.allowed_local_media_path.empty()) {
    throw ImageSourceError(
        "file:// image URLs are refused: the server was not started with "
        "--allowed-local-media-path");
  }
  const std::string allowed = canonical_media_directory(options.allowed_local_media_path);
  const std::string path = real_path(file_url_path(url));
  if (path.compare(0, allowed.size(), allowed) != 0 || path.size() <= allowed.size() ||
      (allowed != "/" && path[allowed.size()] != '/')) {
    throw ImageSourceError("file URL " + quoted_url(url) +
                           " is outside the directory allowed by --allowed-local-media-path");
  }
  return read_regular_file(path, options.max_bytes);
}

// ---- http(s):// with libcurl ----

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Download {
  std::vector<uint8_t> bytes;
  size_t max_bytes = 0;
  bool too_large = false;
  std::exception_ptr interrupted;
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* d = static_cast<Download*>(user);
  const size_t n = size * count;
  if (d->bytes.size() + n > d->max_bytes) {
    d->too_large = true;
    return 0;  // not n: curl aborts the transfer
  }
  d->bytes.insert(d->bytes.end(), data, data + n);
  return n;
}

// The client left, a shutdown began or the preparation ran out of time: stop downloading.
int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* d = static_cast<Download*>(user);
  try {
    check_interruption();
  } catch (...) {
    d->interrupted = std::current_exception();
    return 1;
  }
  return 0;
}

std::string curl_failure(CURLcode code, const char* detail, const Download& d,
                         const ImageSourceOptions& o) {
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
      return "timed out (limit " + seconds_text(o.timeout_s) + ", connecting " +
             seconds_text(o.connect_timeout_s) + ")";
    case CURLE_TOO_MANY_REDIRECTS:
      return "more than " + std::to_string(o.max_redirects) + " redirects";
    case CURLE_UNSUPPORTED_PROTOCOL:
      return "redirected to a URL that is not http or https";
    case CURLE_FILESIZE_EXCEEDED:
      return "the image is larger than the limit of " + std::to_string(o.max_bytes) + " bytes";
    default:
      break;
  }
  if (d.too_large)
    return "the image is larger than the limit of " + std::to_string(o.max_bytes) + " bytes";
  return detail[0] ? std::string(detail) : std::string(curl_easy_strerror(code));
}

void set_transfer_options(CURL* curl, const std::string& url, long timeout_ms,
                          const ImageSourceOptions& o, Download& d, char* error_buffer) {
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  // Redirects are followed here, one hop at a time, so that each target's host is checked
  // before anything is sent to it.
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(o.connect_timeout_s * 1000));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(curl, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(o.max_bytes));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // many threads: no SIGALRM for DNS timeouts
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "pagedllm");
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &d);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &d);
}

// The URL's host as curl reads it, lower case.
std::string url_host(const std::string& url) {
  std::unique_ptr<CURLU, void (*)(CURLU*)> parsed(curl_url(), curl_url_cleanup);
  char* host = nullptr;
  if (!parsed || curl_url_set(parsed.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK ||
      curl_url_get(parsed.get(), CURLUPART_HOST, &host, 0) != CURLUE_OK)
    throw ImageSourceError("image URL " + quoted_url(url) + " does not parse");
  std::string out(host);
  curl_free(host);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

void check_host_allowed(const std::string& url, const ImageSourceOptions& o) {
  if (o.allowed_domains.empty()) return;
  const std::string host = url_host(url);
  if (std::find(o.allowed_domains.begin(), o.allowed_domains.end(), host) ==
      o.allowed_domains.end())
    throw ImageSourceError("image URL " + quoted_url(url) + " is on host '" + host +
                           "', which --allowed-media-domains does not list");
}

// Where a redirect answer points, or "" for any other answer.
std::string redirect_target(CURL* curl, long status) {
  char* location = nullptr;
  if (status < 300 || status > 399) return {};
  if (curl_easy_getinfo(curl, CURLINFO_REDIRECT_URL, &location) != CURLE_OK || !location) return {};
  return location;
}

std::vector<uint8_t> fetch_http(std::string_view url, const ImageSourceOptions& options) {
  init_curl_once();
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) throw ImageSourceError("cannot fetch image URL: libcurl failed to start");
  using Clock = std::chrono::steady_clock;
  const auto deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(options.timeout_s * 1000));
  std::string current(url);
  for (int redirects = 0;; ++redirects) {
    check_host_allowed(current, options);
    Download d;
    d.max_bytes = options.max_bytes;
    char error_buffer[CURL_ERROR_SIZE] = {};
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    set_transfer_options(curl.get(), current, std::max<long>(1, static_cast<long>(left.count())),
                         options, d, error_buffer);
    const CURLcode code = curl_easy_perform(curl.get());
    if (d.interrupted) std::rethrow_exception(d.interrupted);
    if (code != CURLE_OK) {
      throw ImageSourceError("cannot fetch image URL " + quoted_url(url) + ": " +
                             curl_failure(code, error_buffer, d, options));
    }
    long status = 0;
    curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
    if (std::string next = redirect_target(curl.get(), status); !next.empty()) {
      if (redirects == options.max_redirects)
        throw ImageSourceError("cannot fetch image URL " + quoted_url(url) + ": " +
                               curl_failure(CURLE_TOO_MANY_REDIRECTS, "", d, options));
      if (!has_scheme(next, "http://") && !has_scheme(next, "https://"))
        throw ImageSourceError("cannot fetch image URL " + quoted_url(url) + ": " +
                               curl_failure(CURLE_UNSUPPORTED_PROTOCOL, "", d, options));
      current = std::move(next);
      continue;
    }
    if (status < 200 || status > 299) {
      throw ImageSourceError("cannot fetch image URL " + quoted_url(url) +
                             ": the server answered HTTP " + std::to_string(status));
    }
    return std::move(d.bytes);
  }
}

}  // namespace

std::string file_url_path(std::string_view url) {
  if (!has_scheme(url, "file://")) throw ImageSourceError("not a file:// URL");
  std::string_view rest = url.substr(7);
  rest = rest.substr(0, rest.find_first_of("?#"));
  const size_t slash = rest.find('/');
  const std::string_view host = rest.substr(0, slash);
  const bool local = host.empty() || (host.size() == 9 && has_scheme(host, "localhost"));
  if (!local)
    throw ImageSourceError("file URL " + quoted_url(url) +
                           " names a host; only local files are read");
  if (slash == std::string_view::npos)
    throw ImageSourceError("file URL " + quoted_url(url) + " has no absolute path");
  std::string path = percent_decode(rest.substr(slash));
  if (path.find('\0') != std::string::npos)
    throw ImageSourceError("file URL " + quoted_url(url) + " has a NUL byte in its path");
  return path;
}

std::string canonical_media_directory(const std::string& path) {
  const std::string real = real_path(path);
  struct stat st {};
  if (::stat(real.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw ImageSourceError(path + " is not a directory");
  return real;
}

std::vector<uint8_t> read_image_url(std::string_view url, const ImageSourceOptions& options) {
  if (has_scheme(url, "data:")) {
    try {
      return parse_data_url(url, options.max_bytes).data;
    } catch (const std::invalid_argument& e) {
      throw ImageSourceError(e.what());
    }
  }
  if (has_scheme(url, "http://") || has_scheme(url, "https://")) return fetch_http(url, options);
  if (has_scheme(url, "file:")) return read_file_url(url, options);
  throw ImageSourceError("image URL " + quoted_url(url) +
                         " is not a data:, http://, https:// or file:// URL");
}

}  // namespace pagedllm::server
