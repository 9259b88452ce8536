// portable.h: the few definitions a kernel source needs, written once for
// both compilers. The same .cu text is compiled as HIP for AMDGPU
// (__AMDGCN__) and as CUDA for NVPTX (__NVPTX__) with -nogpuinc/-nocudainc
// and -nostdinc, so nothing here may come from a vendor SDK or a libc.
//
// Kernels are declared `KERNEL void name(...)`: extern "C" keeps the symbol
// unmangled, so the loader can look it up by its plain name.
#ifndef HIPGO_PORTABLE_H
#define HIPGO_PORTABLE_H

#if !defined(__AMDGCN__) && !defined(__NVPTX__)
#error "portable.h: compile with --cuda-device-only for an AMDGPU or NVPTX target"
#endif

// Fixed-width integers from the compiler's own predefined types (no libc).
typedef __INT32_TYPE__ int32_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT64_TYPE__ uint64_t;

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))

#define KERNEL extern "C" __global__
#define DEVICE static __device__ inline __attribute__((always_inline))

// KBOUNDS(n): the kernel is never launched with more than n threads per block,
// and the driver rejects a launch that asks for more. clang ignores
// launch_bounds for AMDGPU in HIP mode (the code object keeps the default
// max_flat_workgroup_size of 1024), so AMDGPU gets the attribute HIP's own
// headers use.
//
// KBOUNDS_OCC(n, b): also asks for room for b resident blocks of n threads
// per multiprocessor, which caps registers per thread (NVPTX: ptxas's
// minBlocksPerMultiprocessor; AMDGPU: the equivalent minimum waves per
// SIMD, amdgpu_waves_per_eu, taking 4 SIMDs per CU and 64-wide waves).
#if defined(__AMDGCN__)
#define KBOUNDS(n) __attribute__((amdgpu_flat_work_group_size(1, n)))
#define KBOUNDS_OCC(n, b) \
  __attribute__((amdgpu_flat_work_group_size(1, n), amdgpu_waves_per_eu(((n) * (b) + 255) / 256)))
#else
#define KBOUNDS(n) __attribute__((launch_bounds(n)))
#define KBOUNDS_OCC(n, b) __attribute__((launch_bounds(n, b)))
#endif

// ---- thread and block indices (x dimension) ----
//
// On AMDGPU the block size and the grid size come from the HSA dispatch
// packet (hsa_kernel_dispatch_packet_t: workgroup_size_x is the u16 at byte 4,
// grid_size_x the u32 at byte 12, counted in work-items). HIP's own headers
// read them from the implicit kernel arguments instead, which under code
// object v5 adds hidden_* arguments to every kernel that asks; the dispatch
// packet is there under every code object version and keeps the kernarg
// segment down to the explicit arguments.
#if defined(__AMDGCN__)
DEVICE uint32_t thread_idx_x() { return __builtin_amdgcn_workitem_id_x(); }
DEVICE uint32_t block_idx_x() { return __builtin_amdgcn_workgroup_id_x(); }
DEVICE uint32_t block_dim_x() {
  const uint16_t* p = (const uint16_t*)__builtin_amdgcn_dispatch_ptr();
  return p[2];
}
// grid_threads_x: the total number of threads in x (gridDim.x * blockDim.x).
DEVICE uint64_t grid_threads_x() {
  const uint32_t* p = (const uint32_t*)__builtin_amdgcn_dispatch_ptr();
  return p[3];
}
#else
DEVICE uint32_t thread_idx_x() { return __nvvm_read_ptx_sreg_tid_x(); }
DEVICE uint32_t block_idx_x() { return __nvvm_read_ptx_sreg_ctaid_x(); }
DEVICE uint32_t block_dim_x() { return __nvvm_read_ptx_sreg_ntid_x(); }
DEVICE uint64_t grid_threads_x() {
  return (uint64_t)__nvvm_read_ptx_sreg_nctaid_x() * __nvvm_read_ptx_sreg_ntid_x();
}
#endif

// global_idx_x: this thread's index in the whole grid, 64-bit so a
// grid-stride loop over up to 2^32-1 elements cannot wrap.
DEVICE uint64_t global_idx_x() {
  return (uint64_t)block_idx_x() * block_dim_x() + thread_idx_x();
}

// ---- barriers ----
// block_sync: every thread of the block arrives, and shared-memory writes made
// before it are visible to every thread after it.
#if defined(__AMDGCN__)
DEVICE void block_sync() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
#else
DEVICE void block_sync() { __syncthreads(); }
#endif

// group_sync: every thread of this thread's aligned group of 32 arrives, and
// the group's shared-memory writes (and its finished async copies) before it
// are visible to the whole group after it. Group-uniform control flow, as
// lane_xor_f32. AMDGPU: a wave runs its lanes together, so the fences (which
// wait for the LDS writes) are the barrier.
#if defined(__AMDGCN__)
DEVICE void group_sync() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}
#else
DEVICE void group_sync() { asm volatile("bar.warp.sync -1;" ::: "memory"); }
#endif

// ---- exchange within 32 lanes ----
// lane_xor_f32(v, m): v as held by the thread whose index is (this thread's
// index) ^ m, for m < 32: a butterfly step inside each aligned group of 32
// threads of the block (a whole warp on NVPTX, half of a 64-wide wave or a
// whole 32-wide wave on AMDGPU). Every thread of the 32-group must call it
// together (group-uniform control flow). AMDGPU: ds_bpermute, whose byte
// address selects the source lane within the wave.
#if defined(__AMDGCN__)
DEVICE float lane_xor_f32(float v, uint32_t m) {
  const uint32_t lane = (thread_idx_x() ^ m) & (uint32_t)(__builtin_amdgcn_wavefrontsize() - 1);
  return __builtin_bit_cast(float, __builtin_amdgcn_ds_bpermute((int)(lane << 2), __builtin_bit_cast(int, v)));
}
#else
// Inline PTX: without a CUDA installation clang does not enable the ptx60
// feature its __nvvm_shfl_sync_* builtins ask for; the emitted .version
// (7.0 for sm_80) has the instruction.
DEVICE float lane_xor_f32(float v, uint32_t m) {
  float r;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(m));
  return r;
}
#endif

// lane_read_u32(v, src): v as held by lane src (mod 32) of this thread's
// aligned group of 32 threads (an indexed shuffle); the same calling rule
// as lane_xor_f32. AMDGPU: ds_bpermute within the wave, the group's base
// lane kept so a 64-wide wave's upper half reads its own half.
#if defined(__AMDGCN__)
DEVICE uint32_t lane_read_u32(uint32_t v, uint32_t src) {
  const uint32_t lane =
      ((thread_idx_x() & ~31u) | (src & 31u)) & (uint32_t)(__builtin_amdgcn_wavefrontsize() - 1);
  return (uint32_t)__builtin_amdgcn_ds_bpermute((int)(lane << 2), (int)v);
}
#else
DEVICE uint32_t lane_read_u32(uint32_t v, uint32_t src) {
  uint32_t r;
  asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(r) : "r"(v), "r"(src));
  return r;
}
#endif

// ---- asynchronous copies into shared memory ----
// async_copy16(dst, src, valid): 16 bytes from global src (16-byte aligned)
// to shared dst (16-byte aligned), or 16 zero bytes when !valid (src is
// not read then). The copy lands at some point before the async_wait that
// covers it; async_commit closes the group of copies this thread issued
// since the last one, and async_wait<N>() waits until at most the N most
// recent groups are still in flight. Only the issuing thread may rely on
// the data after its wait (others need a barrier too). NVPTX (sm_80 and
// later): cp.async.ca with a source size of 16 or 0; AMDGPU: a plain copy
// (the wait is a no-op).
#if defined(__NVPTX__)
DEVICE void async_copy16(void* dst, const void* src, bool valid) {
  uint64_t d;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(d) : "l"(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;" ::"l"(d), "l"(src), "r"(valid ? 16u : 0u)
               : "memory");
}
// stream_copy16: async_copy16 for data read once (a model's weights in a
// decode step), with cp.async.cg and, from sm_90, an L2 evict-first policy:
// each step reads more weights than the L2 holds, and with the default
// policy they sweep out what the step reads again soon (activations, the
// KV cache, the kernels' code). The policy (createpolicy, .L2::cache_hint)
// needs PTX ISA 7.4, and the sm_80 PTX is ISA 7.0 (STREAM_L2_HINTS).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define STREAM_L2_HINTS 1
DEVICE uint64_t stream_policy() {
  uint64_t p;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}
DEVICE void stream_copy16(void* dst, const void* src, bool valid) {
  uint64_t d;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(d) : "l"(dst));
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;" ::"l"(d), "l"(src),
               "r"(valid ? 16u : 0u), "l"(stream_policy())
               : "memory");
}
#else
DEVICE void stream_copy16(void* dst, const void* src, bool valid) {
  uint64_t d;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(d) : "l"(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"l"(d), "l"(src), "r"(valid ? 16u : 0u) : "memory");
}
#endif
// stream_copy16n: stream_copy16 of the first n <= 16 bytes at src (16-byte
// aligned; the bytes after them are not read) and zeros after them.
#if defined(STREAM_L2_HINTS)
DEVICE void stream_copy16n(void* dst, const void* src, uint32_t n) {
  uint64_t d;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(d) : "l"(dst));
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;" ::"l"(d), "l"(src), "r"(n),
               "l"(stream_policy())
               : "memory");
}
#else
DEVICE void stream_copy16n(void* dst, const void* src, uint32_t n) {
  uint64_t d;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(d) : "l"(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"l"(d), "l"(src), "r"(n) : "memory");
}
#endif
DEVICE void async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
DEVICE void async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
#else
struct __attribute__((aligned(16))) async_u32x4 {
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
#endif

// ---- device-wide atomics and fences (the last-block-done pattern) ----
// grid_fence: this thread's global-memory writes before it are visible to
// every block before its writes after it (CUDA's __threadfence).
// grid_atomic_add: a relaxed device-scope atomic add on global memory,
// returning the old value. grid_load_*: a load that bypasses the non-coherent
// first-level cache, for data other blocks wrote during this launch.
#if defined(__AMDGCN__)
DEVICE void grid_fence() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent"); }
DEVICE uint32_t grid_atomic_add(uint32_t* p, uint32_t v) {
  return __hip_atomic_fetch_add(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
#else
// fence.acq_rel.gpu: with the relaxed atomic after it (writer) or before it
// (reader) it makes the release/acquire pair of PTX's memory model; the
// sequentially consistent membar.gl (__threadfence) costs more.
DEVICE void grid_fence() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
DEVICE uint32_t grid_atomic_add(uint32_t* p, uint32_t v) {
  return (uint32_t)__nvvm_atom_add_gen_i((int*)p, (int)v);
}
#endif
DEVICE float grid_load_f32(const float* p) { return *(const volatile float*)p; }
DEVICE uint32_t grid_load_u32(const uint32_t* p) { return *(const volatile uint32_t*)p; }

// ---- programmatic dependent launch (NVPTX sm_90 and later) ----
// A kernel launched with programmatic stream serialization may start while
// the kernel before it on the stream is still running, once that kernel's
// blocks have all called grid_launch_dependents (or exited).
// grid_dependency_wait blocks until the kernels before it have finished and
// their writes are visible; it returns at once for a plain launch. A kernel
// that calls it before touching global memory is correct under both
// launches. Elsewhere (sm_80, AMDGPU, the host emulation) both are no-ops.
#if defined(__NVPTX__) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
DEVICE void grid_dependency_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
DEVICE void grid_launch_dependents() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
#else
DEVICE void grid_dependency_wait() {}
DEVICE void grid_launch_dependents() {}
#endif

// ---- math without device libraries ----
// NVPTX has no logf/expf without libdevice (clang: "no libcall available for
// flog"), so both targets use the hardware approximations: lg2.approx.f32 /
// ex2.approx.f32 on NVPTX (what CUDA's __logf/__expf use) and v_log_f32 /
// v_exp_f32 on AMDGPU: close to float precision, not correctly rounded (the
// PTX ISA gives lg2.approx.f32 a maximum relative error of 2^-22.6).
#if defined(__AMDGCN__)
DEVICE float fast_log2f(float x) { return __builtin_amdgcn_logf(x); }
DEVICE float fast_exp2f(float x) { return __builtin_amdgcn_exp2f(x); }
#else
DEVICE float fast_log2f(float x) { return __nvvm_lg2_approx_f(x); }
DEVICE float fast_exp2f(float x) { return __nvvm_ex2_approx_f(x); }
#endif
DEVICE float fast_logf(float x) { return fast_log2f(x) * 0.693147180559945309f; }
DEVICE float fast_expf(float x) { return fast_exp2f(x * 1.442695040888963407f); }
DEVICE float sqrt_f32(float x) { return __builtin_sqrtf(x); }
DEVICE float fabs_f32(float x) { return __builtin_fabsf(x); }
DEVICE float fmax_f32(float a, float b) { return __builtin_fmaxf(a, b); }
DEVICE float fmin_f32(float a, float b) { return __builtin_fminf(a, b); }

// ---- device timer ----
// timer_ticks reads a clock that ticks at a fixed rate, independent of the
// shader clock; TIMER_NS_PER_TICK converts. NVPTX: %globaltimer, in
// nanoseconds. AMDGPU: the 100 MHz "REALTIME" counter. clang-19 refuses
// __builtin_amdgcn_s_memrealtime on gfx11/gfx12 (the instruction is gone
// there), so use __builtin_readsteadycounter, which selects s_memrealtime on
// gfx9/gfx10 and s_sendmsg_rtn_b64 MSG_RTN_GET_REALTIME on gfx11/gfx12. The
// runtime can confirm the rate with hipDeviceAttributeWallClockRate (kHz).
#if defined(__AMDGCN__)
#define TIMER_NS_PER_TICK 10u
DEVICE uint64_t timer_ticks() { return __builtin_readsteadycounter(); }
#else
#define TIMER_NS_PER_TICK 1u
DEVICE uint64_t timer_ticks() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
#endif

#endif // HIPGO_PORTABLE_H
