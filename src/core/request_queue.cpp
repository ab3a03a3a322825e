#include "core/request_queue.h"

#include <algorithm>

namespace pagedllm {

void RequestQueue::push_back(Request* request) {
  if (policy_ == SchedulingPolicy::kFcfs) {
    fifo_.push_back(request);
  } else {
    ordered_.insert({request->priority(), request->arrival_time(), next_seq_++, request});
  }
}

void RequestQueue::push_front(Request* request) {
  if (policy_ == SchedulingPolicy::kFcfs) {
    fifo_.push_front(request);
  } else {
    push_back(request);
  }
}

Request* RequestQueue::front() const {
  if (policy_ == SchedulingPolicy::kFcfs) return fifo_.front();
  return ordered_.begin()->request;
}

void RequestQueue::pop_front() {
  if (policy_ == SchedulingPolicy::kFcfs) {
    fifo_.pop_front();
  } else {
    ordered_.erase(ordered_.begin());
  }
}

bool RequestQueue::remove(const Request* request) {
  if (policy_ == SchedulingPolicy::kFcfs) {
    auto it = std::find(fifo_.begin(), fifo_.end(), request);
    if (it == fifo_.end()) return false;
    fifo_.erase(it);
    return true;
  }
  auto it = std::find_if(ordered_.begin(), ordered_.end(),
                         [&](const Entry& e) { return e.request == request; });
  if (it == ordered_.end()) return false;
  ordered_.erase(it);
  return true;
}

}  // namespace pagedllm
