// host_shim.h: stands in for kernels/src/portable.h when sampling.cu is
// compiled for the host (sampling's emulation test). Each GPU thread of a
// block is a std::thread; block_sync is a std::barrier over them; __shared__
// variables are function statics, shared by the threads of the block that is
// running (blocks run one after another). The kernels' own arithmetic is
// untouched: sampling_common.h switches contraction off and, with neither
// __NVPTX__ nor __AMDGCN__ defined, uses plain float operations.
#ifndef HIPGO_SAMPLING_HOST_SHIM_H
#define HIPGO_SAMPLING_HOST_SHIM_H

#include <stdint.h>

#include <barrier>

#define __global__
#define __device__
#define __shared__ static
#define KERNEL extern "C"
#define DEVICE static inline
#define KBOUNDS(n)
#define KBOUNDS_OCC(n, b)

namespace hostemu {
extern thread_local uint32_t tid;
extern thread_local uint32_t bid;
extern std::barrier<>* bar;
}  // namespace hostemu

DEVICE uint32_t thread_idx_x() { return hostemu::tid; }
DEVICE uint32_t block_idx_x() { return hostemu::bid; }
DEVICE void block_sync() { hostemu::bar->arrive_and_wait(); }
DEVICE void grid_fence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
DEVICE uint32_t grid_atomic_add(uint32_t* p, uint32_t v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
// Blocks run one after another, launches one after another: nothing to wait for.
DEVICE void grid_dependency_wait() {}
DEVICE void grid_launch_dependents() {}
DEVICE float grid_load_f32(const float* p) { return *(const volatile float*)p; }
DEVICE uint32_t grid_load_u32(const uint32_t* p) { return *(const volatile uint32_t*)p; }

#endif
