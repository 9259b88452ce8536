// hostemu.h: runs a kernels/src/*.cu module on the host, for tests. It
// stands in for portable.h (the module includes it in place of portable.h
// when HIPGO_HOST_SHIM names it) and provides hostemu::launch.
//
// Emulation: each GPU thread of a block is a fiber, all on one
// OS thread, switched only at barriers: block_sync waits for the whole
// block, lane_xor_f32 (the butterfly inside a group of 32 threads) is an
// exchange through a buffer between two barriers of that group only, so it
// needs group-uniform control flow exactly as the GPU's shuffle does. A
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

#include <stdint.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#define __global__
#define __device__
#define __shared__ static
#define KERNEL extern "C"
#define DEVICE static inline
#define KBOUNDS(n)
#define KBOUNDS_OCC(n, b)

// ---- fiber contexts ----
// x86-64: a minimal switch (callee-saved registers, MXCSR and the x87
// control word; about as costly as a function call). Elsewhere: ucontext,
// whose swapcontext also makes a signal-mask system call per switch.
#if defined(__x86_64__)
asm(R"(
  .text
  .globl hostemu_switch
  .type hostemu_switch,@function
hostemu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size hostemu_switch, .-hostemu_switch
  .section .note.GNU-stack,"",@progbits
  .text
)");
extern "C" void hostemu_switch(void** save_sp, void* load_sp);
namespace hostemu {
struct Ctx {
  void* sp;
};
inline void ctx_switch(Ctx& from, Ctx& to) { hostemu_switch(&from.sp, to.sp); }
// ctx_make: the first switch to c "returns" into fn at the top of the
// stack, aligned as after a call; fn must never return.
inline void ctx_make(Ctx& c, char* stack, size_t size, void (*fn)()) {
  uintptr_t top = ((uintptr_t)(stack + size)) & ~(uintptr_t)15;
  void** sp = (void**)top;
  *--sp = nullptr;    // pad: the return-address slot below is 16-byte aligned
  *--sp = (void*)fn;  // popped by ret
  for (int i = 0; i < 6; ++i) *--sp = nullptr;  // rbp rbx r12 r13 r14 r15
  *--sp = nullptr;
  const uint32_t mxcsr = 0x1f80;  // defaults: all exceptions masked, round to nearest
  const uint16_t fpcw = 0x037f;
  memcpy((char*)sp, &mxcsr, 4);
  memcpy((char*)sp + 4, &fpcw, 2);
  c.sp = sp;
}
}  // namespace hostemu
#else
namespace hostemu {
struct Ctx {
  ucontext_t uc;
};
inline void ctx_switch(Ctx& from, Ctx& to) { swapcontext(&from.uc, &to.uc); }
inline void ctx_make(Ctx& c, char* stack, size_t size, void (*fn)()) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = size;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, fn, 0);
}
}  // namespace hostemu
#endif

namespace hostemu {
inline uint32_t tid;  // the running fiber's thread and block
inline uint32_t bid;
inline uint32_t block_threads;
inline uint32_t grid_blocks;

struct Fiber {
  Ctx ctx;
  int state;  // 0 runnable, 1 waiting at a barrier, 2 done
  uint32_t barrier;
};
struct Barrier {
  uint32_t expected, count, first, last;  // the fibers [first, last) it spans
};
inline std::vector<Fiber> fibers;
inline std::vector<Barrier> barriers;  // 0: the block; 1 + g: 32-group g
inline std::vector<std::unique_ptr<char[]>> stacks;  // not zeroed: untouched pages cost nothing
inline Ctx scheduler;
inline std::function<void()> body;
inline float lane_buf[1024];
constexpr size_t kStack = 128 * 1024;

// arrive: this fiber reaches barrier b; the last to arrive releases the
// others and runs on.
inline void arrive(uint32_t b) {
  Barrier& B = barriers[b];
  if (++B.count == B.expected) {
    B.count = 0;
    for (uint32_t i = B.first; i < B.last; ++i)
      if (fibers[i].state == 1 && fibers[i].barrier == b) fibers[i].state = 0;
    return;
  }
  Fiber& me = fibers[tid];
  me.state = 1;
  me.barrier = b;
  ctx_switch(me.ctx, scheduler);
}

inline void entry() {
  body();
  fibers[tid].state = 2;
  ctx_switch(fibers[tid].ctx, scheduler);  // never resumed
  abort();
}

// launch runs blocks 0..blocks-1 one after another, each with `threads`
// fibers (at most 1024), calling f in each.
template <class F>
void launch(uint32_t blocks, uint32_t threads, F f) {
  block_threads = threads;
  grid_blocks = blocks;
  body = f;
  fibers.assign(threads, Fiber{});
  while (stacks.size() < threads) stacks.emplace_back(new char[kStack]);
  const uint32_t groups = (threads + 31) / 32;
  for (uint32_t k = 0; k < blocks; ++k) {
    bid = k;
    barriers.assign(1 + groups, Barrier{});
    barriers[0] = Barrier{threads, 0, 0, threads};
    for (uint32_t g = 0; g < groups; ++g) {
      const uint32_t last = 32 * g + 32 < threads ? 32 * g + 32 : threads;
      barriers[1 + g] = Barrier{last - 32 * g, 0, 32 * g, last};
    }
    for (uint32_t t = 0; t < threads; ++t) {
      fibers[t].state = 0;
      ctx_make(fibers[t].ctx, stacks[t].get(), kStack, entry);
    }
    for (uint32_t done = 0; done < threads;) {
      bool ran = false;
      done = 0;
      for (uint32_t t = 0; t < threads; ++t) {
        if (fibers[t].state == 0) {
          tid = t;
          ran = true;
          ctx_switch(scheduler, fibers[t].ctx);
        }
        done += fibers[t].state == 2;
      }
      if (!ran && done < threads) {
        fprintf(stderr, "hostemu: deadlock in block %u: %u of %u threads finished, the rest wait at barriers\n", k,
                done, threads);
        exit(3);
      }
    }
  }
}
}  // namespace hostemu

DEVICE uint32_t thread_idx_x() { return hostemu::tid; }
DEVICE uint32_t block_idx_x() { return hostemu::bid; }
DEVICE uint32_t block_dim_x() { return hostemu::block_threads; }
DEVICE uint64_t grid_threads_x() { return (uint64_t)hostemu::grid_blocks * hostemu::block_threads; }
DEVICE uint64_t global_idx_x() { return (uint64_t)block_idx_x() * block_dim_x() + thread_idx_x(); }
DEVICE void block_sync() { hostemu::arrive(0); }

DEVICE float lane_xor_f32(float v, uint32_t m) {
  const uint32_t t = hostemu::tid;
  hostemu::lane_buf[t] = v;
  hostemu::arrive(1 + t / 32);
  const float r = hostemu::lane_buf[t ^ m];
  hostemu::arrive(1 + t / 32);
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
