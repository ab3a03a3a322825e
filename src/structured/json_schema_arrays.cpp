#include "structured/json_schema_arrays.h"

#include "structured/json_schema_parts.h"

namespace pagedllm::structured {

int32_t add_unique_array(Grammar& g, const std::vector<nlohmann::ordered_json>& values, int64_t min,
                         int64_t max, int32_t ws) {
  const size_t k = values.size();
  if (k > kMaxUniqueValues) {
    throw GrammarError("uniqueItems over " + std::to_string(kMaxUniqueValues) + " values");
  }
  const auto limit = static_cast<int64_t>(k);
  if (max < 0 || max > limit) max = limit;
  if (min > max) return g.nothing();
  std::vector<int32_t> literals;
  for (const auto& v : values) literals.push_back(add_json_literal(g, v, ws));
  const int32_t sep = g.seq({ws, g.literal(","), ws});
  // rest[used]: what may follow once the values in `used` (a bit set) are written.
  const size_t sets = size_t{1} << k;
  std::vector<int32_t> rest(sets);
  for (size_t used = 0; used < sets; ++used) rest[used] = g.add_rule("unique", g.nothing());
  for (size_t used = 0; used < sets; ++used) {
    const auto count = static_cast<int64_t>(__builtin_popcountll(used));
    std::vector<int32_t> alts;
    if (count >= min) alts.push_back(g.empty());
    for (size_t i = 0; i < k && count < max; ++i) {
      if (used & (size_t{1} << i)) continue;
      const int32_t next = g.ref(rest[used | (size_t{1} << i)]);
      alts.push_back(g.seq({count == 0 ? g.empty() : sep, literals[i], next}));
    }
    g.define(rest[used], g.alt(std::move(alts)));
  }
  return g.seq({g.literal("["), ws, g.ref(rest[0]), ws, g.literal("]")});
}

}  // namespace pagedllm::structured
