#include "kernels/cpu/gemm_onednn.h"

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>

#include "kernels/cpu/cpu_features.h"

namespace pagedllm::cpu {

namespace {

using dnnl::memory;

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// The operands as gemm_packed holds them: bf16 rows, the packed panels read in place, f32 rows.
memory::desc src_desc(int M, int K) {
  return memory::desc({M, K}, memory::data_type::bf16, memory::format_tag::ab);
}
memory::desc weights_desc(int K, int N) {
  return memory::desc({K, N}, memory::data_type::bf16, memory::format_tag::BA16a16b2a);
}
memory::desc dst_desc(int M, int N) {
  return memory::desc({M, N}, memory::data_type::f32, memory::format_tag::ab);
}
memory::desc bias_desc(int N) {
  return memory::desc({1, N}, memory::data_type::f32, memory::format_tag::ab);
}

// A matmul primitive for one shape, or none where oneDNN has no bf16 matmul for this CPU.
std::optional<dnnl::matmul::primitive_desc> make_matmul(int M, int K, int N, bool bias) {
  const memory::desc b = bias ? bias_desc(N) : memory::desc();
  try {
    return dnnl::matmul::primitive_desc(
        dnnl::matmul::desc(src_desc(M, K), weights_desc(K, N), b, dst_desc(M, N)), cpu_engine());
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
}

// Primitives by (M, K, N, bias). Creating one took 0.06-0.35 ms (oneDNN 2.6, 2-vCPU Xeon); a
// chunked-prefill server sees a few hundred distinct M, so the cache is simply cleared when it
// grows past that. A primitive is a reference-counted handle: the copy get() returns stays valid
// while another thread clears the cache.
class MatmulCache {
 public:
  std::optional<dnnl::matmul> get(int M, int K, int N, bool bias) {
    const Key key{M, K, N, bias};
    std::lock_guard<std::mutex> lock(mutex_);
    if (const auto it = cache_.find(key); it != cache_.end()) return it->second;
    if (cache_.size() >= kCapacity) cache_.clear();
    std::optional<dnnl::matmul> made;
    if (const auto pd = make_matmul(M, K, N, bias)) made.emplace(*pd);
    return cache_[key] = std::move(made);
  }

 private:
  using Key = std::tuple<int, int, int, bool>;
  static constexpr size_t kCapacity = 1024;
  std::mutex mutex_;
  std::map<Key, std::optional<dnnl::matmul>> cache_;
};

MatmulCache& matmul_cache() {
  static MatmulCache cache;
  return cache;
}

std::atomic<MatmulBackend>& current() {
  static std::atomic<MatmulBackend> backend{matmul_backend_from_env()};
  return backend;
}

// What oneDNN would run a bf16 product on, probed once by creating one (the kernel's name says
// its ISA): a CPU can advertise AMX that the OS does not let a process use.
const std::string& probed_impl() {
  static const std::string name = [] {
    const auto pd = make_matmul(64, 64, 64, false);
    return pd ? std::string(pd->impl_info_str()) : std::string("none");
  }();
  return name;
}

}  // namespace

MatmulBackend matmul_backend_from_env() {
  const char* env = std::getenv("PAGEDLLM_MATMUL");
  if (!env) return MatmulBackend::kAuto;
  try {
    return parse_matmul_backend(env);
  } catch (const std::invalid_argument&) {
    return MatmulBackend::kAuto;
  }
}

const char* to_string(MatmulBackend backend) {
  switch (backend) {
    case MatmulBackend::kAuto:
      return "auto";
    case MatmulBackend::kNative:
      return "native";
    case MatmulBackend::kOneDnn:
      return "onednn";
  }
  return "?";
}

MatmulBackend parse_matmul_backend(const std::string& name) {
  if (name == "auto") return MatmulBackend::kAuto;
  if (name == "native") return MatmulBackend::kNative;
  if (name == "onednn") return MatmulBackend::kOneDnn;
  throw std::invalid_argument("matmul backend must be auto, native or onednn, got '" + name + "'");
}

MatmulBackend matmul_backend() {
  return current().load(std::memory_order_relaxed);
}

void set_matmul_backend(MatmulBackend backend) {
  current().store(backend);
}

std::string onednn_isa() {
  return probed_impl();
}

bool onednn_has_amx() {
  return probed_impl().find("amx") != std::string::npos;
}

namespace {

// Whether large bf16 products go to oneDNN under the current backend and ISA.
bool onednn_selected() {
  const MatmulBackend backend = matmul_backend();
  // auto: a narrowed PAGEDLLM_ISA asks for that native path, which oneDNN would bypass.
  return backend == MatmulBackend::kOneDnn ||
         (backend == MatmulBackend::kAuto && active_isa() >= Isa::kAvx512Bf16 && onednn_has_amx());
}

}  // namespace

std::string describe_matmul_backend() {
  return std::string(to_string(matmul_backend())) + ":" +
         (onednn_selected() ? "onednn[" + onednn_isa() + "]" : std::string("native"));
}

bool onednn_can_read(const PackedMatrix& w) {
  return w.is_bf16() && w.cols() % 32 == 0;
}

bool uses_onednn(const PackedMatrix& w, int M) {
  if (M < kOneDnnMinRows || !onednn_can_read(w)) return false;
  return onednn_selected();
}

bool gemm_bf16_onednn(const Bf16Activations& xb, int M, const PackedMatrix& w, float* y,
                      const float* bias) {
  const int K = w.cols(), N = w.rows();
  const std::optional<dnnl::matmul> matmul = matmul_cache().get(M, K, N, bias != nullptr);
  if (!matmul) return false;
  dnnl::engine& engine = cpu_engine();
  thread_local dnnl::stream stream(engine);
  // oneDNN takes non-const handles; it only reads the source, weights and bias.
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, memory(src_desc(M, K), engine, const_cast<uint32_t*>(xb.row(0)))},
      {DNNL_ARG_WEIGHTS,
       memory(weights_desc(K, N), engine, const_cast<uint16_t*>(w.bf16_panel(0)))},
      {DNNL_ARG_DST, memory(dst_desc(M, N), engine, y)}};
  if (bias) args.emplace(DNNL_ARG_BIAS, memory(bias_desc(N), engine, const_cast<float*>(bias)));
  matmul->execute(stream, args);
  stream.wait();
  return true;
}

}  // namespace pagedllm::cpu
