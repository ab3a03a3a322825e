// libFuzzer target: safetensors header parsing on arbitrary bytes.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "format/safetensors_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pagedllm;
  try {
    auto file =
        std::make_shared<MappedFile>("fuzz.safetensors", std::vector<uint8_t>(data, data + size));
    SafetensorsFile st(file);
    for (const auto& [name, t] : st.tensors()) {
      if (t.size_bytes > 0) (void)t.data[t.size_bytes - 1];  // must lie inside the buffer
    }
  } catch (const ModelLoadError&) {
  }
  return 0;
}
