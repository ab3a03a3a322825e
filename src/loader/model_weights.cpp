#include "loader/model_weights.h"

#include <algorithm>
#include <map>

namespace pagedllm {

std::string weight_type_mix(const ModelWeights& w) {
  std::map<std::string, int> counts;
  const auto add = [&](const WeightMatrix& m) {
    if (m.rows > 0) ++counts[to_string(m.dtype)];  // an architecture's absent matrix has none
  };
  for (const LayerWeights& l : w.layers) {
    for (const WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
      add(*m);
  }
  add(w.output);
  std::vector<std::pair<std::string, int>> types(counts.begin(), counts.end());
  std::stable_sort(types.begin(), types.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string mix;
  for (const auto& [name, count] : types)
    mix += (mix.empty() ? "" : ",") + name + ":" + std::to_string(count);
  return mix;
}

}  // namespace pagedllm
