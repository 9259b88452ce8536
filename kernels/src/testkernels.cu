// testkernels: small kernels the runtime's fault and overhead tests launch on
// a real GPU. Each one does exactly one thing, so a test failure names its
// cause. Built from this one text for every AMDGPU target and every PTX arch.
#include "portable.h"

// fill_u32 sets p[0..n) to value with a grid-stride loop, so any launch shape
// covers the whole buffer.
KERNEL void fill_u32(uint32_t* p, uint32_t value, uint32_t n) {
  const uint64_t stride = grid_threads_x();
  for (uint64_t i = global_idx_x(); i < n; i += stride) p[i] = value;
}

// bounded_fill_u32 is fill_u32 compiled with a 256-thread limit per block
// (.maxntid 256 in PTX, max_flat_workgroup_size 256 in the code object). A
// launch with more than 256 threads per block must be rejected by the driver:
// the runtime's "oversized block" test.
KERNEL KBOUNDS(256) void bounded_fill_u32(uint32_t* p, uint32_t value, uint32_t n) {
  const uint64_t stride = grid_threads_x();
  for (uint64_t i = global_idx_x(); i < n; i += stride) p[i] = value;
}

// oob_write_u32 makes thread 0 of block 0 store value at byte_offset bytes
// past p: the runtime passes 2^40, far outside any allocation, to provoke an
// asynchronous illegal-address fault. The offset is an argument, not a
// constant, so the compiler cannot prove the store out of bounds and delete
// it; the volatile store cannot be merged or dropped either.
KERNEL void oob_write_u32(uint32_t* p, uint32_t value, uint64_t byte_offset) {
  if (global_idx_x() != 0) return;
  volatile uint32_t* q = (volatile uint32_t*)((uint8_t*)p + byte_offset);
  *q = value;
}

// spin_ns makes thread 0 of block 0 wait until the device timer has advanced
// ns nanoseconds, then write 1 to *out; every other thread returns at once.
// It always ends: elapsed time is computed with unsigned wrap-around, and the
// loop also stops after ns+1 iterations. One iteration (a timer read, a
// compare, a branch) takes well over a nanosecond on any GPU, so that cap can
// only end the wait after at least ns nanoseconds have passed; it exists for
// a timer that stops advancing.
KERNEL void spin_ns(uint64_t ns, uint32_t* out) {
  if (global_idx_x() != 0) return;
  const uint64_t ticks = ns / TIMER_NS_PER_TICK + (ns % TIMER_NS_PER_TICK != 0);
  const uint64_t start = timer_ticks();
  for (uint64_t iter = 0; iter <= ns; ++iter) {
    if (timer_ticks() - start >= ticks) break;
  }
  *(volatile uint32_t*)out = 1;
}

// empty does nothing: launch-overhead measurements.
KERNEL void empty() {}
