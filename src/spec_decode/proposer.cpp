#include "spec_decode/proposer.h"

#include "spec_decode/ngram_proposer.h"
#include "spec_decode/replay_proposer.h"

namespace pagedllm {

std::unique_ptr<Proposer> make_proposer(const SpeculativeConfig& config) {
  switch (config.method) {
    case SpeculativeMethod::kNone:
      return nullptr;
    case SpeculativeMethod::kNgram:
      return std::make_unique<NgramProposer>(config.prompt_lookup_min, config.prompt_lookup_max);
    case SpeculativeMethod::kReplay:
      return std::make_unique<ReplayProposer>(config.replay_sequences);
  }
  throw ConfigError("unknown speculative method");
}

}  // namespace pagedllm
