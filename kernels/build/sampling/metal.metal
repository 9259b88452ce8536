// sampling.metal: the kernels of sampling.cu and sampling_common.h in MSL,
// kept line for line parallel to them (same names, same order, same
// arithmetic). Differences are spelling only:
//   - thread and threadgroup indices arrive as [[thread_position_in_threadgroup]]
//     and [[threadgroup_position_in_grid]] and are passed down;
//   - shared memory is threadgroup buffers the host sizes with
//     setThreadgroupMemoryLength:atIndex:, not static arrays; each says its
//     size in a /* hipgo: N bytes */ comment, which kernelc copies into the
//     manifest (kernels/msl) and sampling.Port.Threadgroup must equal;
//   - group loads use packed vectors, which need only element alignment, so
//     there is no row-alignment test;
//   - as_type replaces __builtin_bit_cast, mulhi the 64-bit product,
//     atomic_fetch_min_explicit the GNU builtin.
// Buffer index i is kernel argument i of the .cu signature.
//
// It is compiled at run time with newLibraryWithSource. Compile it with fast
// math off (MTLCompileOptions.mathMode = MTLMathModeSafe, or fastMathEnabled
// = NO before macOS 15): the kernels rely on correctly rounded division and
// on no contraction, which is what makes their results equal the Go
// mirrors'. There is no Metal compiler on the build machine; sampling's host
// emulation test compiles this file as C++ (kernels/hostemu/metal/metal_stdlib)
// and checks its results against the Go mirrors, which tests the logic but
// not Apple's compiler or GPUs.
#include <metal_stdlib>
using namespace metal;

#pragma clang fp contract(off)

#define SP_INF as_type<float>(0x7f800000u)
#define SP_FLT_MAX 3.40282347e+38f
#define SP_NONE 0xffffffffu

#define SP_STATUS_UNCONVERGED 0u
#define SP_STATUS_OK 1u
#define SP_STATUS_INVALID_ROW 2u

#ifndef SP_GUMBEL_THREADS
#define SP_GUMBEL_THREADS 512
#endif
#ifndef SP_REJ_THREADS
#define SP_REJ_THREADS 1024
#endif
#ifndef SP_TRACE
#define SP_TRACE(tag, bits) ((void)0)
#endif

static inline float sp_mul(float a, float b) { return a * b; }
static inline uint sp_f2u(float x) { return as_type<uint>(x); }
static inline float sp_u2f(uint x) { return as_type<float>(x); }
static inline void block_sync() { threadgroup_barrier(mem_flags::mem_threadgroup); }

// ---- Philox4x32-10 ----
struct sp_u4 {
  uint x, y, z, w;
};

static inline uint sp_mulhi(uint a, uint b) { return mulhi(a, b); }

static inline sp_u4 sp_philox(uint c0, uint c1, uint c2, uint c3, uint k0, uint k1) {
  for (int i = 0; i < 10; ++i) {
    const uint hi0 = sp_mulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    const uint hi1 = sp_mulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
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


// (1 + m 2^-23) - (1 - 2^-24) = (m + 0.5) 2^-23 exactly (see sampling_common.h).
static inline float sp_uniform(uint w) { return sp_u2f(0x3f800000u | (w >> 9)) - 0.99999994f; }

// ---- log and exp in float32 ----
static inline float sp_log(float x) {
  uint b = sp_f2u(x);
  int e = (int)(b >> 23) - 127;
  uint mb = (b & 0x007fffffu) | 0x3f800000u;
  if (mb > 0x3fb504f3u) {
    mb -= 0x00800000u;
    e += 1;
  }
  const float f = sp_u2f(mb) - 1.0f;
  const float s = f / (2.0f + f);
  const float z = s * s;
  float p = 0.222222224f;
  p = 0.285714298f + sp_mul(z, p);
  p = 0.400000006f + sp_mul(z, p);
  p = 0.666666687f + sp_mul(z, p);
  p = z * p;
  const float logm = (s + s) + sp_mul(s, p);
  const float fe = (float)e;
  return sp_mul(fe, 0.693138123f) + (sp_mul(fe, 9.05800061e-06f) + logm);
}

static inline float sp_exp(float x) {
  if (!(x >= -87.0f)) return 0.0f;
  const float kf = floor(sp_mul(x, 1.44269502f) + 0.5f);
  const float r = (x - sp_mul(kf, 0.693138123f)) - sp_mul(kf, 9.05800061e-06f);
  float p = 0.00138888892f;
  p = 0.00833333377f + sp_mul(r, p);
  p = 0.0416666679f + sp_mul(r, p);
  p = 0.166666672f + sp_mul(r, p);
  p = 0.5f + sp_mul(r, p);
  p = 1.0f + sp_mul(r, p);
  p = 1.0f + sp_mul(r, p);
  const int k = (int)kf;
  return sp_mul(p, sp_u2f((uint)(k + 127) << 23));
}

static inline float sp_gumbel(uint w) {
  const float u = sp_uniform(w);
  const float e = -sp_log(u);
  return -sp_log(e);
}

// ---- 16-bit inputs ----
struct sp_bf16 {
  ushort bits;
};
struct sp_f16 {
  ushort bits;
};

static inline float sp_to_f32(float v) { return v; }
static inline float sp_to_f32(sp_bf16 v) { return sp_u2f((uint)v.bits << 16); }
static inline float sp_to_f32(sp_f16 v) {
  const uint h = v.bits;
  const uint sign = (h & 0x8000u) << 16;
  const uint ex = (h >> 10) & 0x1fu;
  const uint man = h & 0x3ffu;
  if (ex == 0) {
    const float m = (float)man * 5.96046448e-08f;
    return sp_u2f(sp_f2u(m) | sign);
  }
  if (ex == 31) return sp_u2f(sign | 0x7f800000u | (man << 13));
  return sp_u2f(sign | ((ex + 112u) << 23) | (man << 13));
}

static inline float sp_clean(float x) { return x != x ? -SP_INF : x; }

// ---- four consecutive elements ----
static inline void sp_load4(device const float* row, uint V, uint g, thread float* o) {
  const uint i = g * 4u;
  if (V - i >= 4u) {
    const packed_float4 x = *(device const packed_float4*)(row + i);
    for (int q = 0; q < 4; ++q) o[q] = sp_clean(x[q]);
  } else {
    for (uint q = 0; q < 4; ++q) o[q] = (i + q < V) ? sp_clean(row[i + q]) : -SP_INF;
  }
}

template <typename H>
static inline void sp_load4_16(device const H* row, uint V, uint g, thread float* o) {
  const uint i = g * 4u;
  if (V - i >= 4u) {
    const packed_ushort4 x = *(device const packed_ushort4*)(row + i);
    for (int q = 0; q < 4; ++q) {
      H h = {x[q]};
      o[q] = sp_clean(sp_to_f32(h));
    }
  } else {
    for (uint q = 0; q < 4; ++q) o[q] = (i + q < V) ? sp_clean(sp_to_f32(row[i + q])) : -SP_INF;
  }
}
static inline void sp_load4(device const sp_bf16* row, uint V, uint g, thread float* o) {
  sp_load4_16(row, V, g, o);
}
static inline void sp_load4(device const sp_f16* row, uint V, uint g, thread float* o) {
  sp_load4_16(row, V, g, o);
}

template <typename In>
static inline float sp_load1(device const In* row, uint i) { return sp_clean(sp_to_f32(row[i])); }

// ---- block-wide helpers ----
static inline bool sp_better(float a, uint ia, float b, uint ib) { return a > b || (a == b && ia < ib); }

static inline void sp_atomic_min_u32(threadgroup atomic_uint* p, uint v) {
  atomic_fetch_min_explicit(p, v, memory_order_relaxed);
}
static inline uint sp_atomic_load(threadgroup atomic_uint* p) {
  return atomic_load_explicit(p, memory_order_relaxed);
}
static inline void sp_atomic_store(threadgroup atomic_uint* p, uint v) {
  atomic_store_explicit(p, v, memory_order_relaxed);
}

template <uint NT>
static inline void sp_reduce_argmax(threadgroup float* v, threadgroup uint* ix, uint t) {
  for (uint s = NT / 2; s > 0; s >>= 1) {
    if (t < s && sp_better(v[t + s], ix[t + s], v[t], ix[t])) {
      v[t] = v[t + s];
      ix[t] = ix[t + s];
    }
    block_sync();
  }
}

template <uint NT>
static inline void sp_reduce_sum(threadgroup float* a, uint t) {
  for (uint s = NT / 2; s > 0; s >>= 1) {
    if (t < s) a[t] = a[t] + a[t + s];
    block_sync();
  }
}

template <uint NT>
static inline void sp_reduce_stats(threadgroup float* a, threadgroup float* b, threadgroup uint* c,
                                   threadgroup uint* d, uint t) {
  for (uint s = NT / 2; s > 0; s >>= 1) {
    if (t < s) {
      a[t] = a[t] + a[t + s];
      b[t] = b[t] + b[t + s];
      c[t] = c[t] + c[t + s];
      d[t] = d[t] + d[t + s];
    }
    block_sync();
  }
}

template <uint NT>
static inline void sp_scan_incl(threadgroup float* a, uint t) {
  for (uint off = 1; off < NT; off <<= 1) {
    float v = a[t];
    if (t >= off) v = a[t - off] + v;
    block_sync();
    a[t] = v;
    block_sync();
  }
}

// =====================================================================
// Gumbel-max (see sampling.cu).
// =====================================================================
// gumbel_block_best: block blk's slice (split s of row r) reduced to
// (sv[0], si[0]); false for a block with no row.
template <typename In>
static inline bool gumbel_block_best(device const In* logits, uint B, uint V, uint ld, float inv_temp,
                                     uint key0, uint key1, uint splits, thread uint& r, thread uint& s,
                                     threadgroup float* sv, threadgroup uint* si, uint t, uint blk) {
  const uint NT = SP_GUMBEL_THREADS;
  if (splits == 0) return false;
  r = blk / splits;
  s = blk - r * splits;
  if (r >= B) return false;
  device const In* row = logits + (ulong)r * ld;
  const bool greedy = !(inv_temp > 0.0f && inv_temp <= SP_FLT_MAX);
  const uint ngroups = V / 4u + (V % 4u != 0);
  const uint per = ngroups / splits + (ngroups % splits != 0);
  const ulong g0 = (ulong)s * per;
  const ulong g1w = g0 + per;
  const uint g1 = g1w < ngroups ? (uint)g1w : ngroups;

  float bv = -SP_INF;
  uint bi = SP_NONE;
  for (ulong gg = g0 + t; gg < g1; gg += NT) {
    const uint g = (uint)gg;
    float x[4];
    sp_load4(row, V, g, x);  // -inf past V
    float sc[4] = {x[0], x[1], x[2], x[3]};
    if (!greedy) {
      const sp_u4 w = sp_philox(g, 0u, r, 0u, key0, key1);
      sc[0] = sp_mul(x[0], inv_temp) + sp_gumbel(w.x);
      sc[1] = sp_mul(x[1], inv_temp) + sp_gumbel(w.y);
      sc[2] = sp_mul(x[2], inv_temp) + sp_gumbel(w.z);
      sc[3] = sp_mul(x[3], inv_temp) + sp_gumbel(w.w);
    }
    // Indices only grow within a thread: strictly greater keeps the lowest
    // index of a tie, and -inf past V never wins.
    for (uint q = 0; q < 4; ++q) {
      if (sc[q] > bv) {
        bv = sc[q];
        bi = g * 4u + q;
      }
    }
  }
  sv[t] = bv;
  si[t] = bi;
  block_sync();
  sp_reduce_argmax<SP_GUMBEL_THREADS>(sv, si, t);
  return true;
}

static inline void gumbel_write_row(float bv, uint bi, uint V, device uint* token, device uint* status) {
  const bool valid = bv > -SP_INF && bi < V;
  *token = valid ? bi : 0u;
  *status = valid ? SP_STATUS_OK : SP_STATUS_INVALID_ROW;
}

// gumbel_fused: see sampling.cu. The cross-threadgroup handoff uses a
// device-scope fence, atomic_thread_fence(mem_device, seq_cst,
// thread_scope_device), which needs MSL 3.2 (macOS 15 / iOS 18).
template <typename In>
static inline void gumbel_fused(device const In* logits, uint B, uint V, uint ld, float inv_temp,
                                uint key0, uint key1, uint splits, device float* part_val,
                                device uint* part_idx, device atomic_uint* arrivals, device uint* tokens,
                                device uint* status, threadgroup float* sv, threadgroup uint* si,
                                threadgroup uint* last, uint t, uint blk) {
  // (sampling.cu's grid_launch_dependents/grid_dependency_wait: Metal has no
  // programmatic dependent launch; its command encoder orders the kernels.)
  uint r, s;
  if (!gumbel_block_best(logits, B, V, ld, inv_temp, key0, key1, splits, r, s, sv, si, t, blk)) return;
  if (splits == 1) {
    if (t == 0) gumbel_write_row(sv[0], si[0], V, tokens + r, status + r);
    return;
  }
  if (t == 0) {
    part_val[(ulong)r * splits + s] = sv[0];
    part_idx[(ulong)r * splits + s] = si[0];
    atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device);
    *last = atomic_fetch_add_explicit(arrivals + r, 1u, memory_order_relaxed) == splits - 1u;
  }
  block_sync();
  if (!*last) return;
  atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device);
  float bv = -SP_INF;
  uint bi = SP_NONE;
  for (uint j = t; j < splits; j += SP_GUMBEL_THREADS) {
    const float v = sp_clean(part_val[(ulong)r * splits + j]);
    const uint i = part_idx[(ulong)r * splits + j];
    if (sp_better(v, i, bv, bi)) {
      bv = v;
      bi = i;
    }
  }
  sv[t] = bv;
  si[t] = bi;
  block_sync();
  sp_reduce_argmax<SP_GUMBEL_THREADS>(sv, si, t);
  if (t == 0) {
    gumbel_write_row(sv[0], si[0], V, tokens + r, status + r);
    atomic_store_explicit(arrivals + r, 0u, memory_order_relaxed);
  }
}

#define SP_GUMBEL_FUSED(NAME, TYPE)                                                                \
  kernel void NAME(device const TYPE* logits [[buffer(0)]], constant uint& B [[buffer(1)]],        \
                   constant uint& V [[buffer(2)]], constant uint& ld [[buffer(3)]],                \
                   constant float& inv_temp [[buffer(4)]], constant uint& key0 [[buffer(5)]],      \
                   constant uint& key1 [[buffer(6)]], constant uint& splits [[buffer(7)]],         \
                   device float* part_val [[buffer(8)]], device uint* part_idx [[buffer(9)]],      \
                   device atomic_uint* arrivals [[buffer(10)]], device uint* tokens [[buffer(11)]], \
                   device uint* status [[buffer(12)]],                                             \
                   threadgroup float* sv [[threadgroup(0)]] /* hipgo: 2048 bytes */,               \
                   threadgroup uint* si [[threadgroup(1)]] /* hipgo: 2048 bytes */,                \
                   threadgroup uint* last [[threadgroup(2)]] /* hipgo: 4 bytes */,                 \
                   uint t [[thread_position_in_threadgroup]],                                      \
                   uint blk [[threadgroup_position_in_grid]]) {                                    \
    gumbel_fused<TYPE>(logits, B, V, ld, inv_temp, key0, key1, splits, part_val, part_idx,        \
                       arrivals, tokens, status, sv, si, last, t, blk);                           \
  }

SP_GUMBEL_FUSED(gumbel_max_f32, float)
SP_GUMBEL_FUSED(gumbel_max_bf16, sp_bf16)
SP_GUMBEL_FUSED(gumbel_max_f16, sp_f16)

// =====================================================================
// Dual-pivot rejection sampling (see sampling.cu for the algorithm, the
// exactness argument and the round bound).
// =====================================================================
struct sp_w {
  float y, f, d;
};

static inline sp_w sp_weights(float l, float M, float invT) {
  sp_w w;
  w.y = M - l;
  w.f = sp_exp(-w.y);
  w.d = invT == 1.0f ? w.f : sp_exp(-sp_mul(w.y, invT));
  return w;
}

template <typename In>
static inline void rejection(device const In* logits, uint B, uint V, uint ld, device const float* params,
                             uint key0, uint key1, uint max_rounds, device uint* tokens, device uint* ok,
                             device uint* rounds, threadgroup float* sa, threadgroup float* sb,
                             threadgroup uint* sc, threadgroup uint* sd, threadgroup atomic_uint* smu,
                             uint t, uint r) {
  const uint NT = SP_REJ_THREADS;
  if (r >= B) return;
  device const In* row = logits + (ulong)r * ld;
  const uint ngroups = V / 4u + (V % 4u != 0);
  const uint nact = ngroups < NT ? ngroups : NT;

  const float T = params[(ulong)r * 4 + 0];
  const float kf = params[(ulong)r * 4 + 1];
  const float pp = params[(ulong)r * 4 + 2];
  const float mp = params[(ulong)r * 4 + 3];
  bool greedy = false;
  float invT = 1.0f;
  if (T == 0.0f) {
    greedy = true;
  } else if (T > 0.0f && T <= SP_FLT_MAX) {
    invT = 1.0f / T;
    if (!(invT <= SP_FLT_MAX)) greedy = true;
  }
  const bool k_on = kf >= 1.0f && kf < (float)V;
  const uint k = k_on ? (uint)kf : 0u;
  const bool p_on = pp > 0.0f && pp < 1.0f;
  const bool m_on = mp > 0.0f && mp <= 1.0f;
  const bool kp_on = k_on || p_on;
  const uint cap = max_rounds < 1u ? 1u : (max_rounds > 32u ? 32u : max_rounds);

  // ---- pass 1 ----
  // A group at a time: within a thread indices only grow, so a group
  // replaces the running best only when its maximum is strictly greater,
  // and then its lowest index holding that maximum is looked up (NaN and
  // elements past V load as -inf). A thread whose elements are all -inf
  // keeps its first element. The same (value, index) as an element-wise
  // sp_better scan, with a quarter of the compares.
  float bv = -SP_INF;
  uint bi = SP_NONE;
  for (uint g = t; g < ngroups; g += NT) {
    float x[4];
    sp_load4(row, V, g, x);
    const float m = fmax(fmax(x[0], x[1]), fmax(x[2], x[3]));
    if (m > bv) {
      bv = m;
      bi = g * 4u + (x[0] == m ? 0u : x[1] == m ? 1u : x[2] == m ? 2u : 3u);
    }
  }
  if (bi == SP_NONE && t < ngroups) bi = t * 4u;
  sa[t] = bv;
  sc[t] = bi;
  block_sync();
  sp_reduce_argmax<SP_REJ_THREADS>(sa, sc, t);
  const float M = sa[0];
  const uint amax = sc[0];
  SP_TRACE('M', sp_f2u(M));
  SP_TRACE('A', amax);
  block_sync();

  if (!(M > -SP_INF) || amax >= V) {
    if (t == 0) {
      tokens[r] = 0u;
      ok[r] = SP_STATUS_INVALID_ROW;
      rounds[r] = 0u;
    }
    return;
  }
  if (M == SP_INF || greedy) {
    if (t == 0) {
      tokens[r] = amax;
      ok[r] = SP_STATUS_OK;
      rounds[r] = 0u;
    }
    return;
  }

  // ---- pass 2 ----
  // The element loops skip the past-V tail with continue, never break
  // (sampling.cu: a loop that can exit early was left rolled).
  float lo = 0.0f;
  float bound = SP_INF;
  float S_t = 0.0f, D_t = 0.0f;
  for (uint g = t; g < ngroups; g += NT) {
    float x[4];
    sp_load4(row, V, g, x);
    #pragma unroll
    for (uint q = 0; q < 4; ++q) {
      if (g * 4u + q >= V) continue;  // not break: see pass 2
      const sp_w w = sp_weights(x[q], M, invT);
      S_t = S_t + w.f;
      if (w.y < bound && (!m_on || w.f >= mp)) D_t = D_t + w.d;
    }
  }
  sa[t] = S_t;
  block_sync();
  sp_reduce_sum<SP_REJ_THREADS>(sa, t);
  const float target_p = pp * sa[0];
  SP_TRACE('S', sp_f2u(sa[0]));
  block_sync();

  // ---- rounds ----
  uint cand = amax;
  bool accepted = false;
  uint used = 0;
  for (uint n = 0; n < cap; ++n) {
    used = n + 1;
    if (t == 0) sp_atomic_store(&smu[0], SP_NONE);
    sa[t] = D_t;
    block_sync();
    sp_scan_incl<SP_REJ_THREADS>(sa, t);
    const float total = sa[nact - 1];
    const float u = sp_uniform(sp_philox(n, 1u, r, 0u, key0, key1).x);
    const float target = sp_mul(u, total);
    if (t < nact && sa[t] > target) sp_atomic_min_u32(&smu[0], t);
    block_sync();
    const uint tstar = sp_atomic_load(&smu[0]);
    const float resid = tstar == SP_NONE ? 0.0f : target - (tstar == 0 ? 0.0f : sa[tstar - 1]);
    SP_TRACE('T', sp_f2u(total));
    SP_TRACE('U', sp_f2u(target));
    SP_TRACE('t', tstar);
    SP_TRACE('r', sp_f2u(resid));
    block_sync();

    cand = amax;
    if (tstar != SP_NONE) {
      const uint ng = tstar < ngroups ? (ngroups - tstar) / NT + ((ngroups - tstar) % NT != 0) : 0u;
      float carry = 0.0f;
      for (uint c0 = 0; c0 < ng; c0 += NT) {
        const uint j = c0 + t;
        float wq[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        float wj = 0.0f;
        uint g = 0;
        if (j < ng) {
          g = tstar + j * NT;
          float x[4];
          sp_load4(row, V, g, x);
          #pragma unroll
          for (uint q = 0; q < 4; ++q) {
            if (g * 4u + q >= V) continue;  // not break: see pass 2
            const sp_w w = sp_weights(x[q], M, invT);
            if (w.y < bound && (!m_on || w.f >= mp)) wq[q] = w.d;
            wj = wj + wq[q];
          }
        }
        if (t == 0) {
          sp_atomic_store(&smu[1], SP_NONE);
          sp_atomic_store(&smu[2], SP_NONE);
        }
        sa[t] = wj;
        block_sync();
        sp_scan_incl<SP_REJ_THREADS>(sa, t);
        if (j < ng && carry + sa[t] > resid) sp_atomic_min_u32(&smu[1], t);
        block_sync();
        const uint lane = sp_atomic_load(&smu[1]);
        if (lane != SP_NONE) {
          if (t == lane) {
            float acc = t == 0 ? carry : carry + sa[t - 1];
            uint pick = SP_NONE, last = SP_NONE;
            for (uint q = 0; q < 4; ++q) {
              if (wq[q] > 0.0f) {
                last = g * 4u + q;
                acc = acc + wq[q];
                if (acc > resid) {
                  pick = last;
                  break;
                }
              }
            }
            sp_atomic_store(&smu[2], pick != SP_NONE ? pick : last);
          }
          block_sync();
          const uint found = sp_atomic_load(&smu[2]);
          if (found != SP_NONE) cand = found;
          block_sync();
          break;
        }
        carry = carry + sa[(ng - c0 < NT ? ng - c0 : NT) - 1];
        block_sync();
      }
    }
    if (cand >= V) cand = amax;
    SP_TRACE('c', cand);

    const float yc = M - sp_load1(row, cand);
    if (!kp_on || yc <= lo) {
      accepted = true;
      break;
    }

    const float pv0 = yc;
    const uint ka = sp_f2u(lo), kb = sp_f2u(yc);
    const float pv1 = sp_u2f(ka + (kb - ka) / 2u);
    float m0 = 0.0f, m1 = 0.0f, D0 = 0.0f, D1 = 0.0f;
    uint c0n = 0, c1n = 0;
    for (uint g = t; g < ngroups; g += NT) {
      float x[4];
      sp_load4(row, V, g, x);
      #pragma unroll
      for (uint q = 0; q < 4; ++q) {
        if (g * 4u + q >= V) continue;  // not break: see pass 2
        // Only elements below pivot0 count (pivot1 <= pivot0), and usually
        // few are: the weights (one or two exps) are computed for those
        // alone. The sums see the same terms in the same order.
        if (!(M - x[q] < pv0)) continue;
        const sp_w w = sp_weights(x[q], M, invT);
        const bool mok = !m_on || w.f >= mp;
        c0n += 1u;
        m0 = m0 + w.f;
        if (mok) D0 = D0 + w.d;
        if (w.y < pv1) {
          c1n += 1u;
          m1 = m1 + w.f;
          if (mok) D1 = D1 + w.d;
        }
      }
    }
    sa[t] = m0;
    sb[t] = m1;
    sc[t] = c0n;
    sd[t] = c1n;
    block_sync();
    sp_reduce_stats<SP_REJ_THREADS>(sa, sb, sc, sd, t);
    const float M0 = sa[0], M1 = sb[0];
    const uint C0 = sc[0], C1 = sd[0];
    SP_TRACE('p', sp_f2u(pv1));
    SP_TRACE('0', sp_f2u(M0));
    SP_TRACE('1', sp_f2u(M1));
    SP_TRACE('k', C0);
    SP_TRACE('K', C1);
    block_sync();
    const bool fail0 = (k_on && C0 >= k) || (p_on && M0 >= target_p);
    if (!fail0) {
      accepted = true;
      break;
    }
    const bool fail1 = (k_on && C1 >= k) || (p_on && M1 >= target_p);
    if (fail1) {
      bound = pv1;
      D_t = D1;
    } else {
      lo = pv1;
      bound = pv0;
      D_t = D0;
    }
  }
  if (t == 0) {
    tokens[r] = accepted ? cand : amax;
    ok[r] = accepted ? SP_STATUS_OK : SP_STATUS_UNCONVERGED;
    rounds[r] = accepted ? used : cap;
  }
}

#define SP_REJECTION(NAME, TYPE)                                                                   \
  kernel void NAME(device const TYPE* logits [[buffer(0)]], constant uint& B [[buffer(1)]],        \
                   constant uint& V [[buffer(2)]], constant uint& ld [[buffer(3)]],                \
                   device const float* params [[buffer(4)]], constant uint& key0 [[buffer(5)]],    \
                   constant uint& key1 [[buffer(6)]], constant uint& max_rounds [[buffer(7)]],     \
                   device uint* tokens [[buffer(8)]], device uint* ok [[buffer(9)]],               \
                   device uint* rounds [[buffer(10)]],                                             \
                   threadgroup float* sa [[threadgroup(0)]] /* hipgo: 4096 bytes */,               \
                   threadgroup float* sb [[threadgroup(1)]] /* hipgo: 4096 bytes */,               \
                   threadgroup uint* sc [[threadgroup(2)]] /* hipgo: 4096 bytes */,                \
                   threadgroup uint* sd [[threadgroup(3)]] /* hipgo: 4096 bytes */,                \
                   threadgroup atomic_uint* smu [[threadgroup(4)]] /* hipgo: 16 bytes */,          \
                   uint t [[thread_position_in_threadgroup]],                                      \
                   uint r [[threadgroup_position_in_grid]]) {                                      \
    rejection<TYPE>(logits, B, V, ld, params, key0, key1, max_rounds, tokens, ok, rounds, sa, sb,  \
                    sc, sd, smu, t, r);                                                            \
  }

SP_REJECTION(rejection_f32, float)
SP_REJECTION(rejection_bf16, sp_bf16)
SP_REJECTION(rejection_f16, sp_f16)
