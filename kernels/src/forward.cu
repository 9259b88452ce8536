// forward.cu: the transformer forward-pass kernels (Llama family): embedding
// gather, RMSNorm, matmul over f32/f16/bf16 weights, RoPE, the block-table
// KV-cache store, attention, SiLU times up, residual add and row gather. One
// text, compiled as HIP for every AMDGPU target and as CUDA for NVPTX
// (portable.h), and on the host by model/internal/hostkern's emulation test
// (HIPGO_HOST_SHIM names the header that stands in for portable.h there).
//
// The argument lists and semantics are the backend's ABI: every pointer is a
// device pointer, every count a u32, activations are f32, weights keep their
// file's dtype (the _f32/_f16/_bf16 suffix), matrices are row-major [out, in].
// No kernel faults on bad data: out-of-range token ids give zero rows,
// out-of-range slots are skipped; NaN propagates.
//
// Launch shapes: each kernel's comment gives its threads per block (the
// FW_*_THREADS define, also its KBOUNDS) and its grid (1-D). The kernels
// take the block size from the define, never from the launch, so a launch
// must use exactly that many threads.
#ifdef HIPGO_HOST_SHIM
#include HIPGO_HOST_SHIM
#else
#include "portable.h"
#endif
#include "mathf.h"

#define FW_EMBED_THREADS 256
#define FW_NORM_THREADS 256
#define FW_MM_THREADS 256
#define FW_ROPE_THREADS 256
#define FW_KV_THREADS 256
#define FW_ATT_THREADS 256
#define FW_EW_THREADS 256
#define FW_COPY_THREADS 256

// matmul tiling (see matmul_W): the matvec path gives each 32-lane group one
// output column and FW_MM_VEC_ROWS input rows; at rows >= FW_MM_GEMM_ROWS
// the block computes a FW_MM_TILE x FW_MM_TILE tile through shared memory.
#define FW_MM_GROUPS (FW_MM_THREADS / 32)
// rmsnorm keeps rows of up to FW_NORM_THREADS * FW_NORM_CACHED values in
// registers (4096: every hidden size of the Llama family up to 8B).
#define FW_NORM_CACHED 16
#define FW_NORM_PARTS_AHEAD 8  // rmsnorm_fused: the parts whose loads are in flight together
#define FW_MM_VEC_ROWS 8
#define FW_MM_GEMM_ROWS 64
#define FW_MM_TILE 64
#define FW_MM_TK 16

// attention: head_dim at most FW_ATT_MAX_HEADDIM (the host checks; a larger
// one makes the kernel write nothing).
#define FW_ATT_MAX_HEADDIM 256
#define FW_ATT_GROUPS (FW_ATT_THREADS / 32)
#define FW_ATTL_THREADS 1024  // attention_gqa_f32's 32 key groups
#define FW_ATTL_GROUPS (FW_ATTL_THREADS / 32)
#define FW_ATT_LANE_DIMS (FW_ATT_MAX_HEADDIM / 32)
// attention_gqa_f32: at most FW_GQA_MAX_GROUP query heads a kv head, head_dim
// at most FW_GQA_MAX_HEADDIM (the host checks; otherwise it writes nothing).
#define FW_GQA_THREADS 1024
#define FW_GQA_GROUPS (FW_GQA_THREADS / 32)
#define FW_GQA_MAX_GROUP 4
#define FW_GQA_MAX_HEADDIM 128
#define FW_GQA_LANE_DIMS (FW_GQA_MAX_HEADDIM / 32)

// ---- element types ----
struct fw_bf16 {
  uint16_t bits;
};
struct fw_f16 {
  uint16_t bits;
};


// fw_early_start: the first statement of every kernel here. This kernel
// waits until the kernels before it have finished and their writes are
// visible: the GPU backend launches these kernels with EarlyStart
// (programmatic dependent launch on sm_90; a no-op elsewhere), so it must
// come before any early return, or a kernel could complete before its
// predecessor and let the next one read unfinished data.
//
// Few kernels trigger their dependents early (grid_launch_dependents, after
// their own wait), and each only where the kernel after it copies weights
// (the model's: no kernel writes them) before its own wait: tc_split_x_W
// and rmsnorm_fused_W with a split, before the pair's product or
// matmul_wgs_W, and matmul_wgs_W's gate|up writing down's image
// (FW_WG_SILU) before down. The next kernel then launches while this one
// runs. Everywhere else it launches as this one ends, which still overlaps its launch with this
// one's completion, but no kernel's blocks sit resident and waiting with
// nothing to do: on the H200 that was faster at batch 1, at batch 32 and
// in prefill than triggering first or after the wait everywhere, as
// measured end to end.
DEVICE void fw_early_start() { grid_dependency_wait(); }

// fw_early_start_product_next: fw_early_start, then the trigger, for
// tc_split_x_W, which the backend always follows with matmul_tcx_W: the
// product launches while the split runs and copies its first stages of
// weights (the model's: no kernel writes them) before its own wait. On the
// H200 that paid at 16 rows, where every product of a layer is the pair,
// and was level at 32 and 64.
DEVICE void fw_early_start_product_next() {
  grid_dependency_wait();
  grid_launch_dependents();
}

DEVICE float fw_u2f(uint32_t x) { return __builtin_bit_cast(float, x); }
DEVICE uint32_t fw_f2u(float x) { return __builtin_bit_cast(uint32_t, x); }
DEVICE float fw_bf16_f32(uint32_t h) { return fw_u2f(h << 16); }
// IEEE binary16 to float32, exact (subnormals included).
DEVICE float fw_f16_f32(uint32_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t ex = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  if (ex == 0) return fw_u2f(fw_f2u((float)man * 5.96046448e-08f) | sign);
  if (ex == 31) return fw_u2f(sign | 0x7f800000u | (man << 13));
  return fw_u2f(sign | ((ex + 112u) << 23) | (man << 13));
}
DEVICE float fw_to_f32(float v) { return v; }
DEVICE float fw_to_f32(fw_bf16 v) { return fw_bf16_f32(v.bits); }
DEVICE float fw_to_f32(fw_f16 v) { return fw_f16_f32(v.bits); }

struct __attribute__((aligned(16))) fw_f32x4 {
  float v[4];
};
struct __attribute__((aligned(16))) fw_u32x4 {
  uint32_t v[4];
};

// fw_stream8: eight consecutive weights starting at p (16-byte aligned for
// the 16-bit types: one 16-byte load; f32: two). A decode step reads its
// weights once, so from sm_90 the loads carry stream_copy16's L2
// evict-first policy (portable.h, STREAM_L2_HINTS).
#if defined(STREAM_L2_HINTS)
DEVICE fw_u32x4 fw_stream16(const void* p) {
  fw_u32x4 r;
  asm("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
      : "=r"(r.v[0]), "=r"(r.v[1]), "=r"(r.v[2]), "=r"(r.v[3])
      : "l"(p), "l"(stream_policy()));
  return r;
}
#else
DEVICE fw_u32x4 fw_stream16(const void* p) { return *(const fw_u32x4*)p; }
#endif
DEVICE void fw_stream8(const float* p, float* o) {
  const fw_u32x4 a = fw_stream16(p), b = fw_stream16(p + 4);
  for (int i = 0; i < 4; ++i) o[i] = fw_u2f(a.v[i]), o[4 + i] = fw_u2f(b.v[i]);
}
DEVICE void fw_stream8(const fw_bf16* p, float* o) {
  const fw_u32x4 a = fw_stream16(p);
  for (int i = 0; i < 4; ++i) o[2 * i] = fw_u2f(a.v[i] << 16), o[2 * i + 1] = fw_u2f(a.v[i] & 0xffff0000u);
}
DEVICE void fw_stream8(const fw_f16* p, float* o) {
  const fw_u32x4 a = fw_stream16(p);
  for (int i = 0; i < 4; ++i) o[2 * i] = fw_f16_f32(a.v[i] & 0xffffu), o[2 * i + 1] = fw_f16_f32(a.v[i] >> 16);
}

DEVICE bool fw_aligned16(const void* p) { return ((__UINTPTR_TYPE__)p & 15u) == 0; }

// fw_group_sum: the sum of v over this thread's aligned group of 32 threads,
// by butterfly (every thread gets the same value).
DEVICE float fw_group_sum(float v) {
  for (uint32_t m = 16; m >= 1; m >>= 1) v += lane_xor_f32(v, m);
  return v;
}

// fw_block_sum: the sum of v over the block of NT threads (NT a multiple of
// 32, at most 1024); every thread gets it. Starts and ends with the block
// in step (all threads must call it).
template <uint32_t NT>
DEVICE float fw_block_sum(float v) {
  __shared__ float part[NT / 32];
  v = fw_group_sum(v);
  const uint32_t t = thread_idx_x();
  if ((t & 31u) == 0) part[t / 32] = v;
  block_sync();
  float s = 0.0f;
  for (uint32_t i = 0; i < NT / 32; ++i) s += part[i];
  block_sync();
  return s;
}

// =====================================================================
// embed_W: out[t] = f32(table[tokens[t]]) for t < n; a token >= vocab gives
// a zero row. Block FW_EMBED_THREADS, grid n (block t copies row t).
// =====================================================================
template <typename W>
DEVICE void embed(float* out, const W* table, const uint32_t* tokens, uint32_t n, uint32_t hidden,
                  uint32_t vocab) {
  const uint32_t t = block_idx_x();
  if (t >= n) return;
  const uint32_t id = tokens[t];
  float* o = out + (uint64_t)t * hidden;
  const W* row = table + (uint64_t)id * hidden;
  for (uint32_t i = thread_idx_x(); i < hidden; i += FW_EMBED_THREADS)
    o[i] = id < vocab ? fw_to_f32(row[i]) : 0.0f;
}

// =====================================================================
// rmsnorm_W: out[r] = x[r] * (1/sqrt(mean(x[r]^2) + eps)) * weight, per row
// of dim values; out may alias x. The sum of squares is a float32 block
// reduction; the scale is one correctly rounded sqrt and divide in float32,
// as transformers computes rsqrt; each output is weight * (x * scale) in
// that order, as the CPU backend's. Block FW_NORM_THREADS, grid rows.
// =====================================================================
// rmsnorm_load: this thread's elements i = tid + k FW_NORM_THREADS of a
// row of x and of the weight (zeros past dim), all loads issued together.
template <typename W>
DEVICE void rmsnorm_load(float* xv, float* wv, const float* xr, const W* weight, uint32_t dim) {
  const uint32_t tid = thread_idx_x();
#pragma unroll
  for (uint32_t k = 0; k < FW_NORM_CACHED; ++k) {
    const uint32_t i = tid + k * FW_NORM_THREADS;
    xv[k] = i < dim ? xr[i] : 0.0f;
    wv[k] = i < dim ? fw_to_f32(weight[i]) : 0.0f;
  }
}

// rmsnorm_scale: the row held as rmsnorm_load holds it, normalized in
// place: the sum of squares in the order of the loop path below, then
// weight * (x * scale). Every thread of the block calls it.
DEVICE void rmsnorm_scale(float* xv, const float* wv, uint32_t dim, float eps) {
  const uint32_t tid = thread_idx_x();
  float ss = 0.0f;
#pragma unroll
  for (uint32_t k = 0; k < FW_NORM_CACHED; ++k)
    if (tid + k * FW_NORM_THREADS < dim) ss += xv[k] * xv[k];
  ss = fw_block_sum<FW_NORM_THREADS>(ss);
  const float inv = 1.0f / sqrt_f32(ss / (float)dim + eps);
#pragma unroll
  for (uint32_t k = 0; k < FW_NORM_CACHED; ++k) xv[k] = wv[k] * (xv[k] * inv);
}

template <typename W>
DEVICE void rmsnorm(float* out, const float* x, const W* weight, uint32_t rows, uint32_t dim, float eps) {
  const uint32_t r = block_idx_x();
  if (r >= rows) return;
  const float* xr = x + (uint64_t)r * dim;
  float* orow = out + (uint64_t)r * dim;
  const uint32_t tid = thread_idx_x();
  float ss = 0.0f;
  if (dim <= FW_NORM_THREADS * FW_NORM_CACHED) {
    // One pass over memory: every load issued before any is used (a
    // one-block kernel waits out each round trip otherwise), the row kept
    // in registers for the scaling.
    float xv[FW_NORM_CACHED], wv[FW_NORM_CACHED];
    rmsnorm_load(xv, wv, xr, weight, dim);
    rmsnorm_scale(xv, wv, dim, eps);
#pragma unroll
    for (uint32_t k = 0; k < FW_NORM_CACHED; ++k) {
      const uint32_t i = tid + k * FW_NORM_THREADS;
      if (i < dim) orow[i] = xv[k];
    }
    return;
  }
  for (uint32_t i = tid; i < dim; i += FW_NORM_THREADS) ss += xr[i] * xr[i];
  ss = fw_block_sum<FW_NORM_THREADS>(ss);
  const float inv = 1.0f / sqrt_f32(ss / (float)dim + eps);
  for (uint32_t i = tid; i < dim; i += FW_NORM_THREADS)
    orow[i] = fw_to_f32(weight[i]) * (xr[i] * inv);
}

// fw_mm_store: y[i] = acc (+ bias[o]) (+ y[i] with accumulate), in that
// order: every product's store of an output.
DEVICE void fw_mm_store(float* y, const float* bias, uint64_t i, uint32_t o, float acc, uint32_t accumulate) {
  float v = acc;
  if (bias) v += bias[o];
  if (accumulate) v += y[i];
  y[i] = v;
}

// rmsnorm_parts_sum: the parts' partial sums of this thread's elements of
// row wr (i = tid + k FW_NORM_THREADS; ws [parts, rows, dim], part = rows
// dim apart) added in part order, FW_NORM_PARTS_AHEAD parts' loads issued
// together: one round trip for up to that many parts (the 1B shape's 8).
DEVICE void rmsnorm_parts_sum(float* v, const float* wr, uint64_t part, uint32_t parts, uint32_t dim) {
  const uint32_t tid = thread_idx_x();
  for (uint32_t s0 = 0; s0 < parts; s0 += FW_NORM_PARTS_AHEAD) {
    float p[FW_NORM_PARTS_AHEAD][FW_NORM_CACHED];
#pragma unroll
    for (uint32_t j = 0; j < FW_NORM_PARTS_AHEAD; ++j)
#pragma unroll
      for (uint32_t k = 0; k < FW_NORM_CACHED; ++k) {
        const uint32_t i = tid + k * FW_NORM_THREADS;
        p[j][k] = i < dim && s0 + j < parts ? wr[(s0 + j) * part + i] : 0.0f;
      }
#pragma unroll
    for (uint32_t j = 0; j < FW_NORM_PARTS_AHEAD; ++j)
#pragma unroll
      for (uint32_t k = 0; k < FW_NORM_CACHED; ++k)
        if (s0 + j < parts) v[k] = s0 + j == 0 ? p[j][k] : v[k] + p[j][k];
  }
}

// =====================================================================
// matmul_W: y[r, o] (+)= x[r] . w[o] (+ bias[o]) for r < rows, o < out, with
// x [rows, in] f32, w [out, in] of type W, bias [out] f32 or null, f32
// accumulation; accumulate != 0 adds into y (the fused residual add).
// Block FW_MM_THREADS (256). Grid:
//   rows <  64: ceil(out / 8) * ceil(rows / 8)    (matvec path)
//   rows >= 64: ceil(out / 64) * ceil(rows / 64)  (tiled path)
// Matvec path: block b takes outputs [8c, 8c+8) with c = b / ceil(rows/8)
// and input rows [8s, 8s+8) with s = b % ceil(rows/8); each 32-lane group
// streams one weight row once (16-byte loads when w, x and in allow) against
// up to 8 input rows, so blocks that share weights run side by side and the
// repeats hit in L2. Tiled path: block b computes the 64 x 64 tile of rows
// [64s, 64s+64) and outputs [64c, 64c+64), s = b % ceil(rows/64),
// c = b / ceil(rows/64), over 16-wide slices of in staged in shared memory.
// =====================================================================

// matvec_fma: acc[r] += the 8 weights of chunk k . x row r's chunk k, for
// the live rows r < nr (all NR of them when NR = 1).
template <uint32_t NR>
DEVICE void matvec_fma(float* acc, const float* wv, const float* xr, uint32_t in, uint32_t k, uint32_t nr) {
#pragma unroll
  for (uint32_t r = 0; r < NR; ++r) {
    if (NR == 1 || r < nr) {
      const fw_f32x4* xp = (const fw_f32x4*)(xr + (uint64_t)r * in + (uint64_t)k * 8u);
      const fw_f32x4 a = xp[0], b = xp[1];
      float d = acc[r];
#pragma unroll
      for (int i = 0; i < 4; ++i) d += wv[i] * a.v[i];
#pragma unroll
      for (int i = 0; i < 4; ++i) d += wv[4 + i] * b.v[i];
      acc[r] = d;
    }
  }
}

// matvec_tile: one 32-lane group's output o against NR input rows (nr of
// them live, nr <= NR; NR = 1 is the batch-1 decode case, with no per-row
// checks in the loop).
template <uint32_t NR, typename W>
DEVICE void matvec_tile(float* y, const float* xr, const W* wr, const float* bias, uint32_t nr, uint32_t r0,
                        uint32_t in, uint32_t out, uint32_t o, bool vec, uint32_t accumulate) {
  const uint32_t lane = thread_idx_x() & 31u;
  float acc[NR];
#pragma unroll
  for (uint32_t r = 0; r < NR; ++r) acc[r] = 0.0f;
  if (vec) {
    const uint32_t chunks = in / 8u;
    // Four 16-byte weight loads issued before any use, per lane: decode is a
    // stream of weights, bound by how many loads are outstanding.
    uint32_t k = lane;
    // Eight loads in flight first: at 1B-model shapes (in 2048, out 2048)
    // a 32-lane group per output leaves too few groups per multiprocessor
    // to cover memory latency with four. Same accumulation order as below.
    for (; k + 224u < chunks; k += 256u) {
      float wv[8][8];
#pragma unroll
      for (uint32_t j = 0; j < 8; ++j) fw_stream8(wr + (uint64_t)(k + 32u * j) * 8u, wv[j]);
#pragma unroll
      for (uint32_t j = 0; j < 8; ++j) matvec_fma<NR>(acc, wv[j], xr, in, k + 32u * j, nr);
    }
    for (; k + 96u < chunks; k += 128u) {
      float wv[4][8];
#pragma unroll
      for (uint32_t j = 0; j < 4; ++j) fw_stream8(wr + (uint64_t)(k + 32u * j) * 8u, wv[j]);
#pragma unroll
      for (uint32_t j = 0; j < 4; ++j) matvec_fma<NR>(acc, wv[j], xr, in, k + 32u * j, nr);
    }
    for (; k < chunks; k += 32u) {
      float wv[8];
      fw_stream8(wr + (uint64_t)k * 8u, wv);
      matvec_fma<NR>(acc, wv, xr, in, k, nr);
    }
  } else {
    for (uint32_t k = lane; k < in; k += 32) {
      const float wv = fw_to_f32(wr[k]);
#pragma unroll
      for (uint32_t r = 0; r < NR; ++r)
        if (NR == 1 || r < nr) acc[r] += wv * xr[(uint64_t)r * in + k];
    }
  }
#pragma unroll
  for (uint32_t r = 0; r < NR; ++r) {
    if (r >= nr) break;  // nr is the same for the whole block
    const float v = fw_group_sum(acc[r]);
    if (lane == 0) fw_mm_store(y, bias, (uint64_t)(r0 + r) * out + o, o, v, accumulate);
  }
}

template <typename W>
DEVICE void matvec_rows(float* y, const float* x, const W* w, const float* bias, uint32_t rows, uint32_t in,
                        uint32_t out, uint32_t accumulate) {
  const uint32_t tiles = (rows + FW_MM_VEC_ROWS - 1) / FW_MM_VEC_ROWS;
  const uint32_t b = block_idx_x();
  const uint32_t c = b / tiles, s = b % tiles;
  const uint32_t o = c * FW_MM_GROUPS + thread_idx_x() / 32;
  if (o >= out) return;  // whole 32-groups leave together: no block_sync below
  const uint32_t r0 = s * FW_MM_VEC_ROWS;
  const uint32_t nr = rows - r0 < FW_MM_VEC_ROWS ? rows - r0 : FW_MM_VEC_ROWS;
  const W* wr = w + (uint64_t)o * in;
  const float* xr = x + (uint64_t)r0 * in;
  const bool vec = (in % 8u) == 0 && fw_aligned16(w) && fw_aligned16(x);
  if (nr == 1)
    matvec_tile<1>(y, xr, wr, bias, nr, r0, in, out, o, vec, accumulate);
  else
    matvec_tile<FW_MM_VEC_ROWS>(y, xr, wr, bias, nr, r0, in, out, o, vec, accumulate);
}

template <typename W>
DEVICE void matmul_tiled(float* y, const float* x, const W* w, const float* bias, uint32_t rows, uint32_t in,
                         uint32_t out, uint32_t accumulate) {
  // xs[k][r], ws[k][o]: a 16-wide slice of in for the tile's 64 rows and 64
  // outputs; +4 keeps the float4 reads aligned and spreads the stores.
  __shared__ float xs[FW_MM_TK][FW_MM_TILE + 4];
  __shared__ float ws[FW_MM_TK][FW_MM_TILE + 4];
  const uint32_t tiles = (rows + FW_MM_TILE - 1) / FW_MM_TILE;
  const uint32_t b = block_idx_x();
  const uint32_t c = b / tiles, s = b % tiles;
  if (c >= (out + FW_MM_TILE - 1) / FW_MM_TILE) return;  // whole block
  const uint32_t r0 = s * FW_MM_TILE, o0 = c * FW_MM_TILE;
  const uint32_t t = thread_idx_x();
  const uint32_t tr = (t / 16u) * 4u, tc = (t % 16u) * 4u;  // this thread's 4 x 4 of the tile
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  for (uint32_t k0 = 0; k0 < in; k0 += FW_MM_TK) {
    // 1024 values of each slice, 4 per thread: thread t loads row/output
    // (t / 16) + 16q at k0 + t % 16 (16 consecutive k per row: coalesced).
#pragma unroll
    for (uint32_t q = 0; q < 4; ++q) {
      const uint32_t i = t / 16u + 16u * q, k = k0 + t % 16u;
      const uint32_t r = r0 + i, o = o0 + i;
      xs[t % 16u][i] = (r < rows && k < in) ? x[(uint64_t)r * in + k] : 0.0f;
      ws[t % 16u][i] = (o < out && k < in) ? fw_to_f32(w[(uint64_t)o * in + k]) : 0.0f;
    }
    block_sync();
#pragma unroll
    for (uint32_t k = 0; k < FW_MM_TK; ++k) {
      const fw_f32x4 xv = *(const fw_f32x4*)&xs[k][tr];
      const fw_f32x4 wv = *(const fw_f32x4*)&ws[k][tc];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += xv.v[i] * wv.v[j];
    }
    block_sync();
  }
#pragma unroll
  for (uint32_t i = 0; i < 4; ++i) {
    const uint32_t r = r0 + tr + i;
    if (r >= rows) continue;
#pragma unroll
    for (uint32_t j = 0; j < 4; ++j) {
      const uint32_t o = o0 + tc + j;
      if (o < out) fw_mm_store(y, bias, (uint64_t)r * out + o, o, acc[i][j], accumulate);
    }
  }
}

template <typename W>
DEVICE void matmul(float* y, const float* x, const W* w, const float* bias, uint32_t rows, uint32_t in,
                   uint32_t out, uint32_t accumulate) {
  if (rows >= FW_MM_GEMM_ROWS)
    matmul_tiled(y, x, w, bias, rows, in, out, accumulate);
  else
    matvec_rows(y, x, w, bias, rows, in, out, accumulate);
}

// =====================================================================
// norm_matvec_W: rmsnorm_W and then matmul_W over one row, in one launch
// (a batch-1 decode step's norm and the product after it):
//   y[o] = xn . w[o] (+ bias[o]) for o < n, xn = rmsnorm_W(x, nw, eps),
// with x [in] f32, w [n, in] and nw [in] of type W, bias [n] f32 or null;
// y's bytes are what rmsnorm_W and then matmul_W (1 row, no accumulate)
// write. Every block sums the row's squares in rmsnorm_W's order and holds
// xn in shared memory, then its 32-lane groups take one output each, in
// matvec_tile's order. With silu (w [2 n, in]) it writes silu_mul_f32's
// output of that product instead: y[i] = silu(g) * u, g and u outputs i and
// n + i, each group taking both rows. in is at most FW_NV_MAX_IN (the host
// checks; past it the kernel writes nothing). The first lap of weights is
// loaded before the wait for the kernel ahead: no kernel writes weights.
// Block FW_MM_THREADS (= FW_NORM_THREADS: rmsnorm_W's block sum), grid
// ceil(n / 8).
// =====================================================================
#define FW_NV_MAX_IN (FW_NORM_THREADS * FW_NORM_CACHED)
static_assert(FW_MM_THREADS == FW_NORM_THREADS, "norm_matvec_W sums squares as rmsnorm_W's block does");

// fw_raw8: eight consecutive weights as loaded, not yet widened (two
// 16-byte loads for f32, one for the 16-bit types), so that a load's use
// can wait past the code between them; fw_unpack8 widens them as
// fw_stream8 does.
template <typename W>
struct fw_raw8 {
  fw_u32x4 v[sizeof(W) == 4 ? 2 : 1];
};
template <typename W>
DEVICE void fw_stream_raw8(const W* p, fw_raw8<W>& r) {
  r.v[0] = fw_stream16(p);
  if (sizeof(W) == 4) r.v[sizeof(W) == 4 ? 1 : 0] = fw_stream16((const float*)p + 4);
}
DEVICE void fw_unpack8(const fw_raw8<float>& r, float* o) {
  for (int i = 0; i < 4; ++i) o[i] = fw_u2f(r.v[0].v[i]), o[4 + i] = fw_u2f(r.v[1].v[i]);
}
DEVICE void fw_unpack8(const fw_raw8<fw_bf16>& r, float* o) {
  for (int i = 0; i < 4; ++i) o[2 * i] = fw_u2f(r.v[0].v[i] << 16), o[2 * i + 1] = fw_u2f(r.v[0].v[i] & 0xffff0000u);
}
DEVICE void fw_unpack8(const fw_raw8<fw_f16>& r, float* o) {
  for (int i = 0; i < 4; ++i)
    o[2 * i] = fw_f16_f32(r.v[0].v[i] & 0xffffu), o[2 * i + 1] = fw_f16_f32(r.v[0].v[i] >> 16);
}

// norm_matvec_fma: acc[r] += row r's LAP chunks of weights as loaded
// (raw[r][j], chunk k + 32 j) . xn's, in chunk order.
template <uint32_t R, uint32_t LAP, typename W>
DEVICE void norm_matvec_fma(float* acc, const fw_raw8<W> (&raw)[R][LAP], const float* xn, uint32_t in, uint32_t k) {
#pragma unroll
  for (uint32_t r = 0; r < R; ++r)
#pragma unroll
    for (uint32_t j = 0; j < LAP; ++j) {
      float wv[8];
      fw_unpack8(raw[r][j], wv);
      matvec_fma<1>(&acc[r], wv, xn, in, k + 32u * j, 1);
    }
}

// norm_matvec: R rows of w a 32-lane group (2 with silu), each lap of
// loads 8 / R deep (the registers of matvec_tile's 8; a row's sums run in
// its order whatever the laps), the first lap loaded before the wait. On
// the H200 (1B shape, batch 1) that ran level with a first lap of 4 under
// launch bounds of 3 blocks an SM, and 3% faster than no early lap, end
// to end. xn: FW_NV_MAX_IN floats of shared memory.
template <uint32_t R, typename W>
DEVICE void norm_matvec(float* y, const float* x, const W* w, const float* bias, const W* nw, uint32_t in,
                        uint32_t n, float eps, float* xn) {
  constexpr uint32_t LAP = 8 / R;
  const uint32_t tid = thread_idx_x(), lane = tid & 31u;
  const uint32_t o = block_idx_x() * FW_MM_GROUPS + tid / 32;
  const bool live = o < n && in <= FW_NV_MAX_IN;
  // matmul_W's test for the vector path (xn, in shared memory, is aligned
  // as every activation buffer of the backend is).
  const bool vec = (in % 8u) == 0 && fw_aligned16(w);
  const uint32_t chunks = in / 8u;
  const W* wr[R];
#pragma unroll
  for (uint32_t r = 0; r < R; ++r) wr[r] = w + (uint64_t)(o + r * n) * in;
  const bool early = live && vec && lane + 32u * (LAP - 1) < chunks;
  fw_raw8<W> pre[R][LAP];
  if (early) {
#pragma unroll
    for (uint32_t r = 0; r < R; ++r)
#pragma unroll
      for (uint32_t j = 0; j < LAP; ++j) fw_stream_raw8(wr[r] + (uint64_t)(lane + 32u * j) * 8u, pre[r][j]);
  }
  fw_early_start();
  if (in > FW_NV_MAX_IN) return;  // the whole block
  // rmsnorm_W's cached path (in fits it): every load of the row issued
  // before any is used.
  {
    float xv[FW_NORM_CACHED], wv[FW_NORM_CACHED];
    rmsnorm_load(xv, wv, x, nw, in);
    rmsnorm_scale(xv, wv, in, eps);
#pragma unroll
    for (uint32_t k = 0; k < FW_NORM_CACHED; ++k)
      if (tid + k * FW_NORM_THREADS < in) xn[tid + k * FW_NORM_THREADS] = xv[k];
  }
  block_sync();
  if (!live) return;  // whole 32-groups: no block_sync below
  float acc[R];
#pragma unroll
  for (uint32_t r = 0; r < R; ++r) acc[r] = 0.0f;
  if (vec) {
    uint32_t k = lane;
    if (early) {
      norm_matvec_fma(acc, pre, xn, in, k);
      k += 32u * LAP;
    }
    for (; k + 32u * (LAP - 1) < chunks; k += 32u * LAP) {
      fw_raw8<W> cur[R][LAP];
#pragma unroll
      for (uint32_t r = 0; r < R; ++r)
#pragma unroll
        for (uint32_t j = 0; j < LAP; ++j) fw_stream_raw8(wr[r] + (uint64_t)(k + 32u * j) * 8u, cur[r][j]);
      norm_matvec_fma(acc, cur, xn, in, k);
    }
    if (LAP > 4) {
      for (; k + 96u < chunks; k += 128u) {
        float wv[4][8];
#pragma unroll
        for (uint32_t j = 0; j < 4; ++j) fw_stream8(wr[0] + (uint64_t)(k + 32u * j) * 8u, wv[j]);
#pragma unroll
        for (uint32_t j = 0; j < 4; ++j) matvec_fma<1>(&acc[0], wv[j], xn, in, k + 32u * j, 1);
      }
    }
    for (; k < chunks; k += 32u) {
#pragma unroll
      for (uint32_t r = 0; r < R; ++r) {
        float wv[8];
        fw_stream8(wr[r] + (uint64_t)k * 8u, wv);
        matvec_fma<1>(&acc[r], wv, xn, in, k, 1);
      }
    }
  } else {
    for (uint32_t k = lane; k < in; k += 32) {
#pragma unroll
      for (uint32_t r = 0; r < R; ++r) acc[r] += fw_to_f32(wr[r][k]) * xn[k];
    }
  }
  float v[R];
#pragma unroll
  for (uint32_t r = 0; r < R; ++r) v[r] = fw_group_sum(acc[r]);
  if (lane != 0) return;
  if (R == 1) {
    fw_mm_store(y, bias, o, o, v[0], 0);
    return;
  }
  // silu_mul_f32 of what matmul_W would have stored at o and n + o.
  float g = v[0], u = v[R - 1];
  if (bias) g += bias[o], u += bias[n + o];
  y[o] = g / (1.0f + mf_expf(-g)) * u;
}

// =====================================================================
// matmul_tc_W (W = bf16, f16): matmul_W's arguments and semantics (y [rows,
// out] (+)= x [rows, in] . w[out, in]^T (+ bias), f32 accumulation) on the
// tensor cores: warp-level mma.sync m16n8k16 with f32 accumulators, A = the
// activations, B = the weights (B[k][n] = w[n][k], the "col" operand, which
// is w's own row-major layout).
//
// Precision: each f32 activation is split into hi = RN16(x) and lo =
// RN16(x - hi) in W's 16-bit type (x - hi is exact in f32) and both go
// through the MMA against the same weights, so the products keep x to
// |x - hi - lo| <= 2^-16 |x| (bf16: 8-bit significands) or 2^-22 |x| (f16;
// plus at most 2^-25 absolute where lo is f16-subnormal). The weights are
// exact in their type. An f16 activation of magnitude >= 65520 rounds to
// inf and gives NaN (hi*w + lo*w = inf - inf): such models need matmul_f16.
//
// Block FW_TC_THREADS (256, 8 warps). Grid (block b: row tile s = b % S,
// output tile c = b / S, S = the number of row tiles):
//   rows <  64, out <  16384: ceil(rows / 32) * ceil(out / 16)   tile 32 x 16
//   rows <  64, out >= 16384: ceil(rows / 32) * ceil(out / 64)   tile 32 x 64
//   rows >= 64:               ceil(rows / 128) * ceil(out / 64)  tile 128 x 64
// (rows x outputs). Each warp computes 32 rows x 8*NT outputs (2 x NT MMA
// tiles) over 32-wide chunks of in. Below 64 rows (batched decode: each
// weight read once per row tile, the activations reread by every output
// tile) the narrow tile's 8 warps are 8 slices of in (NT = 2), so the
// small-out projections (q|k|v, o, down: 2048-3072 outputs at the 1B
// shape) still make 128 blocks or more, one or two per SM, to stream the
// weights; from 16384 outputs (gate|up, the LM head: 256 blocks or more
// anyway) the 64-wide tile's 8 warps are 2 output halves x 4 slices of in,
// which rereads the activations a quarter as often. The slices' partial
// sums are added in slice order through shared memory at the end: no
// atomics, the same bytes on every run. From 64 rows (prefill) the 8 warps
// are 4 row quarters x 2 output halves, and the block stages both operands
// in shared memory (matmul_tc_big). Below 64 rows each lane loads its own
// operands, 16 bytes of weights per output tile and 32 bytes of x per row
// (from 64 rows the same bytes come from shared memory): the
// chunk's k order is permuted (lane quad t holds k = 8t..8t+7, of which MMA
// h takes 8t+4h..8t+4h+3 as its logical k = 2t, 2t+1, 2t+8, 2t+9)
// identically for A and B, which leaves every dot product unchanged. The
// weights stream through a per-warp ring in shared memory, 6 (narrow tile)
// or 3 chunks in flight (async_copy16: cp.async on NVPTX; each lane reads
// back only its own copies, so no barrier); x (small, cached) is loaded
// as it is used, one chunk ahead into registers in the narrow tile. A
// thread keeps to 128 registers for 2 resident blocks per SM, with 48 KB
// of shared memory (ptxas 12.9, sm_90: 128 registers, no spills). The
// scalar path (in not a multiple of 8, or w or x not 16-byte aligned)
// loads element by element; edges (rows, out, in) are masked with zeros.
//
// One source for every port: on NVPTX the MMA is the instruction; on
// AMDGPU and in the host emulation tc_mma computes the same fragment
// semantics through lane_read_u32 (32 exchanges per MMA): correct, but far
// slower than matmul_W there, so the AMD backend keeps matmul_W.
// =====================================================================
#define FW_TC_THREADS 256
#define FW_TC_WARPS (FW_TC_THREADS / 32)
#define FW_TC_BIG_ROWS 64  // from this many rows on, the 128-row tile
#define FW_TC_MT 2         // 16-row MMA tiles per warp
#define FW_TC_NT 4         // 8-output MMA tiles per warp (the 64-wide tiles)
#define FW_TC_NARROW_NT 2  // and in the narrow tile (16 outputs)
#define FW_TC_WIDE_OUT 16384  // below 64 rows, from this many outputs on, the 64-wide tile
// Each warp's ring: 3 chunks of 4 tiles or 6 of 2, x 32 lanes x 16 bytes
// (6 KB; the in-split reduction reuses its first 4 or 2 KB).
#define FW_TC_WARP_SMEM (3 * FW_TC_NT * 32)

// TC_AMD_CALL: a function AMDGPU calls instead of inlining (the emulated
// MMA inlined at each of the kernel's 64 MMAs made the code objects six
// times larger); elsewhere inlined as usual.
#if defined(__AMDGCN__)
#define TC_AMD_CALL static __device__ __attribute__((noinline))
#else
#define TC_AMD_CALL DEVICE
#endif

// tc_pack_W(a, b): a and b rounded to nearest even in W's type, a in the
// low half. tc_widen_W(h): one 16-bit value back to f32, exactly.
#if defined(__NVPTX__)
DEVICE uint32_t tc_pack(fw_bf16, float a, float b) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
  return r;
}
DEVICE uint32_t tc_pack(fw_f16, float a, float b) {
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
  return r;
}
#else
DEVICE uint32_t tc_rne_bf16(float f) {
  const uint32_t x = fw_f2u(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (x >> 16) | 0x40u;  // NaN stays NaN
  return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}
DEVICE uint32_t tc_rne_f16(float f) {
  const uint32_t x = fw_f2u(f);
  const uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | 0x7e00u;
  if (ax >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds to inf
  if (ax < 0x38800000u) {                         // below 2^-14: subnormal
    // |f| + 0.5 has an ulp of 2^-24, the f16 subnormal step: the float
    // add rounds |f| / 2^-24 to an integer, nearest even.
    return sign | (fw_f2u(fw_u2f(ax) + 0.5f) - 0x3f000000u);
  }
  return sign | ((ax + 0xfffu + ((ax >> 13) & 1u) - (112u << 23)) >> 13);
}
DEVICE uint32_t tc_pack(fw_bf16, float a, float b) { return tc_rne_bf16(a) | (tc_rne_bf16(b) << 16); }
DEVICE uint32_t tc_pack(fw_f16, float a, float b) { return tc_rne_f16(a) | (tc_rne_f16(b) << 16); }
#endif
DEVICE float tc_widen(fw_bf16, uint32_t h) { return fw_bf16_f32(h & 0xffffu); }
#if defined(__NVPTX__)
DEVICE float tc_widen(fw_f16, uint32_t h) {
  float r;
  asm("{.reg .b16 l, u; mov.b32 {l, u}, %1; cvt.f32.f16 %0, l;}" : "=f"(r) : "r"(h));
  return r;
}
#else
DEVICE float tc_widen(fw_f16, uint32_t h) { return fw_f16_f32(h & 0xffffu); }
#endif

// ---- the KV cache's element ----
// float, or fw_f16 for the kernels named *_kv16 (the half-precision
// cache): a value is stored rounded to nearest even and read back exactly,
// so every kernel that reads a cached key sees the same value.
DEVICE void fw_kv_put(float* p, float v) { *p = v; }
DEVICE void fw_kv_put(fw_f16* p, float v) { p->bits = (uint16_t)(tc_pack(fw_f16{}, v, 0.0f) & 0xffffu); }
DEVICE float fw_kv_get(const float* p) { return *p; }
DEVICE float fw_kv_get(const fw_f16* p) { return tc_widen(fw_f16{}, p->bits); }

// tc_split: x0, x1 as hi = (RN16(x0), RN16(x1)) and lo = the same of the
// remainders (zero where hi is x exactly, infinities included).
template <typename W>
DEVICE void tc_split(float x0, float x1, uint32_t* hi, uint32_t* lo) {
  const uint32_t h = tc_pack(W{}, x0, x1);
  const float h0 = tc_widen(W{}, h), h1 = tc_widen(W{}, h >> 16);
  const float d0 = h0 == x0 ? 0.0f : x0 - h0, d1 = h1 == x1 ? 0.0f : x1 - h1;
  *hi = h;
  *lo = tc_pack(W{}, d0, d1);
}

// tc_mma: c += A . B for one m16n8k16 tile held by the 32 lanes of this
// warp (group-uniform: all 32 call it together). With g = lane / 4,
// t = lane % 4, each u32 two 16-bit values, the lower column (k) in the
// low half: a[0] = A[g][2t..2t+1], a[1] = A[g+8][2t..2t+1], a[2] =
// A[g][2t+8..2t+9], a[3] = A[g+8][2t+8..2t+9]; b[0] = B[2t..2t+1][g], b[1] =
// B[2t+8..2t+9][g]; c[0..1] = C[g][2t..2t+1], c[2..3] = C[g+8][2t..2t+1]
// (the PTX ISA's fragment layout for .m16n8k16 with .bf16/.f16).
#if defined(__NVPTX__)
DEVICE void tc_mma(fw_bf16, float* c, const uint32_t* a, const uint32_t* b) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
DEVICE void tc_mma(fw_f16, float* c, const uint32_t* a, const uint32_t* b) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#else
// The emulation: this lane gathers rows g and g+8 of A (from lanes 4g..4g+3)
// and columns 2t and 2t+1 of B (from lanes 8t..8t+3 and 8t+4..8t+7), then
// sums over k = 0..15 in order in f32 (each product of two 16-bit values is
// exact in f32).
template <typename W>
TC_AMD_CALL void tc_mma(W, float* c, const uint32_t* a, const uint32_t* b) {
  const uint32_t lane = thread_idx_x() & 31u, g = lane >> 2, t = lane & 3u;
  float A[2][16], B[2][16];
  for (uint32_t q = 0; q < 4; ++q) {
    const uint32_t sa = 4u * g + q;
    const uint32_t r0 = lane_read_u32(a[0], sa), r1 = lane_read_u32(a[1], sa);
    const uint32_t r2 = lane_read_u32(a[2], sa), r3 = lane_read_u32(a[3], sa);
    A[0][2 * q] = tc_widen(W{}, r0), A[0][2 * q + 1] = tc_widen(W{}, r0 >> 16);
    A[1][2 * q] = tc_widen(W{}, r1), A[1][2 * q + 1] = tc_widen(W{}, r1 >> 16);
    A[0][2 * q + 8] = tc_widen(W{}, r2), A[0][2 * q + 9] = tc_widen(W{}, r2 >> 16);
    A[1][2 * q + 8] = tc_widen(W{}, r3), A[1][2 * q + 9] = tc_widen(W{}, r3 >> 16);
    for (uint32_t j = 0; j < 2; ++j) {
      const uint32_t sb = 4u * (2u * t + j) + q;
      const uint32_t s0 = lane_read_u32(b[0], sb), s1 = lane_read_u32(b[1], sb);
      B[j][2 * q] = tc_widen(W{}, s0), B[j][2 * q + 1] = tc_widen(W{}, s0 >> 16);
      B[j][2 * q + 8] = tc_widen(W{}, s1), B[j][2 * q + 9] = tc_widen(W{}, s1 >> 16);
    }
  }
  for (uint32_t i = 0; i < 4; ++i) {
    float s = c[i];
    for (uint32_t k = 0; k < 16; ++k) s += A[i >> 1][k] * B[i & 1u][k];
    c[i] = s;
  }
}
#endif

// tc_load_w: starts loading the weights of this warp's NT output tiles for
// the 32-wide chunk at k0 into ring slot dst (lane (g, t): row obase + 8j +
// g, k0+8t .. k0+8t+7, at dst[j*32 + lane]); each lane later reads back
// only what it loaded itself. The scalar path stores at once.
template <typename W, uint32_t NT>
TC_AMD_CALL void tc_load_w(fw_u32x4* dst, const W* w, uint32_t in, uint32_t out, uint32_t obase, uint32_t k0,
                           bool vec) {
  const uint32_t lane = thread_idx_x() & 31u, g = lane >> 2, t = lane & 3u;
  const uint32_t k = k0 + 8u * t;
#pragma unroll
  for (uint32_t j = 0; j < NT; ++j) {
    const uint32_t o = obase + 8u * j + g;
    const W* p = w + (uint64_t)o * in + k;
    if (vec) {
      const bool valid = o < out && k < in;
      stream_copy16(&dst[j * 32u + lane], valid ? (const void*)p : (const void*)w, valid);
    } else {
      fw_u32x4 v;
#pragma unroll
      for (uint32_t e = 0; e < 4; ++e) {
        const uint32_t lo = (o < out && k + 2 * e < in) ? p[2 * e].bits : 0u;
        const uint32_t hi = (o < out && k + 2 * e + 1 < in) ? p[2 * e + 1].bits : 0u;
        v.v[e] = lo | (hi << 16);
      }
      dst[j * 32u + lane] = v;
    }
  }
}

// tc_load_x: x of this warp's live row tiles for the chunk at k0: rows
// rbase + 16i + g (h = 0) and + 8 (h = 1), k0+8t .. k0+8t+7, into xv[i][h]
// (zeros past rows and in). x is small and cached (the weights are the
// stream); the narrow tile's loop loads the next chunk's x before
// computing this one's, so its latency overlaps the MMAs.
TC_AMD_CALL void tc_load_x(fw_f32x4 (*xv)[2][2], const float* x, uint32_t rows, uint32_t in, uint32_t rbase,
                           uint32_t k0, uint32_t live_mt, bool vec) {
  const uint32_t lane = thread_idx_x() & 31u, g = lane >> 2, t = lane & 3u;
  const uint32_t k = k0 + 8u * t;
#pragma unroll
  for (uint32_t i = 0; i < FW_TC_MT; ++i) {
    if (i >= live_mt) break;  // warp-uniform
#pragma unroll
    for (uint32_t h = 0; h < 2; ++h) {
      const uint32_t r = rbase + 16u * i + g + 8u * h;
      const float* p = x + (uint64_t)r * in + k;
      if (vec && r < rows && k < in) {
        xv[i][h][0] = ((const fw_f32x4*)p)[0];
        xv[i][h][1] = ((const fw_f32x4*)p)[1];
      } else {
#pragma unroll
        for (uint32_t e = 0; e < 8; ++e) xv[i][h][e / 4].v[e % 4] = (r < rows && k + e < in) ? p[e] : 0.0f;
      }
    }
  }
}

// tc_compute: one chunk for this warp's live row tiles: xv (tc_load_x)
// split into hi/lo, against the weights wv.
// tc_store: writes this lane's accumulators (the MMA's C fragments: c[0],
// c[1] at row g, columns 2t and 2t+1; c[2], c[3] at row g+8) of its
// FW_TC_MT x NT tiles at rows rbase.., outputs obase.., inside rows x out.
template <uint32_t NT>
DEVICE void tc_store(float* y, const float* bias, float (*acc)[NT][4], uint32_t lane, uint32_t rbase, uint32_t obase,
                     uint32_t rows, uint32_t out, uint32_t accumulate) {
  const uint32_t g = lane >> 2, t = lane & 3u;
#pragma unroll
  for (uint32_t i = 0; i < FW_TC_MT; ++i)
#pragma unroll
    for (uint32_t j = 0; j < NT; ++j)
#pragma unroll
      for (uint32_t e = 0; e < 4; ++e) {
        const uint32_t r = rbase + 16u * i + g + 8u * (e >> 1), o = obase + 8u * j + 2u * t + (e & 1u);
        if (r < rows && o < out) fw_mm_store(y, bias, (uint64_t)r * out + o, o, acc[i][j][e], accumulate);
      }
}

// tc_zero: clears a warp's FW_TC_MT x NT accumulator tiles.
template <uint32_t NT>
DEVICE void tc_zero(float (*acc)[NT][4]) {
#pragma unroll
  for (uint32_t i = 0; i < FW_TC_MT; ++i)
#pragma unroll
    for (uint32_t j = 0; j < NT; ++j)
#pragma unroll
      for (uint32_t e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;
}

template <typename W, uint32_t NT>
TC_AMD_CALL void tc_compute(float (*acc)[NT][4], const fw_u32x4* wv, const fw_f32x4 (*xv)[2][2], uint32_t live_mt) {
#pragma unroll
  for (uint32_t i = 0; i < FW_TC_MT; ++i) {
    if (i >= live_mt) break;  // warp-uniform
#pragma unroll
    for (uint32_t h = 0; h < 2; ++h) {
      // MMA h of the chunk: this lane's k = 8t+4h .. 8t+4h+3 (see above).
      const fw_f32x4 xa = xv[i][0][h], xb = xv[i][1][h];
      uint32_t hi[4], lo[4];
      tc_split<W>(xa.v[0], xa.v[1], &hi[0], &lo[0]);
      tc_split<W>(xb.v[0], xb.v[1], &hi[1], &lo[1]);
      tc_split<W>(xa.v[2], xa.v[3], &hi[2], &lo[2]);
      tc_split<W>(xb.v[2], xb.v[3], &hi[3], &lo[3]);
#pragma unroll
      for (uint32_t j = 0; j < NT; ++j) {
        const uint32_t bf[2] = {wv[j].v[2 * h], wv[j].v[2 * h + 1]};
        tc_mma(W{}, acc[i][j], hi, bf);
        tc_mma(W{}, acc[i][j], lo, bf);
      }
    }
  }
}

// tc_sum_slices: the WK slices of in that warps warp .. warp+WK-1 (this
// one's slice wk = warp % WK) computed for the same rows and outputs,
// added in slice order into slice 0's acc: slices 1..WK-1 hand their sums
// over through the start of their own ring, which no other warp touches
// ([idx][lane] keeps the lanes on distinct banks). Every warp of the block
// calls it (it syncs when WK > 1); true for slice 0, which then holds the
// sum.
template <uint32_t NT, uint32_t WK>
DEVICE bool tc_sum_slices(float (*acc)[NT][4], fw_u32x4* ring, uint32_t wk, uint32_t lane) {
  if (WK == 1) return true;
  float* red = (float*)ring;
  if (wk != 0) {
#pragma unroll
    for (uint32_t i = 0; i < FW_TC_MT; ++i)
#pragma unroll
      for (uint32_t j = 0; j < NT; ++j)
#pragma unroll
        for (uint32_t e = 0; e < 4; ++e) red[((i * NT + j) * 4 + e) * 32u + lane] = acc[i][j][e];
  }
  block_sync();
  if (wk != 0) return false;
  for (uint32_t q = 1; q < WK; ++q) {
    const float* other = (const float*)(ring + q * FW_TC_WARP_SMEM);
#pragma unroll
    for (uint32_t i = 0; i < FW_TC_MT; ++i)
#pragma unroll
      for (uint32_t j = 0; j < NT; ++j)
#pragma unroll
        for (uint32_t e = 0; e < 4; ++e) acc[i][j][e] += other[((i * NT + j) * 4 + e) * 32u + lane];
  }
  return true;
}

// matmul_tc_tile: the block tile of WM x WN x WK warps (rows WM*32, outputs
// WN*NT*8, in split WK ways and reduced in shared memory), each warp's ring
// STAGES chunks of weights deep.
template <typename W, uint32_t WM, uint32_t WN, uint32_t WK, uint32_t NT, uint32_t STAGES>
DEVICE void matmul_tc_tile(fw_u32x4* smem, float* y, const float* x, const W* w, const float* bias, uint32_t rows,
                           uint32_t in, uint32_t out, uint32_t accumulate) {
  static_assert(WM * WN * WK == FW_TC_WARPS, "tile shape");
  static_assert(STAGES * NT * 32 <= FW_TC_WARP_SMEM && FW_TC_MT * NT * 4 * 32 <= FW_TC_WARP_SMEM * 4, "ring size");
  const uint32_t tm = WM * FW_TC_MT * 16, tn = WN * NT * 8;
  const uint32_t tiles = (rows + tm - 1) / tm;
  const uint32_t b = block_idx_x();
  const uint32_t s = b % tiles, c = b / tiles;
  if (c >= (out + tn - 1) / tn) {  // whole block
    fw_early_start();
    return;
  }
  const uint32_t warp = thread_idx_x() / 32u, lane = thread_idx_x() & 31u;
  const uint32_t wk = warp % WK, wn = (warp / WK) % WN, wm = warp / (WK * WN);
  const uint32_t rbase = s * tm + wm * FW_TC_MT * 16, obase = c * tn + wn * NT * 8;
  uint32_t live_mt = 0;
  for (uint32_t i = 0; i < FW_TC_MT; ++i) live_mt += rbase + 16u * i < rows;
  const bool vec = (in % 8u) == 0 && fw_aligned16(w) && fw_aligned16(x);
  float acc[FW_TC_MT][NT][4];
  tc_zero<NT>(acc);
  fw_u32x4* ring = smem + warp * FW_TC_WARP_SMEM;
  if (live_mt > 0 && obase < out) {  // warp-uniform; the block_sync below is outside
    const uint32_t chunks = (in + 31u) / 32u;
    // The weights of STAGES chunks are in flight through this warp's ring
    // in shared memory: one group of copies per chunk (an empty group past
    // the end keeps the count), and the wait for chunk kc leaves the
    // STAGES - 1 after it in flight while it computes.
#pragma unroll
    for (uint32_t d = 0; d < STAGES; ++d) {
      const uint32_t kc = wk + d * WK;
      if (kc < chunks) tc_load_w<W, NT>(ring + d * NT * 32u, w, in, out, obase, 32u * kc, vec);
      async_commit();
    }
    // x one chunk ahead in registers where they allow it (the narrow
    // tile's NT = 2; with NT = 4, 32 more registers would spill).
    constexpr bool ahead = NT <= FW_TC_NARROW_NT;
    fw_f32x4 xv[FW_TC_MT][2][2];
    if (ahead) tc_load_x(xv, x, rows, in, rbase, 32u * wk, live_mt, vec);
    uint32_t slot = 0;
    for (uint32_t kc = wk; kc < chunks; kc += WK) {
      fw_f32x4 xn[FW_TC_MT][2][2];
      if (ahead)
        tc_load_x(xn, x, rows, in, rbase, 32u * (kc + WK), live_mt, vec);  // zeros past in
      else
        tc_load_x(xv, x, rows, in, rbase, 32u * kc, live_mt, vec);
      async_wait<STAGES - 1>();
      fw_u32x4* sl = ring + slot * NT * 32u;
      fw_u32x4 cur[NT];
#pragma unroll
      for (uint32_t j = 0; j < NT; ++j) cur[j] = sl[j * 32u + lane];
      tc_compute<W, NT>(acc, cur, xv, live_mt);
      // The slot is free once cur was used (the MMAs above read it).
      const uint32_t next = kc + STAGES * WK;
      if (next < chunks) tc_load_w<W, NT>(sl, w, in, out, obase, 32u * next, vec);
      async_commit();
      slot = slot + 1 == STAGES ? 0 : slot + 1;
      if (ahead) {
#pragma unroll
        for (uint32_t i = 0; i < FW_TC_MT; ++i)
#pragma unroll
          for (uint32_t h = 0; h < 2; ++h) xv[i][h][0] = xn[i][h][0], xv[i][h][1] = xn[i][h][1];
      }
    }
    async_wait<0>();
  } else {
    fw_early_start();
  }
  if (!tc_sum_slices<NT, WK>(acc, ring, wk, lane)) return;
  tc_store<NT>(y, bias, acc, lane, rbase, obase, rows, out, accumulate);
}

// matmul_tc_big: the 128 x 64 tile from 64 rows, both operands staged in
// shared memory by the whole block (each warp's fragments, and so every
// sum, exactly those of matmul_tc_tile<W, 4, 2, 1, ...>): per 32-wide
// chunk of in, the 128 rows of x (f32, 16 KB) and the 64 weight rows (4
// KB) go in by async_copy16, 5 copies a thread, in the fragments' lane
// order (x: [row group of 8][k half q][lane] 16 bytes, w: [output tile of
// 8][lane] 16 bytes, so the warps' 16-byte reads are conflict-free), double
// buffered: chunk kc+1 is in flight while chunk kc is computed, one
// barrier per chunk. Every warp reads its weights once per block instead
// of once per row quarter and its x once per output half.
#define FW_TC_BIG_XS (16 * 2 * 32)                    // x stage: 16 row groups x 2 halves x 32 lanes (16 KB)
#define FW_TC_BIG_WS (8 * 32)                         // w stage: 8 output tiles x 32 lanes (4 KB)
#define FW_TC_BIG_STAGE (FW_TC_BIG_XS + FW_TC_BIG_WS)  // 20 KB; two stages in the 48 KB

// tc_big_load: chunk k0's stage (x rows s0 .. s0+127, outputs o0 .. o0+63):
// thread tid copies x elements 4 at a time (c = tid + 256 u: row c / 8,
// k0 + 4 (c % 8)) and the weights' 16 bytes c = tid (output tile c / 32,
// lane c % 32).
template <typename W>
TC_AMD_CALL void tc_big_load(fw_u32x4* st, const float* x, const W* w, uint32_t rows, uint32_t in, uint32_t out,
                             uint32_t s0, uint32_t o0, uint32_t k0, bool vec) {
  const uint32_t tid = thread_idx_x();
#pragma unroll
  for (uint32_t u = 0; u < 4; ++u) {
    const uint32_t c = tid + FW_TC_THREADS * u;
    const uint32_t rr = c / 8u, kq = c % 8u;  // tile row, its 4-float piece
    // Fragment place: row rr = 8 * group + g, k = 8t + 4q.
    const uint32_t grp = rr / 8u, lane = (rr % 8u) * 4u + kq / 2u, q = kq % 2u;
    fw_u32x4* d = st + (grp * 2u + q) * 32u + lane;
    const uint32_t r = s0 + rr, k = k0 + 4u * kq;
    const float* p = x + (uint64_t)r * in + k;
    if (vec) {
      const bool valid = r < rows && k < in;
      async_copy16(d, valid ? (const void*)p : (const void*)x, valid);
    } else {
      fw_u32x4 v;
#pragma unroll
      for (uint32_t e = 0; e < 4; ++e) v.v[e] = (r < rows && k + e < in) ? fw_f2u(p[e]) : 0u;
      *d = v;
    }
  }
  {
    const uint32_t j = tid / 32u, lane = tid % 32u, g = lane / 4u, t = lane % 4u;
    const uint32_t o = o0 + 8u * j + g, k = k0 + 8u * t;
    const W* p = w + (uint64_t)o * in + k;
    fw_u32x4* d = st + FW_TC_BIG_XS + tid;
    if (vec) {
      const bool valid = o < out && k < in;
      async_copy16(d, valid ? (const void*)p : (const void*)w, valid);
    } else {
      fw_u32x4 v;
#pragma unroll
      for (uint32_t e = 0; e < 4; ++e) {
        const uint32_t lo = (o < out && k + 2 * e < in) ? p[2 * e].bits : 0u;
        const uint32_t hi = (o < out && k + 2 * e + 1 < in) ? p[2 * e + 1].bits : 0u;
        v.v[e] = lo | (hi << 16);
      }
      *d = v;
    }
  }
}

template <typename W>
DEVICE void matmul_tc_big(fw_u32x4* smem, float* y, const float* x, const W* w, const float* bias, uint32_t rows,
                          uint32_t in, uint32_t out, uint32_t accumulate) {
  constexpr uint32_t NT = FW_TC_NT;
  static_assert(2 * FW_TC_BIG_STAGE <= FW_TC_WARPS * FW_TC_WARP_SMEM, "two stages in the shared memory");
  const uint32_t tiles = (rows + 127u) / 128u;
  const uint32_t b = block_idx_x();
  const uint32_t s = b % tiles, c = b / tiles;
  if (c >= (out + 63u) / 64u) return;  // whole block
  const uint32_t warp = thread_idx_x() / 32u, lane = thread_idx_x() & 31u;
  const uint32_t wn = warp % 2u, wm = warp / 2u;  // as matmul_tc_tile<W, 4, 2, 1>
  const uint32_t s0 = s * 128u, o0 = c * 64u;
  const uint32_t rbase = s0 + wm * FW_TC_MT * 16, obase = o0 + wn * NT * 8;
  uint32_t live_mt = 0;
  for (uint32_t i = 0; i < FW_TC_MT; ++i) live_mt += rbase + 16u * i < rows;
  const bool live = live_mt > 0 && obase < out;  // warp-uniform; every warp still loads and syncs
  const bool vec = (in % 8u) == 0 && fw_aligned16(w) && fw_aligned16(x);
  float acc[FW_TC_MT][NT][4];
  tc_zero<NT>(acc);
  const uint32_t chunks = (in + 31u) / 32u;
  tc_big_load<W>(smem, x, w, rows, in, out, s0, o0, 0u, vec);
  async_commit();
  for (uint32_t kc = 0; kc < chunks; ++kc) {
    // Chunk kc has landed for every thread, and every warp is done with
    // chunk kc - 1, whose stage the next load overwrites.
    async_wait<0>();
    block_sync();
    if (kc + 1 < chunks)
      tc_big_load<W>(smem + ((kc + 1) % 2u) * FW_TC_BIG_STAGE, x, w, rows, in, out, s0, o0, 32u * (kc + 1), vec);
    async_commit();
    if (live) {
      const fw_u32x4* st = smem + (kc % 2u) * FW_TC_BIG_STAGE;
      fw_f32x4 xv[FW_TC_MT][2][2];
#pragma unroll
      for (uint32_t i = 0; i < FW_TC_MT; ++i)
#pragma unroll
        for (uint32_t h = 0; h < 2; ++h)
#pragma unroll
          for (uint32_t q = 0; q < 2; ++q) {
            const fw_u32x4 v = st[(((wm * FW_TC_MT + i) * 2u + h) * 2u + q) * 32u + lane];
#pragma unroll
            for (uint32_t e = 0; e < 4; ++e) xv[i][h][q].v[e] = fw_u2f(v.v[e]);
          }
      fw_u32x4 cur[NT];
#pragma unroll
      for (uint32_t j = 0; j < NT; ++j) cur[j] = st[FW_TC_BIG_XS + (wn * NT + j) * 32u + lane];
      tc_compute<W, NT>(acc, cur, xv, live_mt);
    }
  }
  async_wait<0>();
  if (!live) return;
  tc_store<NT>(y, bias, acc, lane, rbase, obase, rows, out, accumulate);
}

template <typename W>
DEVICE void matmul_tc(float* y, const float* x, const W* w, const float* bias, uint32_t rows, uint32_t in,
                      uint32_t out, uint32_t accumulate) {
  fw_early_start();
  // Every tile shares the block's static shared memory (48 KB, the most a
  // kernel may declare statically): each warp's weight ring below 64 rows,
  // the block's two stages of x and weights from 64.
  __shared__ fw_u32x4 smem[FW_TC_WARPS * FW_TC_WARP_SMEM];
  if (rows >= FW_TC_BIG_ROWS)
    matmul_tc_big(smem, y, x, w, bias, rows, in, out, accumulate);
  else if (out >= FW_TC_WIDE_OUT)
    matmul_tc_tile<W, 1, 2, 4, FW_TC_NT, 3>(smem, y, x, w, bias, rows, in, out, accumulate);
  else
    matmul_tc_tile<W, 1, 1, 8, FW_TC_NARROW_NT, 6>(smem, y, x, w, bias, rows, in, out, accumulate);
}

// =====================================================================
// tc_split_x_W and matmul_tcx_W (W = bf16, f16): matmul_tc_W in two
// launches, for batched decode and short prefills (the backend runs them
// from 16 rows to 511; below 64 rows their sums are matmul_tc_W's, whose
// tiles they share). matmul_tc_W's narrow and wide tiles
// split x into hi/lo in every warp that reads it: per 32-wide chunk of in,
// each warp loaded 32 rows of f32 x and ran 16 splits (about 160
// instructions) for its 16 outputs, so the products were bound by issue,
// not by the weights (about 390 instructions a KB of weights on the
// H200). tc_split_x_W splits x once into xs, the MMA's A
// fragments; matmul_tcx_W loads each fragment as one 16-byte read and
// goes straight to the MMAs.
//
// xs layout (fw_u32x4 units, 16 bytes): for 16-row tile i < ceil(rows/16),
// 32-wide chunk c < ceil(in/32), MMA half h, part p (0 hi, 1 lo) and lane
// (g, t): xs[(((i*chunks + c)*2 + h)*2 + p)*32 + lane] = {x[r][k..k+1],
// x[r+8][k..k+1], x[r][k+2..k+3], x[r+8][k+2..k+3]} as RN16 pairs (hi) or
// RN16 pairs of the remainders (lo, tc_split), r = 16i + g, k = 32c + 8t +
// 4h, zeros past rows and in: the a[0..3] of tc_mma for matmul_tc_W's k
// order (lane quad t holds k = 8t..8t+7 of the chunk), so every sum is one
// matmul_tc_W's fragments make. ceil(rows/16) * ceil(in/32) * 2 KB.
//
// tc_split_x_W(xs, x, rows, in): block FW_TC_THREADS, grid
// ceil(ceil(rows/16) * ceil(in/32) * 64 / 256); thread j fills the hi and
// lo fragments of (i, c, h, lane) = j's digits (lane fastest, then h, c).
//
// matmul_tcx_W(y, xs, w, bias, rows, in, out, accumulate): matmul_tc_W's
// semantics with x as tc_split_x_W left it in xs, for any rows. Block
// FW_TC_THREADS; grid ceil(rows/32) *
// ceil(out/TN) (block b: row tile b % S, output tile b / S, S =
// ceil(rows/32)), the output tile by out:
//   out <= 2048:          TN = 8,  8 slices of in, weight ring 8 deep
//   2048 < out < 16384:   TN = 16, 8 slices of in, 6 deep
//   out >= 16384:         TN = 64, 2 output halves x 4 slices of in, 3 deep
// Each warp computes 32 rows x 8*NT outputs over its slice of in (chunks
// q, q + slices, ...), x's fragments one chunk ahead in registers, the
// weights through matmul_tc_W's per-warp ring (tc_load_w); the slices are
// added in slice order (matmul_tc_tile). Each warp issues its ring's
// first copies of weights before it waits for the kernels ahead, so with
// tc_split_x_W's early trigger they overlap the split
// (fw_early_start_product_next). The tiles were picked on the
// H200 at 16 and 32 rows over the 1B shape's five products.
// =====================================================================
#define FW_TCX_MID_OUT 2048  // above this many outputs (below FW_TC_WIDE_OUT), the 16-wide tile

template <typename W>
DEVICE void tc_split_x(fw_u32x4* xs, const float* x, uint32_t rows, uint32_t in) {
  fw_early_start_product_next();
  const uint32_t chunks = (in + 31u) / 32u, tiles = (rows + 15u) / 16u;
  const uint32_t j = block_idx_x() * FW_TC_THREADS + thread_idx_x();
  if (j >= tiles * chunks * 64u) return;
  const uint32_t lane = j % 32u, h = (j / 32u) % 2u, c = (j / 64u) % chunks, i = j / (64u * chunks);
  const uint32_t g = lane >> 2, t = lane & 3u, k = 32u * c + 8u * t + 4u * h;
  const bool vec = (in % 4u) == 0 && fw_aligned16(x);
  float v[2][4];
#pragma unroll
  for (uint32_t q = 0; q < 2; ++q) {
    const uint32_t r = 16u * i + g + 8u * q;
    const float* p = x + (uint64_t)r * in + k;
    if (vec && r < rows && k < in) {
      const fw_f32x4 f = *(const fw_f32x4*)p;
#pragma unroll
      for (uint32_t e = 0; e < 4; ++e) v[q][e] = f.v[e];
    } else {
#pragma unroll
      for (uint32_t e = 0; e < 4; ++e) v[q][e] = (r < rows && k + e < in) ? p[e] : 0.0f;
    }
  }
  fw_u32x4 hi, lo;
  tc_split<W>(v[0][0], v[0][1], &hi.v[0], &lo.v[0]);
  tc_split<W>(v[1][0], v[1][1], &hi.v[1], &lo.v[1]);
  tc_split<W>(v[0][2], v[0][3], &hi.v[2], &lo.v[2]);
  tc_split<W>(v[1][2], v[1][3], &hi.v[3], &lo.v[3]);
  fw_u32x4* d = xs + ((uint64_t)(i * chunks + c) * 2u + h) * 64u + lane;
  d[0] = hi;
  d[32] = lo;
}

// tcx_load_x: the hi and lo fragments of this warp's live 16-row tiles for
// chunk kc into xv[i][h][p] (zeros for dead tiles and past the chunks).
TC_AMD_CALL void tcx_load_x(fw_u32x4 (*xv)[2][2], const fw_u32x4* xt, uint32_t chunks, uint32_t kc,
                            uint32_t live_mt) {
#pragma unroll
  for (uint32_t i = 0; i < FW_TC_MT; ++i) {
    const bool ok = i < live_mt && kc < chunks;
#pragma unroll
    for (uint32_t h = 0; h < 2; ++h)
#pragma unroll
      for (uint32_t p = 0; p < 2; ++p)
        xv[i][h][p] = ok ? xt[((uint64_t)(i * chunks + kc) * 2u + h) * 64u + p * 32u] : fw_u32x4{{0u, 0u, 0u, 0u}};
  }
}

// tcx_compute: one chunk's MMAs, in tc_compute's order (row tile, half,
// output tile; hi then lo).
template <typename W, uint32_t NT>
TC_AMD_CALL void tcx_compute(float (*acc)[NT][4], const fw_u32x4* wv, const fw_u32x4 (*xv)[2][2], uint32_t live_mt) {
#pragma unroll
  for (uint32_t i = 0; i < FW_TC_MT; ++i) {
    if (i >= live_mt) break;  // warp-uniform
#pragma unroll
    for (uint32_t h = 0; h < 2; ++h)
#pragma unroll
      for (uint32_t j = 0; j < NT; ++j) {
        const uint32_t bf[2] = {wv[j].v[2 * h], wv[j].v[2 * h + 1]};
        tc_mma(W{}, acc[i][j], xv[i][h][0].v, bf);
        tc_mma(W{}, acc[i][j], xv[i][h][1].v, bf);
      }
  }
}

template <typename W, uint32_t WK, uint32_t NT, uint32_t STAGES>
DEVICE void matmul_tcx_tile(fw_u32x4* smem, float* y, const fw_u32x4* xs, const W* w, const float* bias,
                            uint32_t rows, uint32_t in, uint32_t out, uint32_t accumulate) {
  constexpr uint32_t WN = FW_TC_WARPS / WK;
  static_assert(WN * WK == FW_TC_WARPS, "tile shape");
  static_assert(STAGES * NT * 32 <= FW_TC_WARP_SMEM && FW_TC_MT * NT * 4 * 32 <= FW_TC_WARP_SMEM * 4, "ring size");
  const uint32_t tn = WN * NT * 8;
  const uint32_t tiles = (rows + 31u) / 32u;
  const uint32_t b = block_idx_x();
  const uint32_t s = b % tiles, c = b / tiles;
  if (c >= (out + tn - 1) / tn) return;  // whole block
  const uint32_t warp = thread_idx_x() / 32u, lane = thread_idx_x() & 31u;
  const uint32_t wk = warp % WK, wn = warp / WK;
  const uint32_t rbase = s * 32u, obase = c * tn + wn * NT * 8;
  uint32_t live_mt = 0;
  for (uint32_t i = 0; i < FW_TC_MT; ++i) live_mt += rbase + 16u * i < rows;
  const bool vec = (in % 8u) == 0 && fw_aligned16(w);
  const uint32_t chunks = (in + 31u) / 32u;
  const fw_u32x4* xt = xs + (uint64_t)(rbase / 16u) * chunks * 128u + lane;
  float acc[FW_TC_MT][NT][4];
  tc_zero<NT>(acc);
  fw_u32x4* ring = smem + warp * FW_TC_WARP_SMEM;
  if (live_mt > 0 && obase < out) {  // warp-uniform; the block_sync below is outside
#pragma unroll
    for (uint32_t d = 0; d < STAGES; ++d) {
      const uint32_t kc = wk + d * WK;
      if (kc < chunks) tc_load_w<W, NT>(ring + d * NT * 32u, w, in, out, obase, 32u * kc, vec);
      async_commit();
    }
    fw_early_start();  // the weights above need nothing from the kernels ahead; x does
    fw_u32x4 xv[FW_TC_MT][2][2];
    tcx_load_x(xv, xt, chunks, wk, live_mt);
    uint32_t slot = 0;
    for (uint32_t kc = wk; kc < chunks; kc += WK) {
      fw_u32x4 xn[FW_TC_MT][2][2];
      tcx_load_x(xn, xt, chunks, kc + WK, live_mt);  // zeros past the chunks
      async_wait<STAGES - 1>();
      fw_u32x4* sl = ring + slot * NT * 32u;
      fw_u32x4 cur[NT];
#pragma unroll
      for (uint32_t j = 0; j < NT; ++j) cur[j] = sl[j * 32u + lane];
      tcx_compute<W, NT>(acc, cur, xv, live_mt);
      const uint32_t next = kc + STAGES * WK;
      if (next < chunks) tc_load_w<W, NT>(sl, w, in, out, obase, 32u * next, vec);
      async_commit();
      slot = slot + 1 == STAGES ? 0 : slot + 1;
#pragma unroll
      for (uint32_t i = 0; i < FW_TC_MT; ++i)
#pragma unroll
        for (uint32_t h = 0; h < 2; ++h) xv[i][h][0] = xn[i][h][0], xv[i][h][1] = xn[i][h][1];
    }
    async_wait<0>();
  }
  if (!tc_sum_slices<NT, WK>(acc, ring, wk, lane)) return;
  tc_store<NT>(y, bias, acc, lane, rbase, obase, rows, out, accumulate);
}

template <typename W>
DEVICE void matmul_tcx(float* y, const fw_u32x4* xs, const W* w, const float* bias, uint32_t rows, uint32_t in,
                       uint32_t out, uint32_t accumulate) {
  // matmul_tcx_tile waits (fw_early_start) once its first weights are in flight.
  __shared__ fw_u32x4 smem[FW_TC_WARPS * FW_TC_WARP_SMEM];
  if (out >= FW_TC_WIDE_OUT)
    matmul_tcx_tile<W, 4, 4, 3>(smem, y, xs, w, bias, rows, in, out, accumulate);
  else if (out > FW_TCX_MID_OUT)
    matmul_tcx_tile<W, 8, 2, 6>(smem, y, xs, w, bias, rows, in, out, accumulate);
  else
    matmul_tcx_tile<W, 8, 1, 8>(smem, y, xs, w, bias, rows, in, out, accumulate);
}

// =====================================================================
// wg_split_x_W and matmul_wg_W (W = bf16, f16): matmul_W's semantics for
// 1 to 64 rows (batched decode) on sm_90a's warpgroup MMA (wgmma), with
// both operands staged in shared memory by the block: the mma.sync tiles
// above were bound by feeding their operands through L1 and registers
// on the H200, and wgmma reads them from shared memory itself.
//
// The product, per warpgroup (4 warps, 128 threads) and m64 tile: D[64
// outputs x N] += A[64 x 16] . B[16 x N], A = 64 rows of w, B = x's hi and
// lo parts side by side: for R = rows rounded up to 16 and N = 2R, column
// n < R is row n's hi (RN16(x)), column R + n its lo (RN16 of the
// remainder; tc_split), so D's two columns of one row add to w . (hi +
// lo), x to 2^-16 |x| (bf16) as in matmul_tc_W.
//
// Both operands use wgmma's K-major layout with the 128-byte swizzle (the
// no-swizzle layout put each MMA's reads of 8 rows on one set of banks and
// ran about 8 times slower): a 64-wide stage of k holds each row's 64
// values as 128 bytes, 8 rows to a 1024-byte atom, the 16-byte chunk q of
// row i at chunk q ^ (i % 8) of its 128 (atoms 1024-byte aligned, as the
// swizzle works on address bits). The MMA for k = 16s .. 16s+15 of a stage
// reads its operand from the stage's first atom + 32 s bytes, atoms
// FW_WG_SBO apart.
//
// The image xs (wg_split_x_W's output, which each block copies into shared
// memory as it is): per 64-wide stage c < wg_stages(in) (in rounded up to
// 64, zeros past in), N rows (n < R: x row n's hi, R + n: its lo; zeros
// past rows) in W's 16-bit type, laid out as above: N * 128 bytes a
// stage, x[n][64c + 8q .. +7] at byte c N 128 + (n / 8) 1024 + (n % 8) 128
// + 16 (q ^ (n % 8)).
//
// wg_split_x_W(xs, x, rows, in): block FW_WG_THREADS, grid ceil(
// wg_stages(in) * 8R / 256); thread j writes the hi and lo 16 bytes of
// (c, q, row r) = j's digits (r < R fastest, then q, c).
//
// wg_silu_split_x_W(xs, gu, rows, inter): wg_split_x_W of silu_mul_f32's
// output [rows, inter] from gu [rows, 2 inter], computed as that kernel
// computes it (the same image), without writing it: one launch for the
// two. Its block and grid are wg_split_x_W's for in = inter.
//
// matmul_wg_W(y, xs, w, bias, ws, cnt, rows, in, out, accumulate, ks):
// y [rows, out] (+)= x . w^T (+ bias) with x as wg_split_x_W left it, for
// 1 to 64 rows and in >= 1 (otherwise it writes nothing), in a multiple
// of 8 and w 16-byte aligned (the backend checks; with another in it
// would read past rows of w). Block FW_WG_THREADS (2 warpgroups, one
// m64 tile each: the block's FW_WG_TN = 128 outputs), dynamic shared
// memory 1024 + FW_WG_STAGES * (128 + N) * 128 bytes (the ring, below),
// grid ceil(out / 128) * S with S = ceil(in / ks) splits of in (ks a
// multiple of 64): block b takes outputs 128 (b / S) .., in from ks (b %
// S). Every thread copies its share of each 64-wide stage (the block's 128
// x 64 weights and x's N x 64, both as above) into a ring FW_WG_STAGES
// deep (cp.async.cg, 16 bytes a copy), so the weights stream once from
// DRAM with STAGES - 1 stages in flight; each warpgroup then runs the
// stage's 4 MMAs and waits for them. With S = 1 each block
// writes its outputs. With S > 1 each block writes its partial sums to ws
// [S, rows, out] and counts itself in cnt[b / S]; the last of a group's S
// blocks adds the S partials in split order (the same bytes whichever
// block is last), writes y and resets the count to 0 (cnt must start at
// zero: the backend clears it once). ws and cnt are unused when S = 1.
// With accumulate = FW_WG_LEAVE_PARTS (2) every block, S = 1 included,
// only writes its partial sums to ws and leaves: no y, no count, and the
// adds (the same, in split order) are rmsnorm_fused_W's. On the H200 the
// last block's adds cost a split product about 4 us at 32 rows
// of batched decode. With accumulate = FW_WG_SILU (4; in whole, ks >= in,
// and out a multiple of 128, else it writes nothing) the product is
// gate|up, out = 2 inter: block b's two warpgroups take gate's outputs 64
// b .. 64 b + 63 and up's inter + 64 b .., and instead of y the block
// writes stage b of the image wg_silu_split_x_W would make (for the down
// product after it) of that y, into y taken as the image (fw_u32x4*):
// the same bytes as the product with accumulate 0 (bias included) and that
// kernel, without y's round trip or the launch.
//
// One source for every port: on sm_90a (the sm_90a PTX) the MMA is the
// wgmma instruction; elsewhere wg_mma computes the same tile from shared
// memory, summing each D element's 16 products in k order: correct, far
// slower, and never routed to by the backend.
// =====================================================================
#define FW_WG_THREADS 256
#define FW_WG_MAX_ROWS 64
#define FW_WG_KC 64      // k per stage
#define FW_WG_STAGES 4   // the ring's depth (H200, 32 rows: the LM head 149 us at 4, 163 at 3, 182 at 6)
#define FW_WG_TN 128     // outputs per block
#define FW_WG_SBO 1024u  // bytes between 8-row atoms
#define FW_WG_LEAVE_PARTS 2u  // accumulate: write the split partials, not y
#define FW_WG_SILU 4u         // accumulate: gate|up, writing down's image of silu(gate) * up, not y

#if defined(__NVPTX__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FW_WG_NATIVE 1
#endif

// wg_rows: rows rounded up to 16 (R; the image has N = 2R rows).
// wg_stages: the image's 64-wide stages (in rounded up to 64).
// wg_unit: the 16-byte unit of chunk q of row i in a swizzled stage.
DEVICE uint32_t wg_rows(uint32_t rows) { return (rows + 15u) & ~15u; }
DEVICE uint32_t wg_stages(uint32_t in) { return (in + 63u) / 64u; }
DEVICE uint32_t wg_unit(uint32_t i, uint32_t q) { return (i / 8u) * 64u + (i % 8u) * 8u + (q ^ (i % 8u)); }
// wg_out_row: the output (row of w) of row i < 128 of the block whose
// tile starts at o0: o0 + i, or with half = out / 2 (FW_WG_SILU) gate's
// o0 / 2 + i for i < 64 and up's half + o0 / 2 + i - 64.
DEVICE uint32_t wg_out_row(uint32_t i, uint32_t o0, uint32_t half) {
  if (!half) return o0 + i;
  return i < 64u ? o0 / 2u + i : half + o0 / 2u + (i - 64u);
}

// wg_load8: the 8 values of row r from k (zeros past rows and in) of x
// [rows, in], or with SILU of silu_mul_f32's output computed from gu
// [rows, 2 in] as silu_mul_f32 computes it (the same bytes).
template <bool SILU>
DEVICE void wg_load8(float* v, const float* x, uint32_t rows, uint32_t in, uint32_t r, uint32_t k) {
  const uint64_t pitch = SILU ? 2ull * in : in;
  const float* p = x + (uint64_t)r * pitch + k;
  const bool vec = r < rows && k + 8u <= in && (in % 4u) == 0 && fw_aligned16(x);
  if (vec) {
    const fw_f32x4 a = ((const fw_f32x4*)p)[0], b = ((const fw_f32x4*)p)[1];
#pragma unroll
    for (uint32_t e = 0; e < 4; ++e) v[e] = a.v[e], v[4 + e] = b.v[e];
  } else {
#pragma unroll
    for (uint32_t e = 0; e < 8; ++e) v[e] = (r < rows && k + e < in) ? p[e] : 0.0f;
  }
  if (SILU) {
    float u[8];
    if (vec) {
      const fw_f32x4 a = ((const fw_f32x4*)(p + in))[0], b = ((const fw_f32x4*)(p + in))[1];
#pragma unroll
      for (uint32_t e = 0; e < 4; ++e) u[e] = a.v[e], u[4 + e] = b.v[e];
    } else {
#pragma unroll
      for (uint32_t e = 0; e < 8; ++e) u[e] = (r < rows && k + e < in) ? p[in + e] : 0.0f;
    }
#pragma unroll
    for (uint32_t e = 0; e < 8; ++e) v[e] = v[e] / (1.0f + mf_expf(-v[e])) * u[e];
  }
}

// wg_store8: the hi and lo units of row r's 8 values v of stage c, chunk
// q into the image xs of R rows.
template <typename W>
DEVICE void wg_store8(fw_u32x4* xs, const float* v, uint32_t R, uint32_t r, uint32_t q, uint32_t c) {
  fw_u32x4 hi, lo;
#pragma unroll
  for (uint32_t e = 0; e < 4; ++e) tc_split<W>(v[2 * e], v[2 * e + 1], &hi.v[e], &lo.v[e]);
  fw_u32x4* stage = xs + (uint64_t)c * R * 16u;  // N * 128 bytes
  stage[wg_unit(r, q)] = hi;
  stage[wg_unit(R + r, q)] = lo;
}

template <typename W, bool SILU = false>
DEVICE void wg_split_x(fw_u32x4* xs, const float* x, uint32_t rows, uint32_t in) {
  fw_early_start();
  const uint32_t R = wg_rows(rows);
  const uint32_t j = block_idx_x() * FW_WG_THREADS + thread_idx_x();
  if (R > FW_WG_MAX_ROWS || j >= wg_stages(in) * 8u * R) return;
  const uint32_t r = j % R, q = (j / R) % 8u, c = j / (8u * R);
  const uint32_t k = 64u * c + 8u * q;
  float v[8];
  wg_load8<SILU>(v, x, rows, in, r, k);
  wg_store8<W>(xs, v, R, r, q, c);
}

// =====================================================================
// rmsnorm_fused_W(out, x, ws, bias, weight, parts, rows, dim, eps, xs,
// split): rmsnorm_W's norm with what comes before and after it fused in.
// Before: with parts >= 1 the residual add a split product left to it
// (matmul_wg_W with FW_WG_LEAVE_PARTS): x[r, i] = ((ws[0, r, i] + ws[1, r,
// i] + ... in part order) + bias[i]) + x[r, i], ws [parts, rows, dim],
// bias null for none: the bytes the product's last block would have
// written into x. Then out[r] = rmsnorm_W of x[r], byte for byte (with
// parts out must not alias x or ws; without, it may alias x). After: with
// split (FW_SPLIT_*) nonzero, the image of out that the product after it
// reads, byte for byte what
// tc_split_x_W (FW_SPLIT_TC_*) or wg_split_x_W (FW_SPLIT_WG_*) makes of out
// for in = dim, in the given 16-bit type. Block FW_NORM_THREADS; grid
// rows, or with a split rows rounded up to 16 (the blocks past rows write
// the image's zero rows), at most 64 rows for FW_SPLIT_WG_*. With a
// FW_SPLIT_TC_* split it triggers its dependents as tc_split_x_W does
// (matmul_tcx_W follows it).
// =====================================================================
#define FW_SPLIT_TC_BF16 1u
#define FW_SPLIT_TC_F16 2u
#define FW_SPLIT_WG_BF16 3u
#define FW_SPLIT_WG_F16 4u

// fw_row_vals: out row r's values k .. k + n - 1 (zeros past dim and past rows).
DEVICE void fw_row_vals(float* v, uint32_t n, const float* orow, bool live, uint32_t k, uint32_t dim) {
  for (uint32_t e = 0; e < n; ++e) v[e] = live && k + e < dim ? orow[k + e] : 0.0f;
}

// rmsnorm_split_row: row r's part of the image (see rmsnorm_fused_W).
template <typename W>
DEVICE void rmsnorm_split_row(fw_u32x4* xs, const float* orow, bool live, uint32_t r, uint32_t rows, uint32_t dim,
                              bool wg) {
  const uint32_t tid = thread_idx_x();
  if (wg) {
    const uint32_t R = wg_rows(rows);
    for (uint32_t u = tid; u < wg_stages(dim) * 8u; u += FW_NORM_THREADS) {
      const uint32_t c = u / 8u, q = u % 8u;
      float v[8];
      fw_row_vals(v, 8, orow, live, 64u * c + 8u * q, dim);
      wg_store8<W>(xs, v, R, r, q, c);
    }
    return;
  }
  // tc_split_x_W's fragments: this row's words (0 and 2 for r % 16 < 8,
  // else 1 and 3) of lane (r % 8, t)'s units, for every chunk c and half h.
  const uint32_t chunks = (dim + 31u) / 32u, i = r / 16u, g = r % 8u, w0 = (r % 16u) / 8u;
  for (uint32_t u = tid; u < chunks * 8u; u += FW_NORM_THREADS) {
    const uint32_t t = u % 4u, h = (u / 4u) % 2u, c = u / 8u;
    float v[4];
    fw_row_vals(v, 4, orow, live, 32u * c + 8u * t + 4u * h, dim);
    uint32_t hi0, lo0, hi1, lo1;
    tc_split<W>(v[0], v[1], &hi0, &lo0);
    tc_split<W>(v[2], v[3], &hi1, &lo1);
    uint32_t* d = (uint32_t*)(xs + ((uint64_t)(i * chunks + c) * 2u + h) * 64u + 4u * g + t);
    d[w0] = hi0;
    d[2u + w0] = hi1;
    d[128u + w0] = lo0;  // the lo unit, 32 units on
    d[128u + 2u + w0] = lo1;
  }
}

template <typename NW>
DEVICE void rmsnorm_fused(float* out, float* x, const float* ws, const float* bias, const NW* weight, uint32_t parts,
                          uint32_t rows, uint32_t dim, float eps, fw_u32x4* xs, uint32_t split) {
  fw_early_start();
  if (split >= FW_SPLIT_TC_BF16 && split <= FW_SPLIT_WG_F16) grid_launch_dependents();  // see fw_early_start
  const uint32_t r = block_idx_x(), tid = thread_idx_x();
  const bool wg = split >= FW_SPLIT_WG_BF16;
  if (split > FW_SPLIT_WG_F16 || (wg && wg_rows(rows) > FW_WG_MAX_ROWS)) return;
  if (r >= (split ? wg_rows(rows) : rows)) return;  // with a split, rows rounded up to 16
  // The row stays in registers from its loads to the image (rmsnorm_W's
  // one pass over memory), and goes to the image through shared memory;
  // rows past FW_NORM_CACHED a thread go through memory.
  __shared__ float row[FW_NORM_THREADS * FW_NORM_CACHED];
  const bool cached = dim <= FW_NORM_THREADS * FW_NORM_CACHED;
  float* xr = x + (uint64_t)r * dim;
  float* orow = out + (uint64_t)r * dim;
  const float* wr = ws + (uint64_t)r * dim;
  const uint64_t part = (uint64_t)rows * dim;
  if (r < rows && cached) {
    float xv[FW_NORM_CACHED], wv[FW_NORM_CACHED], v[FW_NORM_CACHED];
    if (parts) rmsnorm_parts_sum(v, wr, part, parts, dim);
    rmsnorm_load(xv, wv, xr, weight, dim);
    if (parts) {
#pragma unroll
      for (uint32_t k = 0; k < FW_NORM_CACHED; ++k) {
        const uint32_t i = tid + k * FW_NORM_THREADS;
        if (i >= dim) continue;
        float t = v[k];  // fw_mm_store's order: the sum, the bias, then x
        if (bias) t += bias[i];
        xv[k] = t + xv[k];
        xr[i] = xv[k];
      }
    }
    rmsnorm_scale(xv, wv, dim, eps);
#pragma unroll
    for (uint32_t k = 0; k < FW_NORM_CACHED; ++k) {
      const uint32_t i = tid + k * FW_NORM_THREADS;
      if (i < dim) orow[i] = xv[k], row[i] = xv[k];
    }
  } else if (r < rows) {
    if (parts)
      for (uint32_t i = tid; i < dim; i += FW_NORM_THREADS) {
        float t = wr[i];
        for (uint32_t s = 1; s < parts; ++s) t += wr[s * part + i];
        fw_mm_store(xr, bias, i, i, t, 1u);
      }
    // rmsnorm's threads read the elements these wrote: no barrier needed.
    rmsnorm(out, x, weight, rows, dim, eps);
  }
  if (!split) return;
  block_sync();  // the row, written by every thread of the block
  const float* src = cached ? row : orow;
  if (split == FW_SPLIT_TC_BF16 || split == FW_SPLIT_WG_BF16)
    rmsnorm_split_row<fw_bf16>(xs, src, r < rows, r, rows, dim, wg);
  else
    rmsnorm_split_row<fw_f16>(xs, src, r < rows, r, rows, dim, wg);
}

// wg_fence, wg_commit, wg_wait<N>: wgmma's ordering of the accumulators
// (before a chunk's MMAs), closing a group of MMAs, and waiting until at
// most N groups are in flight. wg_proxy_fence: this thread's generic
// writes to shared memory (cp.async included) become visible to the
// tensor cores (before the barrier that publishes them). No-ops where
// wg_mma is emulated (it completes at once).
#if defined(FW_WG_NATIVE)
DEVICE void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
DEVICE void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
DEVICE void wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
DEVICE void wg_proxy_fence() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
#else
DEVICE void wg_fence() {}
DEVICE void wg_commit() {}
template <int N>
DEVICE void wg_wait() {}
DEVICE void wg_proxy_fence() {}
#endif

// wg_mma<N>(W, d, smem, a, b): d (this thread's N/2 accumulators of its
// warpgroup's 64 x N tile) += A . B for one 16-wide step of k, A (64 rows)
// from byte a of smem and B (N rows) from byte b, both in the layout above
// (a, b: an atom's start + 32 s for step s of the stage).
// d[4j + e] is D[16 warp + g + 8(e/2)][8j + 2t + e%2] (warp within the
// warpgroup, g = lane / 4, t = lane % 4).
#if defined(FW_WG_NATIVE)
#define FW_WG_D32 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}"
#define FW_WG_D64 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,"  \
  "%25,%26,%27,%28,%29,%30,%31}"
#define FW_WG_D96 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,"  \
  "%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47}"
#define FW_WG_D128 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,"  \
  "%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,"  \
  "%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}"
#define FW_WG_F8(d, i) \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define FW_WG_F16(d, i) FW_WG_F8(d, i), FW_WG_F8(d, i + 8)
#define FW_WG_OPS32(d) FW_WG_F16(d, 0)
#define FW_WG_OPS64(d) FW_WG_F16(d, 0), FW_WG_F16(d, 16)
#define FW_WG_OPS96(d) FW_WG_F16(d, 0), FW_WG_F16(d, 16), FW_WG_F16(d, 32)
#define FW_WG_OPS128(d) FW_WG_F16(d, 0), FW_WG_F16(d, 16), FW_WG_F16(d, 32), FW_WG_F16(d, 48)
// d, A's and B's descriptors, scale-d (p: add to d), scale-a 1, scale-b 1,
// neither transposed (both K-major).
#define FW_WG_MMA(N, TY)                                                                                    \
  DEVICE void wg_mma_n##N(fw_##TY, float* d, uint64_t da, uint64_t db) {                                    \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %[one], 0;\n"                                             \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." #TY "." #TY " " FW_WG_D##N                \
                 ", %[da], %[db], p, 1, 1, 0, 0;\n}"                                                         \
                 : FW_WG_OPS##N(d)                                                                           \
                 : [da] "l"(da), [db] "l"(db), [one] "r"(1)                                                  \
                 : "memory");                                                                                \
  }
FW_WG_MMA(32, bf16)
FW_WG_MMA(64, bf16)
FW_WG_MMA(96, bf16)
FW_WG_MMA(128, bf16)
FW_WG_MMA(32, f16)
FW_WG_MMA(64, f16)
FW_WG_MMA(96, f16)
FW_WG_MMA(128, f16)

// wg_desc: the descriptor of an operand from byte off of smem: its start
// address, LBO (unused by swizzled K-major layouts: 1) and SBO in 16-byte
// units, base offset 0 (the atoms are 1024-byte aligned), 128-byte
// swizzle (1 in bits 62-63).
DEVICE uint64_t wg_desc(const fw_u32x4* smem, uint32_t off) {
  uint64_t s;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(s) : "l"(smem));
  return (((s + off) & 0x3ffffu) >> 4) | (1ull << 16) | ((uint64_t)(FW_WG_SBO >> 4) << 32) | (1ull << 62);
}

template <uint32_t N, typename W>
DEVICE void wg_mma(W, float* d, const fw_u32x4* smem, uint32_t a, uint32_t b) {
  const uint64_t da = wg_desc(smem, a), db = wg_desc(smem, b);
  if constexpr (N == 32) wg_mma_n32(W{}, d, da, db);
  else if constexpr (N == 64) wg_mma_n64(W{}, d, da, db);
  else if constexpr (N == 96) wg_mma_n96(W{}, d, da, db);
  else wg_mma_n128(W{}, d, da, db);
}
#else
// The emulation reads both operands as the hardware does: element (row,
// k) of an operand from byte p (of smem, 1024-byte aligned) is at p +
// (row / 8) SBO + 128 (row % 8) + 16 (k / 8) + 2 (k % 8), with address
// bits 4-6 (the 16-byte chunk) XOR bits 7-9 (the row within the atom).
DEVICE uint16_t wg_elem(const uint8_t* smem, uint32_t p, uint32_t row, uint32_t k) {
  const uint32_t a = p + (row / 8u) * FW_WG_SBO + (row % 8u) * 128u + (k / 8u) * 16u + (k % 8u) * 2u;
  return *(const uint16_t*)(smem + (a ^ (((a >> 7) & 7u) << 4)));
}
// FW_WG_EMU_CALL: the emulated MMA is a call on the GPU targets that build
// it (it is never routed to there; inlined at each use it would bloat the
// code objects and PTX), inlined on the host.
#if defined(__AMDGCN__) || defined(__NVPTX__)
#define FW_WG_EMU_CALL static __device__ __attribute__((noinline))
#else
#define FW_WG_EMU_CALL DEVICE
#endif
template <uint32_t N, typename W>
FW_WG_EMU_CALL void wg_mma(W, float* d, const fw_u32x4* smem, uint32_t a, uint32_t b) {
  const uint32_t lane = thread_idx_x() & 31u, g = lane >> 2, t = lane & 3u, m0 = 16u * ((thread_idx_x() / 32u) % 4u);
  const uint8_t* base = (const uint8_t*)smem;
  for (uint32_t j = 0; j < N / 8u; ++j)
    for (uint32_t e = 0; e < 4; ++e) {
      const uint32_t m = m0 + g + 8u * (e >> 1), n = 8u * j + 2u * t + (e & 1u);
      float s = d[4u * j + e];
      for (uint32_t kk = 0; kk < 16; ++kk)
        s += tc_widen(W{}, wg_elem(base, a, m, kk)) * tc_widen(W{}, wg_elem(base, b, n, kk));
      d[4u * j + e] = s;
    }
}
#endif

// wg_copy16: async_copy16 for the streamed stages; on NVPTX cp.async.cg,
// which skips L1 (nothing in a stage is read twice).
#if defined(__NVPTX__)
DEVICE void wg_copy16(void* dst, const void* src, bool valid) {
  uint64_t d;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(d) : "l"(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"l"(d), "l"(src), "r"(valid ? 16u : 0u) : "memory");
}
#else
DEVICE void wg_copy16(void* dst, const void* src, bool valid) { async_copy16(dst, src, valid); }
#endif

// wg_copy_weight: copy u of a stage's TN x 64 weights at k = kc into its
// ring slot dst: 16 bytes, row u / 8, chunk u % 8 (so 8 lanes read a row's
// 128 contiguous bytes and write one swizzled row); rows past out and k
// past in zero.
template <typename W>
DEVICE void wg_copy_weight(fw_u32x4* dst, const W* w, uint32_t in, uint32_t out, uint32_t o0, uint32_t half,
                           uint32_t kc, uint32_t u) {
  const uint32_t row = u / 8u, q = u % 8u;
  const uint32_t o = wg_out_row(row, o0, half), k = kc + 8u * q;
  const bool valid = o < out && k < in;
  stream_copy16(dst + wg_unit(row, q), valid ? (const void*)(w + (uint64_t)o * in + k) : (const void*)w, valid);
}

// wg_load_stage: the block's copies of its stage c (of nck) into ring slot
// c % FW_WG_STAGES, then a commit (an empty group past the last stage, so
// the waits keep counting). A stage: the weights (wg_copy_weight), then
// x's stage of the image (contiguous).
template <typename W, uint32_t XU, uint32_t THREADS = FW_WG_THREADS>
DEVICE void wg_load_stage(fw_u32x4* smem, const W* w, const fw_u32x4* xsrc, uint32_t in, uint32_t out,
                          uint32_t o0, uint32_t half, uint32_t k0, uint32_t c, uint32_t nck) {
  constexpr uint32_t WU = FW_WG_TN * FW_WG_KC * 2u / 16u;
  if (c < nck) {
    fw_u32x4* dst = smem + (c % FW_WG_STAGES) * (WU + XU);
    const uint32_t kc = k0 + FW_WG_KC * c;
    for (uint32_t u = thread_idx_x(); u < WU; u += THREADS) wg_copy_weight(dst, w, in, out, o0, half, kc, u);
    const fw_u32x4* from = xsrc + (uint64_t)c * XU;
    for (uint32_t u = thread_idx_x(); u < XU; u += THREADS) wg_copy16(dst + WU + u, from + u, true);
  }
  async_commit();
}

// wg_dynamic_smem: the dynamic shared memory of this launch in bytes (the
// host emulation: its static ring's; AMDGPU, where the kernel is never
// routed and a launch over 64 KB fails: no check).
#if defined(__NVPTX__)
DEVICE uint32_t wg_dynamic_smem() {
  uint32_t v;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(v));
  return v;
}
#else
DEVICE uint32_t wg_dynamic_smem() { return ~0u; }
#endif

// wg_finish: the epilogue of matmul_wg_W and matmul_wgs_W for N = 2R
// columns: this thread's outputs from acc (warpgroups 0 and 1; a third,
// matmul_wgs_W's copier, has none), and with splits > 1 the partial sums
// and the last block's adds (see matmul_wg_W). Every thread of the block
// calls it.
template <uint32_t N, bool LEAVE = false>
DEVICE void wg_finish(fw_u32x4* smem, float* y, const float* bias, float* ws, uint32_t* cnt, const float* acc,
                      uint32_t rows, uint32_t out, uint32_t accumulate, uint32_t o0, uint32_t split, uint32_t splits,
                      uint32_t grp) {
  const uint32_t tid = thread_idx_x(), lane = tid & 31u, g = lane >> 2, t = lane & 3u;
  const uint32_t wg = tid / 128u, warp = (tid / 32u) % 4u;
  // Column n of D is row n's hi, column R + n its lo: d[4j + e] and
  // d[4(j + R/8) + e]. Each thread's outputs, in order: (j, e).
  constexpr uint32_t HJ = N / 16u, NV = HJ * 4u;
  float v[NV];
  uint64_t at[NV];  // y's index of each, or ~0 outside rows x out
  uint32_t oo[NV];
#pragma unroll
  for (uint32_t j = 0; j < HJ; ++j)
#pragma unroll
    for (uint32_t e = 0; e < 4; ++e) {
      const uint32_t i = j * 4u + e;
      const uint32_t r = 8u * j + 2u * t + (e & 1u), o = o0 + wg * 64u + 16u * warp + g + 8u * (e >> 1);
      v[i] = acc[4u * j + e] + acc[4u * (j + HJ) + e];
      at[i] = wg < 2u && r < rows && o < out ? (uint64_t)r * out + o : ~0ull;
      oo[i] = o;
    }
  if (LEAVE) {  // FW_WG_LEAVE_PARTS: rmsnorm_fused_W adds them
    const uint64_t part = (uint64_t)rows * out;
#pragma unroll
    for (uint32_t i = 0; i < NV; ++i)
      if (at[i] != ~0ull) ws[split * part + at[i]] = v[i];
    return;
  }
  if (splits > 1) {
    const uint64_t part = (uint64_t)rows * out;
#pragma unroll
    for (uint32_t i = 0; i < NV; ++i)
      if (at[i] != ~0ull) ws[split * part + at[i]] = v[i];
    grid_fence();
    block_sync();
    uint32_t* flag = (uint32_t*)smem;
    if (tid == 0) flag[0] = grid_atomic_add(&cnt[grp], 1u) == splits - 1u;
    block_sync();
    if (!flag[0]) return;
    grid_fence();
    // The partials in split order; each split's loads issued together
    // (one round trip a split, not one a value).
    for (uint32_t s = 0; s < splits; ++s) {
      float p[NV];
#pragma unroll
      for (uint32_t i = 0; i < NV; ++i) p[i] = at[i] != ~0ull ? grid_load_f32(&ws[s * part + at[i]]) : 0.0f;
#pragma unroll
      for (uint32_t i = 0; i < NV; ++i) v[i] = s == 0 ? p[i] : v[i] + p[i];
    }
  }
#pragma unroll
  for (uint32_t i = 0; i < NV; ++i)
    if (at[i] != ~0ull) fw_mm_store(y, bias, at[i], oo[i], v[i], accumulate);
  if (splits > 1 && tid == 0) cnt[grp] = 0u;
}

// wg_finish_silu: the epilogue with FW_WG_SILU (see matmul_wg_W): block
// grp's gate and up values (warpgroups 0 and 1), each as fw_mm_store would
// write it with accumulate 0, through shared memory, then stage grp of
// the image of silu_mul_f32's output (wg_load8's expression), written as
// wg_silu_split_x_W writes it; rows past rows zero. Every thread of the
// block (THREADS) calls it.
template <typename W, uint32_t N, uint32_t THREADS>
DEVICE void wg_finish_silu(fw_u32x4* smem, fw_u32x4* img, const float* bias, const float* acc, uint32_t rows,
                           uint32_t out, uint32_t grp) {
  const uint32_t tid = thread_idx_x(), lane = tid & 31u, g = lane >> 2, t = lane & 3u;
  const uint32_t wg = tid / 128u, warp = (tid / 32u) % 4u, half = out / 2u;
  constexpr uint32_t R = N / 2u, HJ = N / 16u;
  constexpr uint32_t P = 65;  // floats a row: consecutive rows on other banks
  float* s = (float*)smem;     // [2][R][P]: gate's, then up's, values of the block's 64 columns
  block_sync();                // every warpgroup is done with the ring
  if (wg < 2u) {
#pragma unroll
    for (uint32_t j = 0; j < HJ; ++j)
#pragma unroll
      for (uint32_t e = 0; e < 4; ++e) {
        const uint32_t r = 8u * j + 2u * t + (e & 1u), c = 16u * warp + g + 8u * (e >> 1);
        float v = acc[4u * j + e] + acc[4u * (j + HJ) + e];
        if (bias) v += bias[wg * half + 64u * grp + c];
        s[(wg * R + r) * P + c] = v;
      }
  }
  block_sync();
  for (uint32_t u = tid; u < R * 8u; u += THREADS) {
    const uint32_t r = u % R, q = u / R;
    float v[8];
#pragma unroll
    for (uint32_t e = 0; e < 8; ++e) {
      const float gv = s[r * P + 8u * q + e], uv = s[(R + r) * P + 8u * q + e];
      v[e] = r < rows ? gv / (1.0f + mf_expf(-gv)) * uv : 0.0f;
    }
    wg_store8<W>(img, v, R, r, q, grp);
  }
}

// matmul_wg_n: the product for N = 2R columns, by THREADS threads (256, or
// matmul_wgs_W's 384 where it is not native: the third warpgroup only
// copies).
template <typename W, uint32_t N, uint32_t THREADS = FW_WG_THREADS>
DEVICE void matmul_wg_n(fw_u32x4* smem, float* y, const fw_u32x4* xs, const W* w, const float* bias, float* ws,
                        uint32_t* cnt, uint32_t rows, uint32_t in, uint32_t out, uint32_t accumulate,
                        uint32_t ks) {
  constexpr uint32_t WU = FW_WG_TN * FW_WG_KC * 2u / 16u;  // 16-byte units of a stage's weights
  constexpr uint32_t XU = N * FW_WG_KC * 2u / 16u;         // and of its x
  constexpr uint32_t STAGES = FW_WG_STAGES;
  const uint32_t splits = in / ks + (in % ks != 0u);  // in + ks - 1 could wrap
  if (splits == 0) return;                               // in = 0: nothing
  const uint32_t b = block_idx_x(), split = b % splits, grp = b / splits;
  if (grp * FW_WG_TN >= out) return;  // whole block
  // A launch with less shared memory than the ring (and its alignment
  // slack) writes nothing.
  if (wg_dynamic_smem() < 1024u + STAGES * (WU + XU) * 16u) return;
  if (accumulate == FW_WG_SILU && (splits != 1u || out % 128u != 0u)) return;
  const uint32_t wg = thread_idx_x() / 128u;
  const uint32_t o0 = grp * FW_WG_TN, half = accumulate == FW_WG_SILU ? out / 2u : 0u;
  const uint32_t k0 = split * ks, kn = in - k0 < ks ? in - k0 : ks;
  const uint32_t nck = (kn + FW_WG_KC - 1u) / FW_WG_KC;
  const fw_u32x4* xsrc = xs + (uint64_t)(k0 / FW_WG_KC) * XU;

  float acc[N / 2];
#pragma unroll
  for (uint32_t i = 0; i < N / 2; ++i) acc[i] = 0.0f;
#pragma unroll
  for (uint32_t s = 0; s + 1 < STAGES; ++s) wg_load_stage<W, XU, THREADS>(smem, w, xsrc, in, out, o0, half, k0, s, nck);
  for (uint32_t c = 0; c < nck; ++c) {
    // Stage c has landed for every thread, and every warpgroup is done
    // with stage c - 1, whose slot the next copies take.
    async_wait<STAGES - 2>();
    wg_proxy_fence();
    block_sync();
    wg_load_stage<W, XU, THREADS>(smem, w, xsrc, in, out, o0, half, k0, c + STAGES - 1u, nck);
    const uint32_t slot = (c % STAGES) * (WU + XU) * 16u;  // bytes
    if (THREADS == FW_WG_THREADS || wg < 2u) {  // warpgroup-uniform; matmul_wg_W's own block: always
      wg_fence();
#pragma unroll
      for (uint32_t st = 0; st < FW_WG_KC / 16u; ++st)
        wg_mma<N>(W{}, acc, smem, slot + wg * 64u * 128u + 32u * st, slot + WU * 16u + 32u * st);
      wg_commit();
      wg_wait<0>();
    }
  }
  async_wait<0>();

  if (half)
    wg_finish_silu<W, N, THREADS>(smem, (fw_u32x4*)y, bias, acc, rows, out, grp);
  else if (accumulate & FW_WG_LEAVE_PARTS)  // its own copy of the epilogue: the adds' registers stay as they were
    wg_finish<N, true>(smem, y, bias, ws, cnt, acc, rows, out, accumulate, o0, split, splits, grp);
  else
    wg_finish<N>(smem, y, bias, ws, cnt, acc, rows, out, accumulate, o0, split, splits, grp);
}

// The ring lives in dynamic shared memory, 1024 + FW_WG_STAGES * (128 +
// N) * 128 bytes: the kernel starts it at the first 1024-byte boundary
// (the host emulation: a static array of the largest ring, so aligned).
#if defined(HIPGO_HOST_SHIM)
#define FW_WG_SMEM_DECL \
  alignas(1024) static fw_u32x4 wg_smem_raw[FW_WG_STAGES * (FW_WG_TN + 2 * FW_WG_MAX_ROWS) * FW_WG_KC * 2 / 16]; \
  fw_u32x4* wg_smem = wg_smem_raw
#else
#define FW_WG_SMEM_DECL                                                            \
  extern __shared__ __attribute__((aligned(16))) fw_u32x4 wg_smem_raw[];          \
  fw_u32x4* wg_smem = wg_smem_raw + ((64u - wg_smem_units(wg_smem_raw) % 64u) % 64u)
// wg_smem_units: the shared-memory address of p in 16-byte units (AMDGPU:
// the low 32 bits of a generic LDS pointer are its LDS address).
DEVICE uint32_t wg_smem_units(const fw_u32x4* p) {
#if defined(__NVPTX__)
  uint64_t s;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(s) : "l"(p));
  return (uint32_t)(s >> 4);
#else
  return (uint32_t)(__UINTPTR_TYPE__)p >> 4;
#endif
}
#endif

// FW_WG_BY_ROWS(CALL): CALL(N) for N = 2R, R = rows rounded up to 16;
// nothing for 0 or more than 64 rows.
#define FW_WG_BY_ROWS(CALL)      \
  switch (wg_rows(rows)) {       \
    case 16: CALL(32); break;    \
    case 32: CALL(64); break;    \
    case 48: CALL(96); break;    \
    case 64: CALL(128); break;   \
    default: break;              \
  }

template <typename W>
DEVICE void matmul_wg(float* y, const fw_u32x4* xs, const W* w, const float* bias, float* ws, uint32_t* cnt,
                      uint32_t rows, uint32_t in, uint32_t out, uint32_t accumulate, uint32_t ks) {
  fw_early_start();
  FW_WG_SMEM_DECL;
  if (ks == 0 || ks % FW_WG_KC != 0) return;
#define FW_WG_CALL(N) matmul_wg_n<W, N>(wg_smem, y, xs, w, bias, ws, cnt, rows, in, out, accumulate, ks)
  FW_WG_BY_ROWS(FW_WG_CALL)
#undef FW_WG_CALL
}

// =====================================================================
// matmul_wgs_W (W = bf16, f16): matmul_wg_W warp-specialized. The same
// arguments, rules and sums (bit for bit: the same MMAs in the same order
// and the same epilogue, wg_finish), for a block of FW_WGS_THREADS = 3
// warpgroups and dynamic shared memory 1024 + S * (128 + N) * 128 bytes,
// S = the ring's depth, 2 to FW_WGS_MAX_STAGES (the kernel takes it from
// the launch's shared memory; less than 2 stages: it writes nothing).
//
// matmul_wg_W's 8 warps each copy a share of every stage, then the whole
// block waits for the stage and for the MMAs of the one before (a
// block_sync a stage): on the H200 at 32 rows its copies alone ran 15%
// faster than the kernel. Here, on sm_90a, warpgroup 2
// only copies: stage c into slot c % S once the MMAs of stage c - S are
// done with it (the slot's "empty" mbarrier, 256 arrivals), its copies'
// completion counted on the slot's "full" mbarrier (129 arrivals: the
// weights' cp.async.mbarrier.arrive.noinc from each of its 128 threads, and
// x's stage, one cp.async.bulk, by its bytes; the first lap of weights is
// issued before the wait for the kernel ahead); warpgroups 0 and 1 wait
// on "full", run the stage's MMAs, and free the slot before that once the
// MMAs of the stage before it are done (wgmma.wait_group 1: one stage of
// MMAs in flight).
// Nothing waits for the whole block until the epilogue.
//
// Elsewhere (the host emulation, other GPUs: never routed to there) it is
// matmul_wg_W's block-synchronous loop with the third warpgroup copying
// too, over FW_WG_STAGES stages.
// =====================================================================
#define FW_WGS_THREADS 384
#define FW_WGS_MAX_STAGES 8

#if defined(FW_WG_NATIVE)
// mbarrier helpers (shared::cta addresses).
DEVICE uint32_t wgs_saddr(const void* p) {
  uint64_t s;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(s) : "l"(p));
  return (uint32_t)s;
}
DEVICE void wgs_bar_init(uint32_t a, uint32_t n) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(a), "r"(n) : "memory");
}
DEVICE void wgs_bar_arrive(uint32_t a) { asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(a) : "memory"); }
// wgs_bar_arrive_copies: arrives on a once this thread's cp.async copies so
// far have landed (not counted in a's expected arrivals: .noinc).
DEVICE void wgs_bar_arrive_copies(uint32_t a) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(a) : "memory");
}
// wgs_bar_expect_bytes: arrives on a, which then also waits for n more
// bytes of bulk copies (mbarrier::complete_tx). wgs_bulk_copy: n bytes
// (16-byte aligned, a multiple of 16) from global src to shared dst,
// counted on a when they land; it reads src through the async proxy.
DEVICE void wgs_bar_expect_bytes(uint32_t a, uint32_t n) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(a), "r"(n) : "memory");
}
DEVICE void wgs_bulk_copy(void* dst, const void* src, uint32_t n, uint32_t a) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   wgs_saddr(dst)),
               "l"(src), "r"(n), "r"(a)
               : "memory");
}
// wgs_bar_wait: until the phase of a with this parity has completed.
DEVICE void wgs_bar_wait(uint32_t a, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done)
                 : "r"(a), "r"(parity)
                 : "memory");
  } while (!done);
}

template <typename W, uint32_t N>
DEVICE void matmul_wgs_n(fw_u32x4* smem, uint64_t* bars, float* y, const fw_u32x4* xs, const W* w,
                         const float* bias, float* ws, uint32_t* cnt, uint32_t rows, uint32_t in, uint32_t out,
                         uint32_t accumulate, uint32_t ks) {
  constexpr uint32_t WU = FW_WG_TN * FW_WG_KC * 2u / 16u;  // 16-byte units of a stage's weights
  constexpr uint32_t XU = N * FW_WG_KC * 2u / 16u;         // and of its x
  const uint32_t splits = in / ks + (in % ks != 0u);
  const uint32_t b = block_idx_x(), split = splits ? b % splits : 0u, grp = splits ? b / splits : 0u;
  uint32_t stages = (wg_dynamic_smem() - 1024u) / ((WU + XU) * 16u);
  if (stages > FW_WGS_MAX_STAGES) stages = FW_WGS_MAX_STAGES;
  const uint32_t tid = thread_idx_x(), wg = tid / 128u;
  if (splits == 0 || grp * FW_WG_TN >= out || wg_dynamic_smem() < 1024u || stages < 2u ||
      (accumulate == FW_WG_SILU && (splits != 1u || out % 128u != 0u))) {
    grid_dependency_wait();
    return;
  }
  const uint32_t o0 = grp * FW_WG_TN, half = accumulate == FW_WG_SILU ? out / 2u : 0u;
  const uint32_t k0 = split * ks, kn = in - k0 < ks ? in - k0 : ks;
  const uint32_t nck = (kn + FW_WG_KC - 1u) / FW_WG_KC;
  const fw_u32x4* xsrc = xs + (uint64_t)(k0 / FW_WG_KC) * XU;
  const uint32_t full = wgs_saddr(bars), empty = full + 8u * FW_WGS_MAX_STAGES;  // slot i: + 8 i
  if (tid == 0)
    for (uint32_t i = 0; i < stages; ++i) {
      wgs_bar_init(full + 8u * i, 129u);  // 128 threads' weights, and x's bulk copy
      wgs_bar_init(empty + 8u * i, 256u);
    }
  block_sync();

  float acc[N / 2];
#pragma unroll
  for (uint32_t i = 0; i < N / 2; ++i) acc[i] = 0.0f;
  if (wg == 2u) {
    // The weights are the model's, which no kernel writes: the first lap of
    // them is copied before the wait for the kernel ahead, whose blocks
    // (a norm's few) leave most SMs free for this one's. x's stages come by
    // one bulk copy each, counted on the slot's barrier by their bytes, so
    // that a stage waits for its own weights and x, not for every copy the
    // thread issued before (cp.async.mbarrier.arrive counts those).
    const uint32_t p = tid - 256u;
    const auto weights = [&](uint32_t c, uint32_t slot) {
      fw_u32x4* dst = smem + slot * (WU + XU);
      const uint32_t kc = k0 + FW_WG_KC * c;
#pragma unroll
      for (uint32_t u = p; u < WU; u += 128u) wg_copy_weight(dst, w, in, out, o0, half, kc, u);
      wgs_bar_arrive_copies(full + 8u * slot);
    };
    const auto image = [&](uint32_t c, uint32_t slot) {
      if (p == 0) {
        wgs_bar_expect_bytes(full + 8u * slot, XU * 16u);
        wgs_bulk_copy(smem + slot * (WU + XU) + WU, xsrc + (uint64_t)c * XU, XU * 16u, full + 8u * slot);
      }
    };
    const uint32_t first = nck < stages ? nck : stages;
    for (uint32_t c = 0; c < first; ++c) weights(c, c);
    grid_dependency_wait();
    if (half) grid_launch_dependents();  // down, next, copies its first weights while this one runs
    for (uint32_t c = 0; c < first; ++c) image(c, c);
    uint32_t slot = 0, lap = 1;  // c = lap * stages + slot
    for (uint32_t c = first; c < nck; ++c) {
      wgs_bar_wait(empty + 8u * slot, (lap - 1u) & 1u);
      weights(c, slot);
      image(c, slot);
      if (++slot == stages) slot = 0, ++lap;
    }
    async_wait<0>();
  } else {
    grid_dependency_wait();
    if (half) grid_launch_dependents();
    uint32_t slot = 0, lap = 0, prev = 0;
    for (uint32_t c = 0; c < nck; ++c) {
      wgs_bar_wait(full + 8u * slot, lap & 1u);
      wg_proxy_fence();  // the copies, seen through the mbarrier, before the MMAs read them
      const uint32_t off = slot * (WU + XU) * 16u;  // bytes
      wg_fence();
#pragma unroll
      for (uint32_t st = 0; st < FW_WG_KC / 16u; ++st)
        wg_mma<N>(W{}, acc, smem, off + wg * 64u * 128u + 32u * st, off + WU * 16u + 32u * st);
      wg_commit();
      wg_wait<1>();  // stage c - 1's MMAs are done: its slot is free
      if (c > 0) wgs_bar_arrive(empty + 8u * prev);
      prev = slot;
      if (++slot == stages) slot = 0, ++lap;
    }
    wg_wait<0>();
  }
  if (half)
    wg_finish_silu<W, N, FW_WGS_THREADS>(smem, (fw_u32x4*)y, bias, acc, rows, out, grp);
  else if (accumulate & FW_WG_LEAVE_PARTS)  // its own copy of the epilogue: the adds' registers stay as they were
    wg_finish<N, true>(smem, y, bias, ws, cnt, acc, rows, out, accumulate, o0, split, splits, grp);
  else
    wg_finish<N>(smem, y, bias, ws, cnt, acc, rows, out, accumulate, o0, split, splits, grp);
}
#endif

template <typename W>
DEVICE void matmul_wgs(float* y, const fw_u32x4* xs, const W* w, const float* bias, float* ws, uint32_t* cnt,
                       uint32_t rows, uint32_t in, uint32_t out, uint32_t accumulate, uint32_t ks) {
#if defined(FW_WG_NATIVE)
  // matmul_wgs_n waits for the kernel ahead itself, on every path (its
  // copier after its first weights).
  FW_WG_SMEM_DECL;
  if (ks == 0 || ks % FW_WG_KC != 0 || rows == 0 || wg_rows(rows) > FW_WG_MAX_ROWS) {
    fw_early_start();
    return;
  }
  __shared__ __attribute__((aligned(8))) uint64_t bars[2 * FW_WGS_MAX_STAGES];
#define FW_WGS_CALL(N) matmul_wgs_n<W, N>(wg_smem, bars, y, xs, w, bias, ws, cnt, rows, in, out, accumulate, ks)
#else
  fw_early_start();
  FW_WG_SMEM_DECL;
  if (ks == 0 || ks % FW_WG_KC != 0) return;
#define FW_WGS_CALL(N) matmul_wg_n<W, N, FW_WGS_THREADS>(wg_smem, y, xs, w, bias, ws, cnt, rows, in, out, accumulate, ks)
#endif
  FW_WG_BY_ROWS(FW_WGS_CALL)
#undef FW_WGS_CALL
}

// =====================================================================
// rope_f32: rotates, in place, heads vectors of headdim values per token in
// Hugging Face's rotate_half layout (element i pairs with i + headdim/2):
// token t's head h starts at x + t*stride + h*headdim. The angle of pair i
// is f32(inv_freq[i] * f32(pos[t])), then an accurate cos/sin of it
// (mf_sincosf), then lo' = lo*cos - hi*sin, hi' = hi*cos + lo*sin.
// Block FW_ROPE_THREADS, grid tokens (block t rotates token t).
// =====================================================================
KERNEL KBOUNDS(FW_ROPE_THREADS) void rope_f32(float* x, const uint32_t* pos, const float* inv_freq,
                                              uint32_t tokens, uint32_t heads, uint32_t headdim,
                                              uint32_t stride) {
  fw_early_start();
  const uint32_t t = block_idx_x();
  if (t >= tokens) return;
  const uint32_t half = headdim / 2;
  const float p = (float)pos[t];
  float* xt = x + (uint64_t)t * stride;
  for (uint32_t j = thread_idx_x(); j < heads * half; j += FW_ROPE_THREADS) {
    const uint32_t h = j / half, i = j % half;
    float sn, cs;
    mf_sincosf(inv_freq[i] * p, &sn, &cs);
    float* v = xt + (uint64_t)h * headdim;
    const float a = v[i], b = v[i + half];
    v[i] = a * cs - b * sn;
    v[i + half] = b * cs + a * sn;
  }
}

// =====================================================================
// kv_store_f32: k_cache[slots[t]*kv_dim + j] = qkv[t*stride + k_off + j] and
// v_cache likewise from v_off, for j < kv_dim; a slot >= num_slots is
// skipped. Block FW_KV_THREADS, grid tokens.
// =====================================================================
template <typename KV>
DEVICE void kv_store(KV* k_cache, KV* v_cache, const float* qkv, const uint32_t* slots, uint32_t tokens,
                     uint32_t kv_dim, uint32_t k_off, uint32_t v_off, uint32_t stride, uint32_t num_slots) {
  const uint32_t t = block_idx_x();
  if (t >= tokens) return;
  const uint32_t slot = slots[t];
  if (slot >= num_slots) return;
  const float* row = qkv + (uint64_t)t * stride;
  KV* kc = k_cache + (uint64_t)slot * kv_dim;
  KV* vc = v_cache + (uint64_t)slot * kv_dim;
  for (uint32_t j = thread_idx_x(); j < kv_dim; j += FW_KV_THREADS) {
    fw_kv_put(kc + j, row[k_off + j]);
    fw_kv_put(vc + j, row[v_off + j]);
  }
}
#define FW_KV_STORE_KERNEL(NAME, KV)                                                                           \
  KERNEL KBOUNDS(FW_KV_THREADS) void NAME(KV* k_cache, KV* v_cache, const float* qkv, const uint32_t* slots,  \
                                          uint32_t tokens, uint32_t kv_dim, uint32_t k_off, uint32_t v_off,   \
                                          uint32_t stride, uint32_t num_slots) {                             \
    fw_early_start();                                                                                          \
    kv_store<KV>(k_cache, v_cache, qkv, slots, tokens, kv_dim, k_off, v_off, stride, num_slots);               \
  }
FW_KV_STORE_KERNEL(kv_store_f32, float)
FW_KV_STORE_KERNEL(kv_store_f32_kv16, fw_f16)

// =====================================================================
// rope_kv_store_f32: rope_f32 of the heads + kv_heads heads at the start of
// each qkv row (q's heads, then k's), then kv_store_f32 of this token's k
// (at offset heads*headdim) and v (at (heads+kv_heads)*headdim), kv_dim =
// kv_heads*headdim, into slot slots[t] of the caches (skipped when >=
// num_slots), in one launch: bit for bit the two launches' results. Each
// rotated k value goes to the cache from the register it was written to
// qkv from, so no barrier is needed. Block FW_ROPE_THREADS, grid tokens.
// =====================================================================
template <typename KV>
DEVICE void rope_kv_store(float* qkv, KV* k_cache, KV* v_cache, const uint32_t* pos, const float* inv_freq,
                          const uint32_t* slots, uint32_t tokens, uint32_t heads, uint32_t kv_heads, uint32_t headdim,
                          uint32_t stride, uint32_t num_slots) {
  const uint32_t t = block_idx_x();
  if (t >= tokens) return;
  const uint32_t half = headdim / 2, kv_dim = kv_heads * headdim;
  const float p = (float)pos[t];
  const uint32_t slot = slots[t];
  const bool store = slot < num_slots;
  float* xt = qkv + (uint64_t)t * stride;
  KV* kc = k_cache + (uint64_t)(store ? slot : 0u) * kv_dim;
  KV* vc = v_cache + (uint64_t)(store ? slot : 0u) * kv_dim;
  for (uint32_t j = thread_idx_x(); j < (heads + kv_heads) * half; j += FW_ROPE_THREADS) {
    const uint32_t h = j / half, i = j % half;
    float sn, cs;
    mf_sincosf(inv_freq[i] * p, &sn, &cs);
    float* v = xt + (uint64_t)h * headdim;
    const float a = v[i], b = v[i + half];
    const float lo = a * cs - b * sn, hi = b * cs + a * sn;  // rope_f32's expressions
    v[i] = lo;
    v[i + half] = hi;
    if (store && h >= heads) {
      KV* k = kc + (uint64_t)(h - heads) * headdim;
      fw_kv_put(k + i, lo);
      fw_kv_put(k + i + half, hi);
    }
  }
  if (!store) return;
  const float* kr = xt + (uint64_t)heads * headdim;
  const float* vr = xt + (uint64_t)(heads + kv_heads) * headdim;
  for (uint32_t j = thread_idx_x(); j < kv_dim; j += FW_ROPE_THREADS) {
    fw_kv_put(vc + j, vr[j]);
    if (j % headdim >= 2 * half) fw_kv_put(kc + j, kr[j]);  // an odd head_dim's last element, which rope leaves
  }
}
#define FW_ROPE_KV_STORE_KERNEL(NAME, KV)                                                                         \
  KERNEL KBOUNDS(FW_ROPE_THREADS) void NAME(float* qkv, KV* k_cache, KV* v_cache, const uint32_t* pos,           \
                                            const float* inv_freq, const uint32_t* slots, uint32_t tokens,       \
                                            uint32_t heads, uint32_t kv_heads, uint32_t headdim, uint32_t stride, \
                                            uint32_t num_slots) {                                                \
    fw_early_start();                                                                                             \
    rope_kv_store<KV>(qkv, k_cache, v_cache, pos, inv_freq, slots, tokens, heads, kv_heads, headdim, stride,      \
                      num_slots);                                                                                 \
  }
FW_ROPE_KV_STORE_KERNEL(rope_kv_store_f32, float)
FW_ROPE_KV_STORE_KERNEL(rope_kv_store_f32_kv16, fw_f16)

// =====================================================================
// attention_f32: for query token t (sequence q_seq[t], position q_pos[t])
// and head h: softmax over keys j = 0..q_pos[t] of (q . k_j) * scale, then
// the weighted sum of the v_j; q is qkv + t*stride + h*headdim, key j of kv
// head h / (heads / kv_heads) is at slot block_tables[q_seq[t]*max_blocks +
// j / block_size] * block_size + j % block_size of k_cache/v_cache
// ([slots, kv_heads*headdim]). Keys past max_blocks*block_size are not
// read. The block tables are the host's own (trusted) data.
// Block FW_ATT_THREADS, grid tokens * heads (block b: t = b / heads,
// h = b % heads). Each 32-lane group walks every FW_ATT_GROUPS-th key with
// an online softmax (running max, sum and output), then the groups merge.
// =====================================================================
// fw_att_load: this lane's share (dims lane + 32i, i < LD) of key j's k
// and v rows of kv head kvh, through the block table; zeros past n or
// headdim.
template <uint32_t LD, typename KV>
DEVICE void fw_att_load(float* kn, float* vn, const KV* k_cache, const KV* v_cache, const uint32_t* table,
                        uint64_t j, uint64_t n, uint32_t block_size, uint32_t kv_dim, uint32_t kvh, uint32_t headdim,
                        uint32_t lane) {
#pragma unroll
  for (uint32_t i = 0; i < LD; ++i) kn[i] = vn[i] = 0.0f;
  if (j >= n) return;
  const uint64_t slot = (uint64_t)table[j / block_size] * block_size + j % block_size;
  const KV* kr = k_cache + slot * kv_dim + (uint64_t)kvh * headdim;
  const KV* vr = v_cache + slot * kv_dim + (uint64_t)kvh * headdim;
#pragma unroll
  for (uint32_t i = 0; i < LD; ++i) {
    const uint32_t e = lane + 32u * i;
    if (e < headdim) kn[i] = fw_kv_get(kr + e), vn[i] = fw_kv_get(vr + e);
  }
}

// fw_att_step: one key's online-softmax update of a 32-lane group's running
// max m, sum l and output o (this lane's dims lane + 32i, i < LD) for query
// qs against the key's k (kv) and v (vv) shares: every decode attention
// kernel's arithmetic, in this order.
template <uint32_t LD>
DEVICE void fw_att_step(float& m, float& l, float* o, const float* qs, const float* kv, const float* vv,
                        uint32_t lane, uint32_t headdim, float scale) {
  float d = 0.0f;
#pragma unroll
  for (uint32_t i = 0; i < LD; ++i) {
    const uint32_t e = lane + 32u * i;
    if (e < headdim) d += qs[e] * kv[i];
  }
  const float s = fw_group_sum(d) * scale;
  const float mn = fmax_f32(m, s);
  const float c = mf_expf(m - mn), p = mf_expf(s - mn);
  l = l * c + p;
#pragma unroll
  for (uint32_t i = 0; i < LD; ++i) o[i] = o[i] * c + p * vv[i];
  m = mn;
}

// attention_decode: the body of attention_f32 (GROUPS = FW_ATT_GROUPS):
// GROUPS 32-lane groups a block.
template <uint32_t GROUPS, typename KV = float>
DEVICE void attention_decode(float* out, const float* qkv, const KV* k_cache, const KV* v_cache,
                             const uint32_t* q_seq, const uint32_t* q_pos, const uint32_t* block_tables,
                             uint32_t max_blocks, uint32_t block_size, uint32_t tokens, uint32_t heads,
                             uint32_t kv_heads, uint32_t headdim, uint32_t stride, float scale) {
  constexpr uint32_t THREADS = GROUPS * 32;
  // The groups' outputs merge through go in rounds of CH dims (16 KB; all
  // of head_dim at once for 8 groups), each dim summed over the groups in
  // order.
  constexpr uint32_t CH = 4096 / GROUPS < FW_ATT_MAX_HEADDIM ? 4096 / GROUPS : FW_ATT_MAX_HEADDIM;
  __shared__ float qs[FW_ATT_MAX_HEADDIM];
  __shared__ float gm[GROUPS], gl[GROUPS];
  __shared__ float go[GROUPS][CH];
  const uint32_t b = block_idx_x();
  if (heads == 0 || kv_heads == 0 || kv_heads > heads || block_size == 0) return;
  if (headdim > FW_ATT_MAX_HEADDIM) return;
  const uint32_t t = b / heads, h = b % heads;
  if (t >= tokens) return;
  const uint32_t group = heads / kv_heads;
  uint32_t kvh = h / group;
  if (kvh >= kv_heads) kvh = kv_heads - 1;
  const uint32_t kv_dim = kv_heads * headdim;
  const uint32_t tid = thread_idx_x(), lane = tid & 31u, g = tid / 32u;
  const float* q = qkv + (uint64_t)t * stride + (uint64_t)h * headdim;
  for (uint32_t d = tid; d < headdim; d += THREADS) qs[d] = q[d];
  block_sync();
  uint64_t n = (uint64_t)q_pos[t] + 1;
  const uint64_t cap = (uint64_t)max_blocks * block_size;
  if (n > cap) n = cap;
  const uint32_t* table = block_tables + (uint64_t)q_seq[t] * max_blocks;
  float m = -__builtin_inff(), l = 0.0f;
  float o[FW_ATT_LANE_DIMS];
#pragma unroll
  for (int i = 0; i < FW_ATT_LANE_DIMS; ++i) o[i] = 0.0f;
  // Software pipelining: the next key's k and v values (and its block-table
  // entry before them) are loaded while this key is scored, so each key
  // does not wait out a full memory latency.
  float kn[FW_ATT_LANE_DIMS], vn[FW_ATT_LANE_DIMS];
  fw_att_load<FW_ATT_LANE_DIMS>(kn, vn, k_cache, v_cache, table, g, n, block_size, kv_dim, kvh, headdim, lane);
  for (uint64_t j = g; j < n; j += GROUPS) {
    float kv[FW_ATT_LANE_DIMS], vv[FW_ATT_LANE_DIMS];
#pragma unroll
    for (uint32_t i = 0; i < FW_ATT_LANE_DIMS; ++i) kv[i] = kn[i], vv[i] = vn[i];
    fw_att_load<FW_ATT_LANE_DIMS>(kn, vn, k_cache, v_cache, table, j + GROUPS, n, block_size, kv_dim, kvh, headdim,
                                  lane);
    fw_att_step<FW_ATT_LANE_DIMS>(m, l, o, qs, kv, vv, lane, headdim, scale);
  }
  if (lane == 0) gm[g] = m, gl[g] = l;
  float* orow = out + (uint64_t)t * heads * headdim + (uint64_t)h * headdim;
  float M = 0.0f, L = 0.0f;
  float wk[GROUPS];
  for (uint32_t d0 = 0; d0 < headdim; d0 += CH) {
    if (d0 > 0) block_sync();  // every thread is done reading the last round
#pragma unroll
    for (uint32_t i = 0; i < FW_ATT_LANE_DIMS; ++i) {
      const uint32_t e = lane + 32u * i;
      if (e >= d0 && e < d0 + CH && e < headdim) go[g][e - d0] = o[i];
    }
    block_sync();
    if (d0 == 0) {
      M = gm[0];
      for (uint32_t k = 1; k < GROUPS; ++k) M = fmax_f32(M, gm[k]);
      for (uint32_t k = 0; k < GROUPS; ++k) {
        wk[k] = gl[k] == 0.0f ? 0.0f : mf_expf(gm[k] - M);  // a group with no key has m = -inf
        L += gl[k] * wk[k];
      }
    }
    const uint32_t d1 = d0 + CH < headdim ? d0 + CH : headdim;
    for (uint32_t d = d0 + tid; d < d1; d += THREADS) {
      float acc = 0.0f;
      for (uint32_t k = 0; k < GROUPS; ++k) acc += go[k][d - d0] * wk[k];
      orow[d] = acc / L;
    }
  }
}

#define FW_ATTENTION_KERNEL(NAME, KV)                                                                          \
  KERNEL KBOUNDS(FW_ATT_THREADS) void NAME(float* out, const float* qkv, const KV* k_cache, const KV* v_cache,  \
                                           const uint32_t* q_seq, const uint32_t* q_pos,                       \
                                           const uint32_t* block_tables, uint32_t max_blocks,                  \
                                           uint32_t block_size, uint32_t tokens, uint32_t heads,               \
                                           uint32_t kv_heads, uint32_t headdim, uint32_t stride, float scale) { \
    fw_early_start();                                                                                          \
    attention_decode<FW_ATT_GROUPS, KV>(out, qkv, k_cache, v_cache, q_seq, q_pos, block_tables, max_blocks,    \
                                        block_size, tokens, heads, kv_heads, headdim, stride, scale);          \
  }
FW_ATTENTION_KERNEL(attention_f32, float)
FW_ATTENTION_KERNEL(attention_f32_kv16, fw_f16)


// =====================================================================
// attention_gqa_f32: attention_f32's arguments and semantics, one block per
// query token t and kv head kvh (grid tokens * kv_heads; block b: t = b /
// kv_heads, kvh = b % kv_heads) for the heads / kv_heads <=
// FW_GQA_MAX_GROUP query heads that share it, head_dim <=
// FW_GQA_MAX_HEADDIM, heads a multiple of kv_heads (else it writes
// nothing). Block FW_GQA_THREADS (1024): 32 groups, each walking every 32nd
// key with attention_f32's online softmax; each key's k and v rows are
// read once for all the query heads of the kv head instead of once per
// head. Batched decode (tokens * heads blocks of attention_f32 at 32
// sequences: 1024) has four times fewer, fuller blocks.
// =====================================================================
KERNEL KBOUNDS(FW_GQA_THREADS) void attention_gqa_f32(float* out, const float* qkv, const float* k_cache,
                                                      const float* v_cache, const uint32_t* q_seq,
                                                      const uint32_t* q_pos, const uint32_t* block_tables,
                                                      uint32_t max_blocks, uint32_t block_size, uint32_t tokens,
                                                      uint32_t heads, uint32_t kv_heads, uint32_t headdim,
                                                      uint32_t stride, float scale) {
  fw_early_start();
  constexpr uint32_t G = FW_GQA_MAX_GROUP, GROUPS = FW_GQA_GROUPS, THREADS = FW_GQA_THREADS;
  static_assert(FW_GQA_MAX_HEADDIM <= 4096 / FW_ATTL_GROUPS, "one merge round");
  __shared__ float qs[G][FW_GQA_MAX_HEADDIM];
  __shared__ float gm[G][GROUPS], gl[G][GROUPS];
  __shared__ float go[GROUPS][FW_GQA_MAX_HEADDIM];
  if (kv_heads == 0 || heads % kv_heads != 0 || block_size == 0) return;
  const uint32_t group = heads / kv_heads;
  if (group > G || headdim > FW_GQA_MAX_HEADDIM) return;
  const uint32_t b = block_idx_x();
  const uint32_t t = b / kv_heads, kvh = b % kv_heads;
  if (t >= tokens) return;
  const uint32_t kv_dim = kv_heads * headdim;
  const uint32_t tid = thread_idx_x(), lane = tid & 31u, g = tid / 32u;
  const float* q = qkv + (uint64_t)t * stride + (uint64_t)kvh * group * headdim;
  for (uint32_t d = tid; d < group * headdim; d += THREADS) qs[d / headdim][d % headdim] = q[d];
  block_sync();
  uint64_t n = (uint64_t)q_pos[t] + 1;
  const uint64_t cap = (uint64_t)max_blocks * block_size;
  if (n > cap) n = cap;
  const uint32_t* table = block_tables + (uint64_t)q_seq[t] * max_blocks;
  float m[G], l[G], o[G][FW_GQA_LANE_DIMS];
#pragma unroll
  for (uint32_t h = 0; h < G; ++h) {
    m[h] = -__builtin_inff(), l[h] = 0.0f;
#pragma unroll
    for (uint32_t i = 0; i < FW_GQA_LANE_DIMS; ++i) o[h][i] = 0.0f;
  }
  float kn[FW_GQA_LANE_DIMS], vn[FW_GQA_LANE_DIMS];
  fw_att_load<FW_GQA_LANE_DIMS>(kn, vn, k_cache, v_cache, table, g, n, block_size, kv_dim, kvh, headdim, lane);
  for (uint64_t j = g; j < n; j += GROUPS) {
    float kv[FW_GQA_LANE_DIMS], vv[FW_GQA_LANE_DIMS];
#pragma unroll
    for (uint32_t i = 0; i < FW_GQA_LANE_DIMS; ++i) kv[i] = kn[i], vv[i] = vn[i];
    fw_att_load<FW_GQA_LANE_DIMS>(kn, vn, k_cache, v_cache, table, j + GROUPS, n, block_size, kv_dim, kvh, headdim,
                                  lane);
#pragma unroll
    for (uint32_t h = 0; h < G; ++h)
      if (h < group) fw_att_step<FW_GQA_LANE_DIMS>(m[h], l[h], o[h], qs[h], kv, vv, lane, headdim, scale);
  }
  if (lane == 0) {
#pragma unroll
    for (uint32_t h = 0; h < G; ++h) gm[h][g] = m[h], gl[h][g] = l[h];
  }
  // Each head merges as attention_decode does: its groups in order
  // through go (head_dim <= 128: one round), the weights recomputed per dim
  // (the same values, summed in the same order, as its wk).
  for (uint32_t h = 0; h < G; ++h) {
    if (h >= group) break;
    block_sync();  // gm and gl written, or every thread done reading go
#pragma unroll
    for (uint32_t i = 0; i < FW_GQA_LANE_DIMS; ++i) {
      const uint32_t e = lane + 32u * i;
      if (e < headdim) go[g][e] = o[h][i];
    }
    block_sync();
    float* orow = out + (uint64_t)t * heads * headdim + (uint64_t)(kvh * group + h) * headdim;
    for (uint32_t d = tid; d < headdim; d += THREADS) {
      float M = gm[h][0];
      for (uint32_t k = 1; k < GROUPS; ++k) M = fmax_f32(M, gm[h][k]);
      float L = 0.0f, acc = 0.0f;
      for (uint32_t k = 0; k < GROUPS; ++k) {
        const float w = gl[h][k] == 0.0f ? 0.0f : mf_expf(gm[h][k] - M);  // a group with no key has m = -inf
        L += gl[h][k] * w;
        acc += go[k][d] * w;
      }
      orow[d] = acc / L;
    }
  }
}

// =====================================================================
// attention_prefill_f32: attention_f32's arguments and semantics, for
// chunks of many query tokens (prefill): a block takes FW_ATTP_ROWS
// consecutive query tokens t0 .. t0+FW_ATTP_ROWS-1 of the step (fewer at
// the end) and one head h, and streams the keys through shared memory in
// tiles of FW_ATTP_KEYS, so each key's k and v rows are read once per tile
// of query tokens instead of once per query. The tokens of a tile may
// belong to different sequences and sit at any positions: the block walks
// the tile's runs of consecutive tokens with the same q_seq, and for each
// run streams that sequence's keys 0 .. max(q_pos)+1 of the run, each query
// masking the keys past its own position (a run of one token costs what
// attention_f32 does for it, so batched decode should keep attention_f32).
// Block FW_ATTP_THREADS (256), grid ceil(tokens / FW_ATTP_ROWS) * heads
// (block b: tile b / heads, head b % heads), head_dim <= FW_ATT_MAX_HEADDIM.
// Warp g owns rows g and g + FW_ATTP_WARPS of the tile (per row a running max, sum and
// output, the output's dims lane + 32i in registers). Per key tile: the
// scores, lane = key, over head_dim in chunks of FW_ATTP_DCHUNK dims staged
// in shared memory; the online-softmax update; then the weighted v rows,
// staged in the same chunks. Shared rows are stored XOR-swizzled
// (dim d of key k at k*FW_ATTP_DCHUNK + (d ^ k)) so that lanes reading one
// dim of 32 keys, or 32 dims of one key, hit 32 banks.
// =====================================================================
#define FW_ATTP_THREADS 256
#define FW_ATTP_ROWS 16
#define FW_ATTP_KEYS 32
#define FW_ATTP_DCHUNK 64
#define FW_ATTP_WARPS (FW_ATTP_THREADS / 32)
#define FW_ATTP_RPW (FW_ATTP_ROWS / FW_ATTP_WARPS)

// fw_group_max: the max of v over this thread's aligned group of 32 threads.
DEVICE float fw_group_max(float v) {
  for (uint32_t m = 16; m >= 1; m >>= 1) v = fmax_f32(v, lane_xor_f32(v, m));
  return v;
}

// fw_attp_stage: dims c0 .. c0+FW_ATTP_DCHUNK-1 of the rows of keys
// j0 .. j0+FW_ATTP_KEYS-1 (of kv head kvh, through the block table) into
// buf, swizzled; zeros past n or headdim.
template <typename KV>
DEVICE void fw_attp_stage(float* buf, const KV* cache, const uint32_t* table, uint64_t j0, uint64_t n,
                          uint32_t block_size, uint32_t kv_dim, uint32_t kvh, uint32_t headdim, uint32_t c0,
                          uint32_t tid) {
  for (uint32_t i = tid; i < FW_ATTP_KEYS * FW_ATTP_DCHUNK; i += FW_ATTP_THREADS) {
    const uint32_t k = i / FW_ATTP_DCHUNK, d = i % FW_ATTP_DCHUNK;
    const uint64_t j = j0 + k;
    float v = 0.0f;
    if (j < n && c0 + d < headdim) {
      const uint64_t slot = (uint64_t)table[j / block_size] * block_size + j % block_size;
      v = fw_kv_get(cache + slot * kv_dim + (uint64_t)kvh * headdim + c0 + d);
    }
    buf[k * FW_ATTP_DCHUNK + (d ^ k)] = v;
  }
}

template <typename KV>
DEVICE void attention_prefill(float* out, const float* qkv, const KV* k_cache, const KV* v_cache,
                              const uint32_t* q_seq, const uint32_t* q_pos, const uint32_t* block_tables,
                              uint32_t max_blocks, uint32_t block_size, uint32_t tokens, uint32_t heads,
                              uint32_t kv_heads, uint32_t headdim, uint32_t stride, float scale,
                              float (*qs)[FW_ATT_MAX_HEADDIM], float* buf, float (*ps)[FW_ATTP_KEYS]) {
  if (heads == 0 || kv_heads == 0 || kv_heads > heads || block_size == 0) return;
  if (headdim > FW_ATT_MAX_HEADDIM) return;
  const uint32_t b = block_idx_x();
  const uint64_t tile = b / heads;
  const uint32_t h = b % heads;
  const uint64_t t0 = tile * FW_ATTP_ROWS;
  if (t0 >= tokens) return;
  const uint32_t rows = tokens - t0 < FW_ATTP_ROWS ? (uint32_t)(tokens - t0) : FW_ATTP_ROWS;
  const uint32_t group = heads / kv_heads;
  uint32_t kvh = h / group;
  if (kvh >= kv_heads) kvh = kv_heads - 1;
  const uint32_t kv_dim = kv_heads * headdim;
  const uint32_t tid = thread_idx_x(), lane = tid & 31u, g = tid / 32u;
  const uint64_t cap = (uint64_t)max_blocks * block_size;
  for (uint32_t i = tid; i < FW_ATTP_ROWS * FW_ATT_MAX_HEADDIM; i += FW_ATTP_THREADS) {
    const uint32_t r = i / FW_ATT_MAX_HEADDIM, d = i % FW_ATT_MAX_HEADDIM;
    qs[r][d] = r < rows && d < headdim ? qkv[(t0 + r) * stride + (uint64_t)h * headdim + d] : 0.0f;
  }
  // Per owned row (r = g + FW_ATTP_WARPS*k): keys it attends to (0 past the tile) and
  // its running max, sum and output.
  uint64_t rn[FW_ATTP_RPW];
  float m[FW_ATTP_RPW], l[FW_ATTP_RPW], o[FW_ATTP_RPW][FW_ATT_LANE_DIMS];
#pragma unroll
  for (uint32_t k = 0; k < FW_ATTP_RPW; ++k) {
    const uint32_t r = g + FW_ATTP_WARPS * k;
    rn[k] = 0;
    if (r < rows) {
      rn[k] = (uint64_t)q_pos[t0 + r] + 1;
      if (rn[k] > cap) rn[k] = cap;
    }
    m[k] = -__builtin_inff(), l[k] = 0.0f;
#pragma unroll
    for (uint32_t i = 0; i < FW_ATT_LANE_DIMS; ++i) o[k][i] = 0.0f;
  }
  for (uint32_t rs = 0; rs < rows;) {
    // The run rs .. re-1 of tokens of sequence seq, and its widest key range.
    const uint32_t seq = q_seq[t0 + rs];
    uint32_t re = rs;
    uint64_t n = 0;
    while (re < rows && q_seq[t0 + re] == seq) {
      uint64_t nr = (uint64_t)q_pos[t0 + re] + 1;
      if (nr > cap) nr = cap;
      if (nr > n) n = nr;
      ++re;
    }
    const uint32_t* table = block_tables + (uint64_t)seq * max_blocks;
    for (uint64_t j0 = 0; j0 < n; j0 += FW_ATTP_KEYS) {
      float s[FW_ATTP_RPW];
#pragma unroll
      for (uint32_t k = 0; k < FW_ATTP_RPW; ++k) s[k] = 0.0f;
      for (uint32_t c0 = 0; c0 < headdim; c0 += FW_ATTP_DCHUNK) {
        block_sync();
        fw_attp_stage(buf, k_cache, table, j0, n, block_size, kv_dim, kvh, headdim, c0, tid);
        block_sync();
        const uint32_t dn = headdim - c0 < FW_ATTP_DCHUNK ? headdim - c0 : FW_ATTP_DCHUNK;
        // Every owned row, in the run or not (a row outside it discards its
        // scores), so that each staged key value is read once.
        for (uint32_t e = 0; e < dn; ++e) {
          const float kv = buf[lane * FW_ATTP_DCHUNK + (e ^ lane)];
#pragma unroll
          for (uint32_t k = 0; k < FW_ATTP_RPW; ++k) s[k] += qs[g + FW_ATTP_WARPS * k][c0 + e] * kv;
        }
      }
      // Online softmax over this tile's keys; lane = key j0 + lane.
#pragma unroll
      for (uint32_t k = 0; k < FW_ATTP_RPW; ++k) {
        const uint32_t r = g + FW_ATTP_WARPS * k;
        if (r < rs || r >= re) continue;
        const bool live = j0 + lane < rn[k];
        const float sc = live ? s[k] * scale : -__builtin_inff();
        const float mn = fmax_f32(m[k], fw_group_max(sc));
        float c = 1.0f, p = 0.0f;
        if (mn != -__builtin_inff()) {  // else no key yet: nothing to add
          c = mf_expf(m[k] - mn);
          p = live ? mf_expf(sc - mn) : 0.0f;
        }
        l[k] = l[k] * c + fw_group_sum(p);
#pragma unroll
        for (uint32_t i = 0; i < FW_ATT_LANE_DIMS; ++i) o[k][i] *= c;
        ps[r][lane] = p;
        m[k] = mn;
      }
      for (uint32_t c0 = 0; c0 < headdim; c0 += FW_ATTP_DCHUNK) {
        block_sync();
        fw_attp_stage(buf, v_cache, table, j0, n, block_size, kv_dim, kvh, headdim, c0, tid);
        block_sync();
#pragma unroll
        for (uint32_t k = 0; k < FW_ATTP_RPW; ++k) {
          const uint32_t r = g + FW_ATTP_WARPS * k;
          if (r < rs || r >= re) continue;
          // Keys past this row's own are skipped, not weighted by 0 (a NaN
          // in a later position's v must not reach an earlier query).
          const uint64_t lim = rn[k] > j0 ? rn[k] - j0 : 0;
          const uint32_t kn = lim < FW_ATTP_KEYS ? (uint32_t)lim : FW_ATTP_KEYS;
          float acc[FW_ATTP_DCHUNK / 32];  // dims c0 + lane + 32i
#pragma unroll
          for (uint32_t i = 0; i < FW_ATTP_DCHUNK / 32; ++i) acc[i] = 0.0f;
          for (uint32_t kk = 0; kk < kn; ++kk) {
            const float p = ps[r][kk];
#pragma unroll
            for (uint32_t i = 0; i < FW_ATTP_DCHUNK / 32; ++i)
              acc[i] += p * buf[kk * FW_ATTP_DCHUNK + ((lane + 32u * i) ^ kk)];
          }
#pragma unroll
          for (uint32_t i = 0; i < FW_ATTP_DCHUNK / 32; ++i) {
            const uint32_t oi = c0 / 32u + i;
#pragma unroll
            for (uint32_t q = 0; q < FW_ATT_LANE_DIMS; ++q)
              if (q == oi) o[k][q] += acc[i];
          }
        }
      }
    }
    rs = re;
  }
#pragma unroll
  for (uint32_t k = 0; k < FW_ATTP_RPW; ++k) {
    const uint32_t r = g + FW_ATTP_WARPS * k;
    if (r >= rows) continue;
    float* orow = out + (t0 + r) * heads * headdim + (uint64_t)h * headdim;
#pragma unroll
    for (uint32_t i = 0; i < FW_ATT_LANE_DIMS; ++i) {
      const uint32_t e = lane + 32u * i;
      if (e < headdim) orow[e] = o[k][i] / l[k];
    }
  }
}
#define FW_ATTENTION_PREFILL_KERNEL(NAME, KV)                                                                    \
  KERNEL KBOUNDS(FW_ATTP_THREADS) void NAME(float* out, const float* qkv, const KV* k_cache, const KV* v_cache,   \
                                            const uint32_t* q_seq, const uint32_t* q_pos,                        \
                                            const uint32_t* block_tables, uint32_t max_blocks,                   \
                                            uint32_t block_size, uint32_t tokens, uint32_t heads,                \
                                            uint32_t kv_heads, uint32_t headdim, uint32_t stride, float scale) {  \
    fw_early_start();                                                                                             \
    __shared__ float qs[FW_ATTP_ROWS][FW_ATT_MAX_HEADDIM];                                                        \
    __shared__ float buf[FW_ATTP_KEYS * FW_ATTP_DCHUNK];                                                          \
    __shared__ float ps[FW_ATTP_ROWS][FW_ATTP_KEYS];                                                              \
    attention_prefill<KV>(out, qkv, k_cache, v_cache, q_seq, q_pos, block_tables, max_blocks, block_size, tokens, \
                          heads, kv_heads, headdim, stride, scale, qs, buf, ps);                                  \
  }
FW_ATTENTION_PREFILL_KERNEL(attention_prefill_f32, float)
FW_ATTENTION_PREFILL_KERNEL(attention_prefill_f32_kv16, fw_f16)

// fw_decode_keys: how many keys query token t attends to: q_pos[t] + 1,
// at most what its block table holds (max_blocks * block_size) and at most
// limit (no cache holds 2^32 keys; a kernel indexing keys ahead of the
// current one asks for less, so those indices cannot wrap).
DEVICE uint32_t fw_decode_keys(const uint32_t* q_pos, uint32_t t, uint32_t max_blocks, uint32_t block_size,
                               uint32_t limit) {
  uint64_t n64 = (uint64_t)q_pos[t] + 1;
  const uint64_t cap = (uint64_t)max_blocks * block_size;
  if (n64 > cap) n64 = cap;
  return n64 > limit ? limit : (uint32_t)n64;
}

// FW_ABK_MAX_GROUP: the most query heads a kv head attention_warps_f32
// (and its relatives) take.
#define FW_ABK_MAX_GROUP 8

// =====================================================================
// attention_warps_f32: attention_f32's arguments and semantics, one block
// per query token and kv head (block b: query token b / kv_heads and kv head b % kv_heads, for
// the heads / kv_heads <= FW_ABK_MAX_GROUP query heads that share it;
// heads a multiple of kv_heads and 0 < head_dim <= FW_ATT_MAX_HEADDIM,
// else it writes nothing), with no block barrier before the end. Block
// FW_ATW_THREADS (256). The threads form key groups of LK lanes, a lane
// holding C float4 columns of q, k, v and the output for each head: for up
// to 4 heads LK is 8 at head_dim <= 64, 16 to 128, 32 to 256, with C 2;
// for 8 heads LK is 16 at head_dim <= 64 and 32 above, with C 1 (2 at
// 256), so that q and the outputs fit the same registers. Key group u of
// the block's U takes keys u, u + U, u + 2U, ... and runs its own online
// softmax. A group keeps its next R keys' k and v in registers, in flight
// (a ring; R = FW_ATW_RING, 2; 1 for 8 heads of 256 dims): key i's rows
// are loaded when key i - R is done and their block-table entry when key
// i - 2R is, so no load waits on the softmax and v is loaded with k. Each
// slot of the ring is its own copy of the step's code (registers are
// named statically), so R sets the code a block runs through: on the H200
// at 128 threads a ring of 8 made batch-32 decode 8% slower end to end
// than 4, and 2 was no faster than 4. A context of up
// to U R keys (64 at head_dim <= 64 and 4 heads) so costs about two
// memory round trips
// (the table, then k and v together). Per key, the heads'
// partial dots are reduced and scattered over the group's lanes
// (fw_atw_scores: G - 1 exchanges for G heads, then a butterfly over each
// head's LK / G lanes), so each lane updates one head's running max and
// sum with one exp (exp(s - max), or exp(old max - s) for a new max:
// mf_expf(0) is 1 exactly, so these are the values of taking both), and
// the factors are gathered back (fw_atw_gather: G - 1 exchanges) for the
// outputs. Fewer lanes a key spread that fixed cost (exp, exchanges,
// addresses) over more dims: on sm_90 (ptxas 12.9) the code of a step of
// 4 keys a warp at head_dim 64 and 4 heads is about 250 instructions,
// both sides of the new-max branch included. The sums are explicit fmas
// (rounded alike on every target). At the end the groups' states merge
// through shared memory, group by group in order, so the same inputs give
// the same bytes; its sums are grouped its own way, held to the CPU's
// attention. 256 threads, two blocks an SM (at most 128 registers a
// thread; ptxas 12.9, sm_90a: 128 with 8 bytes spilled for up to 4 heads,
// 124 with none for 8 heads up to 128 dims, 208 bytes spilled for 8 heads
// of 256 dims, a shape no model we know has): a batch of 32 sequences x 8
// kv heads is one wave of 256 blocks on the H200's 132 SMs either way,
// and the kernel is bound by its chain of dependent instructions, not by
// memory, so twice the key groups a block take half the steps each. At
// 128 threads (4 warps a block, a ring of 4, 230 registers) decode on the
// 1B shape ran 1.7% slower at batch 32 and 6% at batch 64 on the H200
// end to end.
// =====================================================================
#define FW_ATW_THREADS 256
// Two blocks an SM on NVPTX: at most 128 registers a thread. On AMDGPU
// (not measured) the bodies for 4 and 8 heads need more VGPRs than two
// 256-thread blocks a CU leave, so it asks for no occupancy there.
#if defined(__NVPTX__)
#define FW_ATW_BOUNDS KBOUNDS_OCC(FW_ATW_THREADS, 2)
#else
#define FW_ATW_BOUNDS KBOUNDS(FW_ATW_THREADS)
#endif
#define FW_ATW_RING 2                           // keys a key group has in flight (half that for 8 heads at 256 dims)
#define FW_ATW_MAX_UNITS (FW_ATW_THREADS / 8)   // key groups a block, at most
#define FW_ATW_PART (FW_ATW_THREADS * 32)       // floats of the groups' outputs merged a round at the end (32 KB)

// fw_atw_load4: dims 4c .. 4c+3 of row r (zeros past headdim); vec: r is
// 16-byte aligned and headdim a multiple of 4. The scalar path reads
// clamped addresses, so clang cannot merge it with the vector path's load
// (it would emit ld.v2 + ld + a branch for the fourth float on both
// paths).
DEVICE fw_f32x4 fw_atw_load4(const float* r, uint32_t c, uint32_t headdim, bool vec) {
  if (vec) return ((const fw_f32x4*)r)[c];
  fw_f32x4 v;
  const uint32_t last = headdim - 1u;
#pragma unroll
  for (uint32_t e = 0; e < 4; ++e) {
    const uint32_t d = 4u * c + e;
    const float x = r[d < last ? d : last];
    v.v[e] = d < headdim ? x : 0.0f;
  }
  return v;
}
// fw_atw_load4 of a half-precision cache row: 4 halves (8 bytes) widened
// exactly; the scalar path as the float one's.
struct __attribute__((aligned(8))) fw_u32x2 {
  uint32_t v[2];
};
DEVICE fw_f32x4 fw_atw_load4(const fw_f16* r, uint32_t c, uint32_t headdim, bool vec) {
  fw_f32x4 v;
  if (vec) {
    const fw_u32x2 w = ((const fw_u32x2*)r)[c];
    v.v[0] = tc_widen(fw_f16{}, w.v[0]), v.v[1] = tc_widen(fw_f16{}, w.v[0] >> 16);
    v.v[2] = tc_widen(fw_f16{}, w.v[1]), v.v[3] = tc_widen(fw_f16{}, w.v[1] >> 16);
    return v;
  }
  const uint32_t last = headdim - 1u;
#pragma unroll
  for (uint32_t e = 0; e < 4; ++e) {
    const uint32_t d = 4u * c + e;
    const float x = fw_kv_get(r + (d < last ? d : last));
    v.v[e] = d < headdim ? x : 0.0f;
  }
  return v;
}

// fw_atw_load: the C float4 columns sl, sl + LK, ... (zeros from cols on)
// of the k and v rows at offset row of the caches; all zeros for no key
// (has false: nothing is read).
template <uint32_t LK, uint32_t C, typename KV>
DEVICE void fw_atw_load(fw_f32x4* kv, fw_f32x4* vv, const KV* k_cache, const KV* v_cache, uint64_t row,
                        bool has, uint32_t headdim, uint32_t sl, uint32_t cols, bool vec) {
#pragma unroll
  for (uint32_t i = 0; i < C; ++i) {
    const uint32_t c = sl + LK * i;
    const bool in = has && c < cols;
    kv[i] = in ? fw_atw_load4(k_cache + row, c, headdim, vec) : fw_f32x4{{0.0f, 0.0f, 0.0f, 0.0f}};
    vv[i] = in ? fw_atw_load4(v_cache + row, c, headdim, vec) : fw_f32x4{{0.0f, 0.0f, 0.0f, 0.0f}};
  }
}

// fw_atw_scores: from this lane's partial dots d[0..G) (clobbered), the
// whole dot of head sl / (LK / G) over its aligned group of LK lanes
// (every lane of that head's LK / G gets it): each exchange halves the
// heads a lane holds (lanes with bit m keep the upper half and receive
// their partner's sums of it), then a butterfly over the head's lanes.
// The halves are swapped in place, not picked by a select: clang turns a
// select between d's elements into a variable index, which the NVPTX
// backend expands into chains of compares (the same for fw_atw_gather).
template <uint32_t G, uint32_t LK>
DEVICE float fw_atw_scores(float* d) {
#pragma unroll
  for (uint32_t V = G, m = LK / 2; V > 1; V /= 2, m /= 2) {
    if (thread_idx_x() & m) {
#pragma unroll
      for (uint32_t i = 0; i < V / 2; ++i) {
        const float x = d[i];
        d[i] = d[V / 2 + i], d[V / 2 + i] = x;
      }
    }
#pragma unroll
    for (uint32_t i = 0; i < V / 2; ++i) d[i] += lane_xor_f32(d[V / 2 + i], m);
  }
  float s = d[0];
#pragma unroll
  for (uint32_t m = LK / G / 2; m >= 1; m >>= 1) s += lane_xor_f32(s, m);
  return s;
}

// fw_atw_gather: y[h] = x of head h's lanes (x of this lane's head sl /
// (LK / G) in, every head's out), by G - 1 exchanges over the group of LK
// lanes, each doubling the heads a lane holds.
template <uint32_t G, uint32_t LK>
DEVICE void fw_atw_gather(float x, float* y) {
  y[0] = x;
#pragma unroll
  for (uint32_t V = 1, m = LK / G; V < G; V *= 2, m *= 2) {
#pragma unroll
    for (uint32_t i = 0; i < V; ++i) y[V + i] = lane_xor_f32(y[i], m);
    if (thread_idx_x() & m) {
#pragma unroll
      for (uint32_t i = 0; i < V; ++i) {
        const float x = y[i];
        y[i] = y[V + i], y[V + i] = x;
      }
    }
  }
}

// fw_qkv_value: column c of q|k|v row t (see rope_attention_warps_f32).
DEVICE float fw_qkv_value(const float* xt, const float* wt, uint64_t part, uint32_t parts, const float* bias,
                          uint32_t c) {
  if (!parts) return xt[c];
  float v = wt[c];
  for (uint32_t s = 1; s < parts; ++s) v += wt[s * part + c];
  if (bias) v += bias[c];
  return v;
}

// fw_rope_kv_head: block (t, kvh)'s share of rope_kv_store_f32, from qkv
// or the partials (see rope_attention_warps_f32).
template <typename KV>
DEVICE void fw_rope_kv_head(float* qkv, KV* k_cache, KV* v_cache, const uint32_t* pos, const float* inv_freq,
                            const uint32_t* slots, uint32_t num_slots, const float* ws, const float* bias,
                            uint32_t parts, uint32_t t, uint32_t kvh, uint32_t tokens, uint32_t heads,
                            uint32_t kv_heads, uint32_t headdim, uint32_t stride) {
  const uint32_t tid = thread_idx_x(), group = heads / kv_heads, half = headdim / 2, kv_dim = kv_heads * headdim;
  const float p = (float)pos[t];
  const uint32_t slot = slots[t];
  const bool store = slot < num_slots;
  float* xt = qkv + (uint64_t)t * stride;
  const float* wt = parts ? ws + (uint64_t)t * stride : nullptr;
  const uint64_t part = (uint64_t)tokens * stride;
  KV* kc = k_cache + (uint64_t)(store ? slot : 0u) * kv_dim + (uint64_t)kvh * headdim;
  KV* vc = v_cache + (uint64_t)(store ? slot : 0u) * kv_dim + (uint64_t)kvh * headdim;
  // Head hh < group is q's head kvh * group + hh; hh = group is k's head kvh.
#define FW_RAW_HEAD(hh) ((hh) < group ? (kvh * group + (hh)) * headdim : (heads + kvh) * headdim)
  for (uint32_t j = tid; j < (group + 1u) * half; j += FW_ATW_THREADS) {
    const uint32_t hh = j / half, i = j % half, c = FW_RAW_HEAD(hh);
    float sn, cs;
    mf_sincosf(inv_freq[i] * p, &sn, &cs);
    const float a = fw_qkv_value(xt, wt, part, parts, bias, c + i);
    const float b = fw_qkv_value(xt, wt, part, parts, bias, c + i + half);
    const float lo = a * cs - b * sn, hi = b * cs + a * sn;  // rope_f32's expressions
    xt[c + i] = lo;
    xt[c + i + half] = hi;
    if (store && hh == group) {
      fw_kv_put(kc + i, lo);
      fw_kv_put(kc + i + half, hi);
    }
  }
  // v's head, and an odd head_dim's last element of each head (which rope
  // leaves).
  const uint32_t vcol = (heads + kv_heads + kvh) * headdim;
  for (uint32_t j = tid; j < headdim; j += FW_ATW_THREADS) {
    const float v = fw_qkv_value(xt, wt, part, parts, bias, vcol + j);
    if (parts) xt[vcol + j] = v;
    if (store) fw_kv_put(vc + j, v);
    if (j < 2u * half) continue;
    for (uint32_t hh = 0; hh <= group; ++hh) {
      const uint32_t c = FW_RAW_HEAD(hh) + j;
      const float x = fw_qkv_value(xt, wt, part, parts, bias, c);
      if (parts) xt[c] = x;
      if (store && hh == group) fw_kv_put(kc + j, x);
    }
  }
#undef FW_RAW_HEAD
}

// fw_atw_merged: value d of head h's output, merge slot hh of part: its
// groups' outputs weighted by wt, added in group order, over the same
// weighted sum of their sums.
template <uint32_t U, uint32_t CW>
DEVICE float fw_atw_merged(const float* part, const float (*gl)[FW_ATW_MAX_UNITS],
                           const float (*wt)[FW_ATW_MAX_UNITS], uint32_t h, uint32_t hh, uint32_t d) {
  float a = 0.0f, l = 0.0f;
  for (uint32_t k = 0; k < U; ++k) {
    const float w = wt[h][k];
    l = mf_fma(gl[h][k], w, l);
    a = mf_fma(part[(hh * U + k) * CW + d], w, a);
  }
  return a / l;
}

// fw_wg_store_one: value v of row r, column col into an image of R rows in
// split's type (FW_SPLIT_WG_*): its hi and lo halves, wg_store8's bytes for
// it, so that the threads of a row's 8 values write it together.
DEVICE void fw_wg_store_one(fw_u32x4* xs, uint32_t split, float v, uint32_t R, uint32_t r, uint32_t col) {
  uint32_t hi, lo;
  if (split == FW_SPLIT_WG_BF16)
    tc_split<fw_bf16>(v, 0.0f, &hi, &lo);
  else
    tc_split<fw_f16>(v, 0.0f, &hi, &lo);
  fw_u32x4* stage = xs + (uint64_t)(col / 64u) * R * 16u;
  const uint32_t q = (col % 64u) / 8u, e = col % 8u;
  ((uint16_t*)(stage + wg_unit(r, q)))[e] = (uint16_t)hi;
  ((uint16_t*)(stage + wg_unit(R + r, q)))[e] = (uint16_t)lo;
}

// fw_atw_image_zeros: the zeros of o's image that block (t, kvh) of
// rope_attention_warps_f32 writes: its heads' columns of the rows past
// tokens that it owns (t + tokens, t + 2 tokens, ... below R), and for the
// last kv head the columns from heads * headdim to the end of the image's
// last stage, in those rows and in row t. A zero's hi and lo halves are
// zero bits in either type, so each 8-column unit is written as such.
DEVICE void fw_atw_image_zeros(fw_u32x4* xs, uint32_t t, uint32_t kvh, uint32_t tokens, uint32_t heads,
                               uint32_t kv_heads, uint32_t headdim) {
  const uint32_t R = wg_rows(tokens), in = heads * headdim, width = heads / kv_heads * headdim / 8u;
  const uint32_t c0 = kvh * width, c1 = kvh + 1u == kv_heads ? wg_stages(in) * 8u : c0 + width;
  const fw_u32x4 zero = {{0u, 0u, 0u, 0u}};
  for (uint32_t r = t; r < R; r += tokens)
    for (uint32_t c = c0 + thread_idx_x(); c < c1; c += FW_ATW_THREADS)
      if (r >= tokens || 8u * c >= in) {
        fw_u32x4* stage = xs + (uint64_t)(c / 8u) * R * 16u;
        stage[wg_unit(r, c % 8u)] = zero;
        stage[wg_unit(R + r, c % 8u)] = zero;
      }
}

// fw_atw_range: which of a token's keys a block of attention_warps takes,
// and where its output goes. block is the (t, kvh) block, t * kv_heads +
// kvh. The keys are first .. first + count - 1 (those the token has). With
// ml null the output is the attention itself; with ml (attention_split_f32)
// it is the range's share: for head h of token t, slot (t * heads + h) *
// ranges + index of out ([.., headdim]) gets the sum of the range's v rows
// weighted by exp(score - mx) and ml[2 slot], ml[2 slot + 1] get mx and the
// sum of those weights (-inf and 0 for a range past the token's keys).
struct fw_atw_range {
  uint32_t block, first, count, index, ranges;
  float* ml;
};

// fw_atw_whole: the range of attention_warps_f32's block: all its keys.
DEVICE fw_atw_range fw_atw_whole() { return fw_atw_range{block_idx_x(), 0u, 0xffffffffu, 0u, 1u, nullptr}; }

// attention_warps: the kernel's body for at most G query heads a kv head
// (a power of two up to LK), key groups of LK lanes, C columns a lane, a
// ring of R keys.
template <uint32_t G, uint32_t LK, uint32_t C, uint32_t R, typename KV>
DEVICE void attention_warps(float* out, const float* qkv, const KV* k_cache, const KV* v_cache,
                            const uint32_t* q_seq, const uint32_t* q_pos, const uint32_t* block_tables,
                            uint32_t max_blocks, uint32_t block_size, uint32_t tokens, uint32_t heads,
                            uint32_t kv_heads, uint32_t headdim, uint32_t stride, float scale,
                            float (*gm)[FW_ATW_MAX_UNITS], float (*gl)[FW_ATW_MAX_UNITS],
                            float (*wt)[FW_ATW_MAX_UNITS], float* part, fw_u32x4* xs, uint32_t split,
                            const fw_atw_range& rg) {
  constexpr uint32_t T = FW_ATW_THREADS, U = T / LK, HL = LK / G, CW = 4 * LK * C, HR = FW_ATW_PART / (U * CW);
  static_assert(G >= 1 && G <= LK && U <= FW_ATW_MAX_UNITS && HR >= 1 && G * U <= T,
                "heads over a group's lanes, key groups, merge rounds, weights");
  const uint32_t group = heads / kv_heads;
  const uint32_t b = rg.block, t = b / kv_heads, kvh = b % kv_heads;
  if (t >= tokens) return;
  const uint32_t tid = thread_idx_x(), u = tid / LK, sl = tid % LK, hl = sl / HL;  // hl: this lane's head
  const uint32_t kv_dim = kv_heads * headdim, cols = (headdim + 3u) / 4u;
  const bool vec = headdim % 4u == 0 && fw_aligned16(k_cache) && fw_aligned16(v_cache);
  // The range's keys jb .. jb+n-1 of the token's keys, clamped so that the
  // key indices 2R steps ahead cannot wrap; below, j counts from jb.
  const uint32_t all = fw_decode_keys(q_pos, t, max_blocks, block_size, 0xfffff000u);
  const uint32_t jb = rg.first < all ? rg.first : all;
  const uint32_t n = all - jb < rg.count ? all - jb : rg.count;
  const uint32_t* table = block_tables + (uint64_t)q_seq[t] * max_blocks;
  // Key j's table index and place in its block: a shift and a mask for a
  // power-of-two block size (the GPU backend's 16), else a division.
  const bool pow2 = (block_size & (block_size - 1u)) == 0u;
  const uint32_t bshift = pow2 ? 31u - (uint32_t)__builtin_clz(block_size) : 0u;
  const uint64_t head_off = (uint64_t)kvh * headdim;
#define FW_ATW_ROW(blk, j)                                                                                        \
  (((uint64_t)(blk) * block_size + (pow2 ? ((j) + jb) & (block_size - 1u) : ((j) + jb) % block_size)) * kv_dim +   \
   head_off)
#define FW_ATW_TABLE(j) table[pow2 ? ((j) + jb) >> bshift : ((j) + jb) / block_size]
  // The ring, before anything waits: keys u + U r (r < R) in flight, and
  // the table entries of the R keys after them.
  fw_f32x4 kv[R][C], vv[R][C];
  uint32_t tb[R];
#pragma unroll
  for (uint32_t r = 0; r < R; ++r) {
    const uint32_t j = u + U * r, j1 = j + U * R;
    const bool has = j < n;
    fw_atw_load<LK, C>(kv[r], vv[r], k_cache, v_cache, has ? FW_ATW_ROW(FW_ATW_TABLE(j), j) : 0u, has, headdim, sl,
                       cols, vec);
    tb[r] = j1 < n ? FW_ATW_TABLE(j1) : 0u;
  }
  const float* q = qkv + (uint64_t)t * stride + (uint64_t)kvh * group * headdim;
  const bool qvec = headdim % 4u == 0 && stride % 4u == 0 && fw_aligned16(qkv);
  fw_f32x4 qv[G][C], acc[G][C];
#pragma unroll
  for (uint32_t h = 0; h < G; ++h) {
#pragma unroll
    for (uint32_t i = 0; i < C; ++i) {
      const uint32_t c = sl + LK * i;
      qv[h][i] = h < group && c < cols ? fw_atw_load4(q + h * headdim, c, headdim, qvec)
                                       : fw_f32x4{{0.0f, 0.0f, 0.0f, 0.0f}};
      acc[h][i] = fw_f32x4{{0.0f, 0.0f, 0.0f, 0.0f}};
    }
  }
  float M = -__builtin_inff(), L = 0.0f;  // head hl's running max and sum over this group's keys
  // Every lane of a warp takes as many steps as its first key group has
  // keys (the exchanges need all 32); a group past its keys skips the
  // updates.
  const uint32_t u0 = tid / 32u * (32u / LK);
  const uint32_t steps = n > u0 ? (n - u0 - 1u) / U + 1u : 0u;
  for (uint32_t i0 = 0; i0 < steps; i0 += R) {
#pragma unroll
    for (uint32_t r = 0; r < R; ++r) {
      if (i0 + r >= steps) break;
      const uint32_t j = u + U * (i0 + r);
      const bool has = j < n;
      float d[G];
#pragma unroll
      for (uint32_t h = 0; h < G; ++h) {
        d[h] = 0.0f;
#pragma unroll
        for (uint32_t i = 0; i < C; ++i)
#pragma unroll
          for (uint32_t e = 0; e < 4; ++e) d[h] = mf_fma(qv[h][i].v[e], kv[r][i].v[e], d[h]);
      }
      const float s = fw_atw_scores<G, LK>(d) * scale;
      // Head hl's factor for what was summed before (c) and this key's
      // probability (p): one of them is 1, the other x, so the sums take
      // one fma each (rounded once on every target); x goes to the other
      // lanes with its sign bit set when it is c.
      float y = 0.0f;
      if (has) {
        const bool up = s > M;
        const float x = mf_expf(up ? M - s : s - M);
        L = up ? mf_fma(L, x, 1.0f) : L + x;
        if (up) M = s;
        y = fw_u2f(fw_f2u(x) | (up ? 0x80000000u : 0u));
      }
      float ys[G];
      fw_atw_gather<G, LK>(y, ys);
      if (has) {
#pragma unroll
        for (uint32_t h = 0; h < G; ++h) {
          if (h >= group) continue;
          const float x = fw_u2f(fw_f2u(ys[h]) & 0x7fffffffu);
          if (fw_f2u(ys[h]) >> 31) {  // a new max: acc x + v
#pragma unroll
            for (uint32_t i = 0; i < C; ++i)
#pragma unroll
              for (uint32_t e = 0; e < 4; ++e) acc[h][i].v[e] = mf_fma(acc[h][i].v[e], x, vv[r][i].v[e]);
          } else {  // acc + x v
#pragma unroll
            for (uint32_t i = 0; i < C; ++i)
#pragma unroll
              for (uint32_t e = 0; e < 4; ++e) acc[h][i].v[e] = mf_fma(x, vv[r][i].v[e], acc[h][i].v[e]);
          }
        }
      }
      // This slot takes the key R steps on, and the table entry of the
      // one R after that.
      const uint32_t j1 = j + U * R, j2 = j1 + U * R;
      fw_atw_load<LK, C>(kv[r], vv[r], k_cache, v_cache, j1 < n ? FW_ATW_ROW(tb[r], j1) : 0u, j1 < n, headdim, sl,
                         cols, vec);
      tb[r] = j2 < n ? FW_ATW_TABLE(j2) : 0u;
    }
  }
#undef FW_ATW_ROW
#undef FW_ATW_TABLE
  // The merge: each head's output is its groups' outputs weighted by
  // exp(group max - max), added in group order, over the same sum of the
  // groups' sums; HR heads' outputs a round through part.
  if (sl % HL == 0 && hl < group) gm[hl][u] = M, gl[hl][u] = L;
#pragma unroll
  for (uint32_t h0 = 0; h0 < G; h0 += HR) {
    if (h0 >= group) continue;  // block-uniform: the syncs below are reached by all
    if (h0 > 0) block_sync();   // every thread is done reading the last round
#pragma unroll
    for (uint32_t h = h0; h < h0 + HR && h < G; ++h) {
      if (h >= group) continue;
#pragma unroll
      for (uint32_t i = 0; i < C; ++i) {
        const uint32_t c = sl + LK * i;
        if (c >= cols) continue;
#pragma unroll
        for (uint32_t e = 0; e < 4; ++e) part[((h - h0) * U + u) * CW + 4u * c + e] = acc[h][i].v[e];
      }
    }
    block_sync();
    if (h0 == 0) {
      if (tid < group * U) {
        const uint32_t h = tid / U, k = tid % U;
        float mx = gm[h][0];
        for (uint32_t w = 1; w < U; ++w) mx = fmax_f32(mx, gm[h][w]);
        wt[h][k] = gl[h][k] == 0.0f ? 0.0f : mf_expf(gm[h][k] - mx);  // a group with no key has max -inf
      }
      block_sync();
    }
    const uint32_t nh = group - h0 < HR ? group - h0 : HR;
    for (uint32_t i = tid; i < nh * headdim; i += T) {
      const uint32_t hh = i / headdim, d = i % headdim, h = h0 + hh, col = (kvh * group + h) * headdim + d;
      if (rg.ml) {  // the range's share, for attention_merge_f32: not divided by its sum
        const uint64_t slot = ((uint64_t)t * heads + kvh * group + h) * rg.ranges + rg.index;
        float a = 0.0f, l = 0.0f, mx = gm[h][0];
        for (uint32_t k = 0; k < U; ++k) {
          a = mf_fma(part[(hh * U + k) * CW + d], wt[h][k], a);
          l = mf_fma(gl[h][k], wt[h][k], l);
          mx = fmax_f32(mx, gm[h][k]);
        }
        out[slot * headdim + d] = a;
        if (d == 0) rg.ml[2u * slot] = mx, rg.ml[2u * slot + 1u] = l;
        continue;
      }
      const float v = fw_atw_merged<U, CW>(part, gl, wt, h, hh, d);
      if (split)  // o's image (headdim % 8 == 0)
        fw_wg_store_one(xs, split, v, wg_rows(tokens), t, col);
      else
        out[(uint64_t)t * heads * headdim + col] = v;
    }
  }
}

// attention_warps_for: attention_warps with the body for the model's
// group and head_dim (the caller checked them).
template <typename KV>
DEVICE void attention_warps_for(float* out, const float* qkv, const KV* k_cache, const KV* v_cache,
                                const uint32_t* q_seq, const uint32_t* q_pos, const uint32_t* block_tables,
                                uint32_t max_blocks, uint32_t block_size, uint32_t tokens, uint32_t heads,
                                uint32_t kv_heads, uint32_t headdim, uint32_t stride, float scale,
                                float (*gm)[FW_ATW_MAX_UNITS], float (*gl)[FW_ATW_MAX_UNITS],
                                float (*wt)[FW_ATW_MAX_UNITS], float* part, fw_u32x4* xs, uint32_t split,
                                const fw_atw_range& rg) {
  const uint32_t group = heads / kv_heads;
#define FW_ATW_BODY(G, LK, C, R)                                                                                  \
  attention_warps<G, LK, C, R, KV>(out, qkv, k_cache, v_cache, q_seq, q_pos, block_tables, max_blocks, block_size, \
                                   tokens, heads, kv_heads, headdim, stride, scale, gm, gl, wt, part, xs, split, rg)
  // Bodies for up to 4 heads (the usual groups; MHA runs it with 1) or 8,
  // with key groups as wide as head_dim needs at 2 columns a lane (1 for 8
  // heads up to 128 dims; see attention_warps_f32).
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

#define FW_ATTENTION_WARPS_KERNEL(NAME, KV)                                                                    \
  KERNEL FW_ATW_BOUNDS void NAME(float* out, const float* qkv, const KV* k_cache, const KV* v_cache,            \
                                 const uint32_t* q_seq, const uint32_t* q_pos, const uint32_t* block_tables,    \
                                 uint32_t max_blocks, uint32_t block_size, uint32_t tokens, uint32_t heads,     \
                                 uint32_t kv_heads, uint32_t headdim, uint32_t stride, float scale) {           \
    fw_early_start();                                                                                           \
    __shared__ float gm[FW_ABK_MAX_GROUP][FW_ATW_MAX_UNITS], gl[FW_ABK_MAX_GROUP][FW_ATW_MAX_UNITS];             \
    __shared__ float wt[FW_ABK_MAX_GROUP][FW_ATW_MAX_UNITS]; /* each group's weight in the merge */             \
    __shared__ float part[FW_ATW_PART];                                                                         \
    if (kv_heads == 0 || heads % kv_heads != 0 || block_size == 0) return;                                      \
    const uint32_t group = heads / kv_heads;                                                                    \
    if (group > FW_ABK_MAX_GROUP || headdim == 0 || headdim > FW_ATT_MAX_HEADDIM) return;                       \
    attention_warps_for<KV>(out, qkv, k_cache, v_cache, q_seq, q_pos, block_tables, max_blocks, block_size,     \
                            tokens, heads, kv_heads, headdim, stride, scale, gm, gl, wt, part, nullptr, 0u,     \
                            fw_atw_whole());                                                                    \
  }
FW_ATTENTION_WARPS_KERNEL(attention_warps_f32, float)
FW_ATTENTION_WARPS_KERNEL(attention_warps_f32_kv16, fw_f16)

// =====================================================================
// rope_attention_warps_f32: rope_kv_store_f32 and attention_warps_f32 in
// one launch, for a decode step: tokens of distinct sequences (block (t,
// kvh) writes the only new key its attention reads). attention_warps_f32's
// arguments, then inv_freq, slots and num_slots (rope_kv_store_f32's), and
// ws, bias, parts: with parts >= 1 the q|k|v product left its partial
// sums (matmul_wg_W with FW_WG_LEAVE_PARTS; ws [parts, tokens, stride]),
// and each value of the row is ((ws[0, t, c] + ws[1, t, c] + ... in part
// order) + bias[c]), the bytes the product's last block would have
// written (bias null for none); with parts 0 qkv holds the row. Block (t,
// kvh) first makes its share of row t: q's heads kvh * group .., k's head
// kvh and v's head kvh; rotates q's and k's (rope_f32's expressions at
// q_pos[t]); writes the share back to qkv and stores k and v in slot
// slots[t] (skipped when >= num_slots): rope_kv_store_f32's bytes. Then,
// after a barrier, attention_warps_f32's body. (Issuing the body's loads
// of the cached keys before the rotation instead was 8% slower end to end
// on the H200.) Then xs, split: with split 0 the output
// goes to out; with FW_SPLIT_WG_BF16 or FW_SPLIT_WG_F16 (head_dim a
// multiple of 8, tokens at most FW_WG_MAX_ROWS; otherwise the kernel
// writes nothing) it goes, instead, to the image wg_split_x_W would make
// of out for the product after it (o, in = heads * head_dim), byte for
// byte, zero rows and columns included, and out is not written: one launch
// fewer a layer. Block FW_ATW_THREADS, grid tokens * kv_heads.
// =====================================================================
#define FW_ROPE_ATTENTION_WARPS_KERNEL(NAME, KV)                                                                 \
  KERNEL FW_ATW_BOUNDS void NAME(float* out, float* qkv, KV* k_cache, KV* v_cache, const uint32_t* q_seq,          \
                                 const uint32_t* q_pos, const uint32_t* block_tables, uint32_t max_blocks,         \
                                 uint32_t block_size, uint32_t tokens, uint32_t heads, uint32_t kv_heads,          \
                                 uint32_t headdim, uint32_t stride, float scale, const float* inv_freq,            \
                                 const uint32_t* slots, uint32_t num_slots, const float* ws, const float* bias,    \
                                 uint32_t parts, fw_u32x4* xs, uint32_t split) {                                   \
    fw_early_start();                                                                                              \
    __shared__ float gm[FW_ABK_MAX_GROUP][FW_ATW_MAX_UNITS], gl[FW_ABK_MAX_GROUP][FW_ATW_MAX_UNITS];                \
    __shared__ float wt[FW_ABK_MAX_GROUP][FW_ATW_MAX_UNITS];                                                       \
    __shared__ float part[FW_ATW_PART];                                                                            \
    if (kv_heads == 0 || heads % kv_heads != 0 || block_size == 0) return;                                         \
    const uint32_t group = heads / kv_heads;                                                                       \
    if (group > FW_ABK_MAX_GROUP || headdim == 0 || headdim > FW_ATT_MAX_HEADDIM) return;                          \
    if (split && (split < FW_SPLIT_WG_BF16 || split > FW_SPLIT_WG_F16 || headdim % 8u != 0 ||                      \
                  wg_rows(tokens) > FW_WG_MAX_ROWS))                                                               \
      return;                                                                                                      \
    const uint32_t b = block_idx_x(), t = b / kv_heads, kvh = b % kv_heads;                                        \
    if (t >= tokens) return;                                                                                       \
    fw_rope_kv_head<KV>(qkv, k_cache, v_cache, q_pos, inv_freq, slots, num_slots, ws, bias, parts, t, kvh, tokens, \
                        heads, kv_heads, headdim, stride);                                                         \
    block_sync(); /* the block's q heads in qkv and its new key and value in the caches */                         \
    attention_warps_for<KV>(out, qkv, k_cache, v_cache, q_seq, q_pos, block_tables, max_blocks, block_size,        \
                            tokens, heads, kv_heads, headdim, stride, scale, gm, gl, wt, part, xs, split,          \
                            fw_atw_whole());                                                                       \
    if (split) fw_atw_image_zeros(xs, t, kvh, tokens, heads, kv_heads, headdim);                                   \
  }
FW_ROPE_ATTENTION_WARPS_KERNEL(rope_attention_warps_f32, float)
FW_ROPE_ATTENTION_WARPS_KERNEL(rope_attention_warps_f32_kv16, fw_f16)

// =====================================================================
// attention_split_f32 and attention_merge_f32: attention_warps_f32's
// attention for a decode step whose blocks (tokens * kv_heads) are too few
// to fill the GPU over long contexts ("flash decoding"): each token's n
// keys are cut into ranges of c = ceil(n / ranges), and block ((t *
// kv_heads + kvh) * ranges + r) runs attention_warps_f32's body over range
// r (keys r c .. r c + c - 1) for the query heads of kv head kvh. The cut
// follows each token's own keys, not what its block table can hold, so a
// graph replayed as the context grows keeps its ranges full. It writes
// the range's share (fw_atw_range: the weighted sum of v rows, the max
// score and the sum of weights, per head) into part ([tokens * heads *
// ranges, headdim]) and ml ([tokens * heads * ranges, 2]).
// attention_merge_f32 then writes the attention: block (t * heads + h)
// takes the ranges in order, M the largest max of those with keys, and
// out[t, h] = sum_r part_r exp(max_r - M) / sum_r l_r exp(max_r - M). Each
// range's sums are attention_warps_f32's over its keys, so over one range
// the bytes differ from attention_warps_f32's only by the division's place.
// attention_split_f32: attention_warps_f32's arguments with part for out,
// then ml, ranges; grid tokens * kv_heads * ranges, block
// FW_ATW_THREADS. attention_merge_f32: out, part, ml, tokens, heads,
// headdim, ranges; grid tokens * heads, block FW_ATM_THREADS.
// =====================================================================
#define FW_ATTENTION_SPLIT_KERNEL(NAME, KV)                                                                    \
  KERNEL FW_ATW_BOUNDS void NAME(float* part, const float* qkv, const KV* k_cache, const KV* v_cache,           \
                                 const uint32_t* q_seq, const uint32_t* q_pos, const uint32_t* block_tables,    \
                                 uint32_t max_blocks, uint32_t block_size, uint32_t tokens, uint32_t heads,     \
                                 uint32_t kv_heads, uint32_t headdim, uint32_t stride, float scale, float* ml,  \
                                 uint32_t ranges) {                                                             \
    fw_early_start();                                                                                           \
    __shared__ float gm[FW_ABK_MAX_GROUP][FW_ATW_MAX_UNITS], gl[FW_ABK_MAX_GROUP][FW_ATW_MAX_UNITS];             \
    __shared__ float wt[FW_ABK_MAX_GROUP][FW_ATW_MAX_UNITS];                                                    \
    __shared__ float buf[FW_ATW_PART];                                                                          \
    if (kv_heads == 0 || heads % kv_heads != 0 || block_size == 0 || ranges == 0) return;                       \
    const uint32_t group = heads / kv_heads;                                                                    \
    if (group > FW_ABK_MAX_GROUP || headdim == 0 || headdim > FW_ATT_MAX_HEADDIM) return;                       \
    const uint32_t b = block_idx_x(), r = b % ranges, t = b / ranges / kv_heads;                                \
    if (t >= tokens) return;                                                                                    \
    const uint32_t n = fw_decode_keys(q_pos, t, max_blocks, block_size, 0xfffff000u);                           \
    const uint32_t c = n / ranges + (n % ranges != 0u);                                                         \
    const fw_atw_range rg{b / ranges, r * c, c, r, ranges, ml}; /* r c <= n + ranges: no wrap */                \
    attention_warps_for<KV>(part, qkv, k_cache, v_cache, q_seq, q_pos, block_tables, max_blocks, block_size,    \
                            tokens, heads, kv_heads, headdim, stride, scale, gm, gl, wt, buf, nullptr, 0u, rg); \
  }
FW_ATTENTION_SPLIT_KERNEL(attention_split_f32, float)
FW_ATTENTION_SPLIT_KERNEL(attention_split_f32_kv16, fw_f16)

#define FW_ATM_THREADS 128
KERNEL KBOUNDS(FW_ATM_THREADS) void attention_merge_f32(float* out, const float* part, const float* ml,
                                                        uint32_t tokens, uint32_t heads, uint32_t headdim,
                                                        uint32_t ranges) {
  fw_early_start();
  const uint32_t b = block_idx_x();
  if (b >= tokens * heads || ranges == 0) return;
  const float* pm = ml + (uint64_t)b * ranges * 2u;
  float M = -__builtin_inff();
  for (uint32_t r = 0; r < ranges; ++r)
    if (pm[2u * r + 1u] != 0.0f) M = fmax_f32(M, pm[2u * r]);  // a NaN sum is kept, and spreads
  float L = 0.0f;
  for (uint32_t r = 0; r < ranges; ++r) {
    const float l = pm[2u * r + 1u];
    if (l != 0.0f) L = mf_fma(l, mf_expf(pm[2u * r] - M), L);
  }
  const float* pr = part + (uint64_t)b * ranges * headdim;
  for (uint32_t d = thread_idx_x(); d < headdim; d += FW_ATM_THREADS) {
    float a = 0.0f;
    for (uint32_t r = 0; r < ranges; ++r) {
      const float l = pm[2u * r + 1u];
      if (l != 0.0f) a = mf_fma(pr[(uint64_t)r * headdim + d], mf_expf(pm[2u * r] - M), a);
    }
    out[(uint64_t)b * headdim + d] = a / L;
  }
}

// =====================================================================
// silu_mul_f32: out[r, i] = silu(gu[r, i]) * gu[r, inter + i] with
// silu(g) = g / (1 + exp(-g)) (accurate exp). Block FW_EW_THREADS; any grid
// (grid-stride over rows*inter), ceil(rows*inter / 256) at most 65535 is
// the intended one.
// =====================================================================
KERNEL KBOUNDS(FW_EW_THREADS) void silu_mul_f32(float* out, const float* gu, uint32_t rows, uint32_t inter) {
  fw_early_start();
  const uint64_t n = (uint64_t)rows * inter;
  for (uint64_t k = (uint64_t)block_idx_x() * FW_EW_THREADS + thread_idx_x(); k < n;
       k += grid_threads_x()) {
    const uint64_t r = k / inter, i = k % inter;
    const float g = gu[r * 2 * inter + i];
    out[k] = g / (1.0f + mf_expf(-g)) * gu[r * 2 * inter + inter + i];
  }
}

// =====================================================================
// add_f32: y[i] += x[i] for i < n. Block FW_EW_THREADS; any grid
// (grid-stride), ceil(n / 256) at most 65535 intended.
// =====================================================================
KERNEL KBOUNDS(FW_EW_THREADS) void add_f32(float* y, const float* x, uint32_t n) {
  fw_early_start();
  for (uint64_t k = (uint64_t)block_idx_x() * FW_EW_THREADS + thread_idx_x(); k < n;
       k += grid_threads_x())
    y[k] += x[k];
}

// =====================================================================
// copy_rows_f32: dst[i] = src[rows[i]] (dim values each) for i < n.
// Block FW_COPY_THREADS, grid n.
// =====================================================================
KERNEL KBOUNDS(FW_COPY_THREADS) void copy_rows_f32(float* dst, const float* src, const uint32_t* rows, uint32_t n,
                                                   uint32_t dim) {
  fw_early_start();
  const uint32_t i = block_idx_x();
  if (i >= n) return;
  const float* s = src + (uint64_t)rows[i] * dim;
  float* d = dst + (uint64_t)i * dim;
  for (uint32_t k = thread_idx_x(); k < dim; k += FW_COPY_THREADS) d[k] = s[k];
}

// ---- the per-dtype entry points ----
#define FW_WEIGHT_KERNELS(SUF, W)                                                                              \
  KERNEL KBOUNDS(FW_EMBED_THREADS) void embed_##SUF(float* out, const W* table, const uint32_t* tokens,       \
                                                    uint32_t n, uint32_t hidden, uint32_t vocab) {            \
    fw_early_start();                                                                                         \
    embed(out, table, tokens, n, hidden, vocab);                                                              \
  }                                                                                                           \
  KERNEL KBOUNDS(FW_NORM_THREADS) void rmsnorm_##SUF(float* out, const float* x, const W* weight,             \
                                                     uint32_t rows, uint32_t dim, float eps) {                \
    fw_early_start();                                                                                         \
    rmsnorm(out, x, weight, rows, dim, eps);                                                                  \
  }                                                                                                           \
  KERNEL KBOUNDS(FW_MM_THREADS) void matmul_##SUF(float* y, const float* x, const W* w, const float* bias,    \
                                                  uint32_t rows, uint32_t in, uint32_t out,                   \
                                                  uint32_t accumulate) {                                      \
    fw_early_start();                                                                                         \
    matmul(y, x, w, bias, rows, in, out, accumulate);                                                         \
  }                                                                                                           \
  KERNEL KBOUNDS(FW_MM_THREADS) void norm_matvec_##SUF(float* y, const float* x, const W* w, const float* bias, \
                                                       const W* nw, uint32_t in, uint32_t n, float eps,       \
                                                       uint32_t silu) {                                       \
    /* norm_matvec waits for the kernel ahead itself, after its first loads. */                               \
    __shared__ __attribute__((aligned(16))) float xn[FW_NV_MAX_IN];                                           \
    if (silu)                                                                                                 \
      norm_matvec<2>(y, x, w, bias, nw, in, n, eps, xn);                                                      \
    else                                                                                                      \
      norm_matvec<1>(y, x, w, bias, nw, in, n, eps, xn);                                                      \
  }

FW_WEIGHT_KERNELS(f32, float)
FW_WEIGHT_KERNELS(f16, fw_f16)
FW_WEIGHT_KERNELS(bf16, fw_bf16)

// matmul_tc_W: the 16-bit weight types only (see matmul_tc). NVPTX asks
// for 2 resident blocks per SM (128 registers a thread); on AMDGPU, where
// the MMA is emulated, 2 blocks' 48 KB of LDS would not fit gfx90a's 64 KB.
#if defined(__NVPTX__)
#define FW_TC_BOUNDS KBOUNDS_OCC(FW_TC_THREADS, 2)
#else
#define FW_TC_BOUNDS KBOUNDS(FW_TC_THREADS)
#endif
#define FW_TC_KERNEL(SUF, W)                                                                                   \
  KERNEL FW_TC_BOUNDS void matmul_tc_##SUF(float* y, const float* x, const W* w, const float* bias,             \
                                                     uint32_t rows, uint32_t in, uint32_t out,                \
                                                     uint32_t accumulate) {                                   \
    matmul_tc(y, x, w, bias, rows, in, out, accumulate);                                                      \
  }

FW_TC_KERNEL(f16, fw_f16)
FW_TC_KERNEL(bf16, fw_bf16)

#define FW_TCX_KERNELS(SUF, W)                                                                                 \
  KERNEL FW_TC_BOUNDS void tc_split_x_##SUF(fw_u32x4* xs, const float* x, uint32_t rows, uint32_t in) {         \
    tc_split_x<W>(xs, x, rows, in);                                                                            \
  }                                                                                                            \
  KERNEL FW_TC_BOUNDS void matmul_tcx_##SUF(float* y, const fw_u32x4* xs, const W* w, const float* bias,        \
                                            uint32_t rows, uint32_t in, uint32_t out, uint32_t accumulate) {   \
    matmul_tcx(y, xs, w, bias, rows, in, out, accumulate);                                                     \
  }

FW_TCX_KERNELS(f16, fw_f16)
FW_TCX_KERNELS(bf16, fw_bf16)

// wg_split_x_W, matmul_wg_W: the 16-bit weight types only (see matmul_wg).
#define FW_WG_KERNELS(SUF, W)                                                                                  \
  KERNEL KBOUNDS(FW_WG_THREADS) void wg_split_x_##SUF(fw_u32x4* xs, const float* x, uint32_t rows, uint32_t in) { \
    wg_split_x<W>(xs, x, rows, in);                                                                            \
  }                                                                                                            \
  KERNEL KBOUNDS(FW_WG_THREADS) void wg_silu_split_x_##SUF(fw_u32x4* xs, const float* gu, uint32_t rows,        \
                                                           uint32_t inter) {                                 \
    wg_split_x<W, true>(xs, gu, rows, inter);                                                                  \
  }                                                                                                            \
  KERNEL KBOUNDS(FW_WG_THREADS) void matmul_wg_##SUF(float* y, const fw_u32x4* xs, const W* w, const float* bias, \
                                                     float* ws, uint32_t* cnt, uint32_t rows, uint32_t in,     \
                                                     uint32_t out, uint32_t accumulate, uint32_t ks) {         \
    matmul_wg(y, xs, w, bias, ws, cnt, rows, in, out, accumulate, ks);                                         \
  }

FW_WG_KERNELS(f16, fw_f16)
FW_WG_KERNELS(bf16, fw_bf16)

// rmsnorm_fused_W: W is the norm weight's type (see rmsnorm_fused).
#define FW_NORM_FUSED_KERNEL(SUF, W)                                                                           \
  KERNEL KBOUNDS(FW_NORM_THREADS) void rmsnorm_fused_##SUF(float* out, float* x, const float* ws,            \
                                                           const float* bias, const W* weight, uint32_t parts, \
                                                           uint32_t rows, uint32_t dim, float eps,           \
                                                           fw_u32x4* xs, uint32_t split) {                   \
    rmsnorm_fused(out, x, ws, bias, weight, parts, rows, dim, eps, xs, split);                                \
  }
FW_NORM_FUSED_KERNEL(f32, float)
FW_NORM_FUSED_KERNEL(f16, fw_f16)
FW_NORM_FUSED_KERNEL(bf16, fw_bf16)

// matmul_wgs_W: matmul_wg_W's arguments, warp-specialized (see matmul_wgs).
#define FW_WGS_KERNEL(SUF, W)                                                                                  \
  KERNEL KBOUNDS(FW_WGS_THREADS) void matmul_wgs_##SUF(float* y, const fw_u32x4* xs, const W* w,               \
                                                       const float* bias, float* ws, uint32_t* cnt,            \
                                                       uint32_t rows, uint32_t in, uint32_t out,               \
                                                       uint32_t accumulate, uint32_t ks) {                     \
    matmul_wgs(y, xs, w, bias, ws, cnt, rows, in, out, accumulate, ks);                                        \
  }

FW_WGS_KERNEL(f16, fw_f16)
FW_WGS_KERNEL(bf16, fw_bf16)
