// --speculative-config, as vLLM spells it: a JSON object such as
//   {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2,
//    "prompt_lookup_max": 4, "disable_by_batch_size": 16}
#pragma once

#include <string>

#include "core/config.h"

namespace pagedllm {

// Throws ConfigError naming the field that is wrong. An empty string: speculation off.
SpeculativeConfig parse_speculative_config(const std::string& text);

// One line for logs: "ngram k=4 n=2..4" or "off".
std::string describe(const SpeculativeConfig& config);

}  // namespace pagedllm
