#include "loader/load_model.h"

#include <filesystem>

#include "format/gguf_file.h"
#include "loader/gguf_loader.h"
#include "loader/hf_loader.h"
#include "loader/llama2c_loader.h"

namespace pagedllm {

ModelWeights load_model(const std::string& path) {
  if (!std::filesystem::exists(path)) throw ModelLoadError(path + ": no such file or directory");
  if (is_hf_directory(path)) return load_hf_directory(path);
  if (std::filesystem::is_directory(path))
    throw ModelLoadError(path + ": directory has no config.json");
  if (GGUFFile::has_magic(path)) return load_gguf(path);
  if (looks_like_llama2c(path)) return load_llama2c(path);
  throw ModelLoadError(path +
                       ": unrecognized model format (expected GGUF, a Hugging Face "
                       "directory or a llama2.c checkpoint)");
}

}  // namespace pagedllm
