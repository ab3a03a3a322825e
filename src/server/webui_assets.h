// The chat page's files (webui/), bundled by esbuild and embedded at build time by
// cmake/embed_files.cmake, so `pagedllm serve` needs no files beside the binary.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace pagedllm::server {

struct WebuiAsset {
  std::string_view name;   // e.g. "index.html", "app-HASH.js"
  std::string_view bytes;  // the file's contents
};

// Every embedded file (defined in the generated webui_bundle.cpp); empty when the page was not
// built (-DPAGEDLLM_WEBUI=OFF).
std::span<const WebuiAsset> webui_assets();

// The file called `name`, or nullptr.
const WebuiAsset* find_webui_asset(std::string_view name);

// The Content-Type for a file name, from its extension.
std::string_view webui_content_type(std::string_view name);

}  // namespace pagedllm::server
