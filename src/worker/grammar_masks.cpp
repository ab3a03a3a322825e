#include "worker/grammar_masks.h"

#include <algorithm>
#include <span>
#include <stdexcept>
#include <string>

#include "util/log.h"

namespace pagedllm {

GrammarMasks::~GrammarMasks() {
  if (pending_.valid()) pending_.wait();
}

void GrammarMasks::start(const InputBatch& batch, const ModelInputs& in) {
  if (pending_.valid()) pending_.wait();  // a step that threw before finish()
  bool any = false;
  for (int row = 0; row < in.num_reqs && !any; ++row)
    any = batch.state(row)->sampling_params.structured_outputs.has_value();
  if (!any) {
    has_mask_.clear();  // mask() answers null for every row
    return;
  }
  has_mask_.assign(static_cast<size_t>(in.num_logits), 0);
  if (!grammars_) throw std::logic_error("a constrained request reached a runner without grammars");
  pending_ = std::async(std::launch::async, [this, &batch, &in] { compute(batch, in); });
}

void GrammarMasks::finish() {
  if (pending_.valid()) pending_.get();
}

const uint32_t* GrammarMasks::mask(int logits_row) const {
  const auto r = static_cast<size_t>(logits_row);
  return r < has_mask_.size() && has_mask_[r] ? masks_.data() + r * words_ : nullptr;
}

void GrammarMasks::accept(CachedRequestState& s, int32_t token) {
  if (!s.matcher) return;
  if (!s.matcher->accept_token(token)) {
    // The sampler drew only allowed tokens, so this is a bug; the request goes on unconstrained
    // rather than taking the whole batch down with it.
    log(LogLevel::kError, "structured",
        "request '" + s.req_id + "': token " + std::to_string(token) +
            " is not allowed by its grammar; the constraint is dropped");
    s.matcher.reset();
    s.sampling_params.structured_outputs.reset();
  }
}

bool GrammarMasks::constraint_begins_now(const CachedRequestState& s) {
  if (!s.sampling_params.structured_outputs || s.matcher || s.constraint_start >= 0) return false;
  const std::vector<int32_t>& marker = s.sampling_params.structured_outputs->start_after;
  const size_t outputs = s.token_ids.size() - static_cast<size_t>(s.num_prompt_tokens);
  return !marker.empty() && outputs >= marker.size() &&
         std::equal(marker.begin(), marker.end(), s.token_ids.end() - marker.size());
}

void GrammarMasks::compute(const InputBatch& batch, const ModelInputs& in) {
  words_ = grammars_->vocabulary()->mask_words();
  masks_.resize(static_cast<size_t>(in.num_logits) * words_);
  for (int row = 0; row < in.num_reqs; ++row) {
    CachedRequestState& s = *batch.state(row);
    if (!s.sampling_params.structured_outputs) continue;
    // A partial prefill samples nothing.
    if (in.seq_lens[static_cast<size_t>(row)] < batch.num_tokens(row)) continue;
    compute_row(s, in.logits_start_loc[static_cast<size_t>(row)],
                in.logits_start_loc[static_cast<size_t>(row) + 1]);
  }
}

void GrammarMasks::compute_row(CachedRequestState& s, int first, int end) {
  catch_up(s);
  if (!s.matcher) return;
  size_t walked = 0;  // drafts the matcher moved past, undone below
  for (int i = first; i < end; ++i) {
    const auto r = static_cast<size_t>(i);
    s.matcher->fill_next_token_bitmask(masks_.data() + r * words_);
    has_mask_[r] = 1;
    const auto at = static_cast<size_t>(i - first);
    if (at >= s.drafts.size() || !s.matcher->accept_token(s.drafts[at])) break;
    ++walked;
  }
  s.matcher->rollback(walked);
}

// Where the constrained output begins: at once, or after the start_after tokens (the end of a
// reasoning model's thinking); -1 while they have not appeared.
int GrammarMasks::constraint_start(CachedRequestState& s) {
  if (s.constraint_start >= 0) return s.constraint_start;
  const std::vector<int32_t>& marker = s.sampling_params.structured_outputs->start_after;
  const auto outputs =
      std::span<const int32_t>(s.token_ids).subspan(static_cast<size_t>(s.num_prompt_tokens));
  if (marker.empty()) return s.constraint_start = 0;
  const auto found = std::search(outputs.begin() + s.constraint_scanned, outputs.end(),
                                 marker.begin(), marker.end());
  if (found != outputs.end())
    return s.constraint_start = static_cast<int>(found - outputs.begin() + marker.size());
  // Next time, look again from where a marker cut by the end could start.
  s.constraint_scanned = static_cast<int>(std::max<ptrdiff_t>(
      0, static_cast<ptrdiff_t>(outputs.size()) - static_cast<ptrdiff_t>(marker.size()) + 1));
  return -1;
}

// Makes the matcher (first time) and moves it past the outputs it has not seen: all of them for
// a new matcher, none in an ordinary step (sampling advanced it).
void GrammarMasks::catch_up(CachedRequestState& s) {
  const int start = constraint_start(s);
  if (start < 0) return;
  const size_t outputs =
      s.token_ids.size() - static_cast<size_t>(s.num_prompt_tokens) - static_cast<size_t>(start);
  if (!s.matcher) {
    s.matcher = std::make_shared<structured::GrammarMatcher>(
        grammars_->get(*s.sampling_params.structured_outputs));
  }
  if (s.matcher->num_accepted() > outputs) s.matcher->rollback(s.matcher->num_accepted() - outputs);
  for (size_t k = s.matcher->num_accepted(); k < outputs; ++k) {
    accept(s, s.token_ids[static_cast<size_t>(s.num_prompt_tokens + start) + k]);
    if (!s.matcher) return;
  }
}

}  // namespace pagedllm
