#include "executor/mpi_executor.h"

#include <cstring>
#include <stdexcept>

#include "core/step_serialization.h"

namespace pagedllm {

namespace {

// A message: kind (1 byte), the SchedulerOutput's length (8 bytes), the SchedulerOutput, then
// the previous step's ModelRunnerOutput to the end.
enum class Kind : uint8_t { kStep = 1, kStop = 2 };

std::vector<uint8_t> step_message(const SchedulerOutput& out, const ModelRunnerOutput& previous) {
  const std::vector<uint8_t> scheduled = serialize(out);
  const std::vector<uint8_t> sampled = serialize(previous);
  std::vector<uint8_t> message(9 + scheduled.size() + sampled.size());
  message[0] = static_cast<uint8_t>(Kind::kStep);
  const uint64_t length = scheduled.size();
  std::memcpy(message.data() + 1, &length, sizeof length);
  std::memcpy(message.data() + 9, scheduled.data(), scheduled.size());
  std::memcpy(message.data() + 9 + scheduled.size(), sampled.data(), sampled.size());
  return message;
}

}  // namespace

namespace {

RunnerOptions on_rank(RunnerOptions options, int rank) {
  options.samples = rank == 0;
  if (!options.samples) options.grammars = nullptr;
  return options;
}

}  // namespace

MpiExecutor::MpiExecutor(const EngineConfig& config, Model& model, distributed::Communicator& comm,
                         RunnerOptions options)
    : runner_(config, on_rank(std::move(options), comm.rank())), model_(model), comm_(comm) {}

MpiExecutor::~MpiExecutor() {
  if (comm_.rank() != 0 || broken_) return;
  message_.assign(1, static_cast<uint8_t>(Kind::kStop));
  try {
    comm_.broadcast(message_, 0);
  } catch (const std::exception& e) {
    comm_.abort(std::string("telling the other ranks to stop: ") + e.what());
  }
}

void MpiExecutor::execute_model(const SchedulerOutput& out, ModelRunnerOutput& result) {
  if (comm_.rank() != 0) throw std::logic_error("only rank 0 schedules steps");
  if (broken_) throw distributed::PeerFailure("the tensor-parallel job failed in a step before");
  // A step that fails half-way leaves the other ranks inside a collective that rank 0 will not
  // join: no further step or stop message is sent. The caller answers what it can (a server:
  // 503) and ends the process, whose non-zero exit (or MPI_Abort) ends the job.
  try {
    step_on_rank0(out, result);
  } catch (const std::exception& e) {
    broken_ = true;
    throw distributed::PeerFailure(std::string("tensor-parallel step failed: ") + e.what());
  }
}

void MpiExecutor::step_on_rank0(const SchedulerOutput& out, ModelRunnerOutput& result) {
  message_ = step_message(out, previous_);
  comm_.broadcast(message_, 0);
  runner_.execute_model(out, model_, result);
  previous_ = result;
}

void MpiExecutor::run_worker() {
  if (comm_.rank() == 0) throw std::logic_error("rank 0 runs the engine, not a worker loop");
  // A worker has no one to report to: anything that stops it mid-job stops the job.
  try {
    do {
      comm_.broadcast(message_, 0, /*idle_wait=*/true);
    } while (step_on_worker(message_));
  } catch (const std::exception& e) {
    comm_.abort(e.what());
  }
}

bool MpiExecutor::step_on_worker(const std::vector<uint8_t>& message) {
  if (message.empty()) throw std::invalid_argument("empty step message");
  if (message[0] == static_cast<uint8_t>(Kind::kStop)) return false;
  uint64_t length = 0;
  if (message[0] != static_cast<uint8_t>(Kind::kStep) || message.size() < 9)
    throw std::invalid_argument("malformed step message");
  std::memcpy(&length, message.data() + 1, sizeof length);
  if (length > message.size() - 9) throw std::invalid_argument("malformed step message");
  const std::span<const uint8_t> bytes(message);
  const SchedulerOutput out = deserialize_scheduler_output(bytes.subspan(9, length));
  const ModelRunnerOutput previous = deserialize_model_runner_output(bytes.subspan(9 + length));
  runner_.append_sampled_tokens(previous);
  runner_.update_states(out);
  if (out.total_num_scheduled_tokens == 0) return true;
  const ModelInputs& in = runner_.prepare_inputs();
  model_.forward(in, {});
  return true;
}

}  // namespace pagedllm
