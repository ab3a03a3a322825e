#include "distributed/communicator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

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
void Communicator::gather(const float* mine, std::span<const int> counts, float* all, int) {
  std::copy(mine, mine + counts[0], all);
}
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

// Where a rank is, for the diagnosis of a collective that timed out: rank 0 sends kProbeTag to
// every other rank, and each one that is waiting (in wait_for's polling loop) answers kAnswerTag
// with the number of the collective it waits in. A rank that hangs or died does not answer.
constexpr int kProbeTag = 0x7044;
constexpr int kAnswerTag = 0x7045;
// How long rank 0 waits for the answers, and how much longer than rank 0 the other ranks wait
// in a collective before giving up themselves (so that they are still there to answer).
constexpr auto kProbeWindow = std::chrono::seconds(2);
constexpr double kWorkerGrace = 5.0;

void answer_probe(const Communicator& comm) {
  int pending = 0;
  if (MPI_Iprobe(0, kProbeTag, MPI_COMM_WORLD, &pending, MPI_STATUS_IGNORE) != MPI_SUCCESS ||
      !pending)
    return;
  uint64_t asked = 0;
  MPI_Recv(&asked, 1, MPI_UINT64_T, 0, kProbeTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  static uint64_t answer;  // outlives the send, which is never waited for
  answer = comm.collectives();
  MPI_Request request;
  if (MPI_Isend(&answer, 1, MPI_UINT64_T, 0, kAnswerTag, MPI_COMM_WORLD, &request) == MPI_SUCCESS)
    MPI_Request_free(&request);
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

// Rank 0, after its current collective timed out: which ranks do not answer (they
// hang or died), and which wait behind it (for a message a silent rank was to pass on).
std::string diagnose(const Communicator& comm) {
  const auto size = static_cast<size_t>(comm.size());
  // Static: a late answer may still land after this returns; the job is ending anyway.
  static std::vector<uint64_t> answers;
  static uint64_t probe;
  answers.assign(size, 0);
  probe = comm.collectives();
  std::vector<MPI_Request> receives(size, MPI_REQUEST_NULL);
  for (size_t r = 1; r < size; ++r) {
    const int rank = static_cast<int>(r);
    MPI_Request send;
    if (MPI_Isend(&probe, 1, MPI_UINT64_T, rank, kProbeTag, MPI_COMM_WORLD, &send) == MPI_SUCCESS)
      MPI_Request_free(&send);
    MPI_Irecv(&answers[r], 1, MPI_UINT64_T, rank, kAnswerTag, MPI_COMM_WORLD, &receives[r]);
  }
  std::vector<bool> answered(size, false);
  const double hurry = comm.hurried();
  const auto window = hurry > 0 ? std::chrono::duration<double>(hurry / 2)
                                : std::chrono::duration<double>(kProbeWindow);
  const auto deadline = std::chrono::steady_clock::now() + window;
  size_t open = size - 1;
  while (open > 0 && std::chrono::steady_clock::now() < deadline) {
    for (size_t r = 1; r < size; ++r) {
      int done = 0;
      if (answered[r] || MPI_Test(&receives[r], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || !done)
        continue;
      answered[r] = true;
      --open;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::vector<int> silent, behind, waiting;
  for (size_t r = 1; r < size; ++r) {
    const int rank = static_cast<int>(r);
    if (!answered[r]) {
      MPI_Cancel(&receives[r]);
      MPI_Request_free(&receives[r]);
      silent.push_back(rank);
    } else {
      (answers[r] < probe ? behind : waiting).push_back(rank);
    }
  }
  std::string out;
  if (!silent.empty()) out = rank_list(silent) + " did not answer: it hangs or died";
  if (!behind.empty())
    out += (out.empty() ? "" : "; ") + rank_list(behind) + " still wait in an earlier collective";
  if (!waiting.empty()) out += (out.empty() ? "" : "; ") + rank_list(waiting) + " wait in this one";
  return out;
}

// Polls a nonblocking collective until it completes. Polls without sleeping for the first
// 20 ms, yielding the core between polls (to a rank that shares it, where the job is
// oversubscribed): Open MPI's TCP transport moves a message only inside an MPI call, and a
// rank that slept between polls from the first millisecond on took about 7 ms more per token
// over a link of 0.5 ms each way (stories260K, TP 2: 14.1 ms per token against 7.2). Then it
// sleeps between polls, so that a waiting rank leaves its core to the others, answering rank
// 0's probe meanwhile. Past the deadline throws PeerFailure, which on rank 0 names the ranks
// that did not answer the probe. Returns the seconds it waited.
double wait_for(MPI_Request& request, const char* what, const Communicator& comm, bool idle) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto spin = std::chrono::milliseconds(20);
  const double patience = comm.timeout() + (comm.rank() == 0 ? 0.0 : kWorkerGrace);
  auto nap = std::chrono::microseconds(50);
  while (true) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
    const auto waited = Clock::now() - start;
    if (done) return std::chrono::duration<double>(waited).count();
    const double hurry = comm.hurried();
    const double timeout_s = hurry > 0 && (hurry < patience || patience <= 0) ? hurry : patience;
    if (!idle && timeout_s > 0 && waited > std::chrono::duration<double>(timeout_s)) {
      char limit[32];
      std::snprintf(limit, sizeof limit, "%g", hurry > 0 ? timeout_s : comm.timeout());
      std::string message = std::string(what) + " did not complete within " + limit + " s" +
                            (hurry > 0 ? " (shutting down)" : "");
      const std::string where = comm.rank() == 0 ? diagnose(comm) : "";
      throw PeerFailure(message + ": " + (where.empty() ? "a rank has died or hangs" : where));
    }
    if (waited < spin) {
      std::this_thread::yield();
      continue;
    }
    if (comm.rank() != 0) answer_probe(comm);
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

namespace {

// Open MPI's defaults where pagedllm's traffic differs from what they were tuned for; a value
// the user set (environment, mpirun -x, --mca) wins.
//  - Its non-blocking all-reduce (libnbc) reduces to rank 0 and broadcasts back for small
//    messages: two link latencies per all-reduce, where recursive doubling (each pair of ranks
//    exchanges and adds) needs one per doubling, log2(N) in all. Over TCP with 1 ms each way,
//    stories260K decoded 28.4 tokens/s with the default and 48.2 with recursive doubling; over
//    shared memory the two were within the noise. With a power-of-two rank count every rank adds
//    the same pair of values at each step (a + b == b + a in IEEE arithmetic), so all ranks keep
//    bit-identical activations.
//  - Its TCP transport, progressed only from the rank's own MPI calls, fell in about half the
//    runs into a stall of about 4 ms per collective over a link with latency (llama-1b bf16 over
//    0.1 ms each way: 5.1 tokens/s against 11.3); with its progress thread, 9 runs of 9 read
//    11.0-11.4 (bf16) and 18.0-18.9 (q8_0). Between ranks on one machine (shared memory) it is
//    not used.
void set_open_mpi_defaults() {
  setenv("OMPI_MCA_btl_tcp_progress_thread", "1", /*overwrite=*/0);
  const int size = launcher_world_size();
  if (size >= 2 && (size & (size - 1)) == 0)
    setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "4", /*overwrite=*/0);
}

}  // namespace

Communicator& Communicator::world() {
  static std::unique_ptr<Communicator> instance = [] {
    static MpiSession session;
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      set_open_mpi_defaults();
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
  ++collectives_;
  check(MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                       MPI_COMM_WORLD, &request),
        "all-reduce");
  wait_s_ += wait_for(request, "all-reduce", *this, false);
}

void Communicator::broadcast(std::vector<uint8_t>& bytes, int root, bool idle_wait) {
  uint64_t size = bytes.size();
  MPI_Request request;
  ++collectives_;
  check(MPI_Ibcast(&size, 1, MPI_UINT64_T, root, MPI_COMM_WORLD, &request), "broadcast");
  const double waited = wait_for(request, "broadcast", *this, idle_wait);
  if (!idle_wait) wait_s_ += waited;
  bytes.resize(size);
  ++collectives_;
  check(MPI_Ibcast(bytes.data(), static_cast<int>(size), MPI_BYTE, root, MPI_COMM_WORLD, &request),
        "broadcast");
  wait_s_ += wait_for(request, "broadcast", *this, false);
}

void Communicator::gather(const float* mine, std::span<const int> counts, float* all, int root) {
  offsets_.assign(counts.size(), 0);
  for (size_t r = 1; r < counts.size(); ++r) offsets_[r] = offsets_[r - 1] + counts[r - 1];
  MPI_Request request;
  ++collectives_;
  check(MPI_Igatherv(mine, counts[static_cast<size_t>(rank_)], MPI_FLOAT, all, counts.data(),
                     offsets_.data(), MPI_FLOAT, root, MPI_COMM_WORLD, &request),
        "gather");
  wait_s_ += wait_for(request, "gather", *this, false);
}

std::vector<uint64_t> Communicator::all_gather(std::span<const uint64_t> mine) {
  std::vector<uint64_t> all(mine.size() * static_cast<size_t>(size_));
  MPI_Request request;
  ++collectives_;
  check(MPI_Iallgather(mine.data(), static_cast<int>(mine.size()), MPI_UINT64_T, all.data(),
                       static_cast<int>(mine.size()), MPI_UINT64_T, MPI_COMM_WORLD, &request),
        "all-gather");
  wait_s_ += wait_for(request, "all-gather", *this, false);
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
