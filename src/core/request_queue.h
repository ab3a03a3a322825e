// The waiting queue: first come first served, or by (priority, arrival time) as vLLM orders it
// (a lower priority value is served first).
#pragma once

#include <cstdint>
#include <deque>
#include <set>
#include <tuple>

#include "core/config.h"
#include "core/request.h"

namespace pagedllm {

class RequestQueue {
 public:
  explicit RequestQueue(SchedulingPolicy policy) : policy_(policy) {}

  bool empty() const { return size() == 0; }
  size_t size() const {
    return policy_ == SchedulingPolicy::kFcfs ? fifo_.size() : ordered_.size();
  }

  void push_back(Request* request);
  // A preempted request goes back to the front under FCFS; under priority its key places it.
  void push_front(Request* request);
  Request* front() const;
  void pop_front();
  // Returns false if the request is not queued.
  bool remove(const Request* request);

 private:
  struct Entry {
    int priority;
    double arrival_time;
    int64_t seq;
    Request* request;
    bool operator<(const Entry& o) const {
      return std::tie(priority, arrival_time, seq) < std::tie(o.priority, o.arrival_time, o.seq);
    }
  };

  SchedulingPolicy policy_;
  std::deque<Request*> fifo_;
  std::set<Entry> ordered_;
  int64_t next_seq_ = 0;
};

}  // namespace pagedllm
