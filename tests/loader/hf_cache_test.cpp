#include "loader/hf_cache.h"
#include "test_paths.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "format/mapped_file.h"

namespace pagedllm {
namespace {

namespace fs = std::filesystem;

TEST(HfCache, ResolvesARepoIdToItsSnapshotFromRefsMain) {
  const fs::path home = fs::path(test::temp_path("hf-home"));
  const fs::path repo = home / "hub" / "models--acme--tiny-llama";
  fs::create_directories(repo / "snapshots" / "abc123");
  fs::create_directories(repo / "snapshots" / "old999");
  fs::create_directories(repo / "refs");
  std::ofstream(repo / "refs" / "main") << "abc123";
  std::ofstream(repo / "snapshots" / "abc123" / "config.json") << "{}";
  setenv("HF_HOME", home.c_str(), 1);
  EXPECT_EQ(resolve_model_path("acme/tiny-llama"), (repo / "snapshots" / "abc123").string());

  const fs::path gguf_repo = home / "hub" / "models--acme--tiny-gguf" / "snapshots" / "r1";
  fs::create_directories(gguf_repo);
  std::ofstream(gguf_repo / "tiny.Q8_0.gguf") << "GGUF";
  EXPECT_EQ(resolve_model_path("acme/tiny-gguf"), (gguf_repo / "tiny.Q8_0.gguf").string());

  EXPECT_THROW(resolve_model_path("acme/missing"), ModelLoadError);
  EXPECT_EQ(resolve_model_path("not-a-repo-id"), "not-a-repo-id");  // left for the loader
  unsetenv("HF_HOME");
}

}  // namespace
}  // namespace pagedllm
