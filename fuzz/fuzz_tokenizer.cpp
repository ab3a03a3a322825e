// libFuzzer target: tokenizer.json parsing, then encode/decode of arbitrary text with whatever
// tokenizer parsed. The input is "JSON\0TEXT" (no NUL: all of it is the JSON). A tokenizer
// that loads must encode any bytes, give ids inside its vocabulary, and stream the same text
// it decodes in one go.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "format/mapped_file.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/incremental_detokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pagedllm;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view json = input.substr(0, nul);
  const std::string_view text = nul == std::string_view::npos
                                    ? std::string_view("Hello wörld 12345 <|bos|> 日本")
                                    : input.substr(nul + 1);
  std::unique_ptr<BpeTokenizer> tok;
  try {
    tok = tokenizer_from_json(json, "", "fuzz.json");
  } catch (const ModelLoadError&) {
    return 0;
  }
  for (bool special : {false, true}) {
    std::vector<int32_t> ids;
    try {
      ids = tok->encode(text, special, special);
    } catch (const std::runtime_error&) {
      continue;  // a pathological regex hit PCRE2's match limit: an error, not a crash
    }
    for (int32_t id : ids) {
      if (id < 0 || id >= tok->vocab_size()) std::abort();
    }
    IncrementalDetokenizer detok(*tok, -1, false);
    std::string streamed;
    for (int32_t id : ids) streamed += detok.push(id);
    streamed += detok.flush();
    if (streamed != tok->decode(ids, false)) std::abort();
  }
  return 0;
}
