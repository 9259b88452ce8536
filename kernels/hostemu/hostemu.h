// hostemu.h: runs a kernels/src/*.cu module on the host, for tests. It
// stands in for portable.h (the module includes it in place of portable.h
// when HIPGO_HOST_SHIM names it) and provides hostemu::launch.
//
// Emulation: each GPU thread of a block is a fiber, all on one
// OS thread, switched only at barriers: block_sync waits for the whole
// block, lane_xor_f32 (the butterfly inside a group of 32 threads) and
// lane_read_u32 (an indexed read within the group) are each an exchange
// through a buffer between two barriers of that group only, so they need
// group-uniform control flow exactly as the GPU's shuffle does. A
// barrier that can never complete (some thread left, or waits elsewhere)
// is reported as a deadlock and exits the process with status 3 instead of
// hanging. __shared__ variables are function statics, shared by the threads
// of the block that is running (blocks run one after another). The
// kernels' arithmetic is plain C++ float arithmetic (compile with
// -ffp-contract=off to keep every rounding explicit). Runs are
// deterministic: fibers are scheduled round-robin.
//
// This checks a kernel's logic, indexing, reductions and barriers. It does
// not check the GPU compilers, the hardware's float behaviour, or memory
// ordering beyond what the barriers give: the GPU run does.
#ifndef HIPGO_HOSTEMU_H
#define HIPGO_HOSTEMU_H

#include "fibers.h"

#define __global__
#define __device__
#define __shared__ static
#define KERNEL extern "C"
#define DEVICE static inline
#define KBOUNDS(n)
#define KBOUNDS_OCC(n, b)

DEVICE uint32_t thread_idx_x() { return hostemu::tid; }
DEVICE uint32_t block_idx_x() { return hostemu::bid; }
DEVICE uint32_t block_dim_x() { return hostemu::block_threads; }
DEVICE uint64_t grid_threads_x() { return (uint64_t)hostemu::grid_blocks * hostemu::block_threads; }
DEVICE uint64_t global_idx_x() { return (uint64_t)block_idx_x() * block_dim_x() + thread_idx_x(); }
DEVICE void block_sync() { hostemu::arrive(0); }
DEVICE void group_sync() { hostemu::arrive(1 + hostemu::tid / 32); }

DEVICE float lane_xor_f32(float v, uint32_t m) {
  const uint32_t t = hostemu::tid;
  hostemu::lane_buf[t] = v;
  hostemu::arrive(1 + t / 32);
  const float r = hostemu::lane_buf[t ^ m];
  hostemu::arrive(1 + t / 32);
  return r;
}

DEVICE uint32_t lane_read_u32(uint32_t v, uint32_t src) {
  const uint32_t t = hostemu::tid;
  hostemu::lane_buf_u32[t] = v;
  hostemu::arrive(1 + t / 32);
  const uint32_t r = hostemu::lane_buf_u32[(t & ~31u) | (src & 31u)];
  hostemu::arrive(1 + t / 32);
  return r;
}

// Copies are synchronous: every wait finds them done.
struct alignas(16) async_u32x4 {
  uint32_t v[4];
};
DEVICE void async_copy16(void* dst, const void* src, bool valid) {
  *(async_u32x4*)dst = valid ? *(const async_u32x4*)src : async_u32x4{{0u, 0u, 0u, 0u}};
}
DEVICE void stream_copy16(void* dst, const void* src, bool valid) { async_copy16(dst, src, valid); }
DEVICE void stream_copy16n(void* dst, const void* src, uint32_t n) {
  for (uint32_t i = 0; i < 16; ++i) ((uint8_t*)dst)[i] = i < n ? ((const uint8_t*)src)[i] : (uint8_t)0;
}
DEVICE void async_commit() {}
template <int N>
DEVICE void async_wait() {}

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
