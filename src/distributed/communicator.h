// The processes of a tensor-parallel job and the few collectives the engine needs, over MPI
// (docs/SCALE-OUT.md). No MPI type appears here: a build without MPI compiles the same callers,
// and Communicator::world() then says that the build has no MPI.
//
// Every wait has a deadline: a collective that a peer does not join within timeout() seconds
// (it died or hangs) throws PeerFailure instead of blocking for ever, and MPI errors come back
// as exceptions (MPI_ERRORS_RETURN), not as an abort inside the library. Past the deadline rank
// 0 asks every rank where it waits, so the error names the rank that hangs (docs/SCALE-OUT.md).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace pagedllm::distributed {

// A peer that did not take part in a collective in time, or an MPI error.
class PeerFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An error that every rank finds at the same point (a failed start-up check): each rank stops
// on its own, and only the one that reports it (rank 0) prints the message.
class CollectiveError : public std::runtime_error {
 public:
  CollectiveError(const std::string& message, bool report)
      : std::runtime_error(message), report_(report) {}
  bool report() const { return report_; }

 private:
  bool report_;
};

bool built_with_mpi();

// The processes of the job that launched this one (mpirun's OMPI_COMM_WORLD_SIZE, or PMI_SIZE
// of Slurm/MPICH launchers), read from the environment without initializing MPI; 1 when no
// launcher started it.
int launcher_world_size();
// This process's rank in that job (OMPI_COMM_WORLD_RANK, PMI_RANK); 0 outside a launcher.
int launcher_rank();

class Communicator {
 public:
  // The MPI world, initialized on first use (MPI_THREAD_SERIALIZED: one thread at a time calls
  // in, the engine's loop thread in a server) and finalized at exit. Throws std::runtime_error
  // when the build has no MPI.
  static Communicator& world();
  // Whether MPI is initialized in this process with more than one rank.
  static bool active();

  int rank() const { return rank_; }
  int size() const { return size_; }
  double timeout() const { return timeout_s_; }
  // Seconds a collective may wait for its peers; <= 0 waits for ever. Ranks above 0 wait a few
  // seconds longer, so that rank 0, which reports, gives up first.
  void set_timeout(double seconds) { timeout_s_ = seconds; }
  // From any thread: from now on a wait in a collective gives up after `seconds`, and rank 0's
  // probe of the other ranks after a fraction of it. For a SIGTERM to rank 0, which mpirun's
  // launcher also sends when a peer died, a second before its SIGKILL: a collective of a
  // healthy job completes in milliseconds, and one with a dead peer then fails in time for the
  // server to answer its streams with 503.
  void hurry(double seconds) { hurry_s_.store(seconds); }
  double hurried() const { return hurry_s_.load(); }
  // Collectives this rank has entered: every rank enters the same ones in the same order.
  uint64_t collectives() const { return collectives_; }
  // Seconds spent waiting in collectives inside steps (not a worker's wait for the next step):
  // the transfers, and the time the other ranks took to arrive.
  double wait_seconds() const { return wait_s_; }

  // Sums `data` over the ranks, in place (f32); every rank gets the same sum.
  void all_reduce_sum(float* data, size_t count);
  // The root's bytes to every rank (resized to fit). idle_wait: a rank that may wait any time
  // for the next message (a worker between requests) sleeps between polls and has no deadline.
  void broadcast(std::vector<uint8_t>& bytes, int root, bool idle_wait = false);
  // Rank r's counts[r] floats from `mine`, placed rank after rank in `all` on `root` (which
  // holds the sum of counts; `all` is unused elsewhere).
  void gather(const float* mine, std::span<const int> counts, float* all, int root);
  // Every rank's `mine` (all the same length), rank by rank.
  std::vector<uint64_t> all_gather(std::span<const uint64_t> mine);
  // Logs "rank R: message" (unless empty) and ends every process of the job (MPI_Abort) with exit
  // status 1.
  [[noreturn]] void abort(const std::string& message);

 private:
  Communicator(int rank, int size) : rank_(rank), size_(size) {}
  int rank_;
  int size_;
  double timeout_s_ = 60.0;
  uint64_t collectives_ = 0;
  double wait_s_ = 0.0;
  std::atomic<double> hurry_s_{0.0};
  std::vector<int> offsets_;  // gather()'s displacements, kept across steps
};

}  // namespace pagedllm::distributed
