#include "worker/input_batch.h"

#include <algorithm>
#include <stdexcept>

namespace pagedllm {

namespace {

template <typename T>
void resize_all(size_t n, std::vector<T>& v) {
  v.assign(n, T{});
}

template <typename T, typename... Rest>
void resize_all(size_t n, std::vector<T>& v, Rest&... rest) {
  v.assign(n, T{});
  resize_all(n, rest...);
}

template <typename T>
void move_elem(std::vector<T>& v, int src, int dst) {
  v[static_cast<size_t>(dst)] = v[static_cast<size_t>(src)];
}

template <typename T>
void swap_elem(std::vector<T>& v, int a, int b) {
  std::swap(v[static_cast<size_t>(a)], v[static_cast<size_t>(b)]);
}

// Applies f(array) to every per-row array of the sampling state.
template <typename F>
void for_each_array(InputBatch::SamplingArrays& s, F&& f) {
  f(s.temperature), f(s.top_p), f(s.min_p), f(s.top_k), f(s.presence_penalty);
  f(s.frequency_penalty), f(s.repetition_penalty), f(s.seed), f(s.has_seed), f(s.logprobs);
}

}  // namespace

InputBatch::InputBatch(int max_num_reqs, int max_model_len, int max_blocks_per_req)
    : max_num_reqs_(max_num_reqs),
      max_model_len_(max_model_len),
      req_ids_(static_cast<size_t>(max_num_reqs)),
      states_(static_cast<size_t>(max_num_reqs), nullptr),
      token_ids_(static_cast<size_t>(max_num_reqs) * static_cast<size_t>(max_model_len), 0),
      block_table_(max_num_reqs, max_blocks_per_req) {
  const auto n = static_cast<size_t>(max_num_reqs);
  resize_all(n, num_tokens_, num_prompt_tokens_, num_computed_tokens_);
  for_each_array(sampling_, [n](auto& v) { v.assign(n, {}); });
  req_id_to_index_.reserve(n);
  holes_.reserve(n);
}

int InputBatch::index_of(const std::string& req_id) const {
  auto it = req_id_to_index_.find(req_id);
  return it == req_id_to_index_.end() ? -1 : it->second;
}

std::span<const int32_t> InputBatch::row_tokens(int row) const {
  return std::span(token_ids_)
      .subspan(static_cast<size_t>(row) * max_model_len_, static_cast<size_t>(num_tokens(row)));
}

int InputBatch::add_request(CachedRequestState& state) {
  if (num_reqs() >= max_num_reqs_) throw std::length_error("input batch is full");
  if (static_cast<int>(state.token_ids.size()) > max_model_len_) {
    throw std::length_error("request '" + state.req_id + "' is longer than max_model_len");
  }
  int row;
  if (!holes_.empty()) {
    auto lowest = std::min_element(holes_.begin(), holes_.end());
    row = *lowest;
    holes_.erase(lowest);
  } else {
    row = num_rows_++;
  }
  const auto r = static_cast<size_t>(row);
  req_ids_[r] = state.req_id;
  states_[r] = &state;
  state.row = row;
  req_id_to_index_[state.req_id] = row;
  std::copy(state.token_ids.begin(), state.token_ids.end(), row_ptr(row));
  num_tokens_[r] = static_cast<int32_t>(state.token_ids.size());
  num_prompt_tokens_[r] = state.num_prompt_tokens;
  num_computed_tokens_[r] = state.num_computed_tokens;
  block_table_.add_row(state.block_ids, row);
  set_sampling_row(row, state.sampling_params);
  return row;
}

void InputBatch::set_sampling_row(int row, const SamplingParams& p) {
  const auto r = static_cast<size_t>(row);
  auto& s = sampling_;
  s.temperature[r] = p.temperature;
  s.top_p[r] = p.top_p;
  s.min_p[r] = p.min_p;
  s.top_k[r] = p.top_k;
  s.presence_penalty[r] = p.presence_penalty;
  s.frequency_penalty[r] = p.frequency_penalty;
  s.repetition_penalty[r] = p.repetition_penalty;
  s.seed[r] = p.seed.value_or(0);
  s.has_seed[r] = p.seed.has_value();
  s.logprobs[r] = p.logprobs.value_or(-1);
}

bool InputBatch::remove_request(const std::string& req_id) {
  const int row = index_of(req_id);
  if (row < 0) return false;
  remove_row(row);
  return true;
}

void InputBatch::remove_row(int row) {
  const auto r = static_cast<size_t>(row);
  req_id_to_index_.erase(req_ids_[r]);
  req_ids_[r].clear();
  states_[r]->row = -1;
  states_[r] = nullptr;
  num_tokens_[static_cast<size_t>(row)] = 0;
  block_table_.clear_row(row);
  holes_.push_back(row);
}

void InputBatch::condense() {
  // Fill the lowest hole with the highest live row until no hole lies below a live row.
  std::sort(holes_.begin(), holes_.end(), std::greater<>());
  int last = num_rows_ - 1;
  while (!holes_.empty()) {
    while (last >= 0 && req_ids_[static_cast<size_t>(last)].empty()) --last;
    const int hole = holes_.back();
    if (hole >= last) break;
    holes_.pop_back();
    move_row(last, hole);
    --last;
  }
  holes_.clear();
  num_rows_ = num_reqs();
}

void InputBatch::move_row(int src, int dst) {
  const auto s = static_cast<size_t>(src), d = static_cast<size_t>(dst);
  req_ids_[d] = std::move(req_ids_[s]);
  req_ids_[s].clear();
  req_id_to_index_[req_ids_[d]] = dst;
  states_[d] = states_[s];
  states_[s] = nullptr;
  states_[d]->row = dst;
  std::copy_n(row_ptr(src), num_tokens_[s], row_ptr(dst));
  move_elem(num_tokens_, src, dst);
  move_elem(num_prompt_tokens_, src, dst);
  move_elem(num_computed_tokens_, src, dst);
  num_tokens_[s] = 0;
  block_table_.move_row(src, dst);
  for_each_array(sampling_, [&](auto& v) { move_elem(v, src, dst); });
}

void InputBatch::swap_rows(int a, int b) {
  if (a == b) return;
  const auto ia = static_cast<size_t>(a), ib = static_cast<size_t>(b);
  std::swap(req_ids_[ia], req_ids_[ib]);
  req_id_to_index_[req_ids_[ia]] = a;
  req_id_to_index_[req_ids_[ib]] = b;
  std::swap(states_[ia], states_[ib]);
  states_[ia]->row = a;
  states_[ib]->row = b;
  const int n = std::max(num_tokens_[ia], num_tokens_[ib]);
  std::swap_ranges(row_ptr(a), row_ptr(a) + n, row_ptr(b));
  swap_elem(num_tokens_, a, b);
  swap_elem(num_prompt_tokens_, a, b);
  swap_elem(num_computed_tokens_, a, b);
  block_table_.swap_rows(a, b);
  for_each_array(sampling_, [&](auto& v) { swap_elem(v, a, b); });
}

void InputBatch::append_token(int row, int32_t token) {
  int32_t& n = num_tokens_[static_cast<size_t>(row)];
  if (n >= max_model_len_) throw std::length_error("token table row is full");
  row_ptr(row)[n++] = token;
}

void InputBatch::write_drafts(int row, std::span<const int32_t> drafts) {
  const int n = num_tokens_[static_cast<size_t>(row)];
  if (n + static_cast<int64_t>(drafts.size()) > max_model_len_)
    throw std::length_error("draft tokens run past the token table row");
  std::copy(drafts.begin(), drafts.end(), row_ptr(row) + n);
}

}  // namespace pagedllm
