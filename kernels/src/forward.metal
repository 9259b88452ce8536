// forward.metal: the kernels of forward.cu (and the mf_ functions of
// mathf.h they use) in MSL, kept parallel to them: same kernel names, same
// argument lists in the same order, same launch shapes (the FW_*_THREADS
// block and the grid each kernel's comment in forward.cu gives), same
// arithmetic in the same order. Differences are spelling only:
//   - thread and threadgroup indices arrive as [[thread_position_in_threadgroup]],
//     [[threadgroup_position_in_grid]] and, for the grid-stride kernels,
//     [[threads_per_grid]] (grid_threads_x), and are passed down;
//   - shared memory is threadgroup buffers the host sizes with
//     setThreadgroupMemoryLength:atIndex:, not static arrays; each says its
//     size in a /* hipgo: N bytes */ comment, which kernelc copies into the
//     manifest (kernels/msl) and the Metal adapter sets at dispatch;
//   - lane_xor_f32 is simd_shuffle_xor: the kernels assume 32-wide SIMD
//     groups of consecutive threads (every Apple GPU's
//     threadExecutionWidth), so a 32-lane group is a SIMD group;
//   - bf16 and f16 weights are read as ushort bit patterns and widened by
//     shifting (bf16) or by the exact bit decode of forward.cu (f16), so
//     nothing needs MSL's bfloat (MSL 3.1) or depends on half conversion;
//   - group loads use packed vectors, which need only element alignment, so
//     matmul_W's vector path needs only in % 8 == 0 (forward.cu also asks
//     for 16-byte aligned w and x; with unaligned pointers the two take
//     different paths and differ by summation order only);
//   - as_type replaces __builtin_bit_cast; fma and rint are MSL's; the
//     helpers carry an fw_ prefix (fw_matmul for matmul, ...) so that no
//     name meets one of metal_stdlib's under `using namespace metal`.
// Each kernel declares its block, the FW_*_THREADS of forward.cu, as
// [[max_total_threads_per_threadgroup(256)]] (a literal: kernelc reads it
// into the manifest, and kernels' ABI test holds it to forward.cu's).
// Buffer index i is kernel argument i of the .cu signature; a null pointer
// argument (matmul_W's bias) is an unbound buffer, which the kernel tests
// as a null pointer.
//
// It is compiled at run time with newLibraryWithSource (fast math off, as
// for sampling.metal: mf_expf and mf_sincosf rely on exact fma and rint and
// on IEEE inf/NaN). There is no Metal compiler on the build machine;
// model/internal/hostkern compiles this file as C++ on the host
// (kernels/hostemu/metal/metal_stdlib stands in for Apple's header) and
// checks every kernel against the CPU ops and against forward.cu's host
// build, which tests the logic but not Apple's compiler or GPUs.
#include <metal_stdlib>
using namespace metal;

#define FW_EMBED_THREADS 256
#define FW_NORM_THREADS 256
#define FW_MM_THREADS 256
#define FW_ROPE_THREADS 256
#define FW_KV_THREADS 256
#define FW_ATT_THREADS 256
#define FW_EW_THREADS 256
#define FW_COPY_THREADS 256

#define FW_MM_GROUPS (FW_MM_THREADS / 32)
#define FW_MM_VEC_ROWS 8
#define FW_MM_GEMM_ROWS 64
#define FW_MM_TILE 64
#define FW_MM_TK 16
// Row pitch of the tiled path's staged slices (xs[k][r], ws[k][o]).
#define FW_MM_PITCH (FW_MM_TILE + 4)

#define FW_ATT_MAX_HEADDIM 256
#define FW_ATT_GROUPS (FW_ATT_THREADS / 32)
#define FW_ATTL_THREADS 1024  // attention_gqa_f32's 32 key groups
#define FW_ATTL_GROUPS (FW_ATTL_THREADS / 32)
#define FW_ATT_LANE_DIMS (FW_ATT_MAX_HEADDIM / 32)
#define FW_GQA_THREADS 1024  // attention_gqa_f32
#define FW_GQA_GROUPS (FW_GQA_THREADS / 32)
#define FW_GQA_MAX_GROUP 4
#define FW_GQA_MAX_HEADDIM 128
#define FW_GQA_LANE_DIMS (FW_GQA_MAX_HEADDIM / 32)

// ---- mathf.h ----
static inline float mf_bits2f(uint b) { return as_type<float>(b); }
static inline float mf_exp2i(int n) { return mf_bits2f((uint)(n + 127) << 23); }

static inline float mf_expf(float x) {
  if (!(x == x)) return x;
  if (x > 88.7228394f) return mf_bits2f(0x7f800000u);
  if (x < -103.972084f) return 0.0f;
  const float n = rint(x * 1.44269502f);
  float r = fma(-n, 0.693145751953125f, x);
  r = fma(-n, 1.42860677e-06f, r);
  float p = 1.98412698e-04f;  // 1/5040
  p = fma(p, r, 1.38888889e-03f);
  p = fma(p, r, 8.33333377e-03f);
  p = fma(p, r, 4.16666679e-02f);
  p = fma(p, r, 1.66666672e-01f);
  p = fma(p, r, 0.5f);
  p = fma(p, r, 1.0f);
  p = fma(p, r, 1.0f);
  const int ni = (int)n;
  const int n1 = ni / 2;
  return p * mf_exp2i(n1) * mf_exp2i(ni - n1);
}

static inline void mf_sincosf(float x, thread float* s, thread float* c) {
  if ((as_type<uint>(x) & 0x7f800000u) == 0x7f800000u) {
    *s = *c = mf_bits2f(0x7fc00000u);
    return;
  }
  const float k = rint(x * 0.636619747f);
  float r = fma(-k, 1.57079637e+00f, x);
  r = fma(-k, -4.37113883e-08f, r);
  r = fma(-k, -1.71512451e-15f, r);
  const float r2 = r * r;
  float ps = 2.75573192e-06f;  // 1/9!
  ps = fma(ps, r2, -1.98412698e-04f);
  ps = fma(ps, r2, 8.33333377e-03f);
  ps = fma(ps, r2, -1.66666672e-01f);
  const float sr = fma(ps * r2, r, r);
  float pc = -2.75573192e-07f;  // -1/10!
  pc = fma(pc, r2, 2.48015873e-05f);
  pc = fma(pc, r2, -1.38888889e-03f);
  pc = fma(pc, r2, 4.16666679e-02f);
  pc = fma(pc, r2, -0.5f);
  const float cr = fma(pc, r2, 1.0f);
  const uint q = (uint)(int)k & 3u;
  float sv = (q & 1u) ? cr : sr;
  float cv = (q & 1u) ? sr : cr;
  if (q == 1u || q == 2u) cv = -cv;
  if (q >= 2u) sv = -sv;
  *s = sv;
  *c = cv;
}

// ---- element types ----
struct fw_bf16 {
  ushort bits;
};
struct fw_f16 {
  ushort bits;
};

static inline float fw_u2f(uint x) { return as_type<float>(x); }
static inline uint fw_f2u(float x) { return as_type<uint>(x); }
static inline float fw_bf16_f32(uint h) { return fw_u2f(h << 16); }
static inline float fw_f16_f32(uint h) {
  const uint sign = (h & 0x8000u) << 16;
  const uint ex = (h >> 10) & 0x1fu;
  const uint man = h & 0x3ffu;
  if (ex == 0) return fw_u2f(fw_f2u((float)man * 5.96046448e-08f) | sign);
  if (ex == 31) return fw_u2f(sign | 0x7f800000u | (man << 13));
  return fw_u2f(sign | ((ex + 112u) << 23) | (man << 13));
}
static inline float fw_to_f32(float v) { return v; }
static inline float fw_to_f32(fw_bf16 v) { return fw_bf16_f32(v.bits); }
static inline float fw_to_f32(fw_f16 v) { return fw_f16_f32(v.bits); }

// ---- the KV cache's element (see forward.cu) ----
// float, or fw_f16 for the kernels named *_kv16: stored rounded to nearest
// even, read back exactly.
static inline uint fw_f16_rne(float f) {
  const uint x = fw_f2u(f);
  const uint sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | 0x7e00u;
  if (ax >= 0x477ff000u) return sign | 0x7c00u;
  if (ax < 0x38800000u) return sign | (fw_f2u(fw_u2f(ax) + 0.5f) - 0x3f000000u);
  return sign | ((ax + 0xfffu + ((ax >> 13) & 1u) - (112u << 23)) >> 13);
}
static inline void fw_kv_put(device float* p, float v) { *p = v; }
static inline void fw_kv_put(device fw_f16* p, float v) { p->bits = (ushort)fw_f16_rne(v); }
static inline float fw_kv_get(device const float* p) { return *p; }
static inline float fw_kv_get(device const fw_f16* p) { return fw_f16_f32(p->bits); }

// fw_load8: eight consecutive weights starting at p (element alignment).
static inline void fw_load8(device const float* p, thread float* o) {
  const packed_float4 a = ((device const packed_float4*)p)[0], b = ((device const packed_float4*)p)[1];
  for (int i = 0; i < 4; ++i) o[i] = a[i], o[4 + i] = b[i];
}
static inline void fw_load8(device const fw_bf16* p, thread float* o) {
  const packed_ushort4 a = ((device const packed_ushort4*)p)[0], b = ((device const packed_ushort4*)p)[1];
  for (int i = 0; i < 4; ++i) o[i] = fw_bf16_f32(a[i]), o[4 + i] = fw_bf16_f32(b[i]);
}
static inline void fw_load8(device const fw_f16* p, thread float* o) {
  const packed_ushort4 a = ((device const packed_ushort4*)p)[0], b = ((device const packed_ushort4*)p)[1];
  for (int i = 0; i < 4; ++i) o[i] = fw_f16_f32(a[i]), o[4 + i] = fw_f16_f32(b[i]);
}

static inline void block_sync() { threadgroup_barrier(mem_flags::mem_threadgroup); }

// fw_group_sum: the sum of v over this thread's SIMD group of 32, by
// butterfly (every thread gets the same value).
static inline float fw_group_sum(float v) {
  for (ushort m = 16; m >= 1; m >>= 1) v += simd_shuffle_xor(v, m);
  return v;
}

// fw_block_sum: the sum of v over the block of NT threads; part holds NT/32
// floats. Starts and ends with the block in step.
template <uint NT>
static inline float fw_block_sum(float v, threadgroup float* part, uint t) {
  v = fw_group_sum(v);
  if ((t & 31u) == 0) part[t / 32] = v;
  block_sync();
  float s = 0.0f;
  for (uint i = 0; i < NT / 32; ++i) s += part[i];
  block_sync();
  return s;
}

// =====================================================================
// embed_W (see forward.cu). Block FW_EMBED_THREADS, grid n.
// =====================================================================
template <typename W>
static inline void fw_embed(device float* out, device const W* table, device const uint* tokens, uint n, uint hidden,
                            uint vocab, uint tid, uint blk) {
  const uint t = blk;
  if (t >= n) return;
  const uint id = tokens[t];
  device float* o = out + (ulong)t * hidden;
  device const W* row = table + (ulong)id * hidden;
  for (uint i = tid; i < hidden; i += FW_EMBED_THREADS) o[i] = id < vocab ? fw_to_f32(row[i]) : 0.0f;
}

// =====================================================================
// rmsnorm_W (see forward.cu). Block FW_NORM_THREADS, grid rows.
// =====================================================================
template <typename W>
static inline void fw_rmsnorm(device float* out, device const float* x, device const W* weight, uint rows, uint dim,
                              float eps, threadgroup float* part, uint tid, uint blk) {
  const uint r = blk;
  if (r >= rows) return;
  device const float* xr = x + (ulong)r * dim;
  device float* orow = out + (ulong)r * dim;
  float ss = 0.0f;
  for (uint i = tid; i < dim; i += FW_NORM_THREADS) ss += xr[i] * xr[i];
  ss = fw_block_sum<FW_NORM_THREADS>(ss, part, tid);
  const float inv = 1.0f / sqrt(ss / (float)dim + eps);
  for (uint i = tid; i < dim; i += FW_NORM_THREADS) orow[i] = fw_to_f32(weight[i]) * (xr[i] * inv);
}

// fw_rmsnorm_add_parts: rmsnorm_fused_W's residual add into row r of x
// (see forward.cu): the parts' sum in part order, bias and x[r], as
// fw_mm_store adds them; fw_rmsnorm's threads then read the elements they
// wrote. Nothing for parts = 0.
static inline void fw_rmsnorm_add_parts(device float* x, device const float* ws, device const float* bias, uint parts,
                                        uint r, uint rows, uint dim, uint tid) {
  if (parts == 0u) return;
  device float* xr = x + (ulong)r * dim;
  device const float* wr = ws + (ulong)r * dim;
  const ulong stride = (ulong)rows * dim;
  for (uint i = tid; i < dim; i += FW_NORM_THREADS) {
    float v = wr[i];
    for (uint s = 1; s < parts; ++s) v += wr[s * stride + i];
    if (bias) v += bias[i];
    xr[i] = v + xr[i];
  }
}

// =====================================================================
// matmul_W (see forward.cu for the two paths and the grid rule).
// Block FW_MM_THREADS. Grid: rows < 64: ceil(out/8) * ceil(rows/8);
// rows >= 64: ceil(out/64) * ceil(rows/64).
// =====================================================================
static inline void fw_mm_store(device float* y, device const float* bias, ulong i, uint o, float acc,
                               uint accumulate) {
  float v = acc;
  if (bias) v += bias[o];
  if (accumulate) v += y[i];
  y[i] = v;
}

template <uint NR>
static inline void fw_matvec_fma(thread float* acc, thread const float* wv, device const float* xr, uint in, uint k,
                                 uint nr) {
#pragma unroll
  for (uint r = 0; r < NR; ++r) {
    if (NR == 1 || r < nr) {
      device const packed_float4* xp = (device const packed_float4*)(xr + (ulong)r * in + (ulong)k * 8u);
      const packed_float4 a = xp[0], b = xp[1];
      float d = acc[r];
#pragma unroll
      for (int i = 0; i < 4; ++i) d += wv[i] * a[i];
#pragma unroll
      for (int i = 0; i < 4; ++i) d += wv[4 + i] * b[i];
      acc[r] = d;
    }
  }
}

template <uint NR, typename W>
static inline void fw_matvec_tile(device float* y, device const float* xr, device const W* wr, device const float* bias,
                                  uint nr, uint r0, uint in, uint out, uint o, bool vec_path, uint accumulate,
                                  uint tid) {
  const uint lane = tid & 31u;
  float acc[NR];
#pragma unroll
  for (uint r = 0; r < NR; ++r) acc[r] = 0.0f;
  if (vec_path) {
    const uint chunks = in / 8u;
    uint k = lane;
    for (; k + 96u < chunks; k += 128u) {
      float wv[4][8];
#pragma unroll
      for (uint j = 0; j < 4; ++j) fw_load8(wr + (ulong)(k + 32u * j) * 8u, wv[j]);
#pragma unroll
      for (uint j = 0; j < 4; ++j) fw_matvec_fma<NR>(acc, wv[j], xr, in, k + 32u * j, nr);
    }
    for (; k < chunks; k += 32u) {
      float wv[8];
      fw_load8(wr + (ulong)k * 8u, wv);
      fw_matvec_fma<NR>(acc, wv, xr, in, k, nr);
    }
  } else {
    for (uint k = lane; k < in; k += 32) {
      const float wv = fw_to_f32(wr[k]);
#pragma unroll
      for (uint r = 0; r < NR; ++r)
        if (NR == 1 || r < nr) acc[r] += wv * xr[(ulong)r * in + k];
    }
  }
#pragma unroll
  for (uint r = 0; r < NR; ++r) {
    if (r >= nr) break;  // nr is the same for the whole block
    const float v = fw_group_sum(acc[r]);
    if (lane == 0) fw_mm_store(y, bias, (ulong)(r0 + r) * out + o, o, v, accumulate);
  }
}

template <typename W>
static inline void fw_matvec_rows(device float* y, device const float* x, device const W* w, device const float* bias,
                                  uint rows, uint in, uint out, uint accumulate, uint tid, uint blk) {
  const uint tiles = (rows + FW_MM_VEC_ROWS - 1) / FW_MM_VEC_ROWS;
  const uint b = blk;
  const uint c = b / tiles, s = b % tiles;
  const uint o = c * FW_MM_GROUPS + tid / 32;
  if (o >= out) return;  // whole SIMD groups leave together: no block_sync below
  const uint r0 = s * FW_MM_VEC_ROWS;
  const uint nr = rows - r0 < FW_MM_VEC_ROWS ? rows - r0 : FW_MM_VEC_ROWS;
  device const W* wr = w + (ulong)o * in;
  device const float* xr = x + (ulong)r0 * in;
  const bool vec_path = (in % 8u) == 0;
  if (nr == 1)
    fw_matvec_tile<1>(y, xr, wr, bias, nr, r0, in, out, o, vec_path, accumulate, tid);
  else
    fw_matvec_tile<FW_MM_VEC_ROWS>(y, xr, wr, bias, nr, r0, in, out, o, vec_path, accumulate, tid);
}

// xs and ws: FW_MM_TK x FW_MM_PITCH floats each (a 16-wide slice of in for
// the tile's 64 rows and 64 outputs).
template <typename W>
static inline void fw_matmul_tiled(device float* y, device const float* x, device const W* w, device const float* bias,
                                   uint rows, uint in, uint out, uint accumulate, threadgroup float* xs,
                                   threadgroup float* ws, uint tid, uint blk) {
  const uint tiles = (rows + FW_MM_TILE - 1) / FW_MM_TILE;
  const uint b = blk;
  const uint c = b / tiles, s = b % tiles;
  if (c >= (out + FW_MM_TILE - 1) / FW_MM_TILE) return;  // whole block
  const uint r0 = s * FW_MM_TILE, o0 = c * FW_MM_TILE;
  const uint t = tid;
  const uint tr = (t / 16u) * 4u, tc = (t % 16u) * 4u;
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  for (uint k0 = 0; k0 < in; k0 += FW_MM_TK) {
#pragma unroll
    for (uint q = 0; q < 4; ++q) {
      const uint i = t / 16u + 16u * q, k = k0 + t % 16u;
      const uint r = r0 + i, o = o0 + i;
      xs[(t % 16u) * FW_MM_PITCH + i] = (r < rows && k < in) ? x[(ulong)r * in + k] : 0.0f;
      ws[(t % 16u) * FW_MM_PITCH + i] = (o < out && k < in) ? fw_to_f32(w[(ulong)o * in + k]) : 0.0f;
    }
    block_sync();
#pragma unroll
    for (uint k = 0; k < FW_MM_TK; ++k) {
      const packed_float4 xv = *(threadgroup const packed_float4*)(xs + k * FW_MM_PITCH + tr);
      const packed_float4 wv = *(threadgroup const packed_float4*)(ws + k * FW_MM_PITCH + tc);
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += xv[i] * wv[j];
    }
    block_sync();
  }
#pragma unroll
  for (uint i = 0; i < 4; ++i) {
    const uint r = r0 + tr + i;
    if (r >= rows) continue;
#pragma unroll
    for (uint j = 0; j < 4; ++j) {
      const uint o = o0 + tc + j;
      if (o < out) fw_mm_store(y, bias, (ulong)r * out + o, o, acc[i][j], accumulate);
    }
  }
}

template <typename W>
static inline void fw_matmul(device float* y, device const float* x, device const W* w, device const float* bias,
                             uint rows, uint in, uint out, uint accumulate, threadgroup float* xs,
                             threadgroup float* ws, uint tid, uint blk) {
  if (rows >= FW_MM_GEMM_ROWS)
    fw_matmul_tiled(y, x, w, bias, rows, in, out, accumulate, xs, ws, tid, blk);
  else
    fw_matvec_rows(y, x, w, bias, rows, in, out, accumulate, tid, blk);
}

// =====================================================================
// norm_matvec_W (see forward.cu): rmsnorm_W, then matmul_W over one row
// (silu: silu_mul_f32 of that product), the bytes of those launches. xn
// holds the normalized row (FW_NV_MAX_IN floats). Block FW_MM_THREADS,
// grid ceil(n / 8).
// =====================================================================
#define FW_NV_MAX_IN (FW_NORM_THREADS * 16)

// fw_matvec_fma_tg: fw_matvec_fma<1> with the row in threadgroup memory.
static inline float fw_matvec_fma_tg(float d, thread const float* wv, threadgroup const float* xr, uint k) {
  threadgroup const packed_float4* xp = (threadgroup const packed_float4*)(xr + (ulong)k * 8u);
  const packed_float4 a = xp[0], b = xp[1];
#pragma unroll
  for (int i = 0; i < 4; ++i) d += wv[i] * a[i];
#pragma unroll
  for (int i = 0; i < 4; ++i) d += wv[4 + i] * b[i];
  return d;
}

template <uint R, typename W>
static inline void fw_norm_matvec(device float* y, device const float* x, device const W* w, device const float* bias,
                                  device const W* nw, uint in, uint n, float eps, threadgroup float* xn,
                                  threadgroup float* part, uint tid, uint blk) {
  if (in > FW_NV_MAX_IN) return;  // the whole block
  const uint lane = tid & 31u;
  const uint o = blk * FW_MM_GROUPS + tid / 32;
  float ss = 0.0f;
  for (uint i = tid; i < in; i += FW_NORM_THREADS) ss += x[i] * x[i];
  ss = fw_block_sum<FW_NORM_THREADS>(ss, part, tid);
  const float inv = 1.0f / sqrt(ss / (float)in + eps);
  for (uint i = tid; i < in; i += FW_NORM_THREADS) xn[i] = fw_to_f32(nw[i]) * (x[i] * inv);
  block_sync();
  if (o >= n) return;  // whole SIMD groups: no block_sync below
  float acc[R];
  device const W* wr[R];
#pragma unroll
  for (uint r = 0; r < R; ++r) acc[r] = 0.0f, wr[r] = w + (ulong)(o + r * n) * in;
  if ((in % 8u) == 0) {
    const uint chunks = in / 8u;
    uint k = lane;
    for (; k + 96u < chunks; k += 128u) {
      float wv[R][4][8];
#pragma unroll
      for (uint r = 0; r < R; ++r)
#pragma unroll
        for (uint j = 0; j < 4; ++j) fw_load8(wr[r] + (ulong)(k + 32u * j) * 8u, wv[r][j]);
#pragma unroll
      for (uint r = 0; r < R; ++r)
#pragma unroll
        for (uint j = 0; j < 4; ++j) acc[r] = fw_matvec_fma_tg(acc[r], wv[r][j], xn, k + 32u * j);
    }
    for (; k < chunks; k += 32u) {
#pragma unroll
      for (uint r = 0; r < R; ++r) {
        float wv[8];
        fw_load8(wr[r] + (ulong)k * 8u, wv);
        acc[r] = fw_matvec_fma_tg(acc[r], wv, xn, k);
      }
    }
  } else {
    for (uint k = lane; k < in; k += 32) {
#pragma unroll
      for (uint r = 0; r < R; ++r) acc[r] += fw_to_f32(wr[r][k]) * xn[k];
    }
  }
  float v[R];
#pragma unroll
  for (uint r = 0; r < R; ++r) v[r] = fw_group_sum(acc[r]);
  if (lane != 0) return;
  if (R == 1) {
    fw_mm_store(y, bias, o, o, v[0], 0u);
    return;
  }
  float g = v[0], u = v[R - 1];
  if (bias) g += bias[o], u += bias[n + o];
  y[o] = g / (1.0f + mf_expf(-g)) * u;
}

// =====================================================================
// rope_f32 (see forward.cu). Block FW_ROPE_THREADS, grid tokens.
// =====================================================================
[[max_total_threads_per_threadgroup(256)]]
kernel void rope_f32(device float* x [[buffer(0)]], device const uint* pos [[buffer(1)]],
                     device const float* inv_freq [[buffer(2)]], constant uint& tokens [[buffer(3)]],
                     constant uint& heads [[buffer(4)]], constant uint& headdim [[buffer(5)]],
                     constant uint& stride [[buffer(6)]], uint tid [[thread_position_in_threadgroup]],
                     uint blk [[threadgroup_position_in_grid]]) {
  const uint t = blk;
  if (t >= tokens) return;
  const uint half_dim = headdim / 2;
  const float p = (float)pos[t];
  device float* xt = x + (ulong)t * stride;
  for (uint j = tid; j < heads * half_dim; j += FW_ROPE_THREADS) {
    const uint h = j / half_dim, i = j % half_dim;
    float sn, cs;
    mf_sincosf(inv_freq[i] * p, &sn, &cs);
    device float* v = xt + (ulong)h * headdim;
    const float a = v[i], b = v[i + half_dim];
    v[i] = a * cs - b * sn;
    v[i + half_dim] = b * cs + a * sn;
  }
}

// =====================================================================
// kv_store_f32 (see forward.cu): a slot >= num_slots is skipped.
// Block FW_KV_THREADS, grid tokens.
// =====================================================================
template <typename KV>
static inline void fw_kv_store(device KV* k_cache, device KV* v_cache, device const float* qkv,
                               device const uint* slots, uint tokens, uint kv_dim, uint k_off, uint v_off, uint stride,
                               uint num_slots, uint tid, uint blk) {
  const uint t = blk;
  if (t >= tokens) return;
  const uint slot = slots[t];
  if (slot >= num_slots) return;
  device const float* row = qkv + (ulong)t * stride;
  device KV* kc = k_cache + (ulong)slot * kv_dim;
  device KV* vc = v_cache + (ulong)slot * kv_dim;
  for (uint j = tid; j < kv_dim; j += FW_KV_THREADS) {
    fw_kv_put(kc + j, row[k_off + j]);
    fw_kv_put(vc + j, row[v_off + j]);
  }
}
#define FW_KV_STORE_KERNEL(NAME, KV)                                                                              \
  [[max_total_threads_per_threadgroup(256)]]                                                                      \
  kernel void NAME(device KV* k_cache [[buffer(0)]], device KV* v_cache [[buffer(1)]],                            \
                   device const float* qkv [[buffer(2)]], device const uint* slots [[buffer(3)]],                  \
                   constant uint& tokens [[buffer(4)]], constant uint& kv_dim [[buffer(5)]],                      \
                   constant uint& k_off [[buffer(6)]], constant uint& v_off [[buffer(7)]],                        \
                   constant uint& stride [[buffer(8)]], constant uint& num_slots [[buffer(9)]],                   \
                   uint tid [[thread_position_in_threadgroup]], uint blk [[threadgroup_position_in_grid]]) {      \
    fw_kv_store<KV>(k_cache, v_cache, qkv, slots, tokens, kv_dim, k_off, v_off, stride, num_slots, tid, blk);     \
  }
FW_KV_STORE_KERNEL(kv_store_f32, float)
FW_KV_STORE_KERNEL(kv_store_f32_kv16, fw_f16)

// =====================================================================
// rope_kv_store_f32 (see forward.cu). Block FW_ROPE_THREADS, grid tokens.
// =====================================================================
template <typename KV>
static inline void fw_rope_kv_store(device float* qkv, device KV* k_cache, device KV* v_cache, device const uint* pos,
                                    device const float* inv_freq, device const uint* slots, uint tokens, uint heads,
                                    uint kv_heads, uint headdim, uint stride, uint num_slots, uint tid, uint blk) {
  const uint t = blk;
  if (t >= tokens) return;
  const uint half_dim = headdim / 2, kv_dim = kv_heads * headdim;
  const float p = (float)pos[t];
  const uint slot = slots[t];
  const bool store = slot < num_slots;
  device float* xt = qkv + (ulong)t * stride;
  device KV* kc = k_cache + (ulong)(store ? slot : 0u) * kv_dim;
  device KV* vc = v_cache + (ulong)(store ? slot : 0u) * kv_dim;
  for (uint j = tid; j < (heads + kv_heads) * half_dim; j += FW_ROPE_THREADS) {
    const uint h = j / half_dim, i = j % half_dim;
    float sn, cs;
    mf_sincosf(inv_freq[i] * p, &sn, &cs);
    device float* v = xt + (ulong)h * headdim;
    const float a = v[i], b = v[i + half_dim];
    const float lo = a * cs - b * sn, hi = b * cs + a * sn;
    v[i] = lo;
    v[i + half_dim] = hi;
    if (store && h >= heads) {
      device KV* k = kc + (ulong)(h - heads) * headdim;
      fw_kv_put(k + i, lo);
      fw_kv_put(k + i + half_dim, hi);
    }
  }
  if (!store) return;
  device const float* kr = xt + (ulong)heads * headdim;
  device const float* vr = xt + (ulong)(heads + kv_heads) * headdim;
  for (uint j = tid; j < kv_dim; j += FW_ROPE_THREADS) {
    fw_kv_put(vc + j, vr[j]);
    if (j % headdim >= 2 * half_dim) fw_kv_put(kc + j, kr[j]);
  }
}
#define FW_ROPE_KV_STORE_KERNEL(NAME, KV)                                                                         \
  [[max_total_threads_per_threadgroup(256)]]                                                                      \
  kernel void NAME(device float* qkv [[buffer(0)]], device KV* k_cache [[buffer(1)]],                             \
                   device KV* v_cache [[buffer(2)]], device const uint* pos [[buffer(3)]],                        \
                   device const float* inv_freq [[buffer(4)]], device const uint* slots [[buffer(5)]],            \
                   constant uint& tokens [[buffer(6)]], constant uint& heads [[buffer(7)]],                       \
                   constant uint& kv_heads [[buffer(8)]], constant uint& headdim [[buffer(9)]],                   \
                   constant uint& stride [[buffer(10)]], constant uint& num_slots [[buffer(11)]],                 \
                   uint tid [[thread_position_in_threadgroup]], uint blk [[threadgroup_position_in_grid]]) {      \
    fw_rope_kv_store<KV>(qkv, k_cache, v_cache, pos, inv_freq, slots, tokens, heads, kv_heads, headdim, stride,   \
                         num_slots, tid, blk);                                                                    \
  }
FW_ROPE_KV_STORE_KERNEL(rope_kv_store_f32, float)
FW_ROPE_KV_STORE_KERNEL(rope_kv_store_f32_kv16, fw_f16)

// =====================================================================
// attention_f32 (see forward.cu). Block FW_ATT_THREADS, grid tokens *
// heads, head_dim <=
// FW_ATT_MAX_HEADDIM. Threadgroup memory: qs [FW_ATT_MAX_HEADDIM], gm and gl
// [groups], go [groups][CH], CH = min(4096 / groups, FW_ATT_MAX_HEADDIM).
// =====================================================================
template <uint LD, typename KV>
static inline void fw_att_load(thread float* kn, thread float* vn, device const KV* k_cache,
                               device const KV* v_cache, device const uint* table, ulong j, ulong n,
                               uint block_size, uint kv_dim, uint kvh, uint headdim, uint lane) {
#pragma unroll
  for (uint i = 0; i < LD; ++i) kn[i] = vn[i] = 0.0f;
  if (j >= n) return;
  const ulong slot = (ulong)table[j / block_size] * block_size + j % block_size;
  device const KV* kr = k_cache + slot * kv_dim + (ulong)kvh * headdim;
  device const KV* vr = v_cache + slot * kv_dim + (ulong)kvh * headdim;
#pragma unroll
  for (uint i = 0; i < LD; ++i) {
    const uint e = lane + 32u * i;
    if (e < headdim) kn[i] = fw_kv_get(kr + e), vn[i] = fw_kv_get(vr + e);
  }
}

// fw_att_step (see forward.cu): one key's online-softmax update.
template <uint LD>
static inline void fw_att_step(thread float& m, thread float& l, thread float* o, threadgroup const float* qs,
                               thread const float* kv, thread const float* vv, uint lane, uint headdim, float scale) {
  float d = 0.0f;
#pragma unroll
  for (uint i = 0; i < LD; ++i) {
    const uint e = lane + 32u * i;
    if (e < headdim) d += qs[e] * kv[i];
  }
  const float s = fw_group_sum(d) * scale;
  const float mn = fmax(m, s);
  const float c = mf_expf(m - mn), p = mf_expf(s - mn);
  l = l * c + p;
#pragma unroll
  for (uint i = 0; i < LD; ++i) o[i] = o[i] * c + p * vv[i];
  m = mn;
}

template <uint GROUPS, typename KV = float>
static inline void fw_attention_decode(device float* out, device const float* qkv, device const KV* k_cache,
                                       device const KV* v_cache, device const uint* q_seq,
                                       device const uint* q_pos, device const uint* block_tables, uint max_blocks,
                                       uint block_size, uint tokens, uint heads, uint kv_heads, uint headdim,
                                       uint stride, float scale, threadgroup float* qs, threadgroup float* gm,
                                       threadgroup float* gl, threadgroup float* go, uint tid, uint blk) {
  constexpr uint THREADS = GROUPS * 32;
  constexpr uint CH = 4096 / GROUPS < FW_ATT_MAX_HEADDIM ? 4096 / GROUPS : FW_ATT_MAX_HEADDIM;  // go: [GROUPS][CH]
  const uint b = blk;
  if (heads == 0 || kv_heads == 0 || kv_heads > heads || block_size == 0) return;
  if (headdim > FW_ATT_MAX_HEADDIM) return;
  const uint t = b / heads, h = b % heads;
  if (t >= tokens) return;
  const uint group = heads / kv_heads;
  uint kvh = h / group;
  if (kvh >= kv_heads) kvh = kv_heads - 1;
  const uint kv_dim = kv_heads * headdim;
  const uint lane = tid & 31u, g = tid / 32u;
  device const float* q = qkv + (ulong)t * stride + (ulong)h * headdim;
  for (uint d = tid; d < headdim; d += THREADS) qs[d] = q[d];
  block_sync();
  ulong n = (ulong)q_pos[t] + 1;
  const ulong cap = (ulong)max_blocks * block_size;
  if (n > cap) n = cap;
  device const uint* table = block_tables + (ulong)q_seq[t] * max_blocks;
  float m = -mf_bits2f(0x7f800000u), l = 0.0f;
  float o[FW_ATT_LANE_DIMS];
#pragma unroll
  for (int i = 0; i < FW_ATT_LANE_DIMS; ++i) o[i] = 0.0f;
  float kn[FW_ATT_LANE_DIMS], vn[FW_ATT_LANE_DIMS];
  fw_att_load<FW_ATT_LANE_DIMS>(kn, vn, k_cache, v_cache, table, g, n, block_size, kv_dim, kvh, headdim, lane);
  for (ulong j = g; j < n; j += GROUPS) {
    float kv[FW_ATT_LANE_DIMS], vv[FW_ATT_LANE_DIMS];
#pragma unroll
    for (uint i = 0; i < FW_ATT_LANE_DIMS; ++i) kv[i] = kn[i], vv[i] = vn[i];
    fw_att_load<FW_ATT_LANE_DIMS>(kn, vn, k_cache, v_cache, table, j + GROUPS, n, block_size, kv_dim, kvh, headdim,
                                  lane);
    fw_att_step<FW_ATT_LANE_DIMS>(m, l, o, qs, kv, vv, lane, headdim, scale);
  }
  if (lane == 0) gm[g] = m, gl[g] = l;
  device float* orow = out + (ulong)t * heads * headdim + (ulong)h * headdim;
  float M = 0.0f, L = 0.0f;
  float wk[GROUPS];
  for (uint d0 = 0; d0 < headdim; d0 += CH) {
    if (d0 > 0) block_sync();
#pragma unroll
    for (uint i = 0; i < FW_ATT_LANE_DIMS; ++i) {
      const uint e = lane + 32u * i;
      if (e >= d0 && e < d0 + CH && e < headdim) go[g * CH + e - d0] = o[i];
    }
    block_sync();
    if (d0 == 0) {
      M = gm[0];
      for (uint k = 1; k < GROUPS; ++k) M = fmax(M, gm[k]);
      for (uint k = 0; k < GROUPS; ++k) {
        wk[k] = gl[k] == 0.0f ? 0.0f : mf_expf(gm[k] - M);  // a group with no key has m = -inf
        L += gl[k] * wk[k];
      }
    }
    const uint d1 = d0 + CH < headdim ? d0 + CH : headdim;
    for (uint d = d0 + tid; d < d1; d += THREADS) {
      float acc = 0.0f;
      for (uint k = 0; k < GROUPS; ++k) acc += go[k * CH + d - d0] * wk[k];
      orow[d] = acc / L;
    }
  }
}

#define FW_ATTENTION_KERNEL(NAME, KV)                                                                             \
  [[max_total_threads_per_threadgroup(256)]]                                                                      \
  kernel void NAME(device float* out [[buffer(0)]], device const float* qkv [[buffer(1)]],                        \
                   device const KV* k_cache [[buffer(2)]], device const KV* v_cache [[buffer(3)]],                \
                   device const uint* q_seq [[buffer(4)]], device const uint* q_pos [[buffer(5)]],                \
                   device const uint* block_tables [[buffer(6)]], constant uint& max_blocks [[buffer(7)]],        \
                   constant uint& block_size [[buffer(8)]], constant uint& tokens [[buffer(9)]],                  \
                   constant uint& heads [[buffer(10)]], constant uint& kv_heads [[buffer(11)]],                   \
                   constant uint& headdim [[buffer(12)]], constant uint& stride [[buffer(13)]],                   \
                   constant float& scale [[buffer(14)]],                                                          \
                   threadgroup float* qs [[threadgroup(0)]] /* hipgo: 1024 bytes */,                              \
                   threadgroup float* gm [[threadgroup(1)]] /* hipgo: 32 bytes */,                                \
                   threadgroup float* gl [[threadgroup(2)]] /* hipgo: 32 bytes */,                                \
                   threadgroup float* go [[threadgroup(3)]] /* hipgo: 8192 bytes */,                              \
                   uint tid [[thread_position_in_threadgroup]], uint blk [[threadgroup_position_in_grid]]) {      \
    fw_attention_decode<FW_ATT_GROUPS, KV>(out, qkv, k_cache, v_cache, q_seq, q_pos, block_tables, max_blocks,    \
                                           block_size, tokens, heads, kv_heads, headdim, stride, scale, qs, gm,   \
                                           gl, go, tid, blk);                                                     \
  }
FW_ATTENTION_KERNEL(attention_f32, float)
FW_ATTENTION_KERNEL(attention_f32_kv16, fw_f16)

// =====================================================================
// attention_gqa_f32 (see forward.cu). Block FW_GQA_THREADS, grid tokens *
// kv_heads, at most FW_GQA_MAX_GROUP query heads a kv head, head_dim <=
// FW_GQA_MAX_HEADDIM. Threadgroup memory: qs [FW_GQA_MAX_GROUP]
// [FW_GQA_MAX_HEADDIM], gm and gl [FW_GQA_MAX_GROUP][FW_GQA_GROUPS], go
// [FW_GQA_GROUPS][FW_GQA_MAX_HEADDIM].
// =====================================================================
[[max_total_threads_per_threadgroup(1024)]]
kernel void attention_gqa_f32(device float* out [[buffer(0)]], device const float* qkv [[buffer(1)]],
                              device const float* k_cache [[buffer(2)]], device const float* v_cache [[buffer(3)]],
                              device const uint* q_seq [[buffer(4)]], device const uint* q_pos [[buffer(5)]],
                              device const uint* block_tables [[buffer(6)]], constant uint& max_blocks [[buffer(7)]],
                              constant uint& block_size [[buffer(8)]], constant uint& tokens [[buffer(9)]],
                              constant uint& heads [[buffer(10)]], constant uint& kv_heads [[buffer(11)]],
                              constant uint& headdim [[buffer(12)]], constant uint& stride [[buffer(13)]],
                              constant float& scale [[buffer(14)]],
                              threadgroup float* qs [[threadgroup(0)]] /* hipgo: 2048 bytes */,
                              threadgroup float* gm [[threadgroup(1)]] /* hipgo: 512 bytes */,
                              threadgroup float* gl [[threadgroup(2)]] /* hipgo: 512 bytes */,
                              threadgroup float* go [[threadgroup(3)]] /* hipgo: 16384 bytes */,
                              uint tid [[thread_position_in_threadgroup]], uint blk [[threadgroup_position_in_grid]]) {
  constexpr uint G = FW_GQA_MAX_GROUP, GROUPS = FW_GQA_GROUPS, THREADS = FW_GQA_THREADS, HD = FW_GQA_MAX_HEADDIM;
  if (kv_heads == 0 || heads % kv_heads != 0 || block_size == 0) return;
  const uint group = heads / kv_heads;
  if (group > G || headdim > HD) return;
  const uint t = blk / kv_heads, kvh = blk % kv_heads;
  if (t >= tokens) return;
  const uint kv_dim = kv_heads * headdim;
  const uint lane = tid & 31u, g = tid / 32u;
  device const float* q = qkv + (ulong)t * stride + (ulong)kvh * group * headdim;
  for (uint d = tid; d < group * headdim; d += THREADS) qs[(d / headdim) * HD + d % headdim] = q[d];
  block_sync();
  ulong n = (ulong)q_pos[t] + 1;
  const ulong cap = (ulong)max_blocks * block_size;
  if (n > cap) n = cap;
  device const uint* table = block_tables + (ulong)q_seq[t] * max_blocks;
  float m[G], l[G], o[G][FW_GQA_LANE_DIMS];
#pragma unroll
  for (uint h = 0; h < G; ++h) {
    m[h] = -mf_bits2f(0x7f800000u), l[h] = 0.0f;
#pragma unroll
    for (uint i = 0; i < FW_GQA_LANE_DIMS; ++i) o[h][i] = 0.0f;
  }
  float kn[FW_GQA_LANE_DIMS], vn[FW_GQA_LANE_DIMS];
  fw_att_load<FW_GQA_LANE_DIMS>(kn, vn, k_cache, v_cache, table, g, n, block_size, kv_dim, kvh, headdim, lane);
  for (ulong j = g; j < n; j += GROUPS) {
    float kv[FW_GQA_LANE_DIMS], vv[FW_GQA_LANE_DIMS];
#pragma unroll
    for (uint i = 0; i < FW_GQA_LANE_DIMS; ++i) kv[i] = kn[i], vv[i] = vn[i];
    fw_att_load<FW_GQA_LANE_DIMS>(kn, vn, k_cache, v_cache, table, j + GROUPS, n, block_size, kv_dim, kvh, headdim,
                                  lane);
#pragma unroll
    for (uint h = 0; h < G; ++h)
      if (h < group) fw_att_step<FW_GQA_LANE_DIMS>(m[h], l[h], o[h], qs + h * HD, kv, vv, lane, headdim, scale);
  }
  if (lane == 0) {
#pragma unroll
    for (uint h = 0; h < G; ++h) gm[h * GROUPS + g] = m[h], gl[h * GROUPS + g] = l[h];
  }
  for (uint h = 0; h < G; ++h) {
    if (h >= group) break;
    block_sync();
#pragma unroll
    for (uint i = 0; i < FW_GQA_LANE_DIMS; ++i) {
      const uint e = lane + 32u * i;
      if (e < headdim) go[g * HD + e] = o[h][i];
    }
    block_sync();
    device float* orow = out + (ulong)t * heads * headdim + (ulong)(kvh * group + h) * headdim;
    for (uint d = tid; d < headdim; d += THREADS) {
      float M = gm[h * GROUPS];
      for (uint k = 1; k < GROUPS; ++k) M = fmax(M, gm[h * GROUPS + k]);
      float L = 0.0f, acc = 0.0f;
      for (uint k = 0; k < GROUPS; ++k) {
        const float w = gl[h * GROUPS + k] == 0.0f ? 0.0f : mf_expf(gm[h * GROUPS + k] - M);
        L += gl[h * GROUPS + k] * w;
        acc += go[k * HD + d] * w;
      }
      orow[d] = acc / L;
    }
  }
}

// =====================================================================
// attention_prefill_f32 (see forward.cu). Block FW_ATTP_THREADS, grid
// ceil(tokens / FW_ATTP_ROWS) * heads, head_dim <= FW_ATT_MAX_HEADDIM.
// Threadgroup memory: qs [FW_ATTP_ROWS][FW_ATT_MAX_HEADDIM], buf
// [FW_ATTP_KEYS * FW_ATTP_DCHUNK], ps [FW_ATTP_ROWS][FW_ATTP_KEYS].
// =====================================================================
#define FW_ATTP_THREADS 256
#define FW_ATTP_ROWS 16
#define FW_ATTP_KEYS 32
#define FW_ATTP_DCHUNK 64
#define FW_ATTP_WARPS (FW_ATTP_THREADS / 32)
#define FW_ATTP_RPW (FW_ATTP_ROWS / FW_ATTP_WARPS)

static inline float fw_group_max(float v) {
  for (ushort m = 16; m >= 1; m >>= 1) v = fmax(v, simd_shuffle_xor(v, m));
  return v;
}

template <typename KV>
static inline void fw_attp_stage(threadgroup float* buf, device const KV* cache, device const uint* table, ulong j0,
                                 ulong n, uint block_size, uint kv_dim, uint kvh, uint headdim, uint c0, uint tid) {
  for (uint i = tid; i < FW_ATTP_KEYS * FW_ATTP_DCHUNK; i += FW_ATTP_THREADS) {
    const uint k = i / FW_ATTP_DCHUNK, d = i % FW_ATTP_DCHUNK;
    const ulong j = j0 + k;
    float v = 0.0f;
    if (j < n && c0 + d < headdim) {
      const ulong slot = (ulong)table[j / block_size] * block_size + j % block_size;
      v = fw_kv_get(cache + slot * kv_dim + (ulong)kvh * headdim + c0 + d);
    }
    buf[k * FW_ATTP_DCHUNK + (d ^ k)] = v;
  }
}

template <typename KV>
static inline void fw_attention_prefill(device float* out, device const float* qkv, device const KV* k_cache,
                                        device const KV* v_cache, device const uint* q_seq, device const uint* q_pos,
                                        device const uint* block_tables, uint max_blocks, uint block_size,
                                        uint tokens, uint heads, uint kv_heads, uint headdim, uint stride, float scale,
                                        threadgroup float* qs, threadgroup float* buf, threadgroup float* ps, uint tid,
                                        uint blk) {
  if (heads == 0 || kv_heads == 0 || kv_heads > heads || block_size == 0) return;
  if (headdim > FW_ATT_MAX_HEADDIM) return;
  const uint b = blk;
  const ulong tile = b / heads;
  const uint h = b % heads;
  const ulong t0 = tile * FW_ATTP_ROWS;
  if (t0 >= tokens) return;
  const uint rows = tokens - t0 < FW_ATTP_ROWS ? (uint)(tokens - t0) : FW_ATTP_ROWS;
  const uint group = heads / kv_heads;
  uint kvh = h / group;
  if (kvh >= kv_heads) kvh = kv_heads - 1;
  const uint kv_dim = kv_heads * headdim;
  const uint lane = tid & 31u, g = tid / 32u;
  const ulong cap = (ulong)max_blocks * block_size;
  const float ninf = -mf_bits2f(0x7f800000u);
  for (uint i = tid; i < FW_ATTP_ROWS * FW_ATT_MAX_HEADDIM; i += FW_ATTP_THREADS) {
    const uint r = i / FW_ATT_MAX_HEADDIM, d = i % FW_ATT_MAX_HEADDIM;
    qs[r * FW_ATT_MAX_HEADDIM + d] = r < rows && d < headdim ? qkv[(t0 + r) * stride + (ulong)h * headdim + d] : 0.0f;
  }
  ulong rn[FW_ATTP_RPW];
  float m[FW_ATTP_RPW], l[FW_ATTP_RPW], o[FW_ATTP_RPW][FW_ATT_LANE_DIMS];
#pragma unroll
  for (uint k = 0; k < FW_ATTP_RPW; ++k) {
    const uint r = g + FW_ATTP_WARPS * k;
    rn[k] = 0;
    if (r < rows) {
      rn[k] = (ulong)q_pos[t0 + r] + 1;
      if (rn[k] > cap) rn[k] = cap;
    }
    m[k] = ninf, l[k] = 0.0f;
#pragma unroll
    for (uint i = 0; i < FW_ATT_LANE_DIMS; ++i) o[k][i] = 0.0f;
  }
  for (uint rs = 0; rs < rows;) {
    const uint seq = q_seq[t0 + rs];
    uint re = rs;
    ulong n = 0;
    while (re < rows && q_seq[t0 + re] == seq) {
      ulong nr = (ulong)q_pos[t0 + re] + 1;
      if (nr > cap) nr = cap;
      if (nr > n) n = nr;
      ++re;
    }
    device const uint* table = block_tables + (ulong)seq * max_blocks;
    for (ulong j0 = 0; j0 < n; j0 += FW_ATTP_KEYS) {
      float s[FW_ATTP_RPW];
#pragma unroll
      for (uint k = 0; k < FW_ATTP_RPW; ++k) s[k] = 0.0f;
      for (uint c0 = 0; c0 < headdim; c0 += FW_ATTP_DCHUNK) {
        block_sync();
        fw_attp_stage(buf, k_cache, table, j0, n, block_size, kv_dim, kvh, headdim, c0, tid);
        block_sync();
        const uint dn = headdim - c0 < FW_ATTP_DCHUNK ? headdim - c0 : FW_ATTP_DCHUNK;
        for (uint e = 0; e < dn; ++e) {
          const float kv = buf[lane * FW_ATTP_DCHUNK + (e ^ lane)];
#pragma unroll
          for (uint k = 0; k < FW_ATTP_RPW; ++k) s[k] += qs[(g + FW_ATTP_WARPS * k) * FW_ATT_MAX_HEADDIM + c0 + e] * kv;
        }
      }
#pragma unroll
      for (uint k = 0; k < FW_ATTP_RPW; ++k) {
        const uint r = g + FW_ATTP_WARPS * k;
        if (r < rs || r >= re) continue;
        const bool live = j0 + lane < rn[k];
        const float sc = live ? s[k] * scale : ninf;
        const float mn = fmax(m[k], fw_group_max(sc));
        float c = 1.0f, p = 0.0f;
        if (mn != ninf) {
          c = mf_expf(m[k] - mn);
          p = live ? mf_expf(sc - mn) : 0.0f;
        }
        l[k] = l[k] * c + fw_group_sum(p);
#pragma unroll
        for (uint i = 0; i < FW_ATT_LANE_DIMS; ++i) o[k][i] *= c;
        ps[r * FW_ATTP_KEYS + lane] = p;
        m[k] = mn;
      }
      for (uint c0 = 0; c0 < headdim; c0 += FW_ATTP_DCHUNK) {
        block_sync();
        fw_attp_stage(buf, v_cache, table, j0, n, block_size, kv_dim, kvh, headdim, c0, tid);
        block_sync();
#pragma unroll
        for (uint k = 0; k < FW_ATTP_RPW; ++k) {
          const uint r = g + FW_ATTP_WARPS * k;
          if (r < rs || r >= re) continue;
          const ulong lim = rn[k] > j0 ? rn[k] - j0 : 0;
          const uint kn = lim < FW_ATTP_KEYS ? (uint)lim : FW_ATTP_KEYS;
          float acc[FW_ATTP_DCHUNK / 32];
#pragma unroll
          for (uint i = 0; i < FW_ATTP_DCHUNK / 32; ++i) acc[i] = 0.0f;
          for (uint kk = 0; kk < kn; ++kk) {
            const float p = ps[r * FW_ATTP_KEYS + kk];
#pragma unroll
            for (uint i = 0; i < FW_ATTP_DCHUNK / 32; ++i)
              acc[i] += p * buf[kk * FW_ATTP_DCHUNK + ((lane + 32u * i) ^ kk)];
          }
#pragma unroll
          for (uint i = 0; i < FW_ATTP_DCHUNK / 32; ++i) {
            const uint oi = c0 / 32u + i;
#pragma unroll
            for (uint q = 0; q < FW_ATT_LANE_DIMS; ++q)
              if (q == oi) o[k][q] += acc[i];
          }
        }
      }
    }
    rs = re;
  }
#pragma unroll
  for (uint k = 0; k < FW_ATTP_RPW; ++k) {
    const uint r = g + FW_ATTP_WARPS * k;
    if (r >= rows) continue;
    device float* orow = out + (t0 + r) * heads * headdim + (ulong)h * headdim;
#pragma unroll
    for (uint i = 0; i < FW_ATT_LANE_DIMS; ++i) {
      const uint e = lane + 32u * i;
      if (e < headdim) orow[e] = o[k][i] / l[k];
    }
  }
}
#define FW_ATTENTION_PREFILL_KERNEL(NAME, KV)                                                                     \
  [[max_total_threads_per_threadgroup(256)]]                                                                      \
  kernel void NAME(device float* out [[buffer(0)]], device const float* qkv [[buffer(1)]],                        \
                   device const KV* k_cache [[buffer(2)]], device const KV* v_cache [[buffer(3)]],                \
                   device const uint* q_seq [[buffer(4)]], device const uint* q_pos [[buffer(5)]],                \
                   device const uint* block_tables [[buffer(6)]], constant uint& max_blocks [[buffer(7)]],        \
                   constant uint& block_size [[buffer(8)]], constant uint& tokens [[buffer(9)]],                  \
                   constant uint& heads [[buffer(10)]], constant uint& kv_heads [[buffer(11)]],                   \
                   constant uint& headdim [[buffer(12)]], constant uint& stride [[buffer(13)]],                   \
                   constant float& scale [[buffer(14)]],                                                          \
                   threadgroup float* qs [[threadgroup(0)]] /* hipgo: 16384 bytes */,                             \
                   threadgroup float* buf [[threadgroup(1)]] /* hipgo: 8192 bytes */,                             \
                   threadgroup float* ps [[threadgroup(2)]] /* hipgo: 2048 bytes */,                              \
                   uint tid [[thread_position_in_threadgroup]], uint blk [[threadgroup_position_in_grid]]) {      \
    fw_attention_prefill<KV>(out, qkv, k_cache, v_cache, q_seq, q_pos, block_tables, max_blocks, block_size,      \
                             tokens, heads, kv_heads, headdim, stride, scale, qs, buf, ps, tid, blk);             \
  }
FW_ATTENTION_PREFILL_KERNEL(attention_prefill_f32, float)
FW_ATTENTION_PREFILL_KERNEL(attention_prefill_f32_kv16, fw_f16)

#define FW_ABK_MAX_GROUP 8  // the most query heads a kv head attention_warps_f32 takes

// =====================================================================
// attention_warps_f32 (see forward.cu). Block FW_ATW_THREADS, grid tokens
// * kv_heads, at most FW_ABK_MAX_GROUP query heads a kv head, head_dim <=
// FW_ATT_MAX_HEADDIM. Threadgroup memory: gm, gl and wt
// [FW_ABK_MAX_GROUP][FW_ATW_MAX_UNITS], part [FW_ATW_PART]. The threads,
// ring and bodies are forward.cu's (tuned on the H200; not measured on an
// Apple GPU). Key groups of 8 to 32 lanes are parts of a SIMD group; their
// exchanges are simd_shuffle_xor below 8, 16 or 32. The block size's
// shift is found by a loop (no clz needed).
// =====================================================================
#define FW_ATW_THREADS 256
#define FW_ATW_RING 2
#define FW_ATW_MAX_UNITS (FW_ATW_THREADS / 8)
#define FW_ATW_PART 4096  // 16 KB (forward.cu merges in 32): Apple GPUs give a threadgroup 32 KB in all

// fw_atw_load: the C columns of 4 dims sl, sl + LK, ... (zeros from
// headdim on) of the k and v rows at offset row of the caches; all zeros
// for no key (has false: nothing is read).
template <uint LK, uint C, typename KV>
static inline void fw_atw_load(thread float (*kv)[4], thread float (*vv)[4], device const KV* k_cache,
                               device const KV* v_cache, ulong row, bool has, uint headdim, uint sl, uint cols) {
#pragma unroll
  for (uint i = 0; i < C; ++i) {
    const uint c = sl + LK * i;
#pragma unroll
    for (uint e = 0; e < 4; ++e) {
      const uint d = 4u * c + e;
      const bool in = has && c < cols && d < headdim;
      kv[i][e] = in ? fw_kv_get(k_cache + row + d) : 0.0f;
      vv[i][e] = in ? fw_kv_get(v_cache + row + d) : 0.0f;
    }
  }
}

template <uint G, uint LK>
static inline float fw_atw_scores(thread float* d, uint tid) {
#pragma unroll
  for (uint V = G, m = LK / 2; V > 1; V /= 2, m /= 2) {
    if (tid & m) {
#pragma unroll
      for (uint i = 0; i < V / 2; ++i) {
        const float x = d[i];
        d[i] = d[V / 2 + i], d[V / 2 + i] = x;
      }
    }
#pragma unroll
    for (uint i = 0; i < V / 2; ++i) d[i] += simd_shuffle_xor(d[V / 2 + i], (ushort)m);
  }
  float s = d[0];
  for (uint m = LK / G / 2; m >= 1; m >>= 1) s += simd_shuffle_xor(s, (ushort)m);
  return s;
}

template <uint G, uint LK>
static inline void fw_atw_gather(float x, thread float* y, uint tid) {
  y[0] = x;
#pragma unroll
  for (uint V = 1, m = LK / G; V < G; V *= 2, m *= 2) {
#pragma unroll
    for (uint i = 0; i < V; ++i) y[V + i] = simd_shuffle_xor(y[i], (ushort)m);
    if (tid & m) {
#pragma unroll
      for (uint i = 0; i < V; ++i) {
        const float x = y[i];
        y[i] = y[V + i], y[V + i] = x;
      }
    }
  }
}

static inline float fw_qkv_value(device const float* xt, device const float* wt, ulong part, uint parts,
                                 device const float* bias, uint c) {
  if (parts == 0u) return xt[c];
  float v = wt[c];
  for (uint s = 1; s < parts; ++s) v += wt[s * part + c];
  if (bias) v += bias[c];
  return v;
}

template <typename KV>
static inline void fw_rope_kv_head(device float* qkv, device KV* k_cache, device KV* v_cache,
                                   device const uint* pos, device const float* inv_freq, device const uint* slots,
                                   uint num_slots, device const float* ws, device const float* bias, uint parts,
                                   uint t, uint kvh, uint tokens, uint heads, uint kv_heads, uint headdim,
                                   uint stride, uint tid) {
  const uint group = heads / kv_heads, half_dim = headdim / 2, kv_dim = kv_heads * headdim;
  const float p = (float)pos[t];
  const uint slot = slots[t];
  const bool store = slot < num_slots;
  device float* xt = qkv + (ulong)t * stride;
  device const float* wt = parts ? ws + (ulong)t * stride : ws;
  const ulong part = (ulong)tokens * stride;
  device KV* kc = k_cache + (ulong)(store ? slot : 0u) * kv_dim + (ulong)kvh * headdim;
  device KV* vc = v_cache + (ulong)(store ? slot : 0u) * kv_dim + (ulong)kvh * headdim;
#define FW_RAW_HEAD(hh) ((hh) < group ? (kvh * group + (hh)) * headdim : (heads + kvh) * headdim)
  for (uint j = tid; j < (group + 1u) * half_dim; j += FW_ATW_THREADS) {
    const uint hh = j / half_dim, i = j % half_dim, c = FW_RAW_HEAD(hh);
    float sn, cs;
    mf_sincosf(inv_freq[i] * p, &sn, &cs);
    const float a = fw_qkv_value(xt, wt, part, parts, bias, c + i);
    const float b = fw_qkv_value(xt, wt, part, parts, bias, c + i + half_dim);
    const float lo = a * cs - b * sn, hi = b * cs + a * sn;
    xt[c + i] = lo;
    xt[c + i + half_dim] = hi;
    if (store && hh == group) {
      fw_kv_put(kc + i, lo);
      fw_kv_put(kc + i + half_dim, hi);
    }
  }
  const uint vcol = (heads + kv_heads + kvh) * headdim;
  for (uint j = tid; j < headdim; j += FW_ATW_THREADS) {
    const float v = fw_qkv_value(xt, wt, part, parts, bias, vcol + j);
    if (parts) xt[vcol + j] = v;
    if (store) fw_kv_put(vc + j, v);
    if (j < 2u * half_dim) continue;
    for (uint hh = 0; hh <= group; ++hh) {
      const uint c = FW_RAW_HEAD(hh) + j;
      const float x = fw_qkv_value(xt, wt, part, parts, bias, c);
      if (parts) xt[c] = x;
      if (store && hh == group) fw_kv_put(kc + j, x);
    }
  }
#undef FW_RAW_HEAD
}

// o's image for rope_attention_warps_f32 (see forward.cu); defined with
// the warpgroup pair's image below.
static inline uint fw_wg_rows(uint rows);
static inline void fw_wg_store_one(device uint* xs, uint split, float v, uint R, uint r, uint col);
static inline void fw_atw_image_zeros(device uint* xs, uint t, uint kvh, uint tokens, uint heads, uint kv_heads,
                                      uint headdim, uint tid);
static inline bool fw_atw_image_ok(uint split, uint tokens, uint headdim);

// fw_atw_merged: value d of head h's output, merge slot hh of part (see
// forward.cu).
template <uint U, uint CW>
static inline float fw_atw_merged(threadgroup const float* part, threadgroup const float* gl,
                                  threadgroup const float* wt, uint h, uint hh, uint d) {
  float a = 0.0f, l = 0.0f;
  for (uint k = 0; k < U; ++k) {
    const float w = wt[h * FW_ATW_MAX_UNITS + k];
    l = fma(gl[h * FW_ATW_MAX_UNITS + k], w, l);
    a = fma(part[(hh * U + k) * CW + d], w, a);
  }
  return a / l;
}

// fw_atw_range: which of a token's keys a block of fw_attention_warps
// takes, and where its output goes (see forward.cu).
struct fw_atw_range {
  uint block, first, count, index, ranges;
  device float* ml;
};

template <uint G, uint LK, uint C, uint R, typename KV>
static inline void fw_attention_warps(device float* out, device const float* qkv, device const KV* k_cache,
                                      device const KV* v_cache, device const uint* q_seq, device const uint* q_pos,
                                      device const uint* block_tables, uint max_blocks, uint block_size, uint tokens,
                                      uint heads, uint kv_heads, uint headdim, uint stride, float scale,
                                      threadgroup float* gm, threadgroup float* gl, threadgroup float* wt,
                                      threadgroup float* part, device uint* xs, uint split, uint tid,
                                      fw_atw_range rg) {
  constexpr uint T = FW_ATW_THREADS, U = T / LK, HL = LK / G, CW = 4 * LK * C, HR = FW_ATW_PART / (U * CW);
  constexpr uint MU = FW_ATW_MAX_UNITS;
  const uint group = heads / kv_heads;
  const uint t = rg.block / kv_heads, kvh = rg.block % kv_heads;
  if (t >= tokens) return;
  const uint u = tid / LK, sl = tid % LK, hl = sl / HL;
  const uint kv_dim = kv_heads * headdim, cols = (headdim + 3u) / 4u;
  ulong n64 = (ulong)q_pos[t] + 1;
  const ulong cap = (ulong)max_blocks * block_size;
  if (n64 > cap) n64 = cap;
  const uint all = n64 > 0xfffff000u ? 0xfffff000u : (uint)n64;
  const uint jb = rg.first < all ? rg.first : all;  // the range's keys jb .. jb+n-1; below, j counts from jb
  const uint n = all - jb < rg.count ? all - jb : rg.count;
  device const uint* table = block_tables + (ulong)q_seq[t] * max_blocks;
  const bool pow2 = (block_size & (block_size - 1u)) == 0u;
  uint bshift = 0;
  while (pow2 && (1u << bshift) < block_size) ++bshift;
  const ulong head_off = (ulong)kvh * headdim;
#define FW_ATW_ROW(blk, j) \
  (((ulong)(blk) * block_size + (pow2 ? ((j) + jb) & (block_size - 1u) : ((j) + jb) % block_size)) * kv_dim + head_off)
#define FW_ATW_TABLE(j) table[pow2 ? ((j) + jb) >> bshift : ((j) + jb) / block_size]
  float kv[R][C][4], vv[R][C][4];
  uint tb[R];
#pragma unroll
  for (uint r = 0; r < R; ++r) {
    const uint j = u + U * r, j1 = j + U * R;
    const bool has = j < n;
    fw_atw_load<LK, C>(kv[r], vv[r], k_cache, v_cache, has ? FW_ATW_ROW(FW_ATW_TABLE(j), j) : 0u, has, headdim, sl,
                       cols);
    tb[r] = j1 < n ? FW_ATW_TABLE(j1) : 0u;
  }
  device const float* q = qkv + (ulong)t * stride + (ulong)kvh * group * headdim;
  float qv[G][C][4], acc[G][C][4];
#pragma unroll
  for (uint h = 0; h < G; ++h) {
#pragma unroll
    for (uint i = 0; i < C; ++i) {
      const uint c = sl + LK * i;
#pragma unroll
      for (uint e = 0; e < 4; ++e) {
        const uint d = 4u * c + e;
        qv[h][i][e] = h < group && c < cols && d < headdim ? q[h * headdim + d] : 0.0f;
        acc[h][i][e] = 0.0f;
      }
    }
  }
  float M = -mf_bits2f(0x7f800000u), L = 0.0f;
  const uint u0 = tid / 32u * (32u / LK);
  const uint steps = n > u0 ? (n - u0 - 1u) / U + 1u : 0u;
  for (uint i0 = 0; i0 < steps; i0 += R) {
#pragma unroll
    for (uint r = 0; r < R; ++r) {
      if (i0 + r >= steps) break;
      const uint j = u + U * (i0 + r);
      const bool has = j < n;
      float d[G];
#pragma unroll
      for (uint h = 0; h < G; ++h) {
        d[h] = 0.0f;
#pragma unroll
        for (uint i = 0; i < C; ++i)
#pragma unroll
          for (uint e = 0; e < 4; ++e) d[h] = fma(qv[h][i][e], kv[r][i][e], d[h]);
      }
      const float s = fw_atw_scores<G, LK>(d, tid) * scale;
      float y = 0.0f;
      if (has) {
        const bool up = s > M;
        const float x = mf_expf(up ? M - s : s - M);
        L = up ? fma(L, x, 1.0f) : L + x;
        if (up) M = s;
        y = fw_u2f(fw_f2u(x) | (up ? 0x80000000u : 0u));
      }
      float ys[G];
      fw_atw_gather<G, LK>(y, ys, tid);
      if (has) {
#pragma unroll
        for (uint h = 0; h < G; ++h) {
          if (h >= group) continue;
          const float x = fw_u2f(fw_f2u(ys[h]) & 0x7fffffffu);
          if (fw_f2u(ys[h]) >> 31) {
#pragma unroll
            for (uint i = 0; i < C; ++i)
#pragma unroll
              for (uint e = 0; e < 4; ++e) acc[h][i][e] = fma(acc[h][i][e], x, vv[r][i][e]);
          } else {
#pragma unroll
            for (uint i = 0; i < C; ++i)
#pragma unroll
              for (uint e = 0; e < 4; ++e) acc[h][i][e] = fma(x, vv[r][i][e], acc[h][i][e]);
          }
        }
      }
      const uint j1 = j + U * R, j2 = j1 + U * R;
      fw_atw_load<LK, C>(kv[r], vv[r], k_cache, v_cache, j1 < n ? FW_ATW_ROW(tb[r], j1) : 0u, j1 < n, headdim, sl,
                         cols);
      tb[r] = j2 < n ? FW_ATW_TABLE(j2) : 0u;
    }
  }
#undef FW_ATW_ROW
#undef FW_ATW_TABLE
  if (sl % HL == 0 && hl < group) gm[hl * MU + u] = M, gl[hl * MU + u] = L;
#pragma unroll
  for (uint h0 = 0; h0 < G; h0 += HR) {
    if (h0 >= group) continue;
    if (h0 > 0) block_sync();
#pragma unroll
    for (uint h = h0; h < h0 + HR && h < G; ++h) {
      if (h >= group) continue;
#pragma unroll
      for (uint i = 0; i < C; ++i) {
        const uint c = sl + LK * i;
        if (c >= cols) continue;
#pragma unroll
        for (uint e = 0; e < 4; ++e) part[((h - h0) * U + u) * CW + 4u * c + e] = acc[h][i][e];
      }
    }
    block_sync();
    if (h0 == 0) {
      if (tid < group * U) {
        const uint h = tid / U, k = tid % U;
        float mx = gm[h * MU];
        for (uint w = 1; w < U; ++w) mx = fmax(mx, gm[h * MU + w]);
        wt[h * MU + k] = gl[h * MU + k] == 0.0f ? 0.0f : mf_expf(gm[h * MU + k] - mx);
      }
      block_sync();
    }
    const uint nh = group - h0 < HR ? group - h0 : HR;
    for (uint i = tid; i < nh * headdim; i += T) {
      const uint hh = i / headdim, d = i % headdim, h = h0 + hh, col = (kvh * group + h) * headdim + d;
      if (rg.ml) {  // the range's share, for attention_merge_f32: not divided by its sum
        const ulong slot = ((ulong)t * heads + kvh * group + h) * rg.ranges + rg.index;
        float a = 0.0f, l = 0.0f, mx = gm[h * MU];
        for (uint k = 0; k < U; ++k) {
          a = fma(part[(hh * U + k) * CW + d], wt[h * MU + k], a);
          l = fma(gl[h * MU + k], wt[h * MU + k], l);
          mx = fmax(mx, gm[h * MU + k]);
        }
        out[slot * headdim + d] = a;
        if (d == 0) rg.ml[2u * slot] = mx, rg.ml[2u * slot + 1u] = l;
        continue;
      }
      const float v = fw_atw_merged<U, CW>(part, gl, wt, h, hh, d);
      if (split)  // o's image (headdim % 8 == 0)
        fw_wg_store_one(xs, split, v, fw_wg_rows(tokens), t, col);
      else
        out[(ulong)t * heads * headdim + col] = v;
    }
  }
}

// fw_attention_warps_for: fw_attention_warps with the body for the
// model's group and head_dim (the caller checked them).
template <typename KV>
static inline void fw_attention_warps_for(device float* out, device const float* qkv, device const KV* k_cache,
                                          device const KV* v_cache, device const uint* q_seq,
                                          device const uint* q_pos, device const uint* block_tables, uint max_blocks,
                                          uint block_size, uint tokens, uint heads, uint kv_heads, uint headdim,
                                          uint stride, float scale, threadgroup float* gm, threadgroup float* gl,
                                          threadgroup float* wt, threadgroup float* part, device uint* xs,
                                          uint split, uint tid, fw_atw_range rg) {
  const uint group = heads / kv_heads;
#define FW_ATW_BODY(G, LK, C, R)                                                                                     \
  fw_attention_warps<G, LK, C, R, KV>(out, qkv, k_cache, v_cache, q_seq, q_pos, block_tables, max_blocks, block_size, \
                                  tokens, heads, kv_heads, headdim, stride, scale, gm, gl, wt, part, xs, split, tid, rg)
  if (group <= 4) {
    if (headdim <= 64) FW_ATW_BODY(4, 8, 2, FW_ATW_RING);
    else if (headdim <= 128) FW_ATW_BODY(4, 16, 2, FW_ATW_RING);
    else FW_ATW_BODY(4, 32, 2, FW_ATW_RING);
  } else {
    if (headdim <= 64) FW_ATW_BODY(FW_ABK_MAX_GROUP, 16, 1, FW_ATW_RING);
    else if (headdim <= 128) FW_ATW_BODY(FW_ABK_MAX_GROUP, 32, 1, FW_ATW_RING);
    else FW_ATW_BODY(FW_ABK_MAX_GROUP, 32, 2, FW_ATW_RING / 2);
  }
#undef FW_ATW_BODY
}

#define FW_ATTENTION_WARPS_KERNEL(NAME, KV)                                                                       \
  [[max_total_threads_per_threadgroup(256)]]                                                                      \
  kernel void NAME(device float* out [[buffer(0)]], device const float* qkv [[buffer(1)]],                        \
                   device const KV* k_cache [[buffer(2)]], device const KV* v_cache [[buffer(3)]],                \
                   device const uint* q_seq [[buffer(4)]], device const uint* q_pos [[buffer(5)]],                \
                   device const uint* block_tables [[buffer(6)]], constant uint& max_blocks [[buffer(7)]],        \
                   constant uint& block_size [[buffer(8)]], constant uint& tokens [[buffer(9)]],                  \
                   constant uint& heads [[buffer(10)]], constant uint& kv_heads [[buffer(11)]],                   \
                   constant uint& headdim [[buffer(12)]], constant uint& stride [[buffer(13)]],                   \
                   constant float& scale [[buffer(14)]],                                                          \
                   threadgroup float* gm [[threadgroup(0)]] /* hipgo: 1024 bytes */,                              \
                   threadgroup float* gl [[threadgroup(1)]] /* hipgo: 1024 bytes */,                              \
                   threadgroup float* wt [[threadgroup(2)]] /* hipgo: 1024 bytes */,                              \
                   threadgroup float* part [[threadgroup(3)]] /* hipgo: 16384 bytes */,                           \
                   uint tid [[thread_position_in_threadgroup]], uint blk [[threadgroup_position_in_grid]]) {      \
    if (kv_heads == 0 || heads % kv_heads != 0 || block_size == 0) return;                                        \
    const uint group = heads / kv_heads;                                                                          \
    if (group > FW_ABK_MAX_GROUP || headdim == 0 || headdim > FW_ATT_MAX_HEADDIM) return;                         \
    fw_attention_warps_for<KV>(out, qkv, k_cache, v_cache, q_seq, q_pos, block_tables, max_blocks, block_size,    \
                               tokens, heads, kv_heads, headdim, stride, scale, gm, gl, wt, part, nullptr, 0u,    \
                               tid, fw_atw_range{blk, 0u, 0xffffffffu, 0u, 1u, nullptr});                         \
  }
FW_ATTENTION_WARPS_KERNEL(attention_warps_f32, float)
FW_ATTENTION_WARPS_KERNEL(attention_warps_f32_kv16, fw_f16)

// =====================================================================
// rope_attention_warps_f32 (see forward.cu): rope_kv_store_f32's share of
// block (t, kvh), from qkv or the q|k|v product's partials, then
// attention_warps_f32. Block FW_ATW_THREADS, grid tokens * kv_heads; the
// tokens of distinct sequences.
// =====================================================================
#define FW_ROPE_ATTENTION_WARPS_KERNEL(NAME, KV)                                                                  \
  [[max_total_threads_per_threadgroup(256)]]                                                                      \
  kernel void NAME(device float* out [[buffer(0)]], device float* qkv [[buffer(1)]],                              \
                   device KV* k_cache [[buffer(2)]], device KV* v_cache [[buffer(3)]],                            \
                   device const uint* q_seq [[buffer(4)]], device const uint* q_pos [[buffer(5)]],                \
                   device const uint* block_tables [[buffer(6)]], constant uint& max_blocks [[buffer(7)]],        \
                   constant uint& block_size [[buffer(8)]], constant uint& tokens [[buffer(9)]],                  \
                   constant uint& heads [[buffer(10)]], constant uint& kv_heads [[buffer(11)]],                   \
                   constant uint& headdim [[buffer(12)]], constant uint& stride [[buffer(13)]],                   \
                   constant float& scale [[buffer(14)]], device const float* inv_freq [[buffer(15)]],             \
                   device const uint* slots [[buffer(16)]], constant uint& num_slots [[buffer(17)]],              \
                   device const float* ws [[buffer(18)]], device const float* bias [[buffer(19)]],                \
                   constant uint& parts [[buffer(20)]], device uint* xs [[buffer(21)]],                           \
                   constant uint& split [[buffer(22)]],                                                           \
                   threadgroup float* gm [[threadgroup(0)]] /* hipgo: 1024 bytes */,                              \
                   threadgroup float* gl [[threadgroup(1)]] /* hipgo: 1024 bytes */,                              \
                   threadgroup float* wt [[threadgroup(2)]] /* hipgo: 1024 bytes */,                              \
                   threadgroup float* part [[threadgroup(3)]] /* hipgo: 16384 bytes */,                           \
                   uint tid [[thread_position_in_threadgroup]], uint blk [[threadgroup_position_in_grid]]) {      \
    if (kv_heads == 0 || heads % kv_heads != 0 || block_size == 0) return;                                        \
    const uint group = heads / kv_heads;                                                                          \
    if (group > FW_ABK_MAX_GROUP || headdim == 0 || headdim > FW_ATT_MAX_HEADDIM) return;                         \
    if (split && !fw_atw_image_ok(split, tokens, headdim)) return;                                                \
    const uint t = blk / kv_heads, kvh = blk % kv_heads;                                                          \
    if (t >= tokens) return;                                                                                      \
    fw_rope_kv_head<KV>(qkv, k_cache, v_cache, q_pos, inv_freq, slots, num_slots, ws, bias, parts, t, kvh,       \
                        tokens, heads, kv_heads, headdim, stride, tid);                                           \
    threadgroup_barrier(mem_flags::mem_device); /* the block's q heads in qkv, its new key and value */           \
    fw_attention_warps_for<KV>(out, qkv, k_cache, v_cache, q_seq, q_pos, block_tables, max_blocks, block_size,    \
                               tokens, heads, kv_heads, headdim, stride, scale, gm, gl, wt, part, xs, split, tid, \
                               fw_atw_range{blk, 0u, 0xffffffffu, 0u, 1u, nullptr});                              \
    if (split) fw_atw_image_zeros(xs, t, kvh, tokens, heads, kv_heads, headdim, tid);                             \
  }
FW_ROPE_ATTENTION_WARPS_KERNEL(rope_attention_warps_f32, float)
FW_ROPE_ATTENTION_WARPS_KERNEL(rope_attention_warps_f32_kv16, fw_f16)

// =====================================================================
// attention_split_f32 and attention_merge_f32 (see forward.cu): decode
// attention over key ranges, then their merge. Split: block
// FW_ATW_THREADS, grid tokens * kv_heads * ranges, attention_warps_f32's
// threadgroup memory; merge: block FW_ATM_THREADS, grid tokens * heads.
// =====================================================================
#define FW_ATTENTION_SPLIT_KERNEL(NAME, KV)                                                                       \
  [[max_total_threads_per_threadgroup(256)]]                                                                      \
  kernel void NAME(device float* part [[buffer(0)]], device const float* qkv [[buffer(1)]],                       \
                   device const KV* k_cache [[buffer(2)]], device const KV* v_cache [[buffer(3)]],                \
                   device const uint* q_seq [[buffer(4)]], device const uint* q_pos [[buffer(5)]],                \
                   device const uint* block_tables [[buffer(6)]], constant uint& max_blocks [[buffer(7)]],        \
                   constant uint& block_size [[buffer(8)]], constant uint& tokens [[buffer(9)]],                  \
                   constant uint& heads [[buffer(10)]], constant uint& kv_heads [[buffer(11)]],                   \
                   constant uint& headdim [[buffer(12)]], constant uint& stride [[buffer(13)]],                   \
                   constant float& scale [[buffer(14)]], device float* ml [[buffer(15)]],                         \
                   constant uint& ranges [[buffer(16)]],                                                          \
                   threadgroup float* gm [[threadgroup(0)]] /* hipgo: 1024 bytes */,                              \
                   threadgroup float* gl [[threadgroup(1)]] /* hipgo: 1024 bytes */,                              \
                   threadgroup float* wt [[threadgroup(2)]] /* hipgo: 1024 bytes */,                              \
                   threadgroup float* buf [[threadgroup(3)]] /* hipgo: 16384 bytes */,                            \
                   uint tid [[thread_position_in_threadgroup]], uint blk [[threadgroup_position_in_grid]]) {      \
    if (kv_heads == 0 || heads % kv_heads != 0 || block_size == 0 || ranges == 0) return;                         \
    const uint group = heads / kv_heads;                                                                          \
    if (group > FW_ABK_MAX_GROUP || headdim == 0 || headdim > FW_ATT_MAX_HEADDIM) return;                         \
    const uint r = blk % ranges, t = blk / ranges / kv_heads;                                                     \
    if (t >= tokens) return;                                                                                      \
    ulong n64 = (ulong)q_pos[t] + 1;                                                                              \
    const ulong cap = (ulong)max_blocks * block_size;                                                             \
    if (n64 > cap) n64 = cap;                                                                                     \
    const uint n = n64 > 0xfffff000u ? 0xfffff000u : (uint)n64;                                                   \
    const uint c = n / ranges + (n % ranges != 0u ? 1u : 0u);                                                     \
    fw_attention_warps_for<KV>(part, qkv, k_cache, v_cache, q_seq, q_pos, block_tables, max_blocks, block_size,   \
                               tokens, heads, kv_heads, headdim, stride, scale, gm, gl, wt, buf, nullptr, 0u,     \
                               tid, fw_atw_range{blk / ranges, r * c, c, r, ranges, ml});                         \
  }
FW_ATTENTION_SPLIT_KERNEL(attention_split_f32, float)
FW_ATTENTION_SPLIT_KERNEL(attention_split_f32_kv16, fw_f16)

#define FW_ATM_THREADS 128
[[max_total_threads_per_threadgroup(128)]]
kernel void attention_merge_f32(device float* out [[buffer(0)]], device const float* part [[buffer(1)]],
                                device const float* ml [[buffer(2)]], constant uint& tokens [[buffer(3)]],
                                constant uint& heads [[buffer(4)]], constant uint& headdim [[buffer(5)]],
                                constant uint& ranges [[buffer(6)]], uint tid [[thread_position_in_threadgroup]],
                                uint blk [[threadgroup_position_in_grid]]) {
  if (blk >= tokens * heads || ranges == 0) return;
  device const float* pm = ml + (ulong)blk * ranges * 2u;
  float M = -mf_bits2f(0x7f800000u);
  for (uint r = 0; r < ranges; ++r)
    if (pm[2u * r + 1u] != 0.0f) M = fmax(M, pm[2u * r]);  // a NaN sum is kept, and spreads
  float L = 0.0f;
  for (uint r = 0; r < ranges; ++r) {
    const float l = pm[2u * r + 1u];
    if (l != 0.0f) L = fma(l, mf_expf(pm[2u * r] - M), L);
  }
  device const float* pr = part + (ulong)blk * ranges * headdim;
  for (uint d = tid; d < headdim; d += FW_ATM_THREADS) {
    float a = 0.0f;
    for (uint r = 0; r < ranges; ++r) {
      const float l = pm[2u * r + 1u];
      if (l != 0.0f) a = fma(pr[(ulong)r * headdim + d], mf_expf(pm[2u * r] - M), a);
    }
    out[(ulong)blk * headdim + d] = a / L;
  }
}

// =====================================================================
// silu_mul_f32 (see forward.cu). Block FW_EW_THREADS; any grid
// (grid-stride), ceil(rows*inter / 256) at most 65535 intended.
// =====================================================================
[[max_total_threads_per_threadgroup(256)]]
kernel void silu_mul_f32(device float* out [[buffer(0)]], device const float* gu [[buffer(1)]],
                         constant uint& rows [[buffer(2)]], constant uint& inter [[buffer(3)]],
                         uint tid [[thread_position_in_threadgroup]], uint blk [[threadgroup_position_in_grid]],
                         uint grid_threads [[threads_per_grid]]) {
  const ulong n = (ulong)rows * inter;
  for (ulong k = (ulong)blk * FW_EW_THREADS + tid; k < n; k += grid_threads) {
    const ulong r = k / inter, i = k % inter;
    const float g = gu[r * 2 * inter + i];
    out[k] = g / (1.0f + mf_expf(-g)) * gu[r * 2 * inter + inter + i];
  }
}

// =====================================================================
// add_f32: y[i] += x[i] for i < n. Block FW_EW_THREADS; any grid.
// =====================================================================
[[max_total_threads_per_threadgroup(256)]]
kernel void add_f32(device float* y [[buffer(0)]], device const float* x [[buffer(1)]],
                    constant uint& n [[buffer(2)]], uint tid [[thread_position_in_threadgroup]],
                    uint blk [[threadgroup_position_in_grid]], uint grid_threads [[threads_per_grid]]) {
  for (ulong k = (ulong)blk * FW_EW_THREADS + tid; k < n; k += grid_threads) y[k] += x[k];
}

// =====================================================================
// copy_rows_f32: dst[i] = src[rows[i]] (dim values each) for i < n.
// Block FW_COPY_THREADS, grid n.
// =====================================================================
[[max_total_threads_per_threadgroup(256)]]
kernel void copy_rows_f32(device float* dst [[buffer(0)]], device const float* src [[buffer(1)]],
                          device const uint* rows [[buffer(2)]], constant uint& n [[buffer(3)]],
                          constant uint& dim [[buffer(4)]], uint tid [[thread_position_in_threadgroup]],
                          uint blk [[threadgroup_position_in_grid]]) {
  const uint i = blk;
  if (i >= n) return;
  device const float* s = src + (ulong)rows[i] * dim;
  device float* d = dst + (ulong)i * dim;
  for (uint k = tid; k < dim; k += FW_COPY_THREADS) d[k] = s[k];
}

// ---- matmul_tc_W ----
// forward.cu's matmul_tc_W (tensor cores on NVPTX) without an MMA: each
// thread computes outputs of forward.cu's block tile (32 x 16, 32 x 64 or
// 128 x 64 rows x outputs, same grid) one at a time, summing in the order
// forward.cu's m16n8k16 fragments do (chunks of 32 of in, per chunk MMA
// h = 0, 1 over the lanes' k = 8t+4h .. 8t+4h+3, the hi pass then the lo
// pass, each MMA adding its 16 products in logical k order; below 64 rows
// eight (32 x 16) or four (32 x 64) slices of in, slice q taking chunks
// q, q + slices, ..., added in slice order), with the same hi/lo split of x, so the bytes are
// forward.cu's. Correct but slow (every output redoes its split and its
// 2*in products): no simdgroup_matrix port yet; a Metal backend would run
// matmul_W.
#define FW_TC_THREADS 256
#define FW_TC_BIG_ROWS 64
#define FW_TC_WIDE_OUT 16384

static inline uint fw_tc_rne(fw_bf16, float f) {
  const uint x = fw_f2u(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (x >> 16) | 0x40u;
  return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}
static inline uint fw_tc_rne(fw_f16, float f) {
  const uint x = fw_f2u(f);
  const uint sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | 0x7e00u;
  if (ax >= 0x477ff000u) return sign | 0x7c00u;
  if (ax < 0x38800000u) return sign | (fw_f2u(fw_u2f(ax) + 0.5f) - 0x3f000000u);
  return sign | ((ax + 0xfffu + ((ax >> 13) & 1u) - (112u << 23)) >> 13);
}
static inline float fw_tc_widen(fw_bf16, uint h) { return fw_bf16_f32(h & 0xffffu); }
static inline float fw_tc_widen(fw_f16, uint h) { return fw_f16_f32(h & 0xffffu); }

// fw_tc_part: x's hi (lo = false) or lo part, widened back to f32.
template <typename W>
static inline float fw_tc_part(float x, bool lo) {
  const float h = fw_tc_widen(W{}, fw_tc_rne(W{}, x));
  if (!lo) return h;
  return fw_tc_widen(W{}, fw_tc_rne(W{}, h == x ? 0.0f : x - h));
}

// fw_split_pair: tc_split of (x0, x1): the hi pair and the pair of
// remainders, each two 16-bit values in a u32 (x0 in the low half).
template <typename W>
static inline void fw_split_pair(float x0, float x1, thread uint& hi, thread uint& lo) {
  const uint h0 = fw_tc_rne(W{}, x0), h1 = fw_tc_rne(W{}, x1);
  const float w0 = fw_tc_widen(W{}, h0), w1 = fw_tc_widen(W{}, h1);
  hi = h0 | (h1 << 16);
  lo = fw_tc_rne(W{}, w0 == x0 ? 0.0f : x0 - w0) | (fw_tc_rne(W{}, w1 == x1 ? 0.0f : x1 - w1) << 16);
}

template <typename W>
static inline void fw_matmul_tc(device float* y, device const float* x, device const W* w, device const float* bias,
                                uint rows, uint in, uint out, uint accumulate, uint tid, uint blk) {
  const bool big = rows >= FW_TC_BIG_ROWS, narrow = !big && out < FW_TC_WIDE_OUT;
  const uint tm = big ? 128u : 32u, tn = narrow ? 16u : 64u, slices = big ? 1u : narrow ? 8u : 4u;
  const uint tiles = (rows + tm - 1) / tm;
  const uint s = blk % tiles, c = blk / tiles;
  if (c >= (out + tn - 1) / tn) return;
  const uint chunks = (in + 31u) / 32u;
  for (uint e = tid; e < tm * tn; e += FW_TC_THREADS) {
    const uint r = s * tm + e / tn, o = c * tn + e % tn;
    if (r >= rows || o >= out) continue;
    device const float* xr = x + (ulong)r * in;
    device const W* wr = w + (ulong)o * in;
    float total = 0.0f;
    for (uint q = 0; q < slices; ++q) {
      float acc = 0.0f;
      for (uint kc = q; kc < chunks; kc += slices)
        for (uint h = 0; h < 2; ++h)
          for (uint pass = 0; pass < 2; ++pass) {
            float sum = acc;
            for (uint lk = 0; lk < 16; ++lk) {
              const uint k = kc * 32u + 8u * ((lk % 8u) / 2u) + 4u * h + 2u * (lk / 8u) + lk % 2u;
              const float xv = k < in ? xr[k] : 0.0f, wv = k < in ? fw_to_f32(wr[k]) : 0.0f;
              sum += fw_tc_part<W>(xv, pass == 1) * wv;
            }
            acc = sum;
          }
      total = q == 0 ? acc : total + acc;
    }
    fw_mm_store(y, bias, (ulong)r * out + o, o, total, accumulate);
  }
}

#define FW_MATMUL_TC_KERNEL(NAME, W)                                                                          \
  [[max_total_threads_per_threadgroup(256)]]                                                                  \
  kernel void NAME(device float* y [[buffer(0)]], device const float* x [[buffer(1)]],                        \
                   device const W* w [[buffer(2)]], device const float* bias [[buffer(3)]],                   \
                   constant uint& rows [[buffer(4)]], constant uint& in [[buffer(5)]],                        \
                   constant uint& out [[buffer(6)]], constant uint& accumulate [[buffer(7)]],                 \
                   uint tid [[thread_position_in_threadgroup]], uint blk [[threadgroup_position_in_grid]]) {  \
    fw_matmul_tc<W>(y, x, w, bias, rows, in, out, accumulate, tid, blk);                                      \
  }
FW_MATMUL_TC_KERNEL(matmul_tc_f16, fw_f16)
FW_MATMUL_TC_KERNEL(matmul_tc_bf16, fw_bf16)

// ---- tc_split_x_W, matmul_tcx_W ----
// forward.cu's pair for fewer than 64 rows: tc_split_x_W writes x's hi/lo
// MMA fragments in forward.cu's layout (u32 word v of the 16 bytes at
// (((i*chunks + c)*2 + h)*2 + p)*32 + lane: rows 16i + g + 8*(v % 2), k =
// 32c + 8t + 4h + 2*(v / 2) and k + 1, hi (p = 0) or lo); matmul_tcx_W
// sums them against the weights as fw_matmul_tc does (forward.cu's order:
// its tiles 32 x 8, 32 x 16 or 32 x 64, with 8, 8 or 4 slices of in), so
// the bytes are forward.cu's.
#define FW_TCX_MID_OUT 2048

template <typename W>
static inline void fw_tc_split_x(device uint* xs, device const float* x, uint rows, uint in, uint tid, uint blk) {
  const uint chunks = (in + 31u) / 32u, tiles = (rows + 15u) / 16u;
  const uint j = blk * FW_TC_THREADS + tid;
  if (j >= tiles * chunks * 64u) return;
  const uint lane = j % 32u, h = (j / 32u) % 2u, c = (j / 64u) % chunks, i = j / (64u * chunks);
  const uint g = lane >> 2, t = lane & 3u, k = 32u * c + 8u * t + 4u * h;
  device uint* d = xs + (((ulong)(i * chunks + c) * 2u + h) * 64u + lane) * 4u;
  for (uint v = 0; v < 4; ++v) {
    const uint r = 16u * i + g + 8u * (v % 2u), k0 = k + 2u * (v / 2u);
    const float x0 = (r < rows && k0 < in) ? x[(ulong)r * in + k0] : 0.0f;
    const float x1 = (r < rows && k0 + 1u < in) ? x[(ulong)r * in + k0 + 1u] : 0.0f;
    uint h, l;
    fw_split_pair<W>(x0, x1, h, l);
    d[v] = h;
    d[128u + v] = l;
  }
}

template <typename W>
static inline void fw_matmul_tcx(device float* y, device const uint* xs, device const W* w, device const float* bias,
                                 uint rows, uint in, uint out, uint accumulate, uint tid, uint blk) {
  const uint tn = out >= FW_TC_WIDE_OUT ? 64u : out > FW_TCX_MID_OUT ? 16u : 8u;
  const uint slices = out >= FW_TC_WIDE_OUT ? 4u : 8u;
  const uint tiles = (rows + 31u) / 32u;
  const uint s = blk % tiles, c = blk / tiles;
  if (c >= (out + tn - 1) / tn) return;
  const uint chunks = (in + 31u) / 32u;
  for (uint e = tid; e < 32u * tn; e += FW_TC_THREADS) {
    const uint r = s * 32u + e / tn, o = c * tn + e % tn;
    if (r >= rows || o >= out) continue;
    const uint i = r / 16u, g = r % 8u, q8 = (r % 16u) / 8u;
    device const W* wr = w + (ulong)o * in;
    float total = 0.0f;
    for (uint q = 0; q < slices; ++q) {
      float acc = 0.0f;
      for (uint kc = q; kc < chunks; kc += slices)
        for (uint h = 0; h < 2; ++h)
          for (uint pass = 0; pass < 2; ++pass) {
            float sum = acc;
            for (uint lk = 0; lk < 16; ++lk) {
              const uint t = (lk % 8u) / 2u, v = 2u * (lk / 8u) + q8;
              const uint k = kc * 32u + 8u * t + 4u * h + 2u * (lk / 8u) + lk % 2u;
              const uint word = xs[((((ulong)(i * chunks + kc) * 2u + h) * 2u + pass) * 32u + g * 4u + t) * 4u + v];
              const float wv = k < in ? fw_to_f32(wr[k]) : 0.0f;
              sum += fw_tc_widen(W{}, word >> (16u * (lk % 2u))) * wv;
            }
            acc = sum;
          }
      total = q == 0 ? acc : total + acc;
    }
    fw_mm_store(y, bias, (ulong)r * out + o, o, total, accumulate);
  }
}

#define FW_TCX_KERNELS(SPLIT, MATMUL, W)                                                                      \
  [[max_total_threads_per_threadgroup(256)]]                                                                  \
  kernel void SPLIT(device uint* xs [[buffer(0)]], device const float* x [[buffer(1)]],            \
                               constant uint& rows [[buffer(2)]], constant uint& in [[buffer(3)]],            \
                               uint tid [[thread_position_in_threadgroup]],                                   \
                               uint blk [[threadgroup_position_in_grid]]) {                                   \
    fw_tc_split_x<W>(xs, x, rows, in, tid, blk);                                                              \
  }                                                                                                           \
  [[max_total_threads_per_threadgroup(256)]]                                                                  \
  kernel void MATMUL(device float* y [[buffer(0)]], device const uint* xs [[buffer(1)]],            \
                               device const W* w [[buffer(2)]], device const float* bias [[buffer(3)]],       \
                               constant uint& rows [[buffer(4)]], constant uint& in [[buffer(5)]],            \
                               constant uint& out [[buffer(6)]], constant uint& accumulate [[buffer(7)]],     \
                               uint tid [[thread_position_in_threadgroup]],                                   \
                               uint blk [[threadgroup_position_in_grid]]) {                                   \
    fw_matmul_tcx<W>(y, xs, w, bias, rows, in, out, accumulate, tid, blk);                                    \
  }
FW_TCX_KERNELS(tc_split_x_f16, matmul_tcx_f16, fw_f16)
FW_TCX_KERNELS(tc_split_x_bf16, matmul_tcx_bf16, fw_bf16)

// ---- wg_split_x_W, matmul_wg_W ----
// forward.cu's warpgroup-MMA pair (1 to 64 rows; sm_90a's wgmma there).
// wg_split_x_W writes forward.cu's image byte for byte: per 64-wide stage c
// of in, N = 2R rows (R = rows rounded up to 16; row n < R is x row n's
// hi, row R + n its lo, as tc_split makes them; zeros past rows and past
// in), x[n][64c + 8q + e] in half e % 2 of u32 word 4 (c*R*16 +
// fw_wg_unit(n, q)) + e / 2 (the 128-byte swizzle in 16-byte units).
// matmul_wg_W sums that image against the weights in the order of
// forward.cu's emulated MMA, so the bytes of y are forward.cu's: per output
// and split s of in (ks wide), hi and lo are each one f32 sum from +0 in k
// order over the split's 64-wide stages (past in forward.cu adds +0
// products, which leave a sum that started at +0 as it is, so the loop
// stops at in; forward.cu asks for in % 8 == 0, below which its stages
// read the next row's weights), the split's value is hi + lo, and the
// splits' values are added in split order before fw_mm_store. Each product of two 16-bit
// values is exact in f32, so whether the compiler fuses it into an fma
// does not change the sum. Only the blocks of split 0 compute (each of
// their threads whole outputs, all splits in turn); the other blocks of
// the grid return at once, so the port never touches cnt, nor ws but with
// accumulate = FW_WG_LEAVE_PARTS, where it writes forward.cu's partials
// (each split's hi + lo) and no y. forward.cu also uses ws and cnt for its
// split partials when ks < in (and leaves cnt zero again). Correct but
// slow: no simdgroup_matrix port yet.
#define FW_WG_THREADS 256
#define FW_WG_MAX_ROWS 64
#define FW_WG_KC 64
#define FW_WG_TN 128
#define FW_WG_LEAVE_PARTS 2u
#define FW_WG_SILU 4u

static inline uint fw_wg_rows(uint rows) { return (rows + 15u) & ~15u; }
static inline uint fw_wg_stages(uint in) { return (in + 63u) / 64u; }
static inline uint fw_wg_unit(uint i, uint q) { return (i / 8u) * 64u + (i % 8u) * 8u + (q ^ (i % 8u)); }

// silu: x is gate|up [rows, 2 in] and the value silu_mul_f32's output
// (wg_silu_split_x_W).
template <typename W>
static inline void fw_wg_split_x(device uint* xs, device const float* x, uint rows, uint in, bool silu, uint tid,
                                 uint blk) {
  const uint R = fw_wg_rows(rows);
  const uint j = blk * FW_WG_THREADS + tid;
  if (R > FW_WG_MAX_ROWS || j >= fw_wg_stages(in) * 8u * R) return;
  const uint r = j % R, q = (j / R) % 8u, c = j / (8u * R);
  const uint k = 64u * c + 8u * q;
  device uint* stage = xs + (ulong)c * R * 64u;  // N * 128 bytes
  device uint* hi = stage + fw_wg_unit(r, q) * 4u;
  device uint* lo = stage + fw_wg_unit(R + r, q) * 4u;
  for (uint v = 0; v < 4; ++v) {
    const uint k0 = k + 2u * v;
    const ulong pitch = silu ? 2ul * in : in;
    float x0 = (r < rows && k0 < in) ? x[(ulong)r * pitch + k0] : 0.0f;
    float x1 = (r < rows && k0 + 1u < in) ? x[(ulong)r * pitch + k0 + 1u] : 0.0f;
    if (silu) {
      const float u0 = (r < rows && k0 < in) ? x[(ulong)r * pitch + in + k0] : 0.0f;
      const float u1 = (r < rows && k0 + 1u < in) ? x[(ulong)r * pitch + in + k0 + 1u] : 0.0f;
      x0 = x0 / (1.0f + mf_expf(-x0)) * u0;
      x1 = x1 / (1.0f + mf_expf(-x1)) * u1;
    }
    uint h, l;
    fw_split_pair<W>(x0, x1, h, l);
    hi[v] = h;
    lo[v] = l;
  }
}

// fw_wg_part: one split's value of row r against weight row wr over k0 ..
// k1 - 1: the hi and lo sums, each from +0 in k order, then hi + lo.
template <typename W>
static inline float fw_wg_part(device const uint* xs, device const W* wr, uint R, uint r, uint k0, uint k1) {
  float hs = 0.0f, ls = 0.0f;
  for (uint k = k0; k < k1; ++k) {
    const uint c = k / 64u, q = (k % 64u) / 8u, h = k % 8u;
    device const uint* stage = xs + (ulong)c * R * 64u;
    const uint shift = 16u * (h % 2u);
    const float wv = fw_to_f32(wr[k]);
    hs += wv * fw_tc_widen(W{}, stage[fw_wg_unit(r, q) * 4u + h / 2u] >> shift);
    ls += wv * fw_tc_widen(W{}, stage[fw_wg_unit(R + r, q) * 4u + h / 2u] >> shift);
  }
  return hs + ls;
}

// fw_matmul_wg_silu: FW_WG_SILU (see forward.cu's matmul_wg_W): block blk's
// 64 columns c of gate (c) and up (out / 2 + c), each as fw_mm_store
// writes it, into stage blk of the image of silu_mul_f32's output (img),
// as fw_wg_split_x writes it (rows past rows zero); in whole only.
template <typename W>
static inline void fw_matmul_wg_silu(device uint* img, device const uint* xs, device const W* w,
                                     device const float* bias, uint rows, uint R, uint in, uint out, uint tid,
                                     uint blk, uint threads) {
  const uint half = out / 2u;
  device uint* stage = img + (ulong)blk * R * 64u;
  for (uint e = tid; e < R * 32u; e += threads) {
    const uint r = e / 32u, p = e % 32u;  // columns 2p and 2p + 1 of the block's 64
    float x[2];
    for (uint i = 0; i < 2; ++i) {
      const uint c = 64u * blk + 2u * p + i;
      float gv = r < rows ? fw_wg_part<W>(xs, w + (ulong)c * in, R, r, 0, in) : 0.0f;
      float uv = r < rows ? fw_wg_part<W>(xs, w + (ulong)(half + c) * in, R, r, 0, in) : 0.0f;
      if (bias) gv += bias[c], uv += bias[half + c];
      x[i] = r < rows ? gv / (1.0f + mf_expf(-gv)) * uv : 0.0f;
    }
    uint h, l;
    fw_split_pair<W>(x[0], x[1], h, l);
    const uint q = p / 4u, word = p % 4u;
    stage[fw_wg_unit(r, q) * 4u + word] = h;
    stage[fw_wg_unit(R + r, q) * 4u + word] = l;
  }
}

template <typename W>
static inline void fw_matmul_wg(device float* y, device const uint* xs, device const W* w, device const float* bias,
                                device float* ws, uint rows, uint in, uint out, uint accumulate, uint ks, uint tid, uint blk,
                                uint threads) {
  if (ks == 0 || ks % FW_WG_KC != 0) return;
  const uint R = fw_wg_rows(rows);
  if (R == 0 || R > FW_WG_MAX_ROWS) return;
  const uint splits = in / ks + (in % ks != 0u ? 1u : 0u);
  if (splits == 0 || blk % splits != 0) return;  // in = 0: nothing, as forward.cu
  const uint o0 = (blk / splits) * FW_WG_TN;
  if (o0 >= out) return;
  if (accumulate == FW_WG_SILU) {
    if (splits == 1u && out % 128u == 0u) fw_matmul_wg_silu<W>((device uint*)y, xs, w, bias, rows, R, in, out, tid, blk, threads);
    return;
  }
  for (uint e = tid; e < FW_WG_TN * rows; e += threads) {
    const uint r = e / FW_WG_TN, o = o0 + e % FW_WG_TN;
    if (o >= out) continue;
    device const W* wr = w + (ulong)o * in;
    float total = 0.0f;
    for (uint s = 0; s < splits; ++s) {
      const uint k0 = s * ks, k1 = in - k0 < ks ? in : k0 + ks;
      const float v = fw_wg_part<W>(xs, wr, R, r, k0, k1);
      if (accumulate & FW_WG_LEAVE_PARTS) ws[((ulong)s * rows + r) * out + o] = v;
      total = s == 0 ? v : total + v;
    }
    if (!(accumulate & FW_WG_LEAVE_PARTS)) fw_mm_store(y, bias, (ulong)r * out + o, o, total, accumulate);
  }
}

#define FW_WG_KERNELS(SPLIT, SILU_SPLIT, MATMUL, W)                                                           \
  [[max_total_threads_per_threadgroup(256)]]                                                                  \
  kernel void SPLIT(device uint* xs [[buffer(0)]], device const float* x [[buffer(1)]],                       \
                    constant uint& rows [[buffer(2)]], constant uint& in [[buffer(3)]],                       \
                    uint tid [[thread_position_in_threadgroup]], uint blk [[threadgroup_position_in_grid]]) { \
    fw_wg_split_x<W>(xs, x, rows, in, false, tid, blk);                                                       \
  }                                                                                                           \
  [[max_total_threads_per_threadgroup(256)]]                                                                  \
  kernel void SILU_SPLIT(device uint* xs [[buffer(0)]], device const float* gu [[buffer(1)]],                 \
                         constant uint& rows [[buffer(2)]], constant uint& inter [[buffer(3)]],               \
                         uint tid [[thread_position_in_threadgroup]],                                         \
                         uint blk [[threadgroup_position_in_grid]]) {                                         \
    fw_wg_split_x<W>(xs, gu, rows, inter, true, tid, blk);                                                    \
  }                                                                                                           \
  [[max_total_threads_per_threadgroup(256)]]                                                                  \
  kernel void MATMUL(device float* y [[buffer(0)]], device const uint* xs [[buffer(1)]],                      \
                     device const W* w [[buffer(2)]], device const float* bias [[buffer(3)]],                 \
                     device float* ws [[buffer(4)]], device uint* cnt [[buffer(5)]],                          \
                     constant uint& rows [[buffer(6)]], constant uint& in [[buffer(7)]],                      \
                     constant uint& out [[buffer(8)]], constant uint& accumulate [[buffer(9)]],               \
                     constant uint& ks [[buffer(10)]], uint tid [[thread_position_in_threadgroup]],           \
                     uint blk [[threadgroup_position_in_grid]]) {                                             \
    fw_matmul_wg<W>(y, xs, w, bias, ws, rows, in, out, accumulate, ks, tid, blk, FW_WG_THREADS);                 \
  }
FW_WG_KERNELS(wg_split_x_f16, wg_silu_split_x_f16, matmul_wg_f16, fw_f16)
FW_WG_KERNELS(wg_split_x_bf16, wg_silu_split_x_bf16, matmul_wg_bf16, fw_bf16)

// matmul_wgs_W: forward.cu's warp-specialized matmul_wg_W (the same
// arguments and bytes of y, 384 threads): here matmul_wg_W's port.
#define FW_WGS_THREADS 384
#define FW_WGS_KERNEL(MATMUL, W)                                                                              \
  [[max_total_threads_per_threadgroup(384)]]                                                                  \
  kernel void MATMUL(device float* y [[buffer(0)]], device const uint* xs [[buffer(1)]],                      \
                     device const W* w [[buffer(2)]], device const float* bias [[buffer(3)]],                 \
                     device float* ws [[buffer(4)]], device uint* cnt [[buffer(5)]],                          \
                     constant uint& rows [[buffer(6)]], constant uint& in [[buffer(7)]],                      \
                     constant uint& out [[buffer(8)]], constant uint& accumulate [[buffer(9)]],               \
                     constant uint& ks [[buffer(10)]], uint tid [[thread_position_in_threadgroup]],           \
                     uint blk [[threadgroup_position_in_grid]]) {                                             \
    fw_matmul_wg<W>(y, xs, w, bias, ws, rows, in, out, accumulate, ks, tid, blk, FW_WGS_THREADS);                \
  }
FW_WGS_KERNEL(matmul_wgs_f16, fw_f16)
FW_WGS_KERNEL(matmul_wgs_bf16, fw_bf16)

// ---- rmsnorm_fused_W (see forward.cu) ----
#define FW_SPLIT_TC_BF16 1u
#define FW_SPLIT_TC_F16 2u
#define FW_SPLIT_WG_BF16 3u
#define FW_SPLIT_WG_F16 4u

// fw_wg_store_one: value v of row r, column col into an image of R rows in
// split's type: its hi and lo halves (fw_wg_split_x's bytes for it).
static inline void fw_wg_store_one(device uint* xs, uint split, float v, uint R, uint r, uint col) {
  uint h, l;
  if (split == FW_SPLIT_WG_BF16)
    fw_split_pair<fw_bf16>(v, 0.0f, h, l);
  else
    fw_split_pair<fw_f16>(v, 0.0f, h, l);
  device ushort* stage = (device ushort*)(xs + (ulong)(col / 64u) * R * 64u);
  const uint q = (col % 64u) / 8u, e = col % 8u;
  stage[fw_wg_unit(r, q) * 8u + e] = (ushort)h;
  stage[fw_wg_unit(R + r, q) * 8u + e] = (ushort)l;
}

// fw_atw_image_ok: rope_attention_warps_f32 can write o's image of this
// type for these shapes.
static inline bool fw_atw_image_ok(uint split, uint tokens, uint headdim) {
  return split >= FW_SPLIT_WG_BF16 && split <= FW_SPLIT_WG_F16 && headdim % 8u == 0 &&
         fw_wg_rows(tokens) <= FW_WG_MAX_ROWS;
}

// fw_atw_image_zeros: the zeros of o's image block (t, kvh) of
// rope_attention_warps_f32 writes (see forward.cu): whole 16-byte units of
// zero bits.
static inline void fw_atw_image_zeros(device uint* xs, uint t, uint kvh, uint tokens, uint heads, uint kv_heads,
                                      uint headdim, uint tid) {
  const uint R = fw_wg_rows(tokens), in = heads * headdim, width = heads / kv_heads * headdim / 8u;
  const uint c0 = kvh * width, c1 = kvh + 1u == kv_heads ? fw_wg_stages(in) * 8u : c0 + width;
  for (uint r = t; r < R; r += tokens)
    for (uint c = c0 + tid; c < c1; c += FW_ATW_THREADS)
      if (r >= tokens || 8u * c >= in) {
        device uint* stage = xs + (ulong)(c / 8u) * R * 64u;
        for (uint e = 0; e < 4; ++e) {
          stage[fw_wg_unit(r, c % 8u) * 4u + e] = 0u;
          stage[fw_wg_unit(R + r, c % 8u) * 4u + e] = 0u;
        }
      }
}

// fw_rmsnorm_split_row: row r's part of the split image of out (zeros for
// a row past rows), as fw_tc_split_x or fw_wg_split_x lays it out.
template <typename W>
static inline void fw_rmsnorm_split_row(device uint* xs, device const float* orow, bool live, uint r, uint rows,
                                        uint dim, bool wg, uint tid) {
  if (wg) {
    const uint R = fw_wg_rows(rows);
    for (uint u = tid; u < fw_wg_stages(dim) * 8u; u += FW_NORM_THREADS) {
      const uint c = u / 8u, q = u % 8u;
      device uint* stage = xs + (ulong)c * R * 64u;
      device uint* hi = stage + fw_wg_unit(r, q) * 4u;
      device uint* lo = stage + fw_wg_unit(R + r, q) * 4u;
      for (uint v = 0; v < 4; ++v) {
        const uint k0 = 64u * c + 8u * q + 2u * v;
        const float x0 = live && k0 < dim ? orow[k0] : 0.0f;
        const float x1 = live && k0 + 1u < dim ? orow[k0 + 1u] : 0.0f;
        uint h, l;
        fw_split_pair<W>(x0, x1, h, l);
        hi[v] = h;
        lo[v] = l;
      }
    }
    return;
  }
  const uint chunks = (dim + 31u) / 32u, i = r / 16u, g = r % 8u, w0 = (r % 16u) / 8u;
  for (uint u = tid; u < chunks * 8u; u += FW_NORM_THREADS) {
    const uint t = u % 4u, h = (u / 4u) % 2u, c = u / 8u;
    device uint* d = xs + (((ulong)(i * chunks + c) * 2u + h) * 64u + 4u * g + t) * 4u;
    for (uint p = 0; p < 2; ++p) {
      const uint k0 = 32u * c + 8u * t + 4u * h + 2u * p;
      const float x0 = live && k0 < dim ? orow[k0] : 0.0f;
      const float x1 = live && k0 + 1u < dim ? orow[k0 + 1u] : 0.0f;
      uint h, l;
      fw_split_pair<W>(x0, x1, h, l);
      d[2u * p + w0] = h;
      d[128u + 2u * p + w0] = l;
    }
  }
}

template <typename NW>
static inline void fw_rmsnorm_fused(device float* out, device float* x, device const float* ws,
                                    device const float* bias, device const NW* weight, uint parts, uint rows,
                                    uint dim, float eps, device uint* xs, uint split, threadgroup float* part,
                                    uint tid, uint blk) {
  const uint r = blk;
  const bool wg = split >= FW_SPLIT_WG_BF16;
  if (split > FW_SPLIT_WG_F16 || (wg && fw_wg_rows(rows) > FW_WG_MAX_ROWS)) return;
  if (r >= (split != 0u ? (rows + 15u) & ~15u : rows)) return;
  if (r < rows) {
    fw_rmsnorm_add_parts(x, ws, bias, parts, r, rows, dim, tid);
    fw_rmsnorm<NW>(out, x, weight, rows, dim, eps, part, tid, blk);
  }
  if (split == 0u) return;
  threadgroup_barrier(mem_flags::mem_device);  // the row of out, written by every thread
  device const float* orow = out + (ulong)r * dim;
  if (split == FW_SPLIT_TC_BF16 || split == FW_SPLIT_WG_BF16)
    fw_rmsnorm_split_row<fw_bf16>(xs, orow, r < rows, r, rows, dim, wg, tid);
  else
    fw_rmsnorm_split_row<fw_f16>(xs, orow, r < rows, r, rows, dim, wg, tid);
}

// ---- the per-dtype entry points ----
// rmsnorm's part: FW_NORM_THREADS / 32 floats; matmul's xs and ws:
// FW_MM_TK * FW_MM_PITCH floats each (the matvec path leaves them unused).
#define FW_EMBED_KERNEL(NAME, W)                                                                              \
  [[max_total_threads_per_threadgroup(256)]]                                                                  \
  kernel void NAME(device float* out [[buffer(0)]], device const W* table [[buffer(1)]],                      \
                   device const uint* tokens [[buffer(2)]], constant uint& n [[buffer(3)]],                   \
                   constant uint& hidden [[buffer(4)]], constant uint& vocab [[buffer(5)]],                   \
                   uint tid [[thread_position_in_threadgroup]], uint blk [[threadgroup_position_in_grid]]) {  \
    fw_embed<W>(out, table, tokens, n, hidden, vocab, tid, blk);                                              \
  }
#define FW_RMSNORM_KERNEL(NAME, W)                                                                            \
  [[max_total_threads_per_threadgroup(256)]]                                                                  \
  kernel void NAME(device float* out [[buffer(0)]], device const float* x [[buffer(1)]],                      \
                   device const W* weight [[buffer(2)]], constant uint& rows [[buffer(3)]],                   \
                   constant uint& dim [[buffer(4)]], constant float& eps [[buffer(5)]],                       \
                   threadgroup float* part [[threadgroup(0)]] /* hipgo: 32 bytes */,                          \
                   uint tid [[thread_position_in_threadgroup]], uint blk [[threadgroup_position_in_grid]]) {  \
    fw_rmsnorm<W>(out, x, weight, rows, dim, eps, part, tid, blk);                                            \
  }
#define FW_RMSNORM_FUSED_KERNEL(NAME, W)                                                                      \
  [[max_total_threads_per_threadgroup(256)]]                                                                  \
  kernel void NAME(device float* out [[buffer(0)]], device float* x [[buffer(1)]],                            \
                   device const float* ws [[buffer(2)]], device const float* bias [[buffer(3)]],              \
                   device const W* weight [[buffer(4)]], constant uint& parts [[buffer(5)]],                  \
                   constant uint& rows [[buffer(6)]], constant uint& dim [[buffer(7)]],                       \
                   constant float& eps [[buffer(8)]], device uint* xs [[buffer(9)]],                          \
                   constant uint& split [[buffer(10)]],                                                       \
                   threadgroup float* part [[threadgroup(0)]] /* hipgo: 32 bytes */,                          \
                   uint tid [[thread_position_in_threadgroup]], uint blk [[threadgroup_position_in_grid]]) {  \
    fw_rmsnorm_fused<W>(out, x, ws, bias, weight, parts, rows, dim, eps, xs, split, part, tid, blk);          \
  }
#define FW_MATMUL_KERNEL(NAME, W)                                                                             \
  [[max_total_threads_per_threadgroup(256)]]                                                                  \
  kernel void NAME(device float* y [[buffer(0)]], device const float* x [[buffer(1)]],                        \
                   device const W* w [[buffer(2)]], device const float* bias [[buffer(3)]],                   \
                   constant uint& rows [[buffer(4)]], constant uint& in [[buffer(5)]],                        \
                   constant uint& out [[buffer(6)]], constant uint& accumulate [[buffer(7)]],                 \
                   threadgroup float* xs [[threadgroup(0)]] /* hipgo: 4352 bytes */,                          \
                   threadgroup float* ws [[threadgroup(1)]] /* hipgo: 4352 bytes */,                          \
                   uint tid [[thread_position_in_threadgroup]], uint blk [[threadgroup_position_in_grid]]) {  \
    fw_matmul<W>(y, x, w, bias, rows, in, out, accumulate, xs, ws, tid, blk);                                 \
  }

#define FW_NORM_MATVEC_KERNEL(NAME, W)                                                                        \
  [[max_total_threads_per_threadgroup(256)]]                                                                  \
  kernel void NAME(device float* y [[buffer(0)]], device const float* x [[buffer(1)]],                        \
                   device const W* w [[buffer(2)]], device const float* bias [[buffer(3)]],                   \
                   device const W* nw [[buffer(4)]], constant uint& in [[buffer(5)]],                         \
                   constant uint& n [[buffer(6)]], constant float& eps [[buffer(7)]],                         \
                   constant uint& silu [[buffer(8)]],                                                         \
                   threadgroup float* xn [[threadgroup(0)]] /* hipgo: 16384 bytes */,                         \
                   threadgroup float* part [[threadgroup(1)]] /* hipgo: 32 bytes */,                          \
                   uint tid [[thread_position_in_threadgroup]], uint blk [[threadgroup_position_in_grid]]) {  \
    if (silu)                                                                                                 \
      fw_norm_matvec<2, W>(y, x, w, bias, nw, in, n, eps, xn, part, tid, blk);                                \
    else                                                                                                      \
      fw_norm_matvec<1, W>(y, x, w, bias, nw, in, n, eps, xn, part, tid, blk);                                \
  }

FW_EMBED_KERNEL(embed_f32, float)
FW_RMSNORM_KERNEL(rmsnorm_f32, float)
FW_RMSNORM_FUSED_KERNEL(rmsnorm_fused_f32, float)
FW_MATMUL_KERNEL(matmul_f32, float)
FW_NORM_MATVEC_KERNEL(norm_matvec_f32, float)
FW_EMBED_KERNEL(embed_f16, fw_f16)
FW_RMSNORM_KERNEL(rmsnorm_f16, fw_f16)
FW_RMSNORM_FUSED_KERNEL(rmsnorm_fused_f16, fw_f16)
FW_MATMUL_KERNEL(matmul_f16, fw_f16)
FW_NORM_MATVEC_KERNEL(norm_matvec_f16, fw_f16)
FW_EMBED_KERNEL(embed_bf16, fw_bf16)
FW_RMSNORM_KERNEL(rmsnorm_bf16, fw_bf16)
FW_RMSNORM_FUSED_KERNEL(rmsnorm_fused_bf16, fw_bf16)
FW_MATMUL_KERNEL(matmul_bf16, fw_bf16)
FW_NORM_MATVEC_KERNEL(norm_matvec_bf16, fw_bf16)
