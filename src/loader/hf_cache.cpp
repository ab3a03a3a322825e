#include "loader/hf_cache.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "format/mapped_file.h"

namespace pagedllm {

namespace fs = std::filesystem;

namespace {

fs::path hub_dir() {
  if (const char* cache = std::getenv("HF_HUB_CACHE")) return cache;
  if (const char* home = std::getenv("HF_HOME")) return fs::path(home) / "hub";
  const char* user_home = std::getenv("HOME");
  return fs::path(user_home ? user_home : "/root") / ".cache" / "huggingface" / "hub";
}

bool looks_like_repo_id(const std::string& s) {
  const auto slash = s.find('/');
  return slash != std::string::npos && slash > 0 && slash + 1 < s.size() &&
         s.find('/', slash + 1) == std::string::npos && s.find("..") == std::string::npos &&
         s[0] != '.';
}

}  // namespace

std::string resolve_model_path(const std::string& model) {
  if (fs::exists(model) || !looks_like_repo_id(model)) return model;
  const std::string folder =
      "models--" + model.substr(0, model.find('/')) + "--" + model.substr(model.find('/') + 1);
  const fs::path repo = hub_dir() / folder;
  if (!fs::is_directory(repo / "snapshots")) {
    throw ModelLoadError(model + ": not a file, and not in the Hugging Face cache (" +
                         (repo / "snapshots").string() + "); nothing is downloaded");
  }
  fs::path snapshot;
  std::ifstream ref(repo / "refs" / "main");
  std::string revision;
  if (ref >> revision && fs::is_directory(repo / "snapshots" / revision)) {
    snapshot = repo / "snapshots" / revision;
  } else {
    for (const auto& entry : fs::directory_iterator(repo / "snapshots")) {
      if (entry.is_directory()) snapshot = entry.path();
    }
  }
  if (snapshot.empty()) throw ModelLoadError(model + ": the cache holds no snapshot");
  if (fs::exists(snapshot / "config.json")) return snapshot.string();
  std::vector<fs::path> ggufs;
  for (const auto& entry : fs::directory_iterator(snapshot)) {
    if (entry.path().extension() == ".gguf") ggufs.push_back(entry.path());
  }
  if (ggufs.size() == 1) return ggufs[0].string();
  throw ModelLoadError(model + ": snapshot " + snapshot.string() +
                       (ggufs.empty() ? " has no config.json or .gguf file"
                                      : " has several .gguf files; pass one as --model"));
}

}  // namespace pagedllm
