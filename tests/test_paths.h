// Where the tests find the project's files and the shared models (../shared beside the project,
// or $PAGEDLLM_SHARED_DIR).
#pragma once

#include <cstdlib>
#include <string>

namespace pagedllm::test {

inline std::string shared_dir() {
  if (const char* env = std::getenv("PAGEDLLM_SHARED_DIR")) return env;
  return PAGEDLLM_SHARED_DIR;
}

inline std::string model_path(const std::string& relative) {
  return shared_dir() + "/models/" + relative;
}

}  // namespace pagedllm::test
