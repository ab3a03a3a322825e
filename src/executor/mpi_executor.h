// The executor of a tensor-parallel job (docs/SCALE-OUT.md): every rank holds a shard of the
// model and a runner; rank 0 also runs the scheduler. Each step, rank 0 broadcasts the step's
// serialized SchedulerOutput, with the tokens it sampled in the step before, and every rank
// runs update_states + prepare_inputs + its shard of the forward pass (the model sums the
// row-parallel products over the ranks). Only rank 0 computes logits and samples: the other
// ranks would need the whole output layer, and their own draws for unseeded requests would
// differ; they take rank 0's tokens from the next message instead, which costs no extra
// message.
#pragma once

#include <cstdint>
#include <vector>

#include "distributed/communicator.h"
#include "executor/executor.h"
#include "model/model.h"

namespace pagedllm {

class MpiExecutor : public Executor {
 public:
  // The model (this rank's shard) and the communicator must outlive the executor.
  MpiExecutor(const EngineConfig& config, Model& model, distributed::Communicator& comm,
              RunnerOptions options = {});
  // On rank 0, tells the other ranks to stop (their run_worker() returns).
  ~MpiExecutor() override;
  MpiExecutor(const MpiExecutor&) = delete;
  MpiExecutor& operator=(const MpiExecutor&) = delete;

  // Rank 0 only. Throws distributed::PeerFailure when a rank failed mid-step (died, hung past
  // the timeout); then and afterwards every call throws, and the caller must end the process.
  void execute_model(const SchedulerOutput& out, ModelRunnerOutput& result) override;
  const ModelRunner* local_runner() const override { return &runner_; }

  // Ranks other than 0: runs the steps rank 0 broadcasts until it says stop.
  void run_worker();

 private:
  void step_on_rank0(const SchedulerOutput& out, ModelRunnerOutput& result);
  // Runs one received message; false when it says stop.
  bool step_on_worker(const std::vector<uint8_t>& message);

  ModelRunner runner_;
  Model& model_;
  distributed::Communicator& comm_;
  ModelRunnerOutput previous_;  // rank 0's last result, sent with the next step
  std::vector<uint8_t> message_;
  bool broken_ = false;  // a step failed: the ranks' collectives no longer line up
};

}  // namespace pagedllm
