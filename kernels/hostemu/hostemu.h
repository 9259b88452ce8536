// hostemu.h: runs a kernels/src/*.cu module on the host, for tests. It
// stands in for portable.h (the module includes it in place of portable.h
// when HIPGO_HOST_SHIM names it) and provides hostemu::launch.
//
// Emulation: each GPU thread of a block is a std::thread; block_sync is a
// std::barrier over the block; lane_xor_f32 (the butterfly inside a group of
// 32 threads) is an exchange through a buffer between two barriers of that
// group only, so it needs group-uniform control flow exactly as the GPU's
// shuffle does; __shared__ variables are function statics, shared by the
// threads of the block that is running (blocks run one after another). The
// kernels' arithmetic is plain C++ float arithmetic (compile the driver with
// -ffp-contract=off to keep every rounding explicit).
//
// This checks a kernel's logic, indexing, reductions and barriers. It does
// not check the GPU compilers, the hardware's float behaviour, or memory
// ordering beyond what the barriers give: the GPU run does.
#ifndef HIPGO_HOSTEMU_H
#define HIPGO_HOSTEMU_H

#include <stdint.h>

#include <barrier>
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __shared__ static
#define KERNEL extern "C"
#define DEVICE static inline
#define KBOUNDS(n)
#define KBOUNDS_OCC(n, b)

namespace hostemu {
inline thread_local uint32_t tid;
inline thread_local uint32_t bid;
inline uint32_t block_threads;
inline uint32_t grid_blocks;
inline std::barrier<>* bar;
inline std::vector<std::unique_ptr<std::barrier<>>> group_bars;
inline float lane_buf[1024];

// launch runs blocks 0..blocks-1 one after another, each with `threads`
// std::threads (at most 1024; a multiple of 32 when the kernel exchanges
// within 32-groups). The barrier after each block keeps its shared statics
// from being overwritten while its threads still read them.
template <class F>
void launch(uint32_t blocks, uint32_t threads, F f) {
  std::barrier<> b(threads);
  bar = &b;
  block_threads = threads;
  grid_blocks = blocks;
  group_bars.clear();
  for (uint32_t g = 0; g < (threads + 31) / 32; ++g)
    group_bars.emplace_back(new std::barrier<>(threads - 32 * g < 32 ? threads - 32 * g : 32));
  std::vector<std::thread> ts;
  ts.reserve(threads);
  for (uint32_t t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      tid = t;
      for (uint32_t k = 0; k < blocks; ++k) {
        bid = k;
        f();
        b.arrive_and_wait();
      }
    });
  }
  for (auto& t : ts) t.join();
}
}  // namespace hostemu

DEVICE uint32_t thread_idx_x() { return hostemu::tid; }
DEVICE uint32_t block_idx_x() { return hostemu::bid; }
DEVICE uint32_t block_dim_x() { return hostemu::block_threads; }
DEVICE uint64_t grid_threads_x() { return (uint64_t)hostemu::grid_blocks * hostemu::block_threads; }
DEVICE uint64_t global_idx_x() { return (uint64_t)block_idx_x() * block_dim_x() + thread_idx_x(); }
DEVICE void block_sync() { hostemu::bar->arrive_and_wait(); }

DEVICE float lane_xor_f32(float v, uint32_t m) {
  const uint32_t t = hostemu::tid;
  std::barrier<>& g = *hostemu::group_bars[t / 32];
  hostemu::lane_buf[t] = v;
  g.arrive_and_wait();
  const float r = hostemu::lane_buf[t ^ m];
  g.arrive_and_wait();
  return r;
}

DEVICE void grid_fence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
DEVICE uint32_t grid_atomic_add(uint32_t* p, uint32_t v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
// Blocks run one after another, launches one after another: nothing to wait for.
DEVICE void grid_dependency_wait() {}
DEVICE void grid_launch_dependents() {}
DEVICE float grid_load_f32(const float* p) { return *(const volatile float*)p; }
DEVICE uint32_t grid_load_u32(const uint32_t* p) { return *(const volatile uint32_t*)p; }

DEVICE float fast_log2f(float x) { return std::log2(x); }
DEVICE float fast_exp2f(float x) { return std::exp2(x); }
DEVICE float fast_logf(float x) { return std::log(x); }
DEVICE float fast_expf(float x) { return std::exp(x); }
DEVICE float sqrt_f32(float x) { return __builtin_sqrtf(x); }
DEVICE float fabs_f32(float x) { return __builtin_fabsf(x); }
DEVICE float fmax_f32(float a, float b) { return __builtin_fmaxf(a, b); }
DEVICE float fmin_f32(float a, float b) { return __builtin_fminf(a, b); }

#endif  // HIPGO_HOSTEMU_H
