// Where the tests find the project's files and the shared models ($PAGEDLLM_SHARED_DIR, else the
// directory scripts/shared-dir.sh found at configure time: ../shared beside the project, or beside
// the checkout a local clone came from).
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace pagedllm::test {

inline std::string shared_dir() {
  if (const char* env = std::getenv("PAGEDLLM_SHARED_DIR")) return env;
  return PAGEDLLM_SHARED_DIR;
}

inline std::string model_path(const std::string& relative) {
  return shared_dir() + "/models/" + relative;
}

// NAME in this test process's own scratch directory, removed when the process exits. ctest runs
// tests as concurrent processes, and with one shared /tmp a test read another's prompts file.
inline std::string temp_path(const std::string& name) {
  struct ScratchDir {
    std::filesystem::path path;
    ScratchDir()
        : path(std::filesystem::temp_directory_path() /
               ("pagedllm-test-" + std::to_string(getpid()))) {
      std::filesystem::create_directories(path);
    }
    ~ScratchDir() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static const ScratchDir dir;
  return (dir.path / name).string();
}

}  // namespace pagedllm::test
