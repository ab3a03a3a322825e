#include "distributed/communicator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <thread>

#ifdef PAGEDLLM_HAVE_MPI
#include <mpi.h>
#endif

namespace pagedllm::distributed {

namespace {

int first_env_int(std::initializer_list<const char*> names, int fallback) {
  for (const char* name : names) {
    if (const char* value = std::getenv(name)) return std::atoi(value);
  }
  return fallback;
}

}  // namespace

int launcher_world_size() {
  return std::max(1, first_env_int({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}, 1));
}

int launcher_rank() {
  return first_env_int({"OMPI_COMM_WORLD_RANK", "PMI_RANK"}, 0);
}

#ifndef PAGEDLLM_HAVE_MPI

bool built_with_mpi() {
  return false;
}
bool Communicator::active() {
  return false;
}
Communicator& Communicator::world() {
  throw std::runtime_error(
      "this pagedllm was built without MPI: install libopenmpi-dev (scripts/install-deps.sh) "
      "and rebuild for --tensor-parallel-size > 1");
}
void Communicator::all_reduce_sum(float*, size_t) {}
void Communicator::broadcast(std::vector<uint8_t>&, int, bool) {}
std::vector<uint64_t> Communicator::all_gather(std::span<const uint64_t> mine) {
  return {mine.begin(), mine.end()};
}
void Communicator::abort(const std::string& message) {
  if (!message.empty()) std::fprintf(stderr, "pagedllm: fatal: %s\n", message.c_str());
  std::exit(1);
}

#else

bool built_with_mpi() {
  return true;
}

namespace {

// MPI_Finalize at exit, after every other static is gone, when MPI was initialized here.
struct MpiSession {
  ~MpiSession() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
};

void check(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw PeerFailure(std::string(what) + " failed: " + std::string(text, length));
}

// Polls a nonblocking collective until it completes. Spins for the first millisecond (a step's
// all-reduce completes in microseconds), then sleeps between polls so that a waiting rank
// leaves its core to the others. Throws PeerFailure past the deadline.
void wait_for(MPI_Request& request, const char* what, double timeout_s, bool idle) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto spin = std::chrono::milliseconds(1);
  auto nap = std::chrono::microseconds(50);
  while (true) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
    if (done) return;
    const auto waited = Clock::now() - start;
    if (!idle && timeout_s > 0 && waited > std::chrono::duration<double>(timeout_s)) {
      throw PeerFailure(std::string(what) + " did not complete within " +
                        std::to_string(static_cast<int>(timeout_s)) +
                        " s: a rank has died or hangs");
    }
    if (waited < spin) continue;
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(idle ? 500 : 200));
  }
}

}  // namespace

bool Communicator::active() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return false;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size > 1;
}

Communicator& Communicator::world() {
  static std::unique_ptr<Communicator> instance = [] {
    static MpiSession session;
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
      if (provided < MPI_THREAD_SERIALIZED)
        throw std::runtime_error("the MPI library does not support MPI_THREAD_SERIALIZED");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return std::unique_ptr<Communicator>(new Communicator(rank, size));
  }();
  return *instance;
}

void Communicator::all_reduce_sum(float* data, size_t count) {
  MPI_Request request;
  check(MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                       MPI_COMM_WORLD, &request),
        "all-reduce");
  wait_for(request, "all-reduce", timeout_s_, false);
}

void Communicator::broadcast(std::vector<uint8_t>& bytes, int root, bool idle_wait) {
  uint64_t size = bytes.size();
  MPI_Request request;
  check(MPI_Ibcast(&size, 1, MPI_UINT64_T, root, MPI_COMM_WORLD, &request), "broadcast");
  wait_for(request, "broadcast", timeout_s_, idle_wait);
  bytes.resize(size);
  check(MPI_Ibcast(bytes.data(), static_cast<int>(size), MPI_BYTE, root, MPI_COMM_WORLD, &request),
        "broadcast");
  wait_for(request, "broadcast", timeout_s_, false);
}

std::vector<uint64_t> Communicator::all_gather(std::span<const uint64_t> mine) {
  std::vector<uint64_t> all(mine.size() * static_cast<size_t>(size_));
  MPI_Request request;
  check(MPI_Iallgather(mine.data(), static_cast<int>(mine.size()), MPI_UINT64_T, all.data(),
                       static_cast<int>(mine.size()), MPI_UINT64_T, MPI_COMM_WORLD, &request),
        "all-gather");
  wait_for(request, "all-gather", timeout_s_, false);
  return all;
}

void Communicator::abort(const std::string& message) {
  if (!message.empty()) {
    std::fprintf(stderr, "pagedllm rank %d: fatal: %s; stopping every rank\n", rank_,
                 message.c_str());
  }
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);  // MPI_Abort does not return; this satisfies [[noreturn]]
}

#endif

}  // namespace pagedllm::distributed
