// qforward.metal: the kernels of qforward.cu (the products and the embedding
// gather over GGUF's Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K and Q6_K blocks, and
// scatter_cols_f32) in MSL, kept parallel to it: same kernel names,
// argument lists, launch shapes (QF_*_THREADS blocks, the products' grid
// rules) and arithmetic in the same order. Differences are spelling only,
// as in forward.metal:
//   - thread and threadgroup indices arrive as Metal attributes and are
//     passed down; shared memory is threadgroup buffers sized in
//     /* hipgo: N bytes */ comments; the 32-lane butterfly is
//     simd_shuffle_xor (32-wide SIMD groups of consecutive threads);
//   - contraction is off for the whole file (#pragma clang fp contract(off),
//     as sampling.metal): the decoders' products round before their adds,
//     as qforward.cu gets with its per-decoder pragmas and mul.rn, so the
//     decoded weights equal quant.DequantizeRow's bit for bit; the
//     products of the matmuls are explicit fma, as there;
//   - x is read with packed vectors (element alignment): qforward.cu's
//     16-byte loads and its four scalar loads read the same values, so
//     the results do not depend on alignment on either side;
//   - the block formats are structs with enum sizes and static unit(),
//     load() and piece() decoders; the helpers carry a qf_ prefix.
// Each kernel declares its 256-thread block with
// [[max_total_threads_per_threadgroup(256)]]. Weights are a byte pointer to
// the GGUF tensor's blocks, 4-byte aligned (16- and 32-bit loads inside the
// blocks, as qforward.cu). Compiled at run time with newLibraryWithSource,
// fast math off. model/internal/hostkern compiles this file as C++ on the
// host (kernels/hostemu/metal/metal_stdlib) and checks it against
// quant.DequantizeRow, the CPU matmul and qforward.cu's host build; it has
// never run on Apple hardware.
#include <metal_stdlib>
using namespace metal;

#pragma clang fp contract(off)

#define QF_EMBED_THREADS 256
#define QF_MM_THREADS 256
#define QF_SCATTER_THREADS 256
#define QF_DEQUANT_THREADS 256

#define QF_MM_GROUPS (QF_MM_THREADS / 32)
#define QF_MM_VEC_ROWS 8
#define QF_MM_GEMM_ROWS 64
#define QF_MM_TILE 64
#define QF_UNIT 32
// Pieces a lane loads before it decodes any (qforward.cu's QF_MV_UNROLL).
#define QF_MV_UNROLL 4
// Row pitch of the tiled path's staged units (xs[k][r], ws[k][o]).
#define QF_MM_PITCH (QF_MM_TILE + 4)

static inline float qf_u2f(uint x) { return as_type<float>(x); }
static inline uint qf_f2u(float x) { return as_type<uint>(x); }
static inline float qf_f16(uint h) {
  const uint sign = (h & 0x8000u) << 16;
  const uint ex = (h >> 10) & 0x1fu;
  const uint man = h & 0x3ffu;
  if (ex == 0) return qf_u2f(qf_f2u((float)man * 5.96046448e-08f) | sign);
  if (ex == 31) return qf_u2f(sign | 0x7f800000u | (man << 13));
  return qf_u2f(sign | ((ex + 112u) << 23) | (man << 13));
}
static inline float qf_mul(float a, float b) { return a * b; }
// (float)((int)q - bias), as qforward.cu's qf_int computes it.
static inline float qf_int(uint q, uint bias) { return (float)((int)q - (int)bias); }
static inline uint qf_ld16(device const uchar* p) { return *(device const ushort*)p; }
static inline uint qf_ld32(device const uchar* p) { return *(device const uint*)p; }

// ---- block formats (see qforward.cu for each layout) ----
struct qf_q4_0 {
  enum : uint { BYTES = 18, UNITS = 1 };
  static void unit(device const uchar* b, uint, thread float* v) {
    const float d = qf_f16(qf_ld16(b));
#pragma unroll
    for (uint i = 0; i < 8; ++i) {
      const uint w = qf_ld16(b + 2 + 2 * i);
#pragma unroll
      for (uint k = 0; k < 2; ++k) {
        const uint q = (w >> (8 * k)) & 0xffu;
        v[2 * i + k] = d * (float)((int)(q & 15u) - 8);
        v[2 * i + k + 16] = d * (float)((int)(q >> 4) - 8);
      }
    }
  }
  enum : uint { PIECES = 4 };
  struct Raw {
    uint d, q;
  };
  static Raw load(device const uchar* b, uint p) {
    return {qf_ld16(b), qf_ld16(b + 2 + 4 * p) | qf_ld16(b + 4 + 4 * p) << 16};
  }
  static uint off0(uint p) { return 4 * p; }
  static uint off1(uint p) { return 16 + 4 * p; }
  static void piece(thread const Raw& r, uint, thread float* v) {
    const float d = qf_f16(r.d);
#pragma unroll
    for (uint k = 0; k < 4; ++k) {
      const uint q = (r.q >> (8 * k)) & 0xffu;
      v[k] = d * qf_int(q & 15u, 8);
      v[k + 4] = d * qf_int(q >> 4, 8);
    }
  }
};

struct qf_q4_1 {
  enum : uint { BYTES = 20, UNITS = 1 };
  static void unit(device const uchar* b, uint, thread float* v) {
    const float d = qf_f16(qf_ld16(b)), m = qf_f16(qf_ld16(b + 2));
#pragma unroll
    for (uint i = 0; i < 4; ++i) {
      const uint w = qf_ld32(b + 4 + 4 * i);
#pragma unroll
      for (uint k = 0; k < 4; ++k) {
        const uint q = (w >> (8 * k)) & 0xffu;
        v[4 * i + k] = qf_mul(d, (float)(q & 15u)) + m;
        v[4 * i + k + 16] = qf_mul(d, (float)(q >> 4)) + m;
      }
    }
  }
  enum : uint { PIECES = 4 };
  struct Raw {
    uint dm, q;
  };
  static Raw load(device const uchar* b, uint p) { return {qf_ld32(b), qf_ld32(b + 4 + 4 * p)}; }
  static uint off0(uint p) { return 4 * p; }
  static uint off1(uint p) { return 16 + 4 * p; }
  static void piece(thread const Raw& r, uint, thread float* v) {
    const float d = qf_f16(r.dm & 0xffffu), m = qf_f16(r.dm >> 16);
#pragma unroll
    for (uint k = 0; k < 4; ++k) {
      const uint q = (r.q >> (8 * k)) & 0xffu;
      v[k] = qf_mul(d, qf_int(q & 15u, 0)) + m;
      v[k + 4] = qf_mul(d, qf_int(q >> 4, 0)) + m;
    }
  }
};

struct qf_q5_0 {
  enum : uint { BYTES = 22, UNITS = 1 };
  static void unit(device const uchar* b, uint, thread float* v) {
    const float d = qf_f16(qf_ld16(b));
    const uint qh = qf_ld16(b + 2) | qf_ld16(b + 4) << 16;
    for (uint i = 0; i < 8; ++i) {
      const uint w = qf_ld16(b + 6 + 2 * i);
      for (uint k = 0; k < 2; ++k) {
        const uint j = 2 * i + k, q = (w >> (8 * k)) & 0xffu;
        v[j] = qf_int((q & 15u) | ((qh >> j) & 1u) << 4, 16) * d;
        v[j + 16] = qf_int((q >> 4) | ((qh >> (j + 16)) & 1u) << 4, 16) * d;
      }
    }
  }
  enum : uint { PIECES = 4 };
  struct Raw {
    uint d, qh, q;
  };
  static Raw load(device const uchar* b, uint p) {
    return {qf_ld16(b), qf_ld16(b + 2) | qf_ld16(b + 4) << 16, qf_ld16(b + 6 + 4 * p) | qf_ld16(b + 8 + 4 * p) << 16};
  }
  static uint off0(uint p) { return 4 * p; }
  static uint off1(uint p) { return 16 + 4 * p; }
  static void piece(thread const Raw& r, uint p, thread float* v) {
    const float d = qf_f16(r.d);
    for (uint k = 0; k < 4; ++k) {
      const uint j = 4 * p + k, q = (r.q >> (8 * k)) & 0xffu;
      v[k] = qf_int((q & 15u) | ((r.qh >> j) & 1u) << 4, 16) * d;
      v[k + 4] = qf_int((q >> 4) | ((r.qh >> (j + 16)) & 1u) << 4, 16) * d;
    }
  }
};

struct qf_q5_1 {
  enum : uint { BYTES = 24, UNITS = 1 };
  static void unit(device const uchar* b, uint, thread float* v) {
    const float d = qf_f16(qf_ld16(b)), m = qf_f16(qf_ld16(b + 2));
    const uint qh = qf_ld32(b + 4);
    for (uint i = 0; i < 4; ++i) {
      const uint w = qf_ld32(b + 8 + 4 * i);
      for (uint k = 0; k < 4; ++k) {
        const uint j = 4 * i + k, q = (w >> (8 * k)) & 0xffu;
        v[j] = qf_mul(qf_int((q & 15u) | ((qh >> j) & 1u) << 4, 0), d) + m;
        v[j + 16] = qf_mul(qf_int((q >> 4) | ((qh >> (j + 16)) & 1u) << 4, 0), d) + m;
      }
    }
  }
  enum : uint { PIECES = 4 };
  struct Raw {
    uint dm, qh, q;
  };
  static Raw load(device const uchar* b, uint p) { return {qf_ld32(b), qf_ld32(b + 4), qf_ld32(b + 8 + 4 * p)}; }
  static uint off0(uint p) { return 4 * p; }
  static uint off1(uint p) { return 16 + 4 * p; }
  static void piece(thread const Raw& r, uint p, thread float* v) {
    const float d = qf_f16(r.dm & 0xffffu), m = qf_f16(r.dm >> 16);
    for (uint k = 0; k < 4; ++k) {
      const uint j = 4 * p + k, q = (r.q >> (8 * k)) & 0xffu;
      v[k] = qf_mul(qf_int((q & 15u) | ((r.qh >> j) & 1u) << 4, 0), d) + m;
      v[k + 4] = qf_mul(qf_int((q >> 4) | ((r.qh >> (j + 16)) & 1u) << 4, 0), d) + m;
    }
  }
};

struct qf_q8_0 {
  enum : uint { BYTES = 34, UNITS = 1 };
  static void unit(device const uchar* b, uint, thread float* v) {
    const float d = qf_f16(qf_ld16(b));
#pragma unroll
    for (uint i = 0; i < 16; ++i) {
      const uint w = qf_ld16(b + 2 + 2 * i);
      v[2 * i] = (float)(char)(w & 0xffu) * d;
      v[2 * i + 1] = (float)(char)(w >> 8) * d;
    }
  }
  enum : uint { PIECES = 4 };
  struct Raw {
    uint d, q0, q1;
  };
  static Raw load(device const uchar* b, uint p) {
    device const uchar* q = b + 2 + 8 * p;
    return {qf_ld16(b), qf_ld16(q) | qf_ld16(q + 2) << 16, qf_ld16(q + 4) | qf_ld16(q + 6) << 16};
  }
  static uint off0(uint p) { return 8 * p; }
  static uint off1(uint p) { return 8 * p + 4; }
  static void piece(thread const Raw& r, uint, thread float* v) {
    const float d = qf_f16(r.d);
#pragma unroll
    for (uint k = 0; k < 4; ++k) {
      v[k] = qf_int(((r.q0 >> (8 * k)) & 0xffu) ^ 0x80u, 128) * d;
      v[k + 4] = qf_int(((r.q1 >> (8 * k)) & 0xffu) ^ 0x80u, 128) * d;
    }
  }
};

static inline void qf_scale_min(device const uchar* s, uint j, thread uint* sc, thread uint* m) {
  if (j < 4) {
    *sc = s[j] & 63u;
    *m = s[j + 4] & 63u;
  } else {
    *sc = (s[j + 4] & 0xfu) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

static inline void qf_scale_min_w(uint s0, uint s1, uint s2, uint j, thread uint* sc, thread uint* m) {
  const uint sh = 8 * (j & 3u);
  const uint a = (s0 >> sh) & 0xffu, b = (s1 >> sh) & 0xffu, c = (s2 >> sh) & 0xffu;
  if (j < 4) {
    *sc = a & 63u;
    *m = b & 63u;
  } else {
    *sc = (c & 0xfu) | ((a >> 6) << 4);
    *m = (c >> 4) | ((b >> 6) << 4);
  }
}

struct qf_q4_k {
  enum : uint { BYTES = 144, UNITS = 8 };
  static void unit(device const uchar* b, uint j, thread float* v) {
    const float d = qf_f16(qf_ld16(b)), dmin = qf_f16(qf_ld16(b + 2));
    uint sc, m;
    qf_scale_min(b + 4, j, &sc, &m);
    const float d1 = d * (float)sc, m1 = qf_mul(dmin, (float)m);
    device const uchar* qs = b + 16 + 32 * (j / 2);
    const uint sh = (j & 1u) * 4u;
#pragma unroll
    for (uint i = 0; i < 8; ++i) {
      const uint w = qf_ld32(qs + 4 * i) >> sh;
#pragma unroll
      for (uint k = 0; k < 4; ++k) v[4 * i + k] = qf_mul(d1, (float)((w >> (8 * k)) & 15u)) - m1;
    }
  }
  enum : uint { PIECES = 32 };
  struct Raw {
    uint dm, s0, s1, s2, q;
  };
  static Raw load(device const uchar* b, uint p) {
    return {qf_ld32(b), qf_ld32(b + 4), qf_ld32(b + 8), qf_ld32(b + 12), qf_ld32(b + 16 + 4 * p)};
  }
  static uint off0(uint p) { return 64 * (p / 8) + 4 * (p % 8); }
  static uint off1(uint p) { return off0(p) + 32; }
  static void piece(thread const Raw& r, uint p, thread float* v) {
    const float d = qf_f16(r.dm & 0xffffu), dmin = qf_f16(r.dm >> 16);
#pragma unroll
    for (uint h = 0; h < 2; ++h) {
      uint sc, m;
      qf_scale_min_w(r.s0, r.s1, r.s2, 2 * (p / 8) + h, &sc, &m);
      const float d1 = d * qf_int(sc, 0), m1 = qf_mul(dmin, qf_int(m, 0));
#pragma unroll
      for (uint k = 0; k < 4; ++k) v[4 * h + k] = qf_mul(d1, qf_int((r.q >> (8 * k + 4 * h)) & 15u, 0)) - m1;
    }
  }
};

struct qf_q5_k {
  enum : uint { BYTES = 176, UNITS = 8 };
  static void unit(device const uchar* b, uint j, thread float* v) {
    const float d = qf_f16(qf_ld16(b)), dmin = qf_f16(qf_ld16(b + 2));
    uint sc, m;
    qf_scale_min(b + 4, j, &sc, &m);
    const float d1 = d * (float)sc, m1 = qf_mul(dmin, (float)m);
    device const uchar* qh = b + 16;
    device const uchar* qs = b + 48 + 32 * (j / 2);
    const uint sh = (j & 1u) * 4u;
#pragma unroll
    for (uint i = 0; i < 8; ++i) {
      const uint w = qf_ld32(qs + 4 * i) >> sh, h = qf_ld32(qh + 4 * i) >> j;
#pragma unroll
      for (uint k = 0; k < 4; ++k) {
        const uint q = ((w >> (8 * k)) & 15u) | (((h >> (8 * k)) & 1u) << 4);
        v[4 * i + k] = qf_mul(d1, (float)q) - m1;
      }
    }
  }
  enum : uint { PIECES = 32 };
  struct Raw {
    uint dm, s0, s1, s2, h, q;
  };
  static Raw load(device const uchar* b, uint p) {
    return {qf_ld32(b), qf_ld32(b + 4), qf_ld32(b + 8), qf_ld32(b + 12), qf_ld32(b + 16 + 4 * (p % 8)),
            qf_ld32(b + 48 + 4 * p)};
  }
  static uint off0(uint p) { return 64 * (p / 8) + 4 * (p % 8); }
  static uint off1(uint p) { return off0(p) + 32; }
  static void piece(thread const Raw& r, uint p, thread float* v) {
    const float d = qf_f16(r.dm & 0xffffu), dmin = qf_f16(r.dm >> 16);
#pragma unroll
    for (uint h = 0; h < 2; ++h) {
      const uint j = 2 * (p / 8) + h;
      uint sc, m;
      qf_scale_min_w(r.s0, r.s1, r.s2, j, &sc, &m);
      const float d1 = d * qf_int(sc, 0), m1 = qf_mul(dmin, qf_int(m, 0));
#pragma unroll
      for (uint k = 0; k < 4; ++k) {
        const uint q = ((r.q >> (8 * k + 4 * h)) & 15u) | (((r.h >> (8 * k + j)) & 1u) << 4);
        v[4 * h + k] = qf_mul(d1, qf_int(q, 0)) - m1;
      }
    }
  }
};

struct qf_q6_k {
  enum : uint { BYTES = 210, UNITS = 8 };
  static void unit(device const uchar* b, uint j, thread float* v) {
    const uint h = j / 4, k = j % 4;
    const float d = qf_f16(qf_ld16(b + 208));
    device const uchar* ql = b + 64 * h + 32 * (k & 1u);
    device const uchar* qh = b + 128 + 32 * h;
    const uint lsh = k < 2 ? 0u : 4u, hsh = 2u * k;
    const float d0 = d * (float)(char)b[192 + 8 * h + 2 * k];
    const float d1 = d * (float)(char)b[192 + 8 * h + 2 * k + 1];
#pragma unroll
    for (uint i = 0; i < 16; ++i) {
      const uint lo = qf_ld16(ql + 2 * i) >> lsh, hi = qf_ld16(qh + 2 * i) >> hsh;
#pragma unroll
      for (uint e = 0; e < 2; ++e) {
        const int q = (int)(((lo >> (8 * e)) & 15u) | (((hi >> (8 * e)) & 3u) << 4)) - 32;
        v[2 * i + e] = (i < 8 ? d0 : d1) * (float)q;
      }
    }
  }
  enum : uint { PIECES = 32 };
  struct Raw {
    uint ql, qh, sc, d;
  };
  static Raw load(device const uchar* b, uint p) {
    const uint h = p / 16, s = (p / 8) % 2, l = p % 8;
    device const uchar* ql = b + 64 * h + 32 * s + 4 * l;
    device const uchar* qh = b + 128 + 32 * h + 4 * l;
    device const uchar* sc = b + 192 + 8 * h + l / 4 + 2 * s;
    return {qf_ld16(ql) | qf_ld16(ql + 2) << 16, qf_ld16(qh) | qf_ld16(qh + 2) << 16, sc[0] | (uint)sc[4] << 8,
            qf_ld16(b + 208)};
  }
  static uint off0(uint p) { return 128 * (p / 16) + 32 * ((p / 8) % 2) + 4 * (p % 8); }
  static uint off1(uint p) { return off0(p) + 64; }
  static void piece(thread const Raw& r, uint p, thread float* v) {
    const uint s = (p / 8) % 2;
    const float d = qf_f16(r.d);
#pragma unroll
    for (uint h = 0; h < 2; ++h) {
      const float dh = d * qf_int(((r.sc >> (8 * h)) & 0xffu) ^ 0x80u, 128);
#pragma unroll
      for (uint k = 0; k < 4; ++k) {
        const uint q = ((r.ql >> (8 * k + 4 * h)) & 15u) | (((r.qh >> (8 * k + 2 * s + 4 * h)) & 3u) << 4);
        v[4 * h + k] = dh * qf_int(q, 32);
      }
    }
  }
};

template <class Q>
static inline ulong qf_row_bytes(uint n) {
  return (ulong)(n / (QF_UNIT * Q::UNITS)) * Q::BYTES;
}
template <class Q>
static inline void qf_unit(device const uchar* row, uint u, thread float* v) {
  Q::unit(row + (ulong)(u / Q::UNITS) * Q::BYTES, u % Q::UNITS, v);
}

static inline float qf_group_sum(float v) {
  for (ushort m = 16; m >= 1; m >>= 1) v += simd_shuffle_xor(v, m);
  return v;
}

static inline void qf_store(device float* y, device const float* bias, ulong i, uint o, float acc, uint accumulate) {
  float v = acc;
  if (bias) v += bias[o];
  if (accumulate) v += y[i];
  y[i] = v;
}

static inline void block_sync() { threadgroup_barrier(mem_flags::mem_threadgroup); }

// =====================================================================
// embed_Q (see qforward.cu). Block QF_EMBED_THREADS, grid n.
// =====================================================================
template <class Q>
static inline void qf_embed(device float* out, device const uchar* table, device const uint* tokens, uint n,
                            uint hidden, uint vocab, uint tid, uint blk) {
  const uint t = blk;
  if (t >= n || hidden % (QF_UNIT * Q::UNITS) != 0) return;
  const uint id = tokens[t];
  device float* o = out + (ulong)t * hidden;
  device const uchar* row = table + (ulong)id * qf_row_bytes<Q>(hidden);
  for (uint p = tid; p < hidden / 8; p += QF_EMBED_THREADS) {
    const uint pp = p % Q::PIECES, base = (p / Q::PIECES) * (QF_UNIT * Q::UNITS);
    float v[8];
    if (id < vocab) {
      const typename Q::Raw r = Q::load(row + (ulong)(p / Q::PIECES) * Q::BYTES, pp);
      Q::piece(r, pp, v);
    } else {
#pragma unroll
      for (uint i = 0; i < 8; ++i) v[i] = 0.0f;
    }
#pragma unroll
    for (uint i = 0; i < 4; ++i) {
      o[base + Q::off0(pp) + i] = v[i];
      o[base + Q::off1(pp) + i] = v[4 + i];
    }
  }
}

// =====================================================================
// matvec_Q and matmul_Q (see qforward.cu). Block QF_MM_THREADS. Grid:
// matvec_Q ceil(out/8) * ceil(rows/8); matmul_Q ceil(out/64) *
// ceil(rows/64).
// =====================================================================
template <class Q>
static inline void qf_matvec(device float* y, device const float* x, device const uchar* w, device const float* bias,
                             uint rows, uint in, uint out, uint accumulate, uint tid, uint blk) {
  const uint tiles = (rows + QF_MM_VEC_ROWS - 1) / QF_MM_VEC_ROWS;
  const uint b = blk;
  const uint c = b / tiles, s = b % tiles;
  const uint lane = tid & 31u;
  const uint o = c * QF_MM_GROUPS + tid / 32;
  if (o >= out) return;  // whole SIMD groups leave together: no block_sync below
  const uint r0 = s * QF_MM_VEC_ROWS;
  const uint nr = rows - r0 < QF_MM_VEC_ROWS ? rows - r0 : QF_MM_VEC_ROWS;
  const uint pieces = in / 8;
  device const uchar* wr = w + (ulong)o * qf_row_bytes<Q>(in);
  device const float* xr = x + (ulong)r0 * in;
  float acc[2][QF_MM_VEC_ROWS];
#pragma unroll
  for (int r = 0; r < QF_MM_VEC_ROWS; ++r) acc[0][r] = acc[1][r] = 0.0f;
  for (uint p0 = lane; p0 < pieces; p0 += 32 * QF_MV_UNROLL) {
    typename Q::Raw raw[QF_MV_UNROLL] = {};
#pragma unroll
    for (uint u = 0; u < QF_MV_UNROLL; ++u) {
      const uint p = p0 + 32 * u;
      if (p < pieces) raw[u] = Q::load(wr + (ulong)(p / Q::PIECES) * Q::BYTES, p % Q::PIECES);
    }
#pragma unroll
    for (uint u = 0; u < QF_MV_UNROLL; ++u) {
      const uint p = p0 + 32 * u;
      if (p >= pieces) break;
      const uint pp = p % Q::PIECES, base = (p / Q::PIECES) * (QF_UNIT * Q::UNITS);
      float v[8];
      Q::piece(raw[u], pp, v);
#pragma unroll
      for (uint r = 0; r < QF_MM_VEC_ROWS; ++r) {
        if (r < nr) {
          device const float* xp = xr + (ulong)r * in + base;
          const packed_float4 a0 = *(device const packed_float4*)(xp + Q::off0(pp));
          const packed_float4 a1 = *(device const packed_float4*)(xp + Q::off1(pp));
          float d = acc[u & 1][r];
#pragma unroll
          for (uint e = 0; e < 4; ++e) d = fma(v[e], a0[e], d);
#pragma unroll
          for (uint e = 0; e < 4; ++e) d = fma(v[4 + e], a1[e], d);
          acc[u & 1][r] = d;
        }
      }
    }
  }
#pragma unroll
  for (uint r = 0; r < QF_MM_VEC_ROWS; ++r) {
    if (r >= nr) break;  // nr is the same for the whole block
    const float v = qf_group_sum(acc[0][r] + acc[1][r]);
    if (lane == 0) qf_store(y, bias, (ulong)(r0 + r) * out + o, o, v, accumulate);
  }
}

// xs and ws: QF_UNIT x QF_MM_PITCH floats each.
template <class Q>
static inline void qf_matmul_tiled(device float* y, device const float* x, device const uchar* w,
                                   device const float* bias, uint rows, uint in, uint out, uint accumulate,
                                   threadgroup float* xs, threadgroup float* ws, uint tid, uint blk) {
  const uint tiles = (rows + QF_MM_TILE - 1) / QF_MM_TILE;
  const uint b = blk;
  const uint c = b / tiles, s = b % tiles;
  if (c >= (out + QF_MM_TILE - 1) / QF_MM_TILE) return;  // whole block
  const uint r0 = s * QF_MM_TILE, o0 = c * QF_MM_TILE;
  const uint t = tid;
  const uint tr = (t / 16u) * 4u, tc = (t % 16u) * 4u;
  const ulong rb = qf_row_bytes<Q>(in);
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  for (uint u = 0; u < in / QF_UNIT; ++u) {
    if (t < QF_MM_TILE) {
      float v[QF_UNIT];
      if (o0 + t < out) {
        qf_unit<Q>(w + (ulong)(o0 + t) * rb, u, v);
      } else {
#pragma unroll
        for (uint k = 0; k < QF_UNIT; ++k) v[k] = 0.0f;
      }
#pragma unroll
      for (uint k = 0; k < QF_UNIT; ++k) ws[k * QF_MM_PITCH + t] = v[k];
    }
#pragma unroll
    for (uint q = 0; q < 8; ++q) {
      const uint idx = t + QF_MM_THREADS * q, i = idx / QF_UNIT, k = idx % QF_UNIT;
      const uint r = r0 + i;
      xs[k * QF_MM_PITCH + i] = r < rows ? x[(ulong)r * in + (ulong)u * QF_UNIT + k] : 0.0f;
    }
    block_sync();
#pragma unroll 8
    for (uint k = 0; k < QF_UNIT; ++k) {
      const packed_float4 xv = *(threadgroup const packed_float4*)(xs + k * QF_MM_PITCH + tr);
      const packed_float4 wv = *(threadgroup const packed_float4*)(ws + k * QF_MM_PITCH + tc);
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fma(xv[i], wv[j], acc[i][j]);
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
      if (o < out) qf_store(y, bias, (ulong)r * out + o, o, acc[i][j], accumulate);
    }
  }
}

// =====================================================================
// dequant_Q (see qforward.cu). Block QF_DEQUANT_THREADS, grid
// ceil(out * in / 8 / QF_DEQUANT_THREADS).
// =====================================================================
template <class Q>
static inline void qf_dequant(device ushort* dst, device const uchar* w, uint out, uint in, uint tid, uint blk) {
  if (in % (QF_UNIT * Q::UNITS) != 0) return;
  const uint per_row = in / 8;
  const ulong i = (ulong)blk * QF_DEQUANT_THREADS + tid;
  if (i >= (ulong)out * per_row) return;
  const uint o = (uint)(i / per_row), p = (uint)(i % per_row);
  const uint pp = p % Q::PIECES, b = p / Q::PIECES;
  const typename Q::Raw r = Q::load(w + (ulong)o * qf_row_bytes<Q>(in) + (ulong)b * Q::BYTES, pp);
  float v[8];
  Q::piece(r, pp, v);
  device ushort* d = dst + (ulong)o * in + (ulong)b * (QF_UNIT * Q::UNITS);
#pragma unroll
  for (uint e = 0; e < 4; ++e) {
    d[Q::off0(pp) + e] = as_type<ushort>(half(v[e]));
    d[Q::off1(pp) + e] = as_type<ushort>(half(v[4 + e]));
  }
}

// =====================================================================
// scatter_cols_f32: dst[r*dst_stride + dst_off + c] = src[r*cols + c].
// Block QF_SCATTER_THREADS, grid rows.
// =====================================================================
[[max_total_threads_per_threadgroup(256)]]
kernel void scatter_cols_f32(device float* dst [[buffer(0)]], device const float* src [[buffer(1)]],
                             constant uint& rows [[buffer(2)]], constant uint& cols [[buffer(3)]],
                             constant uint& dst_stride [[buffer(4)]], constant uint& dst_off [[buffer(5)]],
                             uint tid [[thread_position_in_threadgroup]], uint blk [[threadgroup_position_in_grid]]) {
  const uint r = blk;
  if (r >= rows) return;
  device const float* s = src + (ulong)r * cols;
  device float* d = dst + (ulong)r * dst_stride + dst_off;
  for (uint c = tid; c < cols; c += QF_SCATTER_THREADS) d[c] = s[c];
}

// ---- the per-type entry points ----
// matmul's xs and ws: QF_UNIT * QF_MM_PITCH floats each.
#define QF_EMBED_KERNEL(NAME, Q)                                                                              \
  [[max_total_threads_per_threadgroup(256)]]                                                                 \
  kernel void NAME(device float* out [[buffer(0)]], device const uchar* table [[buffer(1)]],                  \
                   device const uint* tokens [[buffer(2)]], constant uint& n [[buffer(3)]],                   \
                   constant uint& hidden [[buffer(4)]], constant uint& vocab [[buffer(5)]],                   \
                   uint tid [[thread_position_in_threadgroup]], uint blk [[threadgroup_position_in_grid]]) {  \
    qf_embed<Q>(out, table, tokens, n, hidden, vocab, tid, blk);                                              \
  }
#define QF_MATVEC_KERNEL(NAME, Q)                                                                             \
  [[max_total_threads_per_threadgroup(256)]]                                                                 \
  kernel void NAME(device float* y [[buffer(0)]], device const float* x [[buffer(1)]],                        \
                   device const uchar* w [[buffer(2)]], device const float* bias [[buffer(3)]],               \
                   constant uint& rows [[buffer(4)]], constant uint& in [[buffer(5)]],                        \
                   constant uint& out [[buffer(6)]], constant uint& accumulate [[buffer(7)]],                 \
                   uint tid [[thread_position_in_threadgroup]], uint blk [[threadgroup_position_in_grid]]) {  \
    if (in % (QF_UNIT * Q::UNITS) == 0) qf_matvec<Q>(y, x, w, bias, rows, in, out, accumulate, tid, blk);     \
  }
// matvec1_Q: matvec_Q's product, launched for one row (qforward.cu); the
// same tiling here.
#define QF_DEQUANT_KERNEL(NAME, Q)                                                                            \
  [[max_total_threads_per_threadgroup(256)]]                                                                 \
  kernel void NAME(device ushort* dst [[buffer(0)]], device const uchar* w [[buffer(1)]],                     \
                   constant uint& out [[buffer(2)]], constant uint& in [[buffer(3)]],                         \
                   uint tid [[thread_position_in_threadgroup]], uint blk [[threadgroup_position_in_grid]]) {  \
    qf_dequant<Q>(dst, w, out, in, tid, blk);                                                                 \
  }
#define QF_MATMUL_KERNEL(NAME, Q)                                                                             \
  [[max_total_threads_per_threadgroup(256)]]                                                                 \
  kernel void NAME(device float* y [[buffer(0)]], device const float* x [[buffer(1)]],                        \
                   device const uchar* w [[buffer(2)]], device const float* bias [[buffer(3)]],               \
                   constant uint& rows [[buffer(4)]], constant uint& in [[buffer(5)]],                        \
                   constant uint& out [[buffer(6)]], constant uint& accumulate [[buffer(7)]],                 \
                   threadgroup float* xs [[threadgroup(0)]] /* hipgo: 8704 bytes */,                          \
                   threadgroup float* ws [[threadgroup(1)]] /* hipgo: 8704 bytes */,                          \
                   uint tid [[thread_position_in_threadgroup]], uint blk [[threadgroup_position_in_grid]]) {  \
    if (in % (QF_UNIT * Q::UNITS) == 0)                                                                       \
      qf_matmul_tiled<Q>(y, x, w, bias, rows, in, out, accumulate, xs, ws, tid, blk);                         \
  }

QF_EMBED_KERNEL(embed_q4_0, qf_q4_0)
QF_MATVEC_KERNEL(matvec_q4_0, qf_q4_0)
QF_MATVEC_KERNEL(matvec1_q4_0, qf_q4_0)
QF_MATMUL_KERNEL(matmul_q4_0, qf_q4_0)
QF_DEQUANT_KERNEL(dequant_q4_0, qf_q4_0)
QF_EMBED_KERNEL(embed_q4_1, qf_q4_1)
QF_MATVEC_KERNEL(matvec_q4_1, qf_q4_1)
QF_MATVEC_KERNEL(matvec1_q4_1, qf_q4_1)
QF_MATMUL_KERNEL(matmul_q4_1, qf_q4_1)
QF_DEQUANT_KERNEL(dequant_q4_1, qf_q4_1)
QF_EMBED_KERNEL(embed_q5_0, qf_q5_0)
QF_MATVEC_KERNEL(matvec_q5_0, qf_q5_0)
QF_MATVEC_KERNEL(matvec1_q5_0, qf_q5_0)
QF_MATMUL_KERNEL(matmul_q5_0, qf_q5_0)
QF_DEQUANT_KERNEL(dequant_q5_0, qf_q5_0)
QF_EMBED_KERNEL(embed_q5_1, qf_q5_1)
QF_MATVEC_KERNEL(matvec_q5_1, qf_q5_1)
QF_MATVEC_KERNEL(matvec1_q5_1, qf_q5_1)
QF_MATMUL_KERNEL(matmul_q5_1, qf_q5_1)
QF_DEQUANT_KERNEL(dequant_q5_1, qf_q5_1)
QF_EMBED_KERNEL(embed_q8_0, qf_q8_0)
QF_MATVEC_KERNEL(matvec_q8_0, qf_q8_0)
QF_MATVEC_KERNEL(matvec1_q8_0, qf_q8_0)
QF_MATMUL_KERNEL(matmul_q8_0, qf_q8_0)
QF_DEQUANT_KERNEL(dequant_q8_0, qf_q8_0)
QF_EMBED_KERNEL(embed_q4_k, qf_q4_k)
QF_MATVEC_KERNEL(matvec_q4_k, qf_q4_k)
QF_MATVEC_KERNEL(matvec1_q4_k, qf_q4_k)
QF_MATMUL_KERNEL(matmul_q4_k, qf_q4_k)
QF_DEQUANT_KERNEL(dequant_q4_k, qf_q4_k)
QF_EMBED_KERNEL(embed_q5_k, qf_q5_k)
QF_MATVEC_KERNEL(matvec_q5_k, qf_q5_k)
QF_MATVEC_KERNEL(matvec1_q5_k, qf_q5_k)
QF_MATMUL_KERNEL(matmul_q5_k, qf_q5_k)
QF_DEQUANT_KERNEL(dequant_q5_k, qf_q5_k)
QF_EMBED_KERNEL(embed_q6_k, qf_q6_k)
QF_MATVEC_KERNEL(matvec_q6_k, qf_q6_k)
QF_MATVEC_KERNEL(matvec1_q6_k, qf_q6_k)
QF_MATMUL_KERNEL(matmul_q6_k, qf_q6_k)
QF_DEQUANT_KERNEL(dequant_q6_k, qf_q6_k)
