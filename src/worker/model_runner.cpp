#include "worker/model_runner.h"

#include <omp.h>

#include <algorithm>
#include <cassert>
#include <exception>
#include <limits>
#include <mutex>
#include <stdexcept>

#include <random>

namespace pagedllm {

ModelRunner::ModelRunner(const EngineConfig& config, RunnerOptions options)
    : config_(config),
      options_(std::move(options)),
      block_size_(config.cache.block_size),
      max_model_len_(config.scheduler.max_model_len),
      batch_(config.scheduler.max_num_seqs, config.scheduler.max_model_len,
             config.max_num_blocks_per_req()),
      proposer_(config.speculative.enabled() && options_.samples
                    ? make_proposer(config.speculative, config.speculative.target_vocab_size,
                                    config.scheduler.max_model_len, config.scheduler.max_num_seqs)
                    : nullptr),
      grammar_masks_(options_.grammars),
      encoder_(options_.vision ? std::make_unique<EncoderRunner>(options_.vision) : nullptr) {
  const auto max_reqs = static_cast<size_t>(config.scheduler.max_num_seqs);
  int max_tokens = config.scheduler.max_num_batched_tokens;
  for (int b : options_.padding_buckets) max_tokens = std::max(max_tokens, b);
  const auto max_tok = static_cast<size_t>(max_tokens);
  auto& in = inputs_;
  for (auto* v :
       {&in.num_scheduled_tokens, &in.cu_num_tokens, &in.seq_lens, &in.num_computed_tokens}) {
    v->assign(max_reqs, 0);
  }
  in.query_start_loc.assign(max_reqs + 1, 0);
  in.seq_start_loc.assign(max_reqs + 1, 0);
  in.logits_start_loc.assign(max_reqs + 1, 0);
  for (auto* v :
       {&in.req_indices, &in.arange, &in.positions, &in.token_indices, &in.input_ids,
        &in.block_table_indices, &in.block_numbers, &in.block_offsets, &in.logits_indices}) {
    v->assign(max_tok, 0);
  }
  in.slot_mapping.assign(max_tok, -1);
  if (options_.build_attention_mask) {
    in.attn_mask.assign(max_tok * static_cast<size_t>(max_model_len_), 0.0f);
  }
  in.max_blocks_per_req = config.max_num_blocks_per_req();
  in.block_size = block_size_;
  row_num_scheduled_.assign(max_reqs, 0);
  sched_index_of_row_.assign(max_reqs, -1);
  row_of_scheduled_.reserve(max_reqs);
  row_is_scheduled_.assign(max_reqs, 0);
  scratch_to_add_.reserve(max_reqs);
  scheduled_states_.reserve(max_reqs);
  sampled_by_row_.resize(max_reqs);
  drafts_by_row_.resize(max_reqs);
  wanted_drafts_.assign(max_reqs, 0);
  requests_.reserve(max_reqs * 2);
}

const CachedRequestState* ModelRunner::request_state(const std::string& req_id) const {
  auto it = requests_.find(req_id);
  return it == requests_.end() ? nullptr : &it->second;
}

void ModelRunner::update_states(const SchedulerOutput& out) {
  for (const auto& id : out.finished_req_ids) {
    if (proposer_) proposer_->forget(id);
    auto it = requests_.find(id);
    if (it == requests_.end()) continue;
    if (it->second.row >= 0) batch_.remove_row(it->second.row);
    requests_.erase(it);
  }
  find_scheduled_states(out);
  drop_unscheduled();

  auto& to_add = scratch_to_add_;
  to_add.clear();
  size_t cursor = 0;
  for (const auto& n : out.scheduled_new_reqs) {
    CachedRequestState& s = requests_[n.req_id];
    s.req_id = n.req_id;
    s.token_ids = n.prompt_token_ids;
    s.num_prompt_tokens = static_cast<int>(n.prompt_token_ids.size());
    s.sampling_params = n.sampling_params;
    s.block_ids = n.block_ids;
    s.num_computed_tokens = n.num_computed_tokens;
    s.eos_token_id = n.eos_token_id;
    s.seed = n.sampling_params.seed ? *n.sampling_params.seed : std::random_device{}();
    s.scheduled_index = static_cast<int>(advance_to(out, cursor, n.req_id));
    s.drafts.clear();
    s.draft_length = DraftLength(config_.speculative.num_speculative_tokens);
    s.matcher.reset();
    s.constraint_start = -1;
    s.constraint_scanned = 0;
    s.mm_features = n.mm_features;
    if (encoder_) encoder_->init_request(s);
    to_add.push_back(&s);
  }
  cursor = 0;
  for (const auto& c : out.scheduled_cached_reqs) {
    CachedRequestState* s = scheduled_states_[advance_to(out, cursor, c.req_id)];
    if (!s) throw std::logic_error("cached request '" + c.req_id + "' is unknown to the worker");
    apply_cached(c, *s, to_add);
  }
  for (CachedRequestState* s : to_add) batch_.add_request(*s);
  batch_.condense();

  map_scheduled_rows(out);
  if (options_.reorder_decodes_first) reorder_decodes_first();
  // After the reorder, which moves rows: the drafts go after each row's tokens.
  for (int row = 0; row < batch_.num_reqs(); ++row) {
    const CachedRequestState& s = *batch_.state(row);
    if (!s.drafts.empty()) batch_.write_drafts(row, s.drafts);
  }
  // The step's images are encoded before its inputs are gathered (on every tensor-parallel
  // rank: each needs the embeddings for its shard of the forward pass).
  if (encoder_) encoder_->execute(out, requests_);
}

// New and cached requests are listed in the same relative order as num_scheduled_tokens, so
// one forward scan finds each entry's index without hashing.
size_t ModelRunner::advance_to(const SchedulerOutput& out, size_t& cursor, const std::string& id) {
  while (cursor < out.num_scheduled_tokens.size() &&
         out.num_scheduled_tokens[cursor].req_id != id) {
    ++cursor;
  }
  if (cursor == out.num_scheduled_tokens.size()) {
    throw std::logic_error("request '" + id + "' is not in num_scheduled_tokens");
  }
  return cursor++;
}

// The one hash lookup per scheduled request and step.
void ModelRunner::find_scheduled_states(const SchedulerOutput& out) {
  scheduled_states_.clear();
  for (size_t k = 0; k < out.num_scheduled_tokens.size(); ++k) {
    auto it = requests_.find(out.num_scheduled_tokens[k].req_id);
    CachedRequestState* s = it == requests_.end() ? nullptr : &it->second;
    if (s) s->scheduled_index = static_cast<int>(k);
    scheduled_states_.push_back(s);
  }
}

// Requests that are not scheduled this step (preempted, or starved of budget) leave the batch;
// their CachedRequestState stays so that they can come back.
void ModelRunner::drop_unscheduled() {
  std::fill(row_is_scheduled_.begin(), row_is_scheduled_.end(), 0);
  for (const CachedRequestState* s : scheduled_states_) {
    if (s && s->row >= 0) row_is_scheduled_[static_cast<size_t>(s->row)] = 1;
  }
  for (int row = 0; row < batch_.max_num_reqs(); ++row) {
    if (batch_.state(row) && !row_is_scheduled_[static_cast<size_t>(row)]) batch_.remove_row(row);
  }
}

void ModelRunner::apply_cached(const CachedRequestData& c, CachedRequestState& s,
                               std::vector<CachedRequestState*>& to_add) {
  s.num_computed_tokens = c.num_computed_tokens;
  s.drafts = c.spec_token_ids;
  if (c.resumed_from_preemption) {
    s.block_ids = c.new_block_ids;
  } else {
    s.block_ids.insert(s.block_ids.end(), c.new_block_ids.begin(), c.new_block_ids.end());
  }
  if (s.row < 0) {
    to_add.push_back(&s);
    return;
  }
  batch_.set_num_computed_tokens(s.row, c.num_computed_tokens);
  batch_.block_table().append_row(c.new_block_ids, s.row);
}

void ModelRunner::map_scheduled_rows(const SchedulerOutput& out) {
  const int num_reqs = batch_.num_reqs();
  if (static_cast<size_t>(num_reqs) != out.num_scheduled_tokens.size()) {
    throw std::logic_error("batch rows and scheduled requests disagree");
  }
  row_of_scheduled_.resize(out.num_scheduled_tokens.size());
  for (int row = 0; row < num_reqs; ++row) {
    const int k = batch_.state(row)->scheduled_index;
    row_of_scheduled_[static_cast<size_t>(k)] = row;
    sched_index_of_row_[static_cast<size_t>(row)] = k;
    row_num_scheduled_[static_cast<size_t>(row)] =
        out.num_scheduled_tokens[static_cast<size_t>(k)].num_tokens;
  }
}

// Moves decode rows (query length 1) to the front with the fewest swaps: the last decode
// trades places with the first prefill until no decode sits behind a prefill.
void ModelRunner::reorder_decodes_first() {
  const int num_reqs = batch_.num_reqs();
  int front = 0;
  int back = num_reqs - 1;
  while (true) {
    while (front < num_reqs && row_num_scheduled_[static_cast<size_t>(front)] == 1) ++front;
    while (back >= 0 && row_num_scheduled_[static_cast<size_t>(back)] != 1) --back;
    if (front >= back) break;
    batch_.swap_rows(front, back);
    std::swap(row_num_scheduled_[static_cast<size_t>(front)],
              row_num_scheduled_[static_cast<size_t>(back)]);
    std::swap(sched_index_of_row_[static_cast<size_t>(front)],
              sched_index_of_row_[static_cast<size_t>(back)]);
    row_of_scheduled_[static_cast<size_t>(sched_index_of_row_[static_cast<size_t>(front)])] = front;
    row_of_scheduled_[static_cast<size_t>(sched_index_of_row_[static_cast<size_t>(back)])] = back;
  }
}

const ModelInputs& ModelRunner::prepare_inputs() {
  compute_request_level();
  compute_token_level();
  if (encoder_) encoder_->prepare(batch_, inputs_);
  compute_split_view();
  compute_attention_state();
  if (options_.build_attention_mask) compute_attention_mask();
  return inputs_;
}

// Worked example (design notes, 5 requests; block_size 16, max_model_len 240, K = 15 blocks per
// request): num_scheduled_tokens = [1, 1, 93, 75, 30], computed = [54, 145, 0, 0, 0].
//   cu_num_tokens   = [1, 2, 95, 170, 200]
//   query_start_loc = [0, 1, 2, 95, 170, 200]
//   seq_lens        = [55, 146, 93, 75, 30]
//   logits_indices  = [0, 1, 94, 169, 199]   (the last token of each request)
//   logits_start_loc = [0, 1, 2, 3, 4, 5]    (one logits row per request)
// With speculation, a request that verifies k drafts is scheduled for 1 + k tokens and owns
// k + 1 logits rows: one for its pending token and one per draft. If the second request above
// verified 3 drafts (num_scheduled_tokens = [1, 4, 93, 75, 30]):
//   cu_num_tokens    = [1, 5, 98, 173, 203]
//   logits_indices   = [0, 1, 2, 3, 4, 97, 172, 202]
//   logits_start_loc = [0, 1, 5, 6, 7, 8]
void ModelRunner::compute_request_level() {
  auto& in = inputs_;
  in.num_reqs = batch_.num_reqs();
  int total = 0;
  int num_logits = 0;
  in.max_query_len = 0;
  in.max_seq_len = 0;
  in.query_start_loc[0] = 0;
  in.seq_start_loc[0] = 0;
  in.logits_start_loc[0] = 0;
  for (int r = 0; r < in.num_reqs; ++r) {
    const auto i = static_cast<size_t>(r);
    const int n = row_num_scheduled_[i];
    const int computed = batch_.num_computed_tokens(r);
    in.num_scheduled_tokens[i] = n;
    in.num_computed_tokens[i] = computed;
    total += n;
    in.cu_num_tokens[i] = total;
    in.query_start_loc[i + 1] = total;
    in.seq_lens[i] = computed + n;
    in.seq_start_loc[i + 1] = in.seq_start_loc[i] + in.seq_lens[i];
    const int rows = 1 + static_cast<int>(batch_.state(r)->drafts.size());
    for (int j = 0; j < rows; ++j) {
      in.logits_indices[static_cast<size_t>(num_logits + j)] = total - rows + j;
    }
    num_logits += rows;
    in.logits_start_loc[i + 1] = num_logits;
    in.max_query_len = std::max(in.max_query_len, n);
    in.max_seq_len = std::max(in.max_seq_len, in.seq_lens[i]);
  }
  in.num_logits = num_logits;
  in.num_actual_tokens = total;
  in.num_input_tokens = padded_token_count(total);
  in.block_table = batch_.block_table().flat().first(static_cast<size_t>(in.num_reqs) *
                                                     static_cast<size_t>(in.max_blocks_per_req));
}

// Worked example (design notes step 1; block_size 2, max_model_len M = 12, K = 6 blocks per
// request), num_scheduled_tokens = [3, 2, 5], nothing computed yet:
//   req_indices         = [0, 0, 0, 1, 1, 2, 2, 2, 2, 2]    (repeat row by its count)
//   arange              = [0, 1, 2, 0, 1, 0, 1, 2, 3, 4]    (t - cu_num_tokens[row] + count)
//   positions           = computed[req] + arange            = [0, 1, 2, 0, 1, 0, 1, 2, 3, 4]
//   token_indices       = positions + req * M               = [0, 1, 2, 12, 13, 24, ..., 28]
//   input_ids           = token_table[token_indices]
//   block_table_indices = req * K + positions / block_size  = [0, 0, 1, 6, 6, 12, 12, 13, 13, 14]
//   block_numbers       = block_table[block_table_indices]  = [1, 1, 2, 3, 3, 4, 4, 5, 5, 6]
//   block_offsets       = positions % block_size            = [0, 1, 0, 0, 1, 0, 1, 0, 1, 0]
//   slot_mapping        = block_numbers * block_size + block_offsets
//                                                           = [2, 3, 4, 6, 7, 8, 9, 10, 11, 12]
// Indexing the flat block table by row * K (not token_index / block_size) keeps requests
// apart even when max_model_len is not a multiple of block_size.
void ModelRunner::compute_token_level() {
  auto& in = inputs_;
  int t = 0;
  for (int r = 0; r < in.num_reqs; ++r) {
    const int n = in.num_scheduled_tokens[static_cast<size_t>(r)];
    std::fill_n(in.req_indices.begin() + t, n, r);
    t += n;
  }
  const auto tokens = batch_.token_ids();
  const auto table = batch_.block_table().flat();
  const int K = in.max_blocks_per_req;
  const int M = max_model_len_;
  for (int j = 0; j < in.num_actual_tokens; ++j) {
    const auto i = static_cast<size_t>(j);
    const auto req = static_cast<size_t>(in.req_indices[i]);
    const int arange = j - in.cu_num_tokens[req] + in.num_scheduled_tokens[req];
    const int pos = in.num_computed_tokens[req] + arange;
    in.arange[i] = arange;
    in.positions[i] = pos;
    in.token_indices[i] = pos + in.req_indices[i] * M;
    in.input_ids[i] = tokens[static_cast<size_t>(in.token_indices[i])];
    in.block_table_indices[i] = in.req_indices[i] * K + pos / block_size_;
    in.block_numbers[i] = table[static_cast<size_t>(in.block_table_indices[i])];
    in.block_offsets[i] = pos % block_size_;
    in.slot_mapping[i] =
        static_cast<int64_t>(in.block_numbers[i]) * block_size_ + in.block_offsets[i];
  }
  // Padding tokens write nowhere (slot -1) and read token 0 at position 0.
  for (int j = in.num_actual_tokens; j < in.num_input_tokens; ++j) {
    const auto i = static_cast<size_t>(j);
    in.positions[i] = 0;
    in.input_ids[i] = 0;
    in.slot_mapping[i] = -1;
  }
}

void ModelRunner::compute_split_view() {
  auto& in = inputs_;
  in.num_decodes = 0;
  while (in.num_decodes < in.num_reqs &&
         in.num_scheduled_tokens[static_cast<size_t>(in.num_decodes)] == 1) {
    ++in.num_decodes;
  }
  in.num_decode_tokens = in.num_decodes;
  in.num_prefills = in.num_reqs - in.num_decodes;
  in.num_prefill_tokens = in.num_actual_tokens - in.num_decode_tokens;
}

void ModelRunner::compute_attention_state() {
  auto& in = inputs_;
  bool no_context = true;
  for (int r = 0; r < in.num_reqs; ++r) {
    if (in.num_computed_tokens[static_cast<size_t>(r)] > 0) no_context = false;
  }
  if (no_context) {
    in.attn_state = AttentionState::kPrefillNoCache;
  } else if (in.num_prefills == 0) {
    in.attn_state = AttentionState::kDecodeOnly;
  } else if (in.num_decodes == 0) {
    in.attn_state = AttentionState::kPrefillCacheHit;
  } else {
    in.attn_state = AttentionState::kChunkedPrefill;
  }
}

void ModelRunner::compute_attention_mask() {
  auto& in = inputs_;
  const float hidden = -std::numeric_limits<float>::infinity();
  if (in.attn_state == AttentionState::kDecodeOnly) {
    in.attn_mask_rows = in.attn_mask_cols = 0;
    return;
  }
  if (in.attn_state == AttentionState::kPrefillNoCache) {
    // Positions start at 0 for every request, so one causal matrix serves them all.
    in.attn_mask_rows = in.attn_mask_cols = in.max_query_len;
  } else {
    in.attn_mask_rows = in.num_actual_tokens;
    in.attn_mask_cols = in.max_seq_len;
  }
  const int cols = in.attn_mask_cols;
  for (int row = 0; row < in.attn_mask_rows; ++row) {
    const int pos = in.attn_state == AttentionState::kPrefillNoCache
                        ? row
                        : in.positions[static_cast<size_t>(row)];
    float* dst = in.attn_mask.data() + static_cast<size_t>(row) * cols;
    for (int c = 0; c < cols; ++c) dst[c] = c <= pos ? 0.0f : hidden;
  }
}

int ModelRunner::padded_token_count(int n) const {
  for (int b : options_.padding_buckets) {
    if (b >= n) return b;
  }
  return n;
}

void ModelRunner::execute_model(const SchedulerOutput& out, Model& model,
                                ModelRunnerOutput& result) {
  update_states(out);
  result.clear();
  if (out.total_num_scheduled_tokens == 0) return;
  const ModelInputs& in = prepare_inputs();

  const auto vocab = static_cast<size_t>(model.vocab_size());
  logits_.resize(static_cast<size_t>(in.num_logits) * vocab);
  grammar_masks_.start(batch_, in);
  model.forward(in, logits_);
  grammar_masks_.finish();
  sample_rows(in, vocab);

  result.resize(out.num_scheduled_tokens.size());
  for (size_t k = 0; k < out.num_scheduled_tokens.size(); ++k) {
    auto& sampled = sampled_by_row_[static_cast<size_t>(row_of_scheduled_[k])];
    result.req_ids[k] = out.num_scheduled_tokens[k].req_id;
    for (const SampledToken& s : sampled) result.sampled_token_ids[k].push_back(s.token_id);
    result.sampled[k].swap(sampled);
    result.spec_token_ids[k].swap(drafts_by_row_[static_cast<size_t>(row_of_scheduled_[k])]);
  }
}

void ModelRunner::append_sampled_tokens(const ModelRunnerOutput& sampled) {
  for (size_t k = 0; k < sampled.req_ids.size(); ++k) {
    const int row = row_of_scheduled_[k];
    CachedRequestState& s = *batch_.state(row);
    if (s.req_id != sampled.req_ids[k])
      throw std::logic_error("sampled tokens of '" + sampled.req_ids[k] + "' reach another row");
    for (int32_t token : sampled.sampled_token_ids[k]) {
      batch_.append_token(row, token);
      s.token_ids.push_back(token);
    }
  }
}

// Rows are independent (a draw depends on its own request's seed and tokens), so a batch's rows
// are sampled on the OpenMP threads once a row costs enough to pay for them: from this
// vocabulary size on, a non-greedy row takes tens of microseconds.
constexpr size_t kParallelSamplingVocab = 16384;

void ModelRunner::sample_rows(const ModelInputs& in, size_t vocab) {
  const int rows = in.num_reqs;
  const bool parallel = rows > 1 && vocab >= kParallelSamplingVocab;
  const int threads = parallel ? std::min(rows, omp_get_max_threads()) : 1;
  if (samplers_.size() < static_cast<size_t>(threads))
    samplers_.resize(static_cast<size_t>(threads));
  // An exception must not leave an OpenMP region: the first is kept and rethrown after it.
  std::exception_ptr failure;
  std::mutex failure_mutex;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (parallel)
  for (int row = 0; row < rows; ++row) {
    try {
      sample_row(in, vocab, row, samplers_[static_cast<size_t>(omp_get_thread_num())]);
    } catch (...) {
      std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
  if (proposer_ && proposer_->batched()) propose_batched(rows);
}

// A model proposer runs one batched pass per draft position for every row that wants drafts.
void ModelRunner::propose_batched(int rows) {
  proposals_.clear();
  for (int row = 0; row < rows; ++row) {
    const auto r = static_cast<size_t>(row);
    if (wanted_drafts_[r] <= 0) continue;
    const CachedRequestState& s = *batch_.state(row);
    proposals_.push_back({&s.req_id, s.token_ids, wanted_drafts_[r], &drafts_by_row_[r]});
  }
  if (!proposals_.empty()) proposer_->propose_batch(proposals_);
}

// The row's logits rows in order, each sampled after the tokens before it are appended, so
// penalties and seeds see the request's tokens as a one-token-per-step run would.
void ModelRunner::sample_row(const ModelInputs& in, size_t vocab, int row, Sampler& sampler) {
  std::vector<SampledToken>& sampled = sampled_by_row_[static_cast<size_t>(row)];
  sampled.clear();
  drafts_by_row_[static_cast<size_t>(row)].clear();
  wanted_drafts_[static_cast<size_t>(row)] = 0;
  // A partial prefill's sample would be discarded: skip it.
  if (in.seq_lens[static_cast<size_t>(row)] < batch_.num_tokens(row)) return;
  CachedRequestState& s = *batch_.state(row);
  const int first = in.logits_start_loc[static_cast<size_t>(row)];
  for (int i = first; i < in.logits_start_loc[static_cast<size_t>(row) + 1]; ++i) {
    const auto tokens = std::span<const int32_t>(s.token_ids);
    const SamplingContext ctx{&s.sampling_params,
                              tokens.first(static_cast<size_t>(s.num_prompt_tokens)),
                              tokens.subspan(static_cast<size_t>(s.num_prompt_tokens)),
                              s.eos_token_id,
                              s.seed,
                              grammar_masks_.mask(i)};
    sampled.push_back(
        sampler.sample(std::span(logits_).subspan(static_cast<size_t>(i) * vocab, vocab), ctx));
    const int32_t token = sampled.back().token_id;
    batch_.append_token(row, token);
    s.token_ids.push_back(token);
    GrammarMasks::accept(s, token);
    // The constraint starts after this token: what the drafts guessed next was not masked.
    if (GrammarMasks::constraint_begins_now(s)) break;
    // Verification (rejection sampling with one-token drafts): each position is sampled exactly
    // as a one-token step would sample it, with the same seed counter and penalties, and a
    // draft is kept only if the target drew that very token. A draft x is thus kept with
    // probability p(x), and the token emitted in its place is a draw from p either way, so the
    // output is the target's distribution -- for a given seed, the very tokens of a run
    // without speculation. The first mismatch ends the row: what follows it was computed on a
    // token that is not in the sequence.
    const auto at = static_cast<size_t>(i - first);
    if (at < s.drafts.size() && token != s.drafts[at]) break;
  }
  if (!s.drafts.empty()) {
    s.draft_length.record(static_cast<int>(s.drafts.size()), static_cast<int>(sampled.size()) - 1);
  }
  propose_drafts(in, row, s);
}

// Guesses for the next step, made here while this row's thread is at it.
void ModelRunner::propose_drafts(const ModelInputs& in, int row, CachedRequestState& s) {
  if (!proposer_) return;
  const auto& sc = config_.speculative;
  if (sc.disable_by_batch_size > 0 && in.num_reqs >= sc.disable_by_batch_size) return;
  const int wanted = sc.adaptive ? s.draft_length.take() : sc.num_speculative_tokens;
  // No draft past the last token the request may ever hold (prompt + max_tokens - 1).
  const int64_t last = std::min<int64_t>(max_model_len_, static_cast<int64_t>(s.num_prompt_tokens) +
                                                             s.sampling_params.max_tokens) -
                       1;
  const int64_t room = last - static_cast<int64_t>(s.token_ids.size());
  const int max_drafts = static_cast<int>(std::min<int64_t>(wanted, room));
  if (max_drafts <= 0) return;
  if (proposer_->batched()) {
    wanted_drafts_[static_cast<size_t>(row)] = max_drafts;  // proposed after every row sampled
    return;
  }
  proposer_->propose(s.token_ids, max_drafts, drafts_by_row_[static_cast<size_t>(row)]);
}

}  // namespace pagedllm
