// fibers.h: the block scheduler of the host emulation (see hostemu.h):
// every GPU thread of a block is a fiber on one OS thread, switched only at
// barriers; blocks run one after another. hostemu::launch runs a grid,
// hostemu::arrive(0) is the block barrier and hostemu::arrive(1 + g) the
// barrier of 32-thread group g; hostemu::tid and hostemu::bid are the
// running thread and block. A barrier that can never complete exits the
// process with status 3 and a message instead of hanging.
#ifndef HIPGO_HOSTEMU_FIBERS_H
#define HIPGO_HOSTEMU_FIBERS_H

#include <stdint.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <cmath>
#include <functional>
#include <memory>
#include <vector>

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
inline uint32_t lane_buf_u32[1024];  // lane_read_u32's: no float round trip for the bits
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

#endif  // HIPGO_HOSTEMU_FIBERS_H
