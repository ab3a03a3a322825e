#include "kernels/cpu/bf16_batch_tile.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <sstream>
#include <utility>
#include <vector>

#include "format/dequant.h"
#include "kernels/cpu/gemm.h"

namespace pagedllm::cpu {

namespace {

struct Choice {
  Bf16BatchTile tile = Bf16BatchTile::kDot;
  std::string how;  // "forced", or the measured time ratio
};

// The lower of `best` and the time of kCalls calls of the tile (the caller alternates the tiles
// round by round, so that a noisy moment hits both).
double best_seconds(void (*tile)(const TileArgs&), const TileArgs& a, double best) {
  constexpr int kCalls = 8;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kCalls; ++i) tile(a);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
  return std::min(best, took.count());
}

// Times both tiles on 6 rows x 2 panels x K = 2048 (128 KiB of weights, in L2 as a prefill's
// panel group is): about a millisecond in all. The FMA tile must be clearly faster (5 %), so that
// noise on a host where both are close keeps the dot product.
Choice measure() {
  constexpr int M = 6, N = 2 * PackedMatrix::kPanel, K = 2048;
  std::vector<uint16_t> weights(static_cast<size_t>(N) * K);
  std::vector<float> x(static_cast<size_t>(M) * K);
  uint32_t state = 12345;
  const auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 16777216.0f - 0.5f;
  };
  for (uint16_t& w : weights) w = f32_to_bf16(next());
  for (float& v : x) v = next();
  const PackedMatrix packed(WeightMatrix{DType::kBF16, N, K, weights.data()});
  Bf16Activations xb;
  round_activations_to_bf16(Isa::kAvx512Bf16, x.data(), M, K, xb);
  widen_bf16_activations(xb);
  std::vector<float> y(static_cast<size_t>(M) * N);
  const TileArgs args{x.data(), K, M,       K,       &packed, 0,   2,      y.data(),
                      N,        N, nullptr, nullptr, 0,       &xb, nullptr};
  double dot = std::numeric_limits<double>::infinity(), fma = dot;
  for (int round = 0; round < 6; ++round) {
    dot = best_seconds(gemm_bf16_tile_dot, args, dot);
    fma = best_seconds(gemm_bf16_tile_fma, args, fma);
  }
  std::ostringstream how;
  how.precision(3);
  how << "dot/fma time " << dot / fma;
  return {fma < 0.95 * dot ? Bf16BatchTile::kFma : Bf16BatchTile::kDot, how.str()};
}

Choice initial() {
  const char* env = std::getenv("PAGEDLLM_BF16_BATCH");
  if (env && std::strcmp(env, "dot") == 0) return {Bf16BatchTile::kDot, "forced"};
  if (env && std::strcmp(env, "fma") == 0) return {Bf16BatchTile::kFma, "forced"};
  if (!cpu_supports(Isa::kAvx512Bf16)) return {Bf16BatchTile::kFma, "no AVX512-BF16"};
  return measure();
}

// The choice is read by every bf16 batch product, so it is an atomic; the mutex guards only the
// description beside it.
struct State {
  std::mutex mutex;
  std::string how;
  std::atomic<Bf16BatchTile> tile;
  explicit State(Choice c) : how(std::move(c.how)), tile(c.tile) {}
};

State& state() {
  static State s(initial());
  return s;
}

}  // namespace

const char* to_string(Bf16BatchTile tile) {
  return tile == Bf16BatchTile::kFma ? "fma" : "dot";
}

Bf16BatchTile bf16_batch_tile() {
  return state().tile.load(std::memory_order_relaxed);
}

void set_bf16_batch_tile(Bf16BatchTile tile) {
  State& s = state();
  const std::lock_guard lock(s.mutex);
  s.tile.store(tile, std::memory_order_relaxed);
  s.how = "forced";
}

std::string describe_bf16_batch_tile() {
  State& s = state();
  const std::lock_guard lock(s.mutex);
  return std::string(to_string(s.tile.load(std::memory_order_relaxed))) + " (" + s.how + ")";
}

}  // namespace pagedllm::cpu
