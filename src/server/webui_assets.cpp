#include "server/webui_assets.h"

#include <array>
#include <utility>

namespace pagedllm::server {

const WebuiAsset* find_webui_asset(std::string_view name) {
  for (const WebuiAsset& asset : webui_assets()) {
    if (asset.name == name) return &asset;
  }
  return nullptr;
}

std::string_view webui_content_type(std::string_view name) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 8> kTypes = {{
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".woff2", "font/woff2"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".json", "application/json"},
      {".txt", "text/plain; charset=utf-8"},
  }};
  for (const auto& [extension, type] : kTypes) {
    if (name.ends_with(extension)) return type;
  }
  return "application/octet-stream";
}

}  // namespace pagedllm::server
