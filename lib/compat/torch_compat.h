#pragma once
// Every difference between Debian's LibTorch 1.13 (CPU) and LibTorch 2.x (CUDA) that
// shapelaw relies on lives here, so the rest of the code is written once.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <torch/torch.h>
#include <torch/version.h>

#include <ATen/Version.h>
#include <ATen/autocast_mode.h>
#include <ATen/CPUGeneratorImpl.h>
// The owning pointer to an autograd node (a parameter's AccumulateGrad, which holds the
// hooks ZeRO-2 adds): std::shared_ptr<Node> in 1.13 and 2.6, c10::intrusive_ptr<Node>
// in Debian sid's 2.14. Taken from grad_accumulator's declaration, not from a version number.
using AutogradNodePtr =
    decltype(torch::autograd::impl::grad_accumulator(std::declval<const torch::Tensor&>()));

// CUDA builds (lib/CMakeLists.txt defines SHAPELAW_HAVE_CUDA for a CUDA LibTorch): the
// caching allocator's statistics. Debian's CPU LibTorch ships the header but no CUDA.
#ifdef SHAPELAW_HAVE_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

#define SHAPELAW_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||           \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace shapelaw::compat {

// c10d TCPStore: from 2.4 it asks for its libuv backend by default, which builds without
// libuv (Debian 13's 2.6) refuse. Turns that off where the option exists (found by
// detection, not by version); says whether there was anything to turn off.
template <typename T, typename = void>
struct has_use_libuv : std::false_type {};
template <typename T>
struct has_use_libuv<T, std::void_t<decltype(std::declval<T&>().useLibUV)>> : std::true_type {};

template <typename TCPStoreOptions>
inline bool use_classic_store_backend(TCPStoreOptions& options) {
  if constexpr (has_use_libuv<TCPStoreOptions>::value) {
    const bool was_libuv = options.useLibUV;
    options.useLibUV = false;
    return was_libuv;
  } else {
    return false;
  }
}

inline std::string torch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

// The vectorized kernels ATen dispatches to on this CPU, lower case ("avx2", "avx512",
// "default"): at::native::get_cpu_capability is not exported by every build, but every
// 1.x and 2.x show_config() has the line "CPU capability usage: AVX2". "" if absent.
inline std::string aten_cpu_capability() {
  const std::string config = at::show_config(), key = "CPU capability usage: ";
  const size_t at = config.find(key);
  if (at == std::string::npos) return "";
  std::string value = config.substr(at + key.size(), config.find('\n', at) - at - key.size());
  std::transform(value.begin(), value.end(), value.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return value;
}

// softmax(Q K^T / sqrt(d) + causal mask) V for q, k, v of shape [B, H, T, d].
// CUDA with 2.x: the fused kernel (flash / memory-efficient). CPU: the textbook form, also
// on 2.x, where it trains faster than the fused CPU kernel (LibTorch 2.6, 2 cores: 1.16x
// tokens/s at 8L x 512W, seq 512, 1.11x at 2L x 128W; the backward pass makes the gap).
// scale: the logits' multiplier (default 1/sqrt(d), SP; muP and CompleteP use 1/d).
inline torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k,
                                      const torch::Tensor& v, double scale = 0) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), d = q.size(3);
  const double default_scale = 1.0 / std::sqrt(double(d));
  if (scale <= 0) scale = default_scale;
#if SHAPELAW_TORCH_AT_LEAST(2, 1)
  if (q.is_cuda()) {
    if (scale == default_scale)
      return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true);
    return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true,
                                            /*scale=*/scale);
  }
#elif SHAPELAW_TORCH_AT_LEAST(2, 0)
  if (q.is_cuda())  // 2.0's kernel has no scale argument: fold the ratio into q
    return at::scaled_dot_product_attention(scale == default_scale ? q : q * (scale / default_scale), k, v,
                                            /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true);
#endif
  // One baddbmm applies the scale and the additive causal mask inside the batched
  // matmul: no separate scale and masked_fill passes over the [B, H, T, T] scores.
  auto future = torch::full({T, T}, -std::numeric_limits<float>::infinity(), q.options()).triu(1);
  auto scores = torch::baddbmm(future, q.reshape({B * H, T, d}), k.reshape({B * H, T, d}).transpose(1, 2),
                               /*beta=*/1.0, /*alpha=*/scale);
  return torch::bmm(torch::softmax(scores, -1), v.reshape({B * H, T, d})).view({B, H, T, d});
}

// Which kernel causal_attention runs for q, k, v shaped and typed like q ([B, H, T, d]):
// on CUDA with 2.x SDPA's own dispatcher says (flash, memory-efficient, cuDNN or math,
// LibTorch's SDPBackend numbering); elsewhere it is the textbook form above.
inline std::string attention_backend([[maybe_unused]] const torch::Tensor& q) {
#if SHAPELAW_TORCH_AT_LEAST(2, 1)
  if (q.is_cuda()) {
    static const char* const names[] = {"math", "flash_attention", "efficient_attention", "cudnn_attention",
                                        "overrideable"};
    const int64_t choice = at::_fused_sdp_choice(q, q, q, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true);
    return choice >= 0 && choice < 5 ? std::string("SDPA ") + names[choice]
                                     : "SDPA backend " + std::to_string(choice);
  }
#elif SHAPELAW_TORCH_AT_LEAST(2, 0)
  if (q.is_cuda()) return "SDPA (LibTorch 2.0 does not say which kernel)";
#endif
  return "textbook (baddbmm, softmax, bmm)";
}

// bf16 autocast on CUDA for the forward pass (weights and optimizer stay fp32).
class AutocastBf16 {
 public:
  explicit AutocastBf16(bool enable) : enabled_(enable) {
    if (!enabled_) return;
#if SHAPELAW_TORCH_AT_LEAST(2, 4)
    at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCUDA, true);
#else
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(true);
#endif
  }
  ~AutocastBf16() {
    if (!enabled_) return;
#if SHAPELAW_TORCH_AT_LEAST(2, 4)
    at::autocast::set_autocast_enabled(at::kCUDA, false);
#else
    at::autocast::set_enabled(false);
#endif
    at::autocast::clear_cache();
  }
  AutocastBf16(const AutocastBf16&) = delete;
  AutocastBf16& operator=(const AutocastBf16&) = delete;

 private:
  bool enabled_;
};

// Whether bf16 autocast (AutocastBf16) is on: recomputation in backward turns it on again.
inline bool cuda_autocast_enabled() {
#if SHAPELAW_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(at::kCUDA);
#else
  return at::autocast::is_enabled();
#endif
}

// RNG state of the default generators, for exact resume.
inline torch::Tensor cpu_rng_state() { return at::detail::getDefaultCPUGenerator().get_state(); }
inline void set_cpu_rng_state(const torch::Tensor& s) {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(s);
}
// The default generator of the run's GPU (each rank has its own) through ATen's
// device-generic hooks (no CUDA headers needed).
inline c10::Device cuda_generator_device(const torch::Device& device) {
  return c10::Device(c10::DeviceType::CUDA, std::max<c10::DeviceIndex>(device.index(), 0));
}
inline torch::Tensor cuda_rng_state(const torch::Device& device) {
  if (!device.is_cuda() || !torch::cuda::is_available()) return torch::empty({0}, torch::kUInt8);
  return at::globalContext().defaultGenerator(cuda_generator_device(device)).get_state();
}
inline void set_cuda_rng_state(const torch::Device& device, const torch::Tensor& s) {
  if (!device.is_cuda() || !s.defined() || s.numel() == 0 || !torch::cuda::is_available()) return;
  auto gen = at::globalContext().defaultGenerator(cuda_generator_device(device));
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(s);
}

// A profiler event's duration in microseconds: KinetoEvent::durationUs until 2.0,
// durationNs after (found by detection, not by version).
template <typename E, typename = void>
struct has_duration_ns : std::false_type {};
template <typename E>
struct has_duration_ns<E, std::void_t<decltype(std::declval<const E&>().durationNs())>> : std::true_type {};
template <typename E>
double event_microseconds(const E& event) {
  if constexpr (has_duration_ns<E>::value) return double(event.durationNs()) / 1e3;
  else return double(event.durationUs());
}

inline void cuda_synchronize(const torch::Device& device) {
#if SHAPELAW_TORCH_AT_LEAST(2, 0)
  if (device.is_cuda()) torch::cuda::synchronize(device.index() < 0 ? -1 : device.index());
#else
  (void)device;  // 1.13 CPU builds: nothing to wait for (item() syncs on CUDA anyway)
#endif
}

// Makes `device` the current CUDA device of this process (torch.cuda.set_device): NCCL's
// communicators, cuBLAS handles and any tensor made without a device index then land on
// this rank's GPU rather than on GPU 0.
inline void cuda_set_device(const torch::Device& device) {
#ifdef SHAPELAW_HAVE_CUDA
  if (device.is_cuda() && device.index() >= 0) c10::cuda::set_device(device.index());
#else
  (void)device;
#endif
}

// Bytes the CUDA caching allocator has given to tensors on the run's GPU, now and at the
// peak since the last reset (torch.cuda.memory_allocated / max_memory_allocated);
// 0 without CUDA. Index 0 of the stat arrays is the aggregate over pools in every version.
inline int64_t cuda_memory_allocated(const torch::Device& device) {
#ifdef SHAPELAW_HAVE_CUDA
  return c10::cuda::CUDACachingAllocator::getDeviceStats(cuda_generator_device(device).index()).allocated_bytes[0].current;
#else
  (void)device;
  return 0;
#endif
}
inline int64_t cuda_peak_memory_allocated(const torch::Device& device) {
#ifdef SHAPELAW_HAVE_CUDA
  return c10::cuda::CUDACachingAllocator::getDeviceStats(cuda_generator_device(device).index()).allocated_bytes[0].peak;
#else
  (void)device;
  return 0;
#endif
}
// Bytes the caching allocator has reserved from the driver at its peak (torch.cuda.
// max_memory_reserved): what the GPU really had to hold, fragments and rounding included.
inline int64_t cuda_peak_memory_reserved(const torch::Device& device) {
#ifdef SHAPELAW_HAVE_CUDA
  return c10::cuda::CUDACachingAllocator::getDeviceStats(cuda_generator_device(device).index()).reserved_bytes[0].peak;
#else
  (void)device;
  return 0;
#endif
}
inline void cuda_reset_peak_memory(const torch::Device& device) {
#ifdef SHAPELAW_HAVE_CUDA
  c10::cuda::CUDACachingAllocator::resetPeakStats(cuda_generator_device(device).index());
#else
  (void)device;
#endif
}

// Whether CPU autocast is on (the fused CPU head loss is fp32-only).
inline bool cpu_autocast_enabled() {
#if SHAPELAW_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(at::kCPU);
#else
  return at::autocast::is_cpu_enabled();
#endif
}

// ATen's fused AdamW: one multi-tensor kernel for a list of tensors (CUDA from LibTorch
// 2.0, CPU from 2.4), the update torch.optim.AdamW(fused=True) takes. state_steps are fp32
// tensors on the device holding each tensor's 1-based step (read, not advanced: the caller
// counts); the kernel divides the gradients by grad_scale (an fp32 scalar tensor).
inline bool has_fused_adamw(const torch::Device& device) {
#if SHAPELAW_TORCH_AT_LEAST(2, 4)
  return device.is_cuda() || device.is_cpu();
#elif SHAPELAW_TORCH_AT_LEAST(2, 0)
  return device.is_cuda();
#else
  (void)device;
  return false;
#endif
}
inline void fused_adamw(at::TensorList params, at::TensorList grads, at::TensorList exp_avgs,
                        at::TensorList exp_avg_sqs, at::TensorList state_steps, double lr, double beta1,
                        double beta2, double weight_decay, double eps, const torch::Tensor& grad_scale) {
#if SHAPELAW_TORCH_AT_LEAST(2, 0)
  at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, /*max_exp_avg_sqs=*/{}, state_steps, lr, beta1, beta2,
                    weight_decay, eps, /*amsgrad=*/false, /*maximize=*/false, grad_scale, /*found_inf=*/{});
#else
  (void)params, (void)grads, (void)exp_avgs, (void)exp_avg_sqs, (void)state_steps, (void)lr, (void)beta1,
      (void)beta2, (void)weight_decay, (void)eps, (void)grad_scale;
  throw std::logic_error("ATen's fused AdamW needs LibTorch 2.0 or later");
#endif
}

// The key of a parameter in Optimizer::state(): the TensorImpl address printed as a
// string in 1.13, the address itself in 2.x. Chosen by the map's key type, not by version.
template <class StateMap>
typename StateMap::key_type optimizer_state_key(const torch::Tensor& param) {
  using Key = typename StateMap::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream key;
    key << param.unsafeGetTensorImpl();
    return key.str();
  } else {
    return static_cast<Key>(param.unsafeGetTensorImpl());
  }
}

}  // namespace shapelaw::compat
