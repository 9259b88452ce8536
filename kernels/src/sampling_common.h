// sampling_common.h: the arithmetic the sampler kernels share with their Go
// mirrors in package sampling (philox.go, mathf32.go). Every function here is
// written with plain IEEE float32 operations (+, -, *, correctly rounded /,
// floor) and integer bit manipulation, in a fixed order, so the Go code
// reproduces each value bit for bit. That is why log and exp are hand-written
// instead of taken from portable.h's fast_logf/fast_expf: the hardware
// approximations differ per vendor, cannot be mirrored on the CPU, and
// lg2.approx.f32 has an absolute (not relative) error near 1, so -log(u) for
// u close to 1 could come out 0 or negative and make the Gumbel noise
// infinite.
//
// No fused multiply-add: it rounds once where the Go mirror rounds twice.
// The pragma below stops contraction on AMDGPU (HIP honours it) and on the
// host; clang's CUDA mode defaults to -ffp-contract=fast, which ignores the
// pragma, so every product that feeds an addition goes through sp_mul, which
// on NVPTX is mul.rn.f32 (an explicitly rounded multiply, never fused).
//
// Included after portable.h (device builds) or the host shim (host tests);
// both provide DEVICE, uint32_t, uint64_t and block_sync().
#ifndef HIPGO_SAMPLING_COMMON_H
#define HIPGO_SAMPLING_COMMON_H

#pragma clang fp contract(off)

#define SP_INF __builtin_inff()
#define SP_FLT_MAX 3.40282347e+38f
#define SP_NONE 0xffffffffu

// Per-row status written by every sampler kernel (Go: Status).
#define SP_STATUS_UNCONVERGED 0u // rejection ran out of rounds; token = argmax
#define SP_STATUS_OK 1u
#define SP_STATUS_INVALID_ROW 2u // no finite or +inf logit; token = 0

#if defined(__NVPTX__)
DEVICE float sp_mul(float a, float b) { return __nvvm_mul_rn_f(a, b); }
#else
DEVICE float sp_mul(float a, float b) { return a * b; }
#endif

DEVICE uint32_t sp_f2u(float x) { return __builtin_bit_cast(uint32_t, x); }
DEVICE float sp_u2f(uint32_t x) { return __builtin_bit_cast(float, x); }

// ---- Philox4x32-10 (Random123 constants and round function) ----
struct sp_u4 {
  uint32_t x, y, z, w;
};

// One 32x32->64 product gives both halves (a single wide multiply on GPUs
// instead of separate high and low multiplies).
DEVICE void sp_mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = (uint64_t)a * (uint64_t)b;
  hi = (uint32_t)(p >> 32);
  lo = (uint32_t)p;
}

DEVICE sp_u4 sp_philox(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                       uint32_t k0, uint32_t k1) {
  for (int i = 0; i < 10; ++i) {
    uint32_t hi0, lo0, hi1, lo1;
    sp_mulhilo(0xD2511F53u, c0, hi0, lo0);
    sp_mulhilo(0xCD9E8D57u, c2, hi1, lo1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  sp_u4 r = {c0, c1, c2, c3};
  return r;
}


// sp_uniform maps a word to ((w >> 9) + 0.5) * 2^-23, so u lies in
// [2^-24, 1 - 2^-24], strictly inside (0,1). It is computed as
// (1 + m 2^-23) - (1 - 2^-24) with m = w >> 9: the first term is built from
// bits, and the difference, (2m + 1) 2^-24, is representable, so the
// subtraction is exact and equals the Go mirror's formula bit for bit while
// skipping an integer-to-float conversion (a quarter-rate instruction on
// NVIDIA GPUs, and the Gumbel kernel does one per element).
DEVICE float sp_uniform(uint32_t w) {
  return sp_u2f(0x3f800000u | (w >> 9)) - 0.99999994f;
}

// ---- log and exp in float32 ----

// sp_log: natural log of a positive, normal, finite x. x = 2^e * m with m in
// (sqrt(1/2), sqrt(2)]; log m = 2 atanh(s), s = (m-1)/(m+1), |s| <= 0.1716,
// series to s^9 (relative truncation error < 3e-9). m - 1 is exact, so the
// result keeps its relative accuracy for x near 1 (the case that matters for
// -log(u) with u close to 1). e*ln2 uses a 16-bit high part so e*ln2_hi is
// exact.
DEVICE float sp_log(float x) {
  uint32_t b = sp_f2u(x);
  int e = (int)(b >> 23) - 127;
  uint32_t mb = (b & 0x007fffffu) | 0x3f800000u;
  if (mb > 0x3fb504f3u) {  // m > sqrt(2): use m/2
    mb -= 0x00800000u;
    e += 1;
  }
  const float f = sp_u2f(mb) - 1.0f;
  const float s = f / (2.0f + f);
  const float z = s * s;
  float p = 0.222222224f;                 // 2/9
  p = 0.285714298f + sp_mul(z, p);               // 2/7
  p = 0.400000006f + sp_mul(z, p);                        // 2/5
  p = 0.666666687f + sp_mul(z, p);               // 2/3
  p = z * p;
  const float logm = (s + s) + sp_mul(s, p);
  const float fe = (float)e;
  return sp_mul(fe, 0.693138123f) + (sp_mul(fe, 9.05800061e-06f) + logm);
}

// sp_exp: e^x for x <= 0 (the only use: probabilities relative to the row's
// maximum). Results below 2^-126 are returned as 0 (x < -87, -inf and NaN
// give 0), so no subnormal ever enters a sum and flush-to-zero modes cannot
// change a result. x = k ln2 + r, |r| <= 0.35, Taylor to r^6.
DEVICE float sp_exp(float x) {
  if (!(x >= -87.0f)) return 0.0f;
  const float kf = __builtin_floorf(sp_mul(x, 1.44269502f) + 0.5f);
  const float r = (x - sp_mul(kf, 0.693138123f)) - sp_mul(kf, 9.05800061e-06f);
  float p = 0.00138888892f;            // 1/720
  p = 0.00833333377f + sp_mul(r, p);          // 1/120
  p = 0.0416666679f + sp_mul(r, p);          // 1/24
  p = 0.166666672f + sp_mul(r, p);          // 1/6
  p = 0.5f + sp_mul(r, p);
  p = 1.0f + sp_mul(r, p);
  p = 1.0f + sp_mul(r, p);
  const int k = (int)kf;                   // in [-126, 0]
  return sp_mul(p, sp_u2f((uint32_t)(k + 127) << 23));  // exact: a power-of-two scale
}

// sp_gumbel: -log(-log(u)) for the word's uniform. u in [2^-24, 1-2^-24]
// gives -log u in [5.96e-8, 16.7] (positive and normal), so the noise is
// finite: [-2.82, 16.7].
DEVICE float sp_gumbel(uint32_t w) {
  const float u = sp_uniform(w);
  const float e = -sp_log(u);
  return -sp_log(e);
}

// sp_gumbel_score: the score the Gumbel kernel ranks for logit x, x/T + g.
// Everywhere but NVPTX it is exactly sp_mul(x, inv_temp) + sp_gumbel(w), the
// value GumbelMaxCPU computes, so the host emulation checks it bit for bit.
//
// On NVPTX it is (x/T + g) log2(e) - log2(ln 2): the same order of scores,
// in log2 units shifted by a constant (the same for every element, so left
// out), computed with the hardware lg2.approx (relative error about 2^-22)
// instead of sp_log, whose IEEE division and unfused products made the
// kernel compute-bound (15-18% of copy bandwidth on an H200). Where
// lg2.approx's absolute error (2^-22 near 1) would swamp -log2(u) (u near
// 1, t = 1 - u < 2^-7), -log2(u) = log2(e) (t + t^2/2) instead; its
// truncation error (< t^2/3 relative, 2.0e-5 at t = 2^-7) is the size of
// the hardware log's just above 2^-7 (2.1e-5). A third series term bought
// nothing measurable in accuracy and cost 2% of the kernel's time. Tokens
// then equal GumbelMaxCPU's except where two scores are within ~1e-4 (a
// near-tie), which the GPU tests check in float64. The .ftz forms are
// safe: u >= 2^-24 and -log2(u) >= 8.6e-8 are normal.
#if defined(__NVPTX__)
DEVICE float sp_gumbel_score(float x, float scale, uint32_t w) {
  // t = 1 - u is exact (u >= 1/2 where it matters). t < 2^-7 exactly when
  // w >= 0xFE000000 (u = (2m + 1) 2^-24, m = w >> 9 >= 2^23 - 2^16): an
  // integer compare.
  const float u = sp_uniform(w);
  const float t = 1.0f - u;
  const float nseries = t * (-1.44269502f + t * -0.72134751f);  // log2(1-t) to t^2
  // log2(u) (negative), selected between the series and the hardware log;
  // both sides are computed, so a warp never splits.
  const float log2u = w >= 0xFE000000u ? nseries : __nvvm_lg2_approx_ftz_f(u);
  return x * scale - __nvvm_lg2_approx_ftz_f(-log2u);
}
// sp_gumbel_scale: what the kernel passes sp_gumbel_score for inv_temp. On
// NVPTX, inv_temp * log2(e), capped at FLT_MAX so that a huge finite 1/T
// cannot overflow to +inf (which would turn a zero logit into NaN).
DEVICE float sp_gumbel_scale(float inv_temp) {
  const float c = inv_temp * 1.44269502f;
  return c < SP_FLT_MAX ? c : SP_FLT_MAX;
}
#else
DEVICE float sp_gumbel_score(float x, float inv_temp, uint32_t w) {
  return sp_mul(x, inv_temp) + sp_gumbel(w);
}
DEVICE float sp_gumbel_scale(float inv_temp) { return inv_temp; }
#endif

// ---- 16-bit inputs, converted exactly in registers ----
struct sp_bf16 {
  uint16_t bits;
};
struct sp_f16 {
  uint16_t bits;
};

DEVICE float sp_to_f32(float v) { return v; }
DEVICE float sp_to_f32(sp_bf16 v) { return sp_u2f((uint32_t)v.bits << 16); }
DEVICE float sp_to_f32(sp_f16 v) {
  const uint32_t h = v.bits;
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t ex = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  if (ex == 0) {  // zero or subnormal: man * 2^-24, exact in float32
    const float m = (float)man * 5.96046448e-08f;
    return sp_u2f(sp_f2u(m) | sign);
  }
  if (ex == 31) return sp_u2f(sign | 0x7f800000u | (man << 13));  // inf / NaN
  return sp_u2f(sign | ((ex + 112u) << 23) | (man << 13));
}

// NaN counts as -inf everywhere.
DEVICE float sp_clean(float x) { return x != x ? -SP_INF : x; }

// ---- four consecutive elements (one Philox call's worth) ----
// Group g holds elements 4g..4g+3. vec says the row start is aligned for a
// vector load of a whole group; elements at or past V read as -inf and the
// callers never index them.
struct __attribute__((aligned(16))) sp_f32x4 {
  float v[4];
};
struct __attribute__((aligned(8))) sp_u16x4 {
  uint16_t v[4];
};

DEVICE bool sp_row_vec(const float* row) { return ((__UINTPTR_TYPE__)row & 15u) == 0; }
DEVICE bool sp_row_vec(const sp_bf16* row) { return ((__UINTPTR_TYPE__)row & 7u) == 0; }
DEVICE bool sp_row_vec(const sp_f16* row) { return ((__UINTPTR_TYPE__)row & 7u) == 0; }

// sp_load4 cleans (NaN -> -inf). sp_load4_raw keeps NaN, for callers that
// only ever ask "is this strictly greater", which NaN never is.
template <bool Clean>
DEVICE float sp_maybe_clean(float x) { return Clean ? sp_clean(x) : x; }

template <bool Clean>
DEVICE void sp_load4_any(const float* row, uint32_t V, uint32_t g, bool vec, float* o) {
  const uint32_t i = g * 4u;
  if (vec && V - i >= 4u) {
    const sp_f32x4 x = *(const sp_f32x4*)(row + i);
    for (int q = 0; q < 4; ++q) o[q] = sp_maybe_clean<Clean>(x.v[q]);
  } else {
    for (uint32_t q = 0; q < 4; ++q) o[q] = (i + q < V) ? sp_maybe_clean<Clean>(row[i + q]) : -SP_INF;
  }
}

template <bool Clean, typename H>
DEVICE void sp_load4_any(const H* row, uint32_t V, uint32_t g, bool vec, float* o) {
  const uint32_t i = g * 4u;
  if (vec && V - i >= 4u) {
    const sp_u16x4 x = *(const sp_u16x4*)(row + i);
    for (int q = 0; q < 4; ++q) {
      H h = {x.v[q]};
      o[q] = sp_maybe_clean<Clean>(sp_to_f32(h));
    }
  } else {
    for (uint32_t q = 0; q < 4; ++q)
      o[q] = (i + q < V) ? sp_maybe_clean<Clean>(sp_to_f32(row[i + q])) : -SP_INF;
  }
}

// sp_load4_full: group g when the row is aligned for vector loads and all
// four elements are below V: one 16-byte (or 8-byte) load, no checks, NaN
// kept.
DEVICE void sp_load4_full(const float* row, uint32_t g, float* o) {
  const sp_f32x4 x = ((const sp_f32x4*)row)[g];
  for (int q = 0; q < 4; ++q) o[q] = x.v[q];
}
template <typename H>
DEVICE void sp_load4_full16(const H* row, uint32_t g, float* o) {
  const sp_u16x4 x = ((const sp_u16x4*)row)[g];
  for (int q = 0; q < 4; ++q) {
    H h = {x.v[q]};
    o[q] = sp_to_f32(h);
  }
}
DEVICE void sp_load4_full(const sp_bf16* row, uint32_t g, float* o) { sp_load4_full16(row, g, o); }
DEVICE void sp_load4_full(const sp_f16* row, uint32_t g, float* o) { sp_load4_full16(row, g, o); }

template <typename In>
DEVICE void sp_load4(const In* row, uint32_t V, uint32_t g, bool vec, float* o) {
  sp_load4_any<true>(row, V, g, vec, o);
}
template <typename In>
DEVICE void sp_load4_raw(const In* row, uint32_t V, uint32_t g, bool vec, float* o) {
  sp_load4_any<false>(row, V, g, vec, o);
}

template <typename In>
DEVICE float sp_load1(const In* row, uint32_t i) { return sp_clean(sp_to_f32(row[i])); }

// ---- block-wide helpers over shared arrays of NT entries (NT a power of 2) ----
// Each starts after its caller's block_sync (the arrays are filled) and ends
// with one, so entry 0 (or NT-1 for the scan) is readable by every thread.

// sp_atomic_min_u32: shared-memory atomic minimum (atom.shared.min.u32 on
// NVPTX, ds_min_u32 on AMDGPU). Used to pick the lowest thread that meets a
// condition, so the choice never depends on which thread writes last.
DEVICE void sp_atomic_min_u32(uint32_t* p, uint32_t v) {
  __atomic_fetch_min(p, v, __ATOMIC_RELAXED);
}

// (a, ia) beats (b, ib): larger value, lower index on ties.
DEVICE bool sp_better(float a, uint32_t ia, float b, uint32_t ib) {
  return a > b || (a == b && ia < ib);
}

template <uint32_t NT>
DEVICE void sp_reduce_argmax(float* v, uint32_t* ix, uint32_t t) {
  for (uint32_t s = NT / 2; s > 0; s >>= 1) {
    if (t < s && sp_better(v[t + s], ix[t + s], v[t], ix[t])) {
      v[t] = v[t + s];
      ix[t] = ix[t + s];
    }
    block_sync();
  }
}

// sp_block_argmax: the block's best (value, lowest index) of every thread's
// (bv, bi), left in v[0], ix[0] for thread 0 to read. On NVPTX warps reduce
// with register shuffles and two barriers join the warps (the shared-memory
// tree takes a barrier per level, nine for 512 threads; with two blocks per
// multiprocessor a block in its tree left the SM half idle: the shuffles
// measured 2-10% faster on an H200 at small and mid-size shapes).
// Elsewhere it is the tree, which the host emulation checks. (max, lowest
// index) is associative and commutative, so both give the same result.
#if defined(__NVPTX__)
// sp_shfl_xor: lane l gets lane (l ^ off)'s value, the whole warp taking
// part. Inline PTX: clang's __nvvm_shfl_sync_* builtins demand a PTX-version
// target feature that kernelc's flags do not set.
DEVICE uint32_t sp_shfl_xor(uint32_t v, int off) {
  uint32_t out;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(out) : "r"(v), "r"(off));
  return out;
}
DEVICE void sp_warp_argmax(float& bv, uint32_t& bi) {
  for (int off = 16; off > 0; off >>= 1) {
    const float ov = sp_u2f(sp_shfl_xor(sp_f2u(bv), off));
    const uint32_t oi = sp_shfl_xor(bi, off);
    if (sp_better(ov, oi, bv, bi)) {
      bv = ov;
      bi = oi;
    }
  }
}
template <uint32_t NT>
DEVICE void sp_block_argmax(float* v, uint32_t* ix, uint32_t t, float bv, uint32_t bi) {
  static_assert(NT % 32 == 0 && NT / 32 <= 32, "whole warps, at most 32 of them");
  sp_warp_argmax(bv, bi);
  if ((t & 31u) == 0) {
    v[t >> 5] = bv;
    ix[t >> 5] = bi;
  }
  block_sync();
  if (t < 32) {
    bv = t < NT / 32 ? v[t] : -SP_INF;
    bi = t < NT / 32 ? ix[t] : SP_NONE;
    sp_warp_argmax(bv, bi);
  }
  block_sync();
  if (t == 0) {
    v[0] = bv;
    ix[0] = bi;
  }
}
#else
template <uint32_t NT>
DEVICE void sp_block_argmax(float* v, uint32_t* ix, uint32_t t, float bv, uint32_t bi) {
  v[t] = bv;
  ix[t] = bi;
  block_sync();
  sp_reduce_argmax<NT>(v, ix, t);
}
#endif

template <uint32_t NT>
DEVICE void sp_reduce_sum(float* a, uint32_t t) {
  for (uint32_t s = NT / 2; s > 0; s >>= 1) {
    if (t < s) a[t] = a[t] + a[t + s];
    block_sync();
  }
}

// Two float sums and two counts in one tree (the rejection kernel's pivot
// statistics).
template <uint32_t NT>
DEVICE void sp_reduce_stats(float* a, float* b, uint32_t* c, uint32_t* d, uint32_t t) {
  for (uint32_t s = NT / 2; s > 0; s >>= 1) {
    if (t < s) {
      a[t] = a[t] + a[t + s];
      b[t] = b[t] + b[t + s];
      c[t] = c[t] + c[t + s];
      d[t] = d[t] + d[t + s];
    }
    block_sync();
  }
}

// Hillis-Steele inclusive scan.
template <uint32_t NT>
DEVICE void sp_scan_incl(float* a, uint32_t t) {
  for (uint32_t off = 1; off < NT; off <<= 1) {
    float v = a[t];
    if (t >= off) v = a[t - off] + v;
    block_sync();
    a[t] = v;
    block_sync();
  }
}

#endif  // HIPGO_SAMPLING_COMMON_H
