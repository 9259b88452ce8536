// metal_fibers.h: included right after a .metal source on the host (whose
// <metal_stdlib> is kernels/hostemu/metal's stand-in). It drops the stand-in's
// address-space macros and runs Metal's threadgroup barrier and SIMD
// shuffle on hostemu's fibers, as hostemu.h's block_sync and lane_xor_f32 do
// for the .cu texts: the shuffle is an exchange between two barriers of the
// thread's 32-group.
#ifndef HIPGO_HOSTEMU_METAL_FIBERS_H
#define HIPGO_HOSTEMU_METAL_FIBERS_H

#include "fibers.h"

#undef kernel
#undef device
#undef constant
#undef threadgroup
#undef thread

void metal::threadgroup_barrier(metal::mem_flags) { hostemu::arrive(0); }

float metal::simd_shuffle_xor(float v, ushort m) {
  const uint32_t t = hostemu::tid;
  hostemu::lane_buf[t] = v;
  hostemu::arrive(1 + t / 32);
  const float r = hostemu::lane_buf[t ^ m];
  hostemu::arrive(1 + t / 32);
  return r;
}

#endif  // HIPGO_HOSTEMU_METAL_FIBERS_H
