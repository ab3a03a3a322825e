// libFuzzer target: GGUF parsing, weight binding and the embedded tokenizer, on arbitrary bytes.
// Any input must either load or throw ModelLoadError; never crash, leak or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "format/gguf_file.h"
#include "loader/gguf_loader.h"
#include "tokenizer/load_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pagedllm;
  try {
    auto file = std::make_shared<MappedFile>("fuzz.gguf", std::vector<uint8_t>(data, data + size));
    GGUFFile gguf(file);
    try {
      ModelWeights w = load_gguf(gguf);
      (void)w;
    } catch (const ModelLoadError&) {
    }
    auto tok = tokenizer_from_gguf(gguf);
    auto ids = tok->encode("Once upon a time, 日本 🙂", true);
    (void)tok->decode(ids);
  } catch (const ModelLoadError&) {
  }
  return 0;
}
