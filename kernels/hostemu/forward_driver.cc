// forward_driver.cc: runs kernels/src/forward.cu's kernels on the host under
// kernels/hostemu/hostemu.h, for package hostkern. Build (hostkern.Build
// does this):
//   clang++-19 -std=c++20 -O2 -pthread -ffp-contract=off \
//     -DHIPGO_HOST_SHIM='"<abs>/kernels/hostemu/hostemu.h"' -I kernels/src driver.cc
//
// Built with -DFW_METAL instead (hostkern.BuildMetal), it runs
// kernels/src/forward.metal: -I kernels/hostemu/metal (the stand-in
// metal_stdlib) -I <dir> (a copy of forward.metal with [[threadgroup(n)]]
// renamed [[threadgroup_index(n)]], since the stand-in defines the word
// threadgroup away) -Wno-unknown-attributes. The wrappers below pass the
// thread and threadgroup indices and the threadgroup buffers the way Metal
// does, under the .cu kernels' signatures, so the table is the same.
//
// Protocol, all words little-endian u32. stdin is a list of launches ended
// by a 0 word:
//   name_len, name bytes (padded to 4), grid, nargs, then per argument a kind
//   and its payload:
//     0 buffer: id, offset (bytes into the buffer), and, the first time an
//       id appears, shift (bytes past a 64-byte boundary), nbytes and the
//       bytes (padded to 4). Buffers live until the end of the input, so
//       later launches see what earlier ones wrote.
//     1 u32: the value;  2 f32: its bits;  3 null pointer
// At the end stdout gets every buffer's bytes (padded to 4) in id order
// (ids are 0, 1, 2, ... in order of first appearance). The kernel's block
// size is its FW_*_THREADS.
#ifdef FW_METAL
#include "fibers.h"
#include "forward.metal"
#include "metal_fibers.h"

// forward.cu's 16-byte unit, which the split-x kernels' signatures name.
struct __attribute__((aligned(16))) fw_u32x4 {
  uint32_t v[4];
};

// The Metal kernels under the .cu signatures. Threadgroup buffers are
// statics of the block that is running (blocks run one after another).
namespace fw_metal {
#define TG hostemu::tid, hostemu::bid
#define FW_METAL_WEIGHT(SUF, W)                                                                                   \
  void embed_##SUF(float* out, const W* table, const uint32_t* tokens, uint32_t n, uint32_t hidden, uint32_t vocab) { \
    ::embed_##SUF(out, table, tokens, n, hidden, vocab, TG);                                                      \
  }                                                                                                               \
  void rmsnorm_##SUF(float* out, const float* x, const W* weight, uint32_t rows, uint32_t dim, float eps) {       \
    static float part[FW_NORM_THREADS / 32];                                                                      \
    ::rmsnorm_##SUF(out, x, weight, rows, dim, eps, part, TG);                                                    \
  }                                                                                                               \
  void rmsnorm_fused_##SUF(float* out, float* x, const float* ws, const float* bias, const W* weight,            \
                           uint32_t parts, uint32_t rows, uint32_t dim, float eps, fw_u32x4* xs, uint32_t split) { \
    static float part[FW_NORM_THREADS / 32];                                                                      \
    ::rmsnorm_fused_##SUF(out, x, ws, bias, weight, parts, rows, dim, eps, (uint32_t*)xs, split, part, TG);       \
  }                                                                                                               \
  void matmul_##SUF(float* y, const float* x, const W* w, const float* bias, uint32_t rows, uint32_t in,          \
                    uint32_t out, uint32_t accumulate) {                                                          \
    alignas(16) static float xs[FW_MM_TK * FW_MM_PITCH], ws[FW_MM_TK * FW_MM_PITCH];                              \
    ::matmul_##SUF(y, x, w, bias, rows, in, out, accumulate, xs, ws, TG);                                         \
  }                                                                                                               \
  void norm_matvec_##SUF(float* y, const float* x, const W* w, const float* bias, const W* nw, uint32_t in,       \
                         uint32_t n, float eps, uint32_t silu) {                                                  \
    alignas(16) static float xn[FW_NV_MAX_IN];                                                                    \
    static float part[FW_NORM_THREADS / 32];                                                                      \
    ::norm_matvec_##SUF(y, x, w, bias, nw, in, n, eps, silu, xn, part, TG);                                       \
  }
FW_METAL_WEIGHT(f32, float)
FW_METAL_WEIGHT(f16, fw_f16)
FW_METAL_WEIGHT(bf16, fw_bf16)
#define FW_METAL_TC(SUF)                                                                                          \
  void matmul_tc_##SUF(float* y, const float* x, const fw_##SUF* w, const float* bias, uint32_t rows, uint32_t in,   \
                       uint32_t out, uint32_t accumulate) {                                                         \
    ::matmul_tc_##SUF(y, x, w, bias, rows, in, out, accumulate, TG);                                                \
  }
#define FW_METAL_TCX(SUF)                                                                                         \
  void tc_split_x_##SUF(fw_u32x4* xs, const float* x, uint32_t rows, uint32_t in) {                                \
    ::tc_split_x_##SUF((uint32_t*)xs, x, rows, in, TG);                                                             \
  }                                                                                                                 \
  void matmul_tcx_##SUF(float* y, const fw_u32x4* xs, const fw_##SUF* w, const float* bias, uint32_t rows,          \
                        uint32_t in, uint32_t out, uint32_t accumulate) {                                           \
    ::matmul_tcx_##SUF(y, (const uint32_t*)xs, w, bias, rows, in, out, accumulate, TG);                             \
  }
#define FW_METAL_WG(SUF)                                                                                          \
  void wg_split_x_##SUF(fw_u32x4* xs, const float* x, uint32_t rows, uint32_t in) {                                \
    ::wg_split_x_##SUF((uint32_t*)xs, x, rows, in, TG);                                                             \
  }                                                                                                                 \
  void wg_silu_split_x_##SUF(fw_u32x4* xs, const float* gu, uint32_t rows, uint32_t inter) {                       \
    ::wg_silu_split_x_##SUF((uint32_t*)xs, gu, rows, inter, TG);                                                    \
  }                                                                                                                 \
  void matmul_wg_##SUF(float* y, const fw_u32x4* xs, const fw_##SUF* w, const float* bias, float* ws, uint32_t* cnt, \
                       uint32_t rows, uint32_t in, uint32_t out, uint32_t accumulate, uint32_t ks) {                \
    ::matmul_wg_##SUF(y, (const uint32_t*)xs, w, bias, ws, cnt, rows, in, out, accumulate, ks, TG);                 \
  }                                                                                                                 \
  void matmul_wgs_##SUF(float* y, const fw_u32x4* xs, const fw_##SUF* w, const float* bias, float* ws, uint32_t* cnt, \
                        uint32_t rows, uint32_t in, uint32_t out, uint32_t accumulate, uint32_t ks) {               \
    ::matmul_wgs_##SUF(y, (const uint32_t*)xs, w, bias, ws, cnt, rows, in, out, accumulate, ks, TG);                \
  }
FW_METAL_TC(f16)
FW_METAL_TC(bf16)
FW_METAL_TCX(f16)
FW_METAL_TCX(bf16)
FW_METAL_WG(f16)
FW_METAL_WG(bf16)
void rope_f32(float* x, const uint32_t* pos, const float* inv_freq, uint32_t tokens, uint32_t heads, uint32_t headdim,
              uint32_t stride) {
  ::rope_f32(x, pos, inv_freq, tokens, heads, headdim, stride, TG);
}
void attention_gqa_f32(float* out, const float* qkv, const float* k_cache, const float* v_cache,
                       const uint32_t* q_seq, const uint32_t* q_pos, const uint32_t* block_tables, uint32_t max_blocks,
                       uint32_t block_size, uint32_t tokens, uint32_t heads, uint32_t kv_heads, uint32_t headdim,
                       uint32_t stride, float scale) {
  static float qs[FW_GQA_MAX_GROUP * FW_GQA_MAX_HEADDIM], gm[FW_GQA_MAX_GROUP * FW_GQA_GROUPS],
      gl[FW_GQA_MAX_GROUP * FW_GQA_GROUPS], go[FW_GQA_GROUPS * FW_GQA_MAX_HEADDIM];
  ::attention_gqa_f32(out, qkv, k_cache, v_cache, q_seq, q_pos, block_tables, max_blocks, block_size, tokens, heads,
                      kv_heads, headdim, stride, scale, qs, gm, gl, go, TG);
}
void attention_merge_f32(float* out, const float* part, const float* ml, uint32_t tokens, uint32_t heads,
                         uint32_t headdim, uint32_t ranges) {
  ::attention_merge_f32(out, part, ml, tokens, heads, headdim, ranges, TG);
}
static uint32_t grid_threads() { return hostemu::grid_blocks * hostemu::block_threads; }
void silu_mul_f32(float* out, const float* gu, uint32_t rows, uint32_t inter) {
  ::silu_mul_f32(out, gu, rows, inter, TG, grid_threads());
}
void add_f32(float* y, const float* x, uint32_t n) { ::add_f32(y, x, n, TG, grid_threads()); }
void copy_rows_f32(float* dst, const float* src, const uint32_t* rows, uint32_t n, uint32_t dim) {
  ::copy_rows_f32(dst, src, rows, n, dim, TG);
}

// The wrappers of the kernels over the KV cache, over an f32 cache (SUF
// empty, KV float) and over a half-precision one (SUF _kv16, KV fw_f16).
#define METAL_CACHE_KERNELS(SUF, KV) \
void kv_store_f32##SUF(KV* k_cache, KV* v_cache, const float* qkv, const uint32_t* slots, uint32_t tokens, \
                  uint32_t kv_dim, uint32_t k_off, uint32_t v_off, uint32_t stride, uint32_t num_slots) { \
  ::kv_store_f32##SUF(k_cache, v_cache, qkv, slots, tokens, kv_dim, k_off, v_off, stride, num_slots, TG); \
} \
void rope_kv_store_f32##SUF(float* qkv, KV* k_cache, KV* v_cache, const uint32_t* pos, const float* inv_freq, \
                       const uint32_t* slots, uint32_t tokens, uint32_t heads, uint32_t kv_heads, uint32_t headdim, \
                       uint32_t stride, uint32_t num_slots) { \
  ::rope_kv_store_f32##SUF(qkv, k_cache, v_cache, pos, inv_freq, slots, tokens, heads, kv_heads, headdim, stride, num_slots, \
                      TG); \
} \
void attention_f32##SUF(float* out, const float* qkv, const KV* k_cache, const KV* v_cache, const uint32_t* q_seq, \
                   const uint32_t* q_pos, const uint32_t* block_tables, uint32_t max_blocks, uint32_t block_size, \
                   uint32_t tokens, uint32_t heads, uint32_t kv_heads, uint32_t headdim, uint32_t stride, float scale) { \
  static float qs[FW_ATT_MAX_HEADDIM], gm[FW_ATT_GROUPS], gl[FW_ATT_GROUPS], go[FW_ATT_GROUPS * FW_ATT_MAX_HEADDIM]; \
  ::attention_f32##SUF(out, qkv, k_cache, v_cache, q_seq, q_pos, block_tables, max_blocks, block_size, tokens, heads, \
                  kv_heads, headdim, stride, scale, qs, gm, gl, go, TG); \
} \
void attention_warps_f32##SUF(float* out, const float* qkv, const KV* k_cache, const KV* v_cache, \
                         const uint32_t* q_seq, const uint32_t* q_pos, const uint32_t* block_tables, \
                         uint32_t max_blocks, uint32_t block_size, uint32_t tokens, uint32_t heads, uint32_t kv_heads, \
                         uint32_t headdim, uint32_t stride, float scale) { \
  static float gm[FW_ABK_MAX_GROUP * FW_ATW_MAX_UNITS], gl[FW_ABK_MAX_GROUP * FW_ATW_MAX_UNITS], \
      wt[FW_ABK_MAX_GROUP * FW_ATW_MAX_UNITS], part[FW_ATW_PART]; \
  ::attention_warps_f32##SUF(out, qkv, k_cache, v_cache, q_seq, q_pos, block_tables, max_blocks, block_size, tokens, heads, \
                        kv_heads, headdim, stride, scale, gm, gl, wt, part, TG); \
} \
void attention_split_f32##SUF(float* part, const float* qkv, const KV* k_cache, const KV* v_cache, \
                         const uint32_t* q_seq, const uint32_t* q_pos, const uint32_t* block_tables, \
                         uint32_t max_blocks, uint32_t block_size, uint32_t tokens, uint32_t heads, uint32_t kv_heads, \
                         uint32_t headdim, uint32_t stride, float scale, float* ml, uint32_t ranges) { \
  static float gm[FW_ABK_MAX_GROUP * FW_ATW_MAX_UNITS], gl[FW_ABK_MAX_GROUP * FW_ATW_MAX_UNITS], \
      wt[FW_ABK_MAX_GROUP * FW_ATW_MAX_UNITS], buf[FW_ATW_PART]; \
  ::attention_split_f32##SUF(part, qkv, k_cache, v_cache, q_seq, q_pos, block_tables, max_blocks, block_size, tokens, heads, \
                        kv_heads, headdim, stride, scale, ml, ranges, gm, gl, wt, buf, TG); \
} \
void rope_attention_warps_f32##SUF(float* out, float* qkv, KV* k_cache, KV* v_cache, const uint32_t* q_seq, \
                              const uint32_t* q_pos, const uint32_t* block_tables, uint32_t max_blocks, \
                              uint32_t block_size, uint32_t tokens, uint32_t heads, uint32_t kv_heads, \
                              uint32_t headdim, uint32_t stride, float scale, const float* inv_freq, \
                              const uint32_t* slots, uint32_t num_slots, const float* ws, const float* bias, \
                              uint32_t parts, fw_u32x4* xs, uint32_t split) { \
  static float gm[FW_ABK_MAX_GROUP * FW_ATW_MAX_UNITS], gl[FW_ABK_MAX_GROUP * FW_ATW_MAX_UNITS], \
      wt[FW_ABK_MAX_GROUP * FW_ATW_MAX_UNITS], part[FW_ATW_PART]; \
  ::rope_attention_warps_f32##SUF(out, qkv, k_cache, v_cache, q_seq, q_pos, block_tables, max_blocks, block_size, tokens, \
                             heads, kv_heads, headdim, stride, scale, inv_freq, slots, num_slots, ws, bias, parts, \
                             (uint32_t*)xs, split, gm, gl, wt, part, TG); \
} \
void attention_prefill_f32##SUF(float* out, const float* qkv, const KV* k_cache, const KV* v_cache, \
                           const uint32_t* q_seq, const uint32_t* q_pos, const uint32_t* block_tables, \
                           uint32_t max_blocks, uint32_t block_size, uint32_t tokens, uint32_t heads, \
                           uint32_t kv_heads, uint32_t headdim, uint32_t stride, float scale) { \
  static float qs[FW_ATTP_ROWS * FW_ATT_MAX_HEADDIM], buf[FW_ATTP_KEYS * FW_ATTP_DCHUNK], \
      ps[FW_ATTP_ROWS * FW_ATTP_KEYS]; \
  ::attention_prefill_f32##SUF(out, qkv, k_cache, v_cache, q_seq, q_pos, block_tables, max_blocks, block_size, tokens, \
                          heads, kv_heads, headdim, stride, scale, qs, buf, ps, TG); \
}
METAL_CACHE_KERNELS(, float)
METAL_CACHE_KERNELS(_kv16, fw_f16)
#undef METAL_CACHE_KERNELS
#undef TG
}  // namespace fw_metal
#define FWK(name) fw_metal::name
#else
#include "forward.cu"
#define FWK(name) ::name
#endif
#include "driver.h"

namespace {

using namespace hostemu_driver;

#define WEIGHT_KERNELS(SUF, W)                                                                              \
  {"embed_" #SUF,                                                                                           \
   {FW_EMBED_THREADS,                                                                                       \
    [](std::vector<Arg>& a) { FWK(embed_##SUF)(P<float>(a, 0), P<W>(a, 1), P<uint32_t>(a, 2), U(a, 3), U(a, 4), U(a, 5)); }}}, \
      {"rmsnorm_" #SUF,                                                                                     \
       {FW_NORM_THREADS,                                                                                    \
        [](std::vector<Arg>& a) { FWK(rmsnorm_##SUF)(P<float>(a, 0), P<float>(a, 1), P<W>(a, 2), U(a, 3), U(a, 4), F(a, 5)); }}}, \
      {"rmsnorm_fused_" #SUF,                                                                               \
       {FW_NORM_THREADS,                                                                                    \
        [](std::vector<Arg>& a) {                                                                           \
          FWK(rmsnorm_fused_##SUF)(P<float>(a, 0), P<float>(a, 1), P<float>(a, 2), P<float>(a, 3), P<W>(a, 4), \
                                   U(a, 5), U(a, 6), U(a, 7), F(a, 8), P<fw_u32x4>(a, 9), U(a, 10));        \
        }}},                                                                                                \
      {"matmul_" #SUF, {FW_MM_THREADS, [](std::vector<Arg>& a) {                                            \
                          FWK(matmul_##SUF)(P<float>(a, 0), P<float>(a, 1), P<W>(a, 2), P<float>(a, 3), U(a, 4), U(a, 5), \
                                       U(a, 6), U(a, 7));                                                   \
                        }}},                                                                                \
      {"norm_matvec_" #SUF, {FW_MM_THREADS, [](std::vector<Arg>& a) {                                       \
                               FWK(norm_matvec_##SUF)(P<float>(a, 0), P<float>(a, 1), P<W>(a, 2), P<float>(a, 3), \
                                                      P<W>(a, 4), U(a, 5), U(a, 6), F(a, 7), U(a, 8));      \
                             }}}

#define TC_KERNEL(SUF)                                                                                      \
  {"matmul_tc_" #SUF, {FW_TC_THREADS, [](std::vector<Arg>& a) {                                             \
                         FWK(matmul_tc_##SUF)(P<float>(a, 0), P<float>(a, 1), P<fw_##SUF>(a, 2), P<float>(a, 3), U(a, 4), \
                                         U(a, 5), U(a, 6), U(a, 7));                                        \
                       }}}

#define TCX_KERNELS(SUF)                                                                                    \
  {"tc_split_x_" #SUF, {FW_TC_THREADS, [](std::vector<Arg>& a) {                                            \
                          FWK(tc_split_x_##SUF)(P<fw_u32x4>(a, 0), P<float>(a, 1), U(a, 2), U(a, 3));       \
                        }}},                                                                                \
      {"matmul_tcx_" #SUF, {FW_TC_THREADS, [](std::vector<Arg>& a) {                                        \
                              FWK(matmul_tcx_##SUF)(P<float>(a, 0), P<fw_u32x4>(a, 1), P<fw_##SUF>(a, 2),   \
                                                    P<float>(a, 3), U(a, 4), U(a, 5), U(a, 6), U(a, 7));    \
                            }}}

#define WG_KERNELS(SUF)                                                                                     \
  {"wg_split_x_" #SUF, {FW_WG_THREADS, [](std::vector<Arg>& a) {                                            \
                          FWK(wg_split_x_##SUF)(P<fw_u32x4>(a, 0), P<float>(a, 1), U(a, 2), U(a, 3));       \
                        }}},                                                                                \
      {"wg_silu_split_x_" #SUF, {FW_WG_THREADS, [](std::vector<Arg>& a) {                                   \
                                   FWK(wg_silu_split_x_##SUF)(P<fw_u32x4>(a, 0), P<float>(a, 1), U(a, 2), U(a, 3)); \
                                 }}},                                                                       \
      {"matmul_wg_" #SUF, {FW_WG_THREADS, [](std::vector<Arg>& a) {                                         \
                             FWK(matmul_wg_##SUF)(P<float>(a, 0), P<fw_u32x4>(a, 1), P<fw_##SUF>(a, 2),     \
                                                  P<float>(a, 3), P<float>(a, 4), P<uint32_t>(a, 5), U(a, 6), \
                                                  U(a, 7), U(a, 8), U(a, 9), U(a, 10));                     \
                           }}},                                                                             \
      {"matmul_wgs_" #SUF, {FW_WGS_THREADS, [](std::vector<Arg>& a) {                                       \
                              FWK(matmul_wgs_##SUF)(P<float>(a, 0), P<fw_u32x4>(a, 1), P<fw_##SUF>(a, 2),   \
                                                    P<float>(a, 3), P<float>(a, 4), P<uint32_t>(a, 5),      \
                                                    U(a, 6), U(a, 7), U(a, 8), U(a, 9), U(a, 10));          \
                            }}}

// The kernels over the KV cache, over an f32 cache (SUF empty, KV float)
// and over a half-precision one (SUF _kv16, KV fw_f16).
#define CACHE_KERNELS(SUF, KV) \
    {"kv_store_f32" #SUF, \
     {FW_KV_THREADS, \
      [](std::vector<Arg>& a) { \
        FWK(kv_store_f32##SUF)(P<KV>(a, 0), P<KV>(a, 1), P<float>(a, 2), P<uint32_t>(a, 3), U(a, 4), U(a, 5), \
                     U(a, 6), U(a, 7), U(a, 8), U(a, 9)); \
      }}}, \
    {"rope_kv_store_f32" #SUF, \
     {FW_ROPE_THREADS, \
      [](std::vector<Arg>& a) { \
        FWK(rope_kv_store_f32##SUF)(P<float>(a, 0), P<KV>(a, 1), P<KV>(a, 2), P<uint32_t>(a, 3), P<float>(a, 4), \
                               P<uint32_t>(a, 5), U(a, 6), U(a, 7), U(a, 8), U(a, 9), U(a, 10), U(a, 11)); \
      }}}, \
    {"attention_f32" #SUF, \
     {FW_ATT_THREADS, \
      [](std::vector<Arg>& a) { \
        FWK(attention_f32##SUF)(P<float>(a, 0), P<float>(a, 1), P<KV>(a, 2), P<KV>(a, 3), P<uint32_t>(a, 4), \
                      P<uint32_t>(a, 5), P<uint32_t>(a, 6), U(a, 7), U(a, 8), U(a, 9), U(a, 10), U(a, 11), \
                      U(a, 12), U(a, 13), F(a, 14)); \
      }}}, \
    {"attention_warps_f32" #SUF, \
     {FW_ATW_THREADS, \
      [](std::vector<Arg>& a) { \
        FWK(attention_warps_f32##SUF)(P<float>(a, 0), P<float>(a, 1), P<KV>(a, 2), P<KV>(a, 3), P<uint32_t>(a, 4), \
                                 P<uint32_t>(a, 5), P<uint32_t>(a, 6), U(a, 7), U(a, 8), U(a, 9), U(a, 10), U(a, 11), \
                                 U(a, 12), U(a, 13), F(a, 14)); \
      }}}, \
    {"rope_attention_warps_f32" #SUF, \
     {FW_ATW_THREADS, \
      [](std::vector<Arg>& a) { \
        FWK(rope_attention_warps_f32##SUF)(P<float>(a, 0), P<float>(a, 1), P<KV>(a, 2), P<KV>(a, 3), \
                                      P<uint32_t>(a, 4), P<uint32_t>(a, 5), P<uint32_t>(a, 6), U(a, 7), U(a, 8), \
                                      U(a, 9), U(a, 10), U(a, 11), U(a, 12), U(a, 13), F(a, 14), P<float>(a, 15), \
                                      P<uint32_t>(a, 16), U(a, 17), P<float>(a, 18), P<float>(a, 19), U(a, 20), \
                                      P<fw_u32x4>(a, 21), U(a, 22)); \
      }}}, \
    {"attention_prefill_f32" #SUF, \
     {FW_ATTP_THREADS, \
      [](std::vector<Arg>& a) { \
        FWK(attention_prefill_f32##SUF)(P<float>(a, 0), P<float>(a, 1), P<KV>(a, 2), P<KV>(a, 3), P<uint32_t>(a, 4), \
                                   P<uint32_t>(a, 5), P<uint32_t>(a, 6), U(a, 7), U(a, 8), U(a, 9), U(a, 10), \
                                   U(a, 11), U(a, 12), U(a, 13), F(a, 14)); \
      }}}, \
    {"attention_split_f32" #SUF, \
     {FW_ATW_THREADS, \
      [](std::vector<Arg>& a) { \
        FWK(attention_split_f32##SUF)(P<float>(a, 0), P<float>(a, 1), P<KV>(a, 2), P<KV>(a, 3), P<uint32_t>(a, 4), \
                            P<uint32_t>(a, 5), P<uint32_t>(a, 6), U(a, 7), U(a, 8), U(a, 9), U(a, 10), U(a, 11), \
                            U(a, 12), U(a, 13), F(a, 14), P<float>(a, 15), U(a, 16)); \
      }}}

const std::map<std::string, Kernel> kernels = {
    TC_KERNEL(f16),
    TC_KERNEL(bf16),
    TCX_KERNELS(f16),
    TCX_KERNELS(bf16),
    WG_KERNELS(f16),
    WG_KERNELS(bf16),
    WEIGHT_KERNELS(f32, float),
    WEIGHT_KERNELS(f16, fw_f16),
    WEIGHT_KERNELS(bf16, fw_bf16),
    {"rope_f32",
     {FW_ROPE_THREADS,
      [](std::vector<Arg>& a) {
        FWK(rope_f32)(P<float>(a, 0), P<uint32_t>(a, 1), P<float>(a, 2), U(a, 3), U(a, 4), U(a, 5), U(a, 6));
      }}},
    {"attention_gqa_f32",
     {FW_GQA_THREADS,
      [](std::vector<Arg>& a) {
        FWK(attention_gqa_f32)(P<float>(a, 0), P<float>(a, 1), P<float>(a, 2), P<float>(a, 3), P<uint32_t>(a, 4),
                      P<uint32_t>(a, 5), P<uint32_t>(a, 6), U(a, 7), U(a, 8), U(a, 9), U(a, 10), U(a, 11),
                      U(a, 12), U(a, 13), F(a, 14));
      }}},
    CACHE_KERNELS(, float),
    CACHE_KERNELS(_kv16, fw_f16),
    {"attention_merge_f32",
     {FW_ATM_THREADS,
      [](std::vector<Arg>& a) {
        FWK(attention_merge_f32)(P<float>(a, 0), P<float>(a, 1), P<float>(a, 2), U(a, 3), U(a, 4), U(a, 5), U(a, 6));
      }}},
    {"silu_mul_f32",
     {FW_EW_THREADS, [](std::vector<Arg>& a) { FWK(silu_mul_f32)(P<float>(a, 0), P<float>(a, 1), U(a, 2), U(a, 3)); }}},
    {"add_f32", {FW_EW_THREADS, [](std::vector<Arg>& a) { FWK(add_f32)(P<float>(a, 0), P<float>(a, 1), U(a, 2)); }}},
    {"copy_rows_f32",
     {FW_COPY_THREADS,
      [](std::vector<Arg>& a) { FWK(copy_rows_f32)(P<float>(a, 0), P<float>(a, 1), P<uint32_t>(a, 2), U(a, 3), U(a, 4)); }}},
};

}  // namespace

int main() { return hostemu_driver::run(kernels); }
