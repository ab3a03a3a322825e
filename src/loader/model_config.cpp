#include "loader/model_config.h"

#include "format/mapped_file.h"

namespace pagedllm {

void ModelConfig::validate(const std::string& source) const {
  auto require = [&](bool ok, const std::string& what) {
    if (!ok) throw ModelLoadError(source + ": " + what);
  };
  require(dim > 0 && hidden_dim > 0 && n_layers > 0, "dim, hidden_dim and n_layers must be > 0");
  require(n_heads > 0 && n_kv_heads > 0, "n_heads and n_kv_heads must be > 0");
  require(n_heads % n_kv_heads == 0, "n_heads must be a multiple of n_kv_heads");
  require(head_dim > 0 && head_dim % 2 == 0, "head_dim must be even and > 0");
  require(vocab_size > 0, "vocab_size must be > 0");
  require(max_seq_len > 0, "context length must be > 0");
  require(norm_eps > 0.0f, "norm epsilon must be > 0");
  require(dim <= (1 << 20) && hidden_dim <= (1 << 22) && n_layers <= 4096 && n_heads <= 4096 &&
              vocab_size <= (1 << 24),
          "implausibly large dimensions");
  if (!mrope_section.empty()) {
    long sum = 0;
    bool non_negative = true;
    for (int s : mrope_section) {
      sum += s;
      non_negative = non_negative && s >= 0;
    }
    std::string listed;
    for (int s : mrope_section) listed += (listed.empty() ? "" : ", ") + std::to_string(s);
    require(mrope_section.size() == 3 && non_negative && sum == head_dim / 2,
            "mrope_section [" + listed + "] must be 3 sizes summing to head_dim / 2 (" +
                std::to_string(head_dim / 2) + ")");
  }
}

}  // namespace pagedllm
