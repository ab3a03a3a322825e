// libFuzzer target: the GBNF parser. The input is a grammar; it compiles or is refused with a
// GrammarError (line and column), and a compiled one's masks and accepted tokens agree.
#include <cstddef>
#include <cstdint>

#include "structured/gbnf_parser.h"
#include "structured_fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pagedllm::structured;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::shared_ptr<const CompiledGrammar> grammar;
  try {
    grammar =
        compile_grammar(grammar_from_gbnf(text), {.max_nfa_nodes = 300'000, .max_seconds = 10.0});
  } catch (const GrammarError&) {
    return 0;
  }
  fuzz::exercise_matcher(grammar, static_cast<uint32_t>(size * 2654435761u));
  return 0;
}
