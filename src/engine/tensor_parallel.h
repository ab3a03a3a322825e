// The engine's side of tensor parallelism (docs/SCALE-OUT.md): joining the MPI job that
// launched this process, and the start-up handshake in which every rank checks that the
// others run the same build, loaded the same model and were given the same settings.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/config.h"
#include "distributed/communicator.h"
#include "loader/model_weights.h"
#include "model/tensor_parallel.h"
#include "pagedllm/engine.h"

namespace pagedllm {

// Checks options.tensor_parallel_size against the processes the launcher started and, above 1,
// joins the MPI world (with the step timeout set). Returns null for one process. Throws
// distributed::CollectiveError when they disagree (every rank finds the same), and
// std::runtime_error when the build has no MPI.
distributed::Communicator* join_tensor_parallel(const EngineOptions& options);

// What identifies a model file whatever its path: its size and a checksum of its first MiB
// (GGUF metadata and tensor table; the safetensors header), with the configuration read from it.
struct ModelFingerprint {
  uint64_t bytes = 0;
  uint64_t metadata_checksum = 0;
};
ModelFingerprint fingerprint_of(const ModelWeights& full);

// The model at `path`, as this rank's shard when `tp` is not null; `fingerprint` gets the whole
// file's.
std::shared_ptr<const ModelWeights> load_rank_weights(const std::string& path,
                                                      distributed::Communicator* tp,
                                                      ModelFingerprint& fingerprint);
// What the model of this rank needs: the all-reduce over `tp`, and the gather that assembles
// its `vocab` logits columns on rank 0.
TensorParallelShard shard_of(distributed::Communicator* tp, int vocab);

// Gathers every rank's build, model, flags and KV-cache size. On a mismatch every rank throws
// distributed::CollectiveError; rank 0's says which rank differs and in what.
void tensor_parallel_handshake(distributed::Communicator& comm, const EngineOptions& options,
                               const ModelFingerprint& model, const EngineConfig& config);

}  // namespace pagedllm
