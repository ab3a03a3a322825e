#include "spec_decode/proposer.h"

#include "spec_decode/draft_model_proposer.h"
#include "spec_decode/ngram_proposer.h"
#include "spec_decode/replay_proposer.h"

namespace pagedllm {

std::unique_ptr<Proposer> make_proposer(const SpeculativeConfig& config, int target_vocab,
                                        int max_model_len, int max_num_seqs) {
  switch (config.method) {
    case SpeculativeMethod::kNone:
      return nullptr;
    case SpeculativeMethod::kNgram:
      return std::make_unique<NgramProposer>(config.prompt_lookup_min, config.prompt_lookup_max);
    case SpeculativeMethod::kReplay:
      return std::make_unique<ReplayProposer>(config.replay_sequences);
    case SpeculativeMethod::kDraftModel:
      return std::make_unique<DraftModelProposer>(config, target_vocab, max_model_len,
                                                  max_num_seqs);
  }
  throw ConfigError("unknown speculative method");
}

}  // namespace pagedllm
