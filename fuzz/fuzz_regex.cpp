// libFuzzer target: the regex compiler. The input is a pattern; it compiles or is refused with
// a GrammarError, in both plain and JSON-string search modes, and a compiled one's masks and
// accepted tokens agree.
#include <cstddef>
#include <cstdint>

#include "structured/regex_compiler.h"
#include "structured_fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pagedllm::structured;
  const std::string_view pattern(reinterpret_cast<const char*>(data), size);
  for (bool json : {false, true}) {
    std::shared_ptr<const CompiledGrammar> grammar;
    try {
      Grammar g;
      g.set_start(g.add_rule("regex", add_regex(g, pattern, {json, json})));
      grammar = compile_grammar(g, {.max_nfa_nodes = 300'000, .max_seconds = 10.0});
    } catch (const GrammarError&) {
      continue;
    }
    fuzz::exercise_matcher(grammar, static_cast<uint32_t>(size * 2654435761u));
  }
  return 0;
}
