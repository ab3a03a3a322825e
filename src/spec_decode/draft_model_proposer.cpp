#include "spec_decode/draft_model_proposer.h"

#include <algorithm>
#include <stdexcept>

#include "loader/load_model.h"
#include "model/model_factory.h"
#include "sampling/sampler.h"
#include "util/log.h"

namespace pagedllm {

namespace {

// The draft's own KV pool holds this much at most; requests beyond it get no drafts.
constexpr int64_t kDraftKvBudgetBytes = int64_t{1} << 30;

}  // namespace

DraftModelProposer::DraftModelProposer(const SpeculativeConfig& config, int target_vocab,
                                       int max_model_len, int max_num_seqs) {
  std::shared_ptr<const ModelWeights> weights;
  try {
    weights = std::make_shared<const ModelWeights>(load_model(config.draft_model));
  } catch (const std::exception& e) {
    throw ConfigError("speculative_config: the draft model does not load: " +
                      std::string(e.what()));
  }
  vocab_ = weights->config.vocab_size;
  if (vocab_ != target_vocab) {
    throw ConfigError("speculative_config: the draft model's vocabulary (" +
                      std::to_string(vocab_) + " tokens) differs from the target's (" +
                      std::to_string(target_vocab) + "): their token ids would not mean the same");
  }
  if (weights->config.max_seq_len < max_model_len) {
    throw ConfigError("speculative_config: the draft model's context (" +
                      std::to_string(weights->config.max_seq_len) +
                      " tokens) is shorter than max_model_len (" + std::to_string(max_model_len) +
                      ")");
  }
  max_blocks_per_seq_ = (max_model_len + block_size_ - 1) / block_size_;
  const int64_t seq_bytes =
      model_kv_cache_spec(*weights, 1, block_size_, DType::kF32).bytes_per_block() *
      max_blocks_per_seq_;
  const int64_t seqs = std::clamp<int64_t>(kDraftKvBudgetBytes / seq_bytes, 1, max_num_seqs);
  const int num_blocks = static_cast<int>(seqs) * max_blocks_per_seq_ + 1;  // + the null block
  max_pass_tokens_ = std::max(256, max_num_seqs);
  model_ = create_model(weights, {max_pass_tokens_, nullptr});
  cache_ =
      std::make_unique<PagedKVCache>(model_->kv_cache_spec(num_blocks, block_size_, DType::kF32));
  model_->bind_kv_cache(*cache_);
  for (int b = num_blocks - 1; b >= 1; --b) free_blocks_.push_back(b);
  log_info("spec_decode",
           "draft model " + config.draft_model + ": " + std::to_string(weights->config.n_layers) +
               " layers, dim " + std::to_string(weights->config.dim) + ", KV for " +
               std::to_string(seqs) + " sequences of " + std::to_string(max_model_len) + " tokens");
}

DraftModelProposer::~DraftModelProposer() = default;

void DraftModelProposer::propose(std::span<const int32_t>, int, std::vector<int32_t>&) const {
  throw std::logic_error("the draft model proposes for a whole step at once (propose_batch)");
}

bool DraftModelProposer::reserve(Sequence& seq, int num_positions) {
  const int needed = (num_positions + block_size_ - 1) / block_size_;
  if (needed > max_blocks_per_seq_) return false;
  const int more = needed - static_cast<int>(seq.blocks.size());
  if (more > static_cast<int>(free_blocks_.size())) return false;
  for (int i = 0; i < more; ++i) {
    seq.blocks.push_back(free_blocks_.back());
    free_blocks_.pop_back();
  }
  return true;
}

void DraftModelProposer::forget(const std::string& req_id) {
  auto it = sequences_.find(req_id);
  if (it == sequences_.end()) return;
  for (int32_t block : it->second.blocks) free_blocks_.push_back(block);
  sequences_.erase(it);
}

// The inputs of one pass: each row's tokens at the positions after what it already fed, one
// logits row per request (its last token), over the rows' own block tables.
void DraftModelProposer::forward(std::span<Row> rows, std::vector<int32_t>& next) {
  const int R = static_cast<int>(rows.size());
  const int K = max_blocks_per_seq_;
  int total = 0;
  for (const Row& r : rows) total += static_cast<int>(r.tokens.size());
  auto& in = in_;
  in.num_reqs = R;
  in.num_actual_tokens = in.num_input_tokens = total;
  in.positions.resize(static_cast<size_t>(total));
  in.input_ids.resize(static_cast<size_t>(total));
  in.slot_mapping.resize(static_cast<size_t>(total));
  in.query_start_loc.assign(static_cast<size_t>(R) + 1, 0);
  in.logits_start_loc.resize(static_cast<size_t>(R) + 1);
  in.logits_indices.resize(static_cast<size_t>(R));
  table_.assign(static_cast<size_t>(R) * static_cast<size_t>(K), 0);
  int t = 0;
  in.logits_start_loc[0] = 0;
  for (int r = 0; r < R; ++r) {
    const Row& row = rows[static_cast<size_t>(r)];
    std::copy(row.seq->blocks.begin(), row.seq->blocks.end(),
              table_.begin() + static_cast<std::ptrdiff_t>(r) * K);
    const int start = static_cast<int>(row.seq->fed.size());
    for (size_t j = 0; j < row.tokens.size(); ++j, ++t) {
      const int pos = start + static_cast<int>(j);
      const auto i = static_cast<size_t>(t);
      in.input_ids[i] = row.tokens[j];
      in.positions[i] = pos;
      in.slot_mapping[i] =
          static_cast<int64_t>(table_[static_cast<size_t>(r * K + pos / block_size_)]) *
              block_size_ +
          pos % block_size_;
    }
    in.query_start_loc[static_cast<size_t>(r) + 1] = t;
    in.logits_indices[static_cast<size_t>(r)] = t - 1;
    in.logits_start_loc[static_cast<size_t>(r) + 1] = r + 1;
  }
  in.num_logits = R;
  in.block_table = table_;
  in.max_blocks_per_req = K;
  in.block_size = block_size_;
  logits_.resize(static_cast<size_t>(R) * static_cast<size_t>(vocab_));
  model_->forward(in, logits_);
  next.clear();
  for (int r = 0; r < R; ++r) {
    Row& row = rows[static_cast<size_t>(r)];
    next.push_back(argmax(std::span<const float>(logits_).subspan(
        static_cast<size_t>(r) * static_cast<size_t>(vocab_), static_cast<size_t>(vocab_))));
    for (int32_t token : row.tokens) row.seq->fed.push_back(token);
  }
}

// Reuses the longest prefix the draft already fed, feeds the rest in passes that fit the
// model's workspace, and returns the draft of the position after the last token.
void DraftModelProposer::catch_up(Sequence& seq, std::span<const int32_t> tokens,
                                  int32_t& first_draft) {
  size_t keep = 0;
  while (keep < seq.fed.size() && keep < tokens.size() && seq.fed[keep] == tokens[keep]) ++keep;
  keep = std::min(keep, tokens.size() - 1);  // the last token is fed again for its logits
  seq.fed.resize(keep);
  std::vector<int32_t> next;
  while (seq.fed.size() < tokens.size()) {
    const size_t from = seq.fed.size();
    const size_t n = std::min(tokens.size() - from, static_cast<size_t>(max_pass_tokens_));
    Row row{&seq, {}};
    row.tokens.reserve(n);
    for (size_t i = from; i < from + n; ++i) row.tokens.push_back(tokens[i]);
    forward(std::span(&row, 1), next);
  }
  first_draft = next.front();
}

void DraftModelProposer::propose_batch(std::span<ProposalRequest> requests) {
  std::vector<ProposalRequest*> active;
  std::vector<Row> rows;
  for (ProposalRequest& r : requests) {
    if (r.max_drafts <= 0 || r.tokens.empty()) continue;
    Sequence& seq = sequences_[*r.req_id];
    // Slots for every token and every draft but the last, which is never fed.
    if (!reserve(seq, static_cast<int>(r.tokens.size()) + r.max_drafts - 1)) continue;
    int32_t draft = 0;
    catch_up(seq, r.tokens, draft);
    r.drafts->push_back(draft);
    active.push_back(&r);
  }
  // Then one batched pass per further draft: each request feeds its last draft.
  std::vector<int32_t> next;
  std::vector<ProposalRequest*> still;
  while (true) {
    rows.clear();
    still.clear();
    for (ProposalRequest* r : active) {
      if (static_cast<int>(r->drafts->size()) >= r->max_drafts) continue;
      rows.push_back({&sequences_[*r->req_id], {r->drafts->back()}});
      still.push_back(r);
    }
    if (rows.empty()) break;
    forward(rows, next);
    for (size_t i = 0; i < still.size(); ++i) still[i]->drafts->push_back(next[i]);
  }
}

}  // namespace pagedllm
