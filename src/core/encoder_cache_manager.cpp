#include "core/encoder_cache_manager.h"

#include <stdexcept>

namespace pagedllm {

EncoderCacheManager::EncoderCacheManager(int64_t cache_size)
    : cache_size_(cache_size), num_free_slots_(cache_size), num_freeable_slots_(cache_size) {
  if (cache_size < 0) throw std::invalid_argument("encoder cache size must not be negative");
}

bool EncoderCacheManager::check_and_update_cache(const Request& request, size_t input) {
  auto it = cached_.find(request.mm_features[input].identifier);
  if (it == cached_.end()) return false;
  Entry& e = it->second;
  if (e.requests.empty()) {  // was freeable: referenced again
    freeable_.erase(e.freeable_pos);
    num_freeable_slots_ -= e.num_tokens;
  }
  e.requests.insert(request.id());
  return true;
}

bool EncoderCacheManager::can_allocate(int64_t num_tokens, int64_t encoder_budget,
                                       int64_t pending_tokens) {
  if (num_tokens > encoder_budget) return false;
  const int64_t needed = num_tokens + pending_tokens;
  if (needed <= num_free_slots_) return true;
  if (needed > num_freeable_slots_) return false;
  while (needed > num_free_slots_) {
    const std::string oldest = freeable_.front();
    freeable_.pop_front();
    auto it = cached_.find(oldest);
    num_free_slots_ += it->second.num_tokens;
    cached_.erase(it);
    freed_.push_back(oldest);
  }
  return true;
}

void EncoderCacheManager::allocate(const Request& request, size_t input) {
  const MultiModalFeature& f = request.mm_features[input];
  auto [it, inserted] = cached_.try_emplace(f.identifier);
  if (!inserted) throw std::logic_error("encoder input '" + f.identifier + "' is already cached");
  it->second.num_tokens = f.length;
  it->second.requests.insert(request.id());
  num_free_slots_ -= f.length;
  num_freeable_slots_ -= f.length;
}

void EncoderCacheManager::free_input(const Request& request, size_t input) {
  auto it = cached_.find(request.mm_features[input].identifier);
  if (it == cached_.end()) return;
  Entry& e = it->second;
  if (e.requests.erase(request.id()) == 0 || !e.requests.empty()) return;
  e.freeable_pos = freeable_.insert(freeable_.end(), it->first);
  num_freeable_slots_ += e.num_tokens;
}

void EncoderCacheManager::free(const Request& request) {
  for (size_t i = 0; i < request.mm_features.size(); ++i) free_input(request, i);
}

std::vector<std::string> EncoderCacheManager::take_freed() {
  std::vector<std::string> out;
  out.swap(freed_);
  return out;
}

double EncoderCacheManager::usage() const {
  if (cache_size_ == 0) return 0.0;
  return static_cast<double>(cache_size_ - num_freeable_slots_) / static_cast<double>(cache_size_);
}

bool EncoderCacheManager::holds(const Request& request, size_t input) const {
  auto it = cached_.find(request.mm_features[input].identifier);
  return it != cached_.end() && it->second.requests.count(request.id()) > 0;
}

}  // namespace pagedllm
