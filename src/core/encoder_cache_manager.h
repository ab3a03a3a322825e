// Which images' encoder outputs the worker holds, counted in embeddings (tokens), with vLLM's
// EncoderCacheManager semantics.
//
// An entry is referenced by every request that still has to compute tokens of that image. When
// the last reference goes (the request computed past the image, finished or was preempted), the
// entry stays cached but becomes freeable: a later request with the same image reuses it, and
// allocation evicts freeable entries oldest first when it needs room. Evicted identifiers are
// handed to the worker (take_freed) so that it drops their embeddings.
//
// Worked example, cache of 10 tokens: A allocates image x (6): free 4, freeable 4. A computes
// past x: x is unreferenced, free 4, freeable 10. B asks for y (5): 5 > 4 free, so x is evicted
// (take_freed() -> {x}), free 10, then y is allocated: free 5.
#pragma once

#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/request.h"

namespace pagedllm {

class EncoderCacheManager {
 public:
  explicit EncoderCacheManager(int64_t cache_size);

  // True when feature `input` of the request is cached; the request then holds a reference.
  bool check_and_update_cache(const Request& request, size_t input);
  // Whether `num_tokens` more embeddings fit the step's encoder budget and the cache, with
  // `pending_tokens` already chosen (not yet allocated) in this step; evicts freeable entries
  // to make room when that is enough.
  bool can_allocate(int64_t num_tokens, int64_t encoder_budget, int64_t pending_tokens);
  void allocate(const Request& request, size_t input);
  // The request no longer needs this input (no-op when it holds no reference).
  void free_input(const Request& request, size_t input);
  // Every reference the request holds.
  void free(const Request& request);
  // Identifiers evicted since the last call.
  std::vector<std::string> take_freed();

  int64_t cache_size() const { return cache_size_; }
  int64_t num_free_slots() const { return num_free_slots_; }
  int64_t num_freeable_slots() const { return num_freeable_slots_; }
  // Fraction of the cache held by referenced entries.
  double usage() const;
  bool holds(const Request& request, size_t input) const;
  bool is_cached(const std::string& identifier) const { return cached_.count(identifier) > 0; }

 private:
  struct Entry {
    int64_t num_tokens = 0;
    std::unordered_set<std::string> requests;
    std::list<std::string>::iterator freeable_pos;  // valid while `requests` is empty
  };

  int64_t cache_size_;
  int64_t num_free_slots_;      // not held by any entry
  int64_t num_freeable_slots_;  // free plus unreferenced entries
  std::unordered_map<std::string, Entry> cached_;
  std::list<std::string> freeable_;  // unreferenced entries, oldest first
  std::vector<std::string> freed_;
};

}  // namespace pagedllm
