#include "engine/tensor_parallel.h"

#include <xxhash.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "loader/load_model.h"
#include "loader/weight_shard.h"

namespace pagedllm {

namespace {

uint64_t hash_of(const std::string& text) {
  return XXH3_64bits(text.data(), text.size());
}

// The running binary's bytes: two ranks on two machines run the same build when these agree.
uint64_t build_checksum() {
  std::ifstream exe("/proc/self/exe", std::ios::binary);
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  std::vector<char> chunk(1 << 20);
  while (exe) {
    exe.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    XXH3_64bits_update(state, chunk.data(), static_cast<size_t>(exe.gcount()));
  }
  const uint64_t h = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return h;
}

// The settings that decide what a rank computes (not where the model is, nor its threads).
std::string settings_of(const EngineOptions& o, const EngineConfig& c) {
  std::ostringstream os;
  os << "tp=" << o.tensor_parallel_size << " max_model_len=" << c.scheduler.max_model_len
     << " block_size=" << c.cache.block_size << " num_blocks=" << c.cache.num_blocks
     << " max_num_batched_tokens=" << c.scheduler.max_num_batched_tokens
     << " max_num_seqs=" << c.scheduler.max_num_seqs << " kv_cache_dtype=" << o.kv_cache_dtype
     << " prefix_caching=" << c.cache.enable_prefix_caching
     << " chunked_prefill=" << c.scheduler.enable_chunked_prefill
     << " matmul_backend=" << o.matmul_backend;
  return os.str();
}

enum Field { kBuild, kModelBytes, kModelChecksum, kSettings, kFields };

std::string hex(uint64_t v) {
  std::ostringstream os;
  os << std::hex << v;
  return os.str();
}

// The first difference between rank r's fields and rank 0's, in words.
std::string difference(int r, const uint64_t* mine, const uint64_t* root) {
  const std::string who = "rank " + std::to_string(r);
  if (mine[kBuild] != root[kBuild]) return who + " runs another pagedllm build than rank 0";
  if (mine[kModelBytes] != root[kModelBytes] || mine[kModelChecksum] != root[kModelChecksum]) {
    return who + " loaded another model (" + std::to_string(mine[kModelBytes]) +
           " bytes, metadata checksum " + hex(mine[kModelChecksum]) + ") than rank 0 (" +
           std::to_string(root[kModelBytes]) + " bytes, " + hex(root[kModelChecksum]) + ")";
  }
  return who + " was given other engine settings than rank 0 (same flags on every rank)";
}

}  // namespace

distributed::Communicator* join_tensor_parallel(const EngineOptions& o) {
  const int launched = distributed::launcher_world_size();
  const bool report = distributed::launcher_rank() == 0;
  if (o.tensor_parallel_size < 1) {
    throw ConfigError("--tensor-parallel-size must be >= 1");
  }
  if (o.tensor_parallel_size != launched) {
    throw distributed::CollectiveError(
        "--tensor-parallel-size " + std::to_string(o.tensor_parallel_size) +
            " does not match the " + std::to_string(launched) +
            " process(es) of this job: start one process per rank (mpirun -np " +
            std::to_string(o.tensor_parallel_size) + " pagedllm ... --tensor-parallel-size " +
            std::to_string(o.tensor_parallel_size) + ")",
        report);
  }
  if (o.tensor_parallel_size == 1) return nullptr;
  distributed::Communicator& comm = distributed::Communicator::world();
  if (comm.size() != o.tensor_parallel_size) {
    throw distributed::CollectiveError("the MPI world has " + std::to_string(comm.size()) +
                                           " ranks, --tensor-parallel-size " +
                                           std::to_string(o.tensor_parallel_size),
                                       comm.rank() == 0);
  }
  comm.set_timeout(o.tensor_parallel_timeout_s);
  return &comm;
}

ModelFingerprint fingerprint_of(const ModelWeights& full) {
  ModelFingerprint f;
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  for (const auto& file : full.files) {
    f.bytes += file->size();
    XXH3_64bits_update(state, file->data(), std::min<size_t>(file->size(), 1 << 20));
  }
  const ModelConfig& c = full.config;
  const std::array<int, 8> shape = {c.dim,        c.hidden_dim, c.n_layers,   c.n_heads,
                                    c.n_kv_heads, c.head_dim,   c.vocab_size, c.max_seq_len};
  XXH3_64bits_update(state, shape.data(), sizeof shape);
  XXH3_64bits_update(state, c.architecture.data(), c.architecture.size());
  f.metadata_checksum = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return f;
}

std::shared_ptr<const ModelWeights> load_rank_weights(const std::string& path,
                                                      distributed::Communicator* tp,
                                                      ModelFingerprint& fingerprint) {
  ModelWeights loaded = load_model(path);
  fingerprint = fingerprint_of(loaded);
  if (tp) loaded = shard_weights(std::move(loaded), tp->rank(), tp->size());
  return std::make_shared<const ModelWeights>(std::move(loaded));
}

TensorParallelShard shard_of(distributed::Communicator* tp, int vocab) {
  if (!tp) return {};
  TensorParallelShard shard;
  shard.all_reduce = [tp](float* data, size_t count) { tp->all_reduce_sum(data, count); };
  // Buffers kept across steps: the per-rank counts change only with the number of rows.
  struct GatherBuffers {
    std::vector<float> gathered;
    std::vector<int> counts;
    int rows = -1;
  };
  auto buffers = std::make_shared<GatherBuffers>();
  shard.gather_logits = [tp, vocab, buffers](const float* mine, int rows, std::span<float> whole) {
    const int ranks = tp->size();
    GatherBuffers& b = *buffers;
    if (rows != b.rows) {
      b.counts.resize(static_cast<size_t>(ranks));
      for (int r = 0; r < ranks; ++r) {
        const int64_t count = int64_t{rows} * vocab_share(vocab, r, ranks).count;
        if (count > std::numeric_limits<int>::max())
          throw std::length_error("too many logits rows in one step for an MPI gather");
        b.counts[static_cast<size_t>(r)] = static_cast<int>(count);
      }
      b.rows = rows;
    }
    if (tp->rank() == 0) b.gathered.resize(static_cast<size_t>(rows) * static_cast<size_t>(vocab));
    tp->gather(mine, b.counts, b.gathered.data(), 0);
    if (tp->rank() == 0) place_vocab_shares(b.gathered.data(), rows, vocab, ranks, whole);
  };
  return shard;
}

void tensor_parallel_handshake(distributed::Communicator& comm, const EngineOptions& options,
                               const ModelFingerprint& model, const EngineConfig& config) {
  const std::array<uint64_t, kFields> mine = {build_checksum(), model.bytes,
                                              model.metadata_checksum,
                                              hash_of(settings_of(options, config))};
  // Ranks reach this point when their weights are packed, which takes longer on some machines
  // than others: the handshake waits longer than a step would.
  const double step_timeout = comm.timeout();
  comm.set_timeout(std::max(step_timeout, 600.0));
  const std::vector<uint64_t> all = comm.all_gather(mine);
  comm.set_timeout(step_timeout);
  for (int r = 1; r < comm.size(); ++r) {
    const uint64_t* theirs = all.data() + static_cast<size_t>(r) * kFields;
    if (!std::equal(theirs, theirs + kFields, all.data())) {
      throw distributed::CollectiveError(
          "tensor-parallel start-up check failed: " + difference(r, theirs, all.data()),
          comm.rank() == 0);
    }
  }
}

}  // namespace pagedllm
