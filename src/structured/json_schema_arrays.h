// uniqueItems, where it can be enforced: arrays whose items are a few listed values. The
// grammar keeps one rule per set of values already written, so no value comes twice.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "structured/grammar.h"

namespace pagedllm::structured {

// Past this many distinct values the rules (one per subset) would be too many.
inline constexpr size_t kMaxUniqueValues = 8;

// An array of min..max (max < 0: any) distinct items from `values` (distinct JSON values), in
// any order, `ws` around the brackets and commas. Throws GrammarError past kMaxUniqueValues.
int32_t add_unique_array(Grammar& g, const std::vector<nlohmann::ordered_json>& values, int64_t min,
                         int64_t max, int32_t ws);

}  // namespace pagedllm::structured
