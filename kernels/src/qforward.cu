// qforward.cu: the forward kernels over GGUF's quantized weights kept in
// ggml's block layout on the device (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K,
// Q5_K, Q6_K): the products (matvec_Q decodes the weights in registers;
// matmul_Q through shared memory), dequant_Q (a float16 copy of a matrix
// for the tensor cores' prefill products), the embedding gather, and
// scatter_cols_f32, which places the output of an unfused projection into
// its columns of the fused q|k|v or gate|up activations.
// One text, compiled as HIP for every AMDGPU target and as CUDA for NVPTX
// (portable.h), and on the host by model/internal/hostkern's emulation test
// (HIPGO_HOST_SHIM names the header that stands in for portable.h there).
//
// The semantics are matmul_W's and embed_W's in FORWARD_ABI.md
// (forward.cu), the products' launch shapes below (matvec_Q, matmul_Q),
// with W one of q4_0, q4_1, q5_0, q5_1, q8_0, q4_k, q5_k,
// q6_k and the weight pointer a byte pointer to the rows' blocks: a [out,
// in] matrix is out rows of in/block_elems blocks each, row-major, exactly
// the GGUF tensor's bytes. in (hidden for embed) must be a multiple of the
// type's block (32 elements, 256 for the K types): otherwise the kernel
// writes nothing (the host checks first). The weight pointer must be 4-byte
// aligned (every device allocation is 256-byte aligned).
//
// Numerics: each weight is decoded with the float32 operations, in the
// order, of quant.DequantizeRow (ggml's dequantize_row_*): contraction into
// fused multiply-adds is switched off there, so the decoded weights are
// bit-identical to the Go reference and to ggml. The products accumulate
// in float32 with explicit fused multiply-adds.
#ifdef HIPGO_HOST_SHIM
#include HIPGO_HOST_SHIM
#else
#include "portable.h"
#endif

// A block format's static member function; int8 (neither header has it).
#define QF_MEMBER static __device__ inline __attribute__((always_inline))
typedef __INT8_TYPE__ qf_i8;

#define QF_EMBED_THREADS 256
#define QF_MM_THREADS 256
#define QF_SCATTER_THREADS 256
#define QF_DEQUANT_THREADS 256

// The products' tiling (matvec_Q, matmul_Q below): matvec_Q gives each
// 32-lane group one output and a block QF_MM_VEC_ROWS input rows; matmul_Q
// a block a QF_MM_TILE x QF_MM_TILE tile through shared memory, one 32-wide
// unit of in at a time. The backend switches at QF_MM_GEMM_ROWS rows.
#define QF_MM_GROUPS (QF_MM_THREADS / 32)
#define QF_MM_VEC_ROWS 8
#define QF_MM_GEMM_ROWS 64
#define QF_MM_TILE 64
#define QF_UNIT 32
// Pieces (8 weights) a lane loads before it decodes any (matvec path).
#ifndef QF_MV_UNROLL
#define QF_MV_UNROLL 4
#endif
// Bytes of weight blocks a 32-lane group stages in shared memory at a time
// (matvec path).
#ifndef QF_MV_STAGE
#define QF_MV_STAGE 2048
#endif


// qf_early_start: the first statement of every kernel here. The kernel after
// it on the stream may be scheduled now (it waits in its own prologue), and
// this one waits until the kernels before it have finished and their writes
// are visible: the GPU backend launches these kernels with EarlyStart
// (programmatic dependent launch on sm_90; a no-op elsewhere), so it must
// come before any early return, or a kernel could complete before its
// predecessor and let the next one read unfinished data.
DEVICE void qf_early_start() {
  grid_launch_dependents();
  grid_dependency_wait();
}

DEVICE float qf_u2f(uint32_t x) { return __builtin_bit_cast(float, x); }
// IEEE binary16 to float32, exact (subnormals included): the hardware's
// conversion (cvt.f32.f16, v_cvt_f32_f16), not integer steps and an
// int-to-float conversion.
DEVICE float qf_f16(uint32_t h) { return (float)__builtin_bit_cast(_Float16, (uint16_t)h); }
// float32 to binary16 bits, rounded to nearest even (cvt.rn.f16.f32,
// v_cvt_f16_f32).
DEVICE uint32_t qf_f2h(float x) { return __builtin_bit_cast(uint16_t, (_Float16)x); }
// qf_int: (float)((int32_t)q - bias) for 0 <= q < 2^23 and 0 <= bias <= q's
// bound, exactly, without an int-to-float conversion (a quarter-rate
// instruction on NVIDIA GPUs, which would bound the products): 0x4B000000|q
// is the float 2^23 + q, and the difference of two floats whose exact value
// is a small integer is that integer.
DEVICE float qf_int(uint32_t q, uint32_t bias) {
  return qf_u2f(0x4B000000u | q) - qf_u2f(0x4B000000u + bias);
}
// qf_mul: a product rounded to float32 before any add that uses it. The
// CUDA compile contracts a*b+c into an FMA in the backend whatever the
// source pragmas say; mul.rn is never contracted. HIP honors the pragmas
// (fp contract off in every decoder), the host emulation compiles with
// -ffp-contract=off.
#if defined(__NVPTX__)
DEVICE float qf_mul(float a, float b) { return __nvvm_mul_rn_f(a, b); }
#else
DEVICE float qf_mul(float a, float b) { return a * b; }
#endif
DEVICE uint32_t qf_ld16(const uint8_t* p) { return *(const uint16_t*)p; }
DEVICE uint32_t qf_ld32(const uint8_t* p) { return *(const uint32_t*)p; }

// ---- block formats ----
// Each type is BYTES per block of UNITS * 32 weights; unit(b, j, v) decodes
// weights [32j, 32j+32) of the block at b into v. Block alignment within a
// 4-aligned row: Q4_0 (18), Q8_0 (34) and Q6_K (210) blocks are 2-byte
// aligned (16-bit loads), Q4_1 (20), Q4_K (144) and Q5_K (176) 4-byte
// aligned (32-bit loads).

// Q4_0: d (f16), 16 bytes; weight i < 16 is d*(lo nibble of byte i - 8),
// weight i+16 the high nibble's.
struct qf_q4_0 {
  static constexpr uint32_t BYTES = 18, UNITS = 1;
  QF_MEMBER void unit(const uint8_t* b, uint32_t, float* v) {
#pragma clang fp contract(off)
    const float d = qf_f16(qf_ld16(b));
#pragma unroll
    for (uint32_t i = 0; i < 8; ++i) {
      const uint32_t w = qf_ld16(b + 2 + 2 * i);
#pragma unroll
      for (uint32_t k = 0; k < 2; ++k) {
        const uint32_t q = (w >> (8 * k)) & 0xffu;
        v[2 * i + k] = d * (float)((int32_t)(q & 15u) - 8);
        v[2 * i + k + 16] = d * (float)((int32_t)(q >> 4) - 8);
      }
    }
  }
  // Piece p < 4: bytes [4p, 4p+4) of the nibbles: weights 4p.. (low
  // nibbles) and 16+4p.. (high).
  static constexpr uint32_t PIECES = 4;
  struct Raw {
    uint32_t d, q;
  };
  QF_MEMBER Raw load(const uint8_t* b, uint32_t p) {
    return {qf_ld16(b), qf_ld16(b + 2 + 4 * p) | qf_ld16(b + 4 + 4 * p) << 16};
  }
  QF_MEMBER uint32_t off0(uint32_t p) { return 4 * p; }
  QF_MEMBER uint32_t off1(uint32_t p) { return 16 + 4 * p; }
  QF_MEMBER void piece(const Raw& r, uint32_t, float* v) {
#pragma clang fp contract(off)
    const float d = qf_f16(r.d);
#pragma unroll
    for (uint32_t k = 0; k < 4; ++k) {
      const uint32_t q = (r.q >> (8 * k)) & 0xffu;
      v[k] = d * qf_int(q & 15u, 8);
      v[k + 4] = d * qf_int(q >> 4, 8);
    }
  }
};

// Q4_1: d, m (f16), nibbles as Q4_0; weight d*q + m.
struct qf_q4_1 {
  static constexpr uint32_t BYTES = 20, UNITS = 1;
  QF_MEMBER void unit(const uint8_t* b, uint32_t, float* v) {
#pragma clang fp contract(off)
    const float d = qf_f16(qf_ld16(b)), m = qf_f16(qf_ld16(b + 2));
#pragma unroll
    for (uint32_t i = 0; i < 4; ++i) {
      const uint32_t w = qf_ld32(b + 4 + 4 * i);
#pragma unroll
      for (uint32_t k = 0; k < 4; ++k) {
        const uint32_t q = (w >> (8 * k)) & 0xffu;
        v[4 * i + k] = qf_mul(d, (float)(q & 15u)) + m;
        v[4 * i + k + 16] = qf_mul(d, (float)(q >> 4)) + m;
      }
    }
  }
  // Pieces as Q4_0's.
  static constexpr uint32_t PIECES = 4;
  struct Raw {
    uint32_t dm, q;
  };
  QF_MEMBER Raw load(const uint8_t* b, uint32_t p) { return {qf_ld32(b), qf_ld32(b + 4 + 4 * p)}; }
  QF_MEMBER uint32_t off0(uint32_t p) { return 4 * p; }
  QF_MEMBER uint32_t off1(uint32_t p) { return 16 + 4 * p; }
  QF_MEMBER void piece(const Raw& r, uint32_t, float* v) {
#pragma clang fp contract(off)
    const float d = qf_f16(r.dm & 0xffffu), m = qf_f16(r.dm >> 16);
#pragma unroll
    for (uint32_t k = 0; k < 4; ++k) {
      const uint32_t q = (r.q >> (8 * k)) & 0xffu;
      v[k] = qf_mul(d, qf_int(q & 15u, 0)) + m;
      v[k + 4] = qf_mul(d, qf_int(q >> 4, 0)) + m;
    }
  }
};

// Q5_0: d (f16), qh (32 fifth bits, little-endian), 16 bytes of nibbles;
// weight i < 16 is the low nibble of byte i with bit i of qh as its fifth
// bit, weight i+16 the high nibble with bit i+16; weight (q-16)*d.
struct qf_q5_0 {
  static constexpr uint32_t BYTES = 22, UNITS = 1;
  QF_MEMBER void unit(const uint8_t* b, uint32_t, float* v) {
#pragma clang fp contract(off)
    const float d = qf_f16(qf_ld16(b));
    const uint32_t qh = qf_ld16(b + 2) | qf_ld16(b + 4) << 16;
#pragma unroll
    for (uint32_t i = 0; i < 8; ++i) {
      const uint32_t w = qf_ld16(b + 6 + 2 * i);
#pragma unroll
      for (uint32_t k = 0; k < 2; ++k) {
        const uint32_t j = 2 * i + k, q = (w >> (8 * k)) & 0xffu;
        v[j] = qf_int((q & 15u) | ((qh >> j) & 1u) << 4, 16) * d;
        v[j + 16] = qf_int((q >> 4) | ((qh >> (j + 16)) & 1u) << 4, 16) * d;
      }
    }
  }
  // Pieces as Q4_0's.
  static constexpr uint32_t PIECES = 4;
  struct Raw {
    uint32_t d, qh, q;
  };
  QF_MEMBER Raw load(const uint8_t* b, uint32_t p) {
    return {qf_ld16(b), qf_ld16(b + 2) | qf_ld16(b + 4) << 16, qf_ld16(b + 6 + 4 * p) | qf_ld16(b + 8 + 4 * p) << 16};
  }
  QF_MEMBER uint32_t off0(uint32_t p) { return 4 * p; }
  QF_MEMBER uint32_t off1(uint32_t p) { return 16 + 4 * p; }
  QF_MEMBER void piece(const Raw& r, uint32_t p, float* v) {
#pragma clang fp contract(off)
    const float d = qf_f16(r.d);
#pragma unroll
    for (uint32_t k = 0; k < 4; ++k) {
      const uint32_t j = 4 * p + k, q = (r.q >> (8 * k)) & 0xffu;
      v[k] = qf_int((q & 15u) | ((r.qh >> j) & 1u) << 4, 16) * d;
      v[k + 4] = qf_int((q >> 4) | ((r.qh >> (j + 16)) & 1u) << 4, 16) * d;
    }
  }
};

// Q5_1: d, m (f16), then qh and nibbles as Q5_0; weight d*q + m.
struct qf_q5_1 {
  static constexpr uint32_t BYTES = 24, UNITS = 1;
  QF_MEMBER void unit(const uint8_t* b, uint32_t, float* v) {
#pragma clang fp contract(off)
    const float d = qf_f16(qf_ld16(b)), m = qf_f16(qf_ld16(b + 2));
    const uint32_t qh = qf_ld32(b + 4);
#pragma unroll
    for (uint32_t i = 0; i < 4; ++i) {
      const uint32_t w = qf_ld32(b + 8 + 4 * i);
#pragma unroll
      for (uint32_t k = 0; k < 4; ++k) {
        const uint32_t j = 4 * i + k, q = (w >> (8 * k)) & 0xffu;
        v[j] = qf_mul(qf_int((q & 15u) | ((qh >> j) & 1u) << 4, 0), d) + m;
        v[j + 16] = qf_mul(qf_int((q >> 4) | ((qh >> (j + 16)) & 1u) << 4, 0), d) + m;
      }
    }
  }
  // Pieces as Q4_0's.
  static constexpr uint32_t PIECES = 4;
  struct Raw {
    uint32_t dm, qh, q;
  };
  QF_MEMBER Raw load(const uint8_t* b, uint32_t p) { return {qf_ld32(b), qf_ld32(b + 4), qf_ld32(b + 8 + 4 * p)}; }
  QF_MEMBER uint32_t off0(uint32_t p) { return 4 * p; }
  QF_MEMBER uint32_t off1(uint32_t p) { return 16 + 4 * p; }
  QF_MEMBER void piece(const Raw& r, uint32_t p, float* v) {
#pragma clang fp contract(off)
    const float d = qf_f16(r.dm & 0xffffu), m = qf_f16(r.dm >> 16);
#pragma unroll
    for (uint32_t k = 0; k < 4; ++k) {
      const uint32_t j = 4 * p + k, q = (r.q >> (8 * k)) & 0xffu;
      v[k] = qf_mul(qf_int((q & 15u) | ((r.qh >> j) & 1u) << 4, 0), d) + m;
      v[k + 4] = qf_mul(qf_int((q >> 4) | ((r.qh >> (j + 16)) & 1u) << 4, 0), d) + m;
    }
  }
};

// Q8_0: d (f16), 32 int8; weight q*d.
struct qf_q8_0 {
  static constexpr uint32_t BYTES = 34, UNITS = 1;
  QF_MEMBER void unit(const uint8_t* b, uint32_t, float* v) {
#pragma clang fp contract(off)
    const float d = qf_f16(qf_ld16(b));
#pragma unroll
    for (uint32_t i = 0; i < 16; ++i) {
      const uint32_t w = qf_ld16(b + 2 + 2 * i);
      v[2 * i] = (float)(qf_i8)(w & 0xffu) * d;
      v[2 * i + 1] = (float)(qf_i8)(w >> 8) * d;
    }
  }
  // Piece p < 4: weights [8p, 8p+8).
  static constexpr uint32_t PIECES = 4;
  struct Raw {
    uint32_t d, q0, q1;
  };
  QF_MEMBER Raw load(const uint8_t* b, uint32_t p) {
    const uint8_t* q = b + 2 + 8 * p;
    return {qf_ld16(b), qf_ld16(q) | qf_ld16(q + 2) << 16, qf_ld16(q + 4) | qf_ld16(q + 6) << 16};
  }
  QF_MEMBER uint32_t off0(uint32_t p) { return 8 * p; }
  QF_MEMBER uint32_t off1(uint32_t p) { return 8 * p + 4; }
  QF_MEMBER void piece(const Raw& r, uint32_t, float* v) {
#pragma clang fp contract(off)
    const float d = qf_f16(r.d);
#pragma unroll
    for (uint32_t k = 0; k < 4; ++k) {
      // The byte's int8 value plus 128 is its bits with the sign flipped.
      v[k] = qf_int(((r.q0 >> (8 * k)) & 0xffu) ^ 0x80u, 128) * d;
      v[k + 4] = qf_int(((r.q1 >> (8 * k)) & 0xffu) ^ 0x80u, 128) * d;
    }
  }
};

// The 6-bit scale and min of sub-block j of a Q4_K/Q5_K block's 12 packed
// scale bytes s (ggml's get_scale_min_k4).
DEVICE void qf_scale_min(const uint8_t* s, uint32_t j, uint32_t* sc, uint32_t* m) {
  if (j < 4) {
    *sc = s[j] & 63u;
    *m = s[j + 4] & 63u;
  } else {
    *sc = (s[j + 4] & 0xfu) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// qf_scale_min_w: qf_scale_min from the 12 scale bytes held as three
// little-endian words (no indexed array: a register file has no index).
DEVICE void qf_scale_min_w(uint32_t s0, uint32_t s1, uint32_t s2, uint32_t j, uint32_t* sc, uint32_t* m) {
  const uint32_t sh = 8 * (j & 3u);
  const uint32_t a = (s0 >> sh) & 0xffu, b = (s1 >> sh) & 0xffu, c = (s2 >> sh) & 0xffu;
  if (j < 4) {
    *sc = a & 63u;
    *m = b & 63u;
  } else {
    *sc = (c & 0xfu) | ((a >> 6) << 4);
    *m = (c >> 4) | ((b >> 6) << 4);
  }
}

// Q4_K: d, dmin (f16), 12 scale bytes, 128 bytes of nibbles; sub-block j
// (32 weights) has scale sc_j, min m_j and takes the low (j even) or high
// (j odd) nibbles of bytes [32(j/2), 32(j/2)+32); weight (d*sc)*q - dmin*m.
struct qf_q4_k {
  static constexpr uint32_t BYTES = 144, UNITS = 8;
  QF_MEMBER void unit(const uint8_t* b, uint32_t j, float* v) {
#pragma clang fp contract(off)
    const float d = qf_f16(qf_ld16(b)), dmin = qf_f16(qf_ld16(b + 2));
    uint32_t sc, m;
    qf_scale_min(b + 4, j, &sc, &m);
    const float d1 = d * (float)sc, m1 = qf_mul(dmin, (float)m);
    const uint8_t* qs = b + 16 + 32 * (j / 2);
    const uint32_t sh = (j & 1u) * 4u;
#pragma unroll
    for (uint32_t i = 0; i < 8; ++i) {
      const uint32_t w = qf_ld32(qs + 4 * i) >> sh;
#pragma unroll
      for (uint32_t k = 0; k < 4; ++k) v[4 * i + k] = qf_mul(d1, (float)((w >> (8 * k)) & 15u)) - m1;
    }
  }
  // Piece p < 32: bytes [4l, 4l+4) of nibble chunk c (c = p/8, l = p%8):
  // weights 64c+4l.. of sub-block 2c (low nibbles) and 64c+32+4l.. of
  // sub-block 2c+1 (high).
  static constexpr uint32_t PIECES = 32;
  struct Raw {
    uint32_t dm, s0, s1, s2, q;
  };
  QF_MEMBER Raw load(const uint8_t* b, uint32_t p) {
    return {qf_ld32(b), qf_ld32(b + 4), qf_ld32(b + 8), qf_ld32(b + 12), qf_ld32(b + 16 + 4 * p)};
  }
  QF_MEMBER uint32_t off0(uint32_t p) { return 64 * (p / 8) + 4 * (p % 8); }
  QF_MEMBER uint32_t off1(uint32_t p) { return off0(p) + 32; }
  QF_MEMBER void piece(const Raw& r, uint32_t p, float* v) {
#pragma clang fp contract(off)
    const float d = qf_f16(r.dm & 0xffffu), dmin = qf_f16(r.dm >> 16);
#pragma unroll
    for (uint32_t h = 0; h < 2; ++h) {
      uint32_t sc, m;
      qf_scale_min_w(r.s0, r.s1, r.s2, 2 * (p / 8) + h, &sc, &m);
      const float d1 = d * qf_int(sc, 0), m1 = qf_mul(dmin, qf_int(m, 0));
#pragma unroll
      for (uint32_t k = 0; k < 4; ++k) v[4 * h + k] = qf_mul(d1, qf_int((r.q >> (8 * k + 4 * h)) & 15u, 0)) - m1;
    }
  }
};

// Q5_K: as Q4_K with 32 bytes of high bits (qh) before the 128 nibble
// bytes: bit j of qh[l] is the fifth bit of weight l of sub-block j.
struct qf_q5_k {
  static constexpr uint32_t BYTES = 176, UNITS = 8;
  QF_MEMBER void unit(const uint8_t* b, uint32_t j, float* v) {
#pragma clang fp contract(off)
    const float d = qf_f16(qf_ld16(b)), dmin = qf_f16(qf_ld16(b + 2));
    uint32_t sc, m;
    qf_scale_min(b + 4, j, &sc, &m);
    const float d1 = d * (float)sc, m1 = qf_mul(dmin, (float)m);
    const uint8_t* qh = b + 16;
    const uint8_t* qs = b + 48 + 32 * (j / 2);
    const uint32_t sh = (j & 1u) * 4u;
#pragma unroll
    for (uint32_t i = 0; i < 8; ++i) {
      const uint32_t w = qf_ld32(qs + 4 * i) >> sh, h = qf_ld32(qh + 4 * i) >> j;
#pragma unroll
      for (uint32_t k = 0; k < 4; ++k) {
        const uint32_t q = ((w >> (8 * k)) & 15u) | (((h >> (8 * k)) & 1u) << 4);
        v[4 * i + k] = qf_mul(d1, (float)q) - m1;
      }
    }
  }
  // Pieces as Q4_K's; the fifth bits of weight 4l+k of sub-blocks 2c and
  // 2c+1 are bits 2c and 2c+1 of qh[4l+k].
  static constexpr uint32_t PIECES = 32;
  struct Raw {
    uint32_t dm, s0, s1, s2, h, q;
  };
  QF_MEMBER Raw load(const uint8_t* b, uint32_t p) {
    return {qf_ld32(b), qf_ld32(b + 4), qf_ld32(b + 8), qf_ld32(b + 12), qf_ld32(b + 16 + 4 * (p % 8)),
            qf_ld32(b + 48 + 4 * p)};
  }
  QF_MEMBER uint32_t off0(uint32_t p) { return 64 * (p / 8) + 4 * (p % 8); }
  QF_MEMBER uint32_t off1(uint32_t p) { return off0(p) + 32; }
  QF_MEMBER void piece(const Raw& r, uint32_t p, float* v) {
#pragma clang fp contract(off)
    const float d = qf_f16(r.dm & 0xffffu), dmin = qf_f16(r.dm >> 16);
#pragma unroll
    for (uint32_t h = 0; h < 2; ++h) {
      const uint32_t j = 2 * (p / 8) + h;
      uint32_t sc, m;
      qf_scale_min_w(r.s0, r.s1, r.s2, j, &sc, &m);
      const float d1 = d * qf_int(sc, 0), m1 = qf_mul(dmin, qf_int(m, 0));
#pragma unroll
      for (uint32_t k = 0; k < 4; ++k) {
        const uint32_t q = ((r.q >> (8 * k + 4 * h)) & 15u) | (((r.h >> (8 * k + j)) & 1u) << 4);
        v[4 * h + k] = qf_mul(d1, qf_int(q, 0)) - m1;
      }
    }
  }
};

// Q6_K: 128 bytes of low nibbles (ql), 64 of high 2-bit pairs (qh), 16 int8
// scales, d (f16). Sub-block j (32 weights) lies in half h = j/4 as part
// k = j%4: weight l takes its low four bits from ql[64h + 32(k&1) + l] (the
// low nibble for k < 2, the high one otherwise), its high two from bits 2k
// of qh[32h + l], and the scale sc[8h + l/16 + 2k]; weight (d*sc)*(q-32).
struct qf_q6_k {
  static constexpr uint32_t BYTES = 210, UNITS = 8;
  QF_MEMBER void unit(const uint8_t* b, uint32_t j, float* v) {
#pragma clang fp contract(off)
    const uint32_t h = j / 4, k = j % 4;
    const float d = qf_f16(qf_ld16(b + 208));
    const uint8_t* ql = b + 64 * h + 32 * (k & 1u);
    const uint8_t* qh = b + 128 + 32 * h;
    const uint32_t lsh = k < 2 ? 0u : 4u, hsh = 2u * k;
    const float d0 = d * (float)(qf_i8)b[192 + 8 * h + 2 * k];
    const float d1 = d * (float)(qf_i8)b[192 + 8 * h + 2 * k + 1];
#pragma unroll
    for (uint32_t i = 0; i < 16; ++i) {
      const uint32_t lo = qf_ld16(ql + 2 * i) >> lsh, hi = qf_ld16(qh + 2 * i) >> hsh;
#pragma unroll
      for (uint32_t e = 0; e < 2; ++e) {
        const int32_t q = (int32_t)(((lo >> (8 * e)) & 15u) | (((hi >> (8 * e)) & 3u) << 4)) - 32;
        v[2 * i + e] = (i < 8 ? d0 : d1) * (float)q;
      }
    }
  }
  // Piece p < 32 (h = p/16, s = (p/8)%2, l = p%8): bytes [4l, 4l+4) of
  // ql[64h + 32s ..] and of qh[32h ..], which hold weights 4l.. of
  // sub-blocks 4h+s (low nibbles, qh bits 2s) and 4h+s+2 (high nibbles,
  // qh bits 2s+4).
  static constexpr uint32_t PIECES = 32;
  struct Raw {
    uint32_t ql, qh, sc, d;
  };
  QF_MEMBER Raw load(const uint8_t* b, uint32_t p) {
    const uint32_t h = p / 16, s = (p / 8) % 2, l = p % 8;
    const uint8_t* ql = b + 64 * h + 32 * s + 4 * l;
    const uint8_t* qh = b + 128 + 32 * h + 4 * l;
    const uint8_t* sc = b + 192 + 8 * h + l / 4 + 2 * s;
    return {qf_ld16(ql) | qf_ld16(ql + 2) << 16, qf_ld16(qh) | qf_ld16(qh + 2) << 16, sc[0] | (uint32_t)sc[4] << 8,
            qf_ld16(b + 208)};
  }
  QF_MEMBER uint32_t off0(uint32_t p) { return 128 * (p / 16) + 32 * ((p / 8) % 2) + 4 * (p % 8); }
  QF_MEMBER uint32_t off1(uint32_t p) { return off0(p) + 64; }
  QF_MEMBER void piece(const Raw& r, uint32_t p, float* v) {
#pragma clang fp contract(off)
    const uint32_t s = (p / 8) % 2;
    const float d = qf_f16(r.d);
#pragma unroll
    for (uint32_t h = 0; h < 2; ++h) {
      const float dh = d * qf_int(((r.sc >> (8 * h)) & 0xffu) ^ 0x80u, 128);
#pragma unroll
      for (uint32_t k = 0; k < 4; ++k) {
        const uint32_t q = ((r.ql >> (8 * k + 4 * h)) & 15u) | (((r.qh >> (8 * k + 2 * s + 4 * h)) & 3u) << 4);
        v[4 * h + k] = dh * qf_int(q, 32);
      }
    }
  }
};

// qf_row_bytes: bytes of one row of n weights (n a multiple of the block).
template <class Q>
DEVICE uint64_t qf_row_bytes(uint32_t n) {
  return (uint64_t)(n / (QF_UNIT * Q::UNITS)) * Q::BYTES;
}
template <class Q>
DEVICE void qf_unit(const uint8_t* row, uint32_t u, float* v) {
  Q::unit(row + (uint64_t)(u / Q::UNITS) * Q::BYTES, u % Q::UNITS, v);
}

struct __attribute__((aligned(16))) qf_f32x4 {
  float v[4];
};
struct __attribute__((aligned(8))) qf_u32x2 {
  uint32_t a, b;
};

// qf_load4: four floats at p, one 16-byte load when vec (p 16-byte
// aligned), else four (one FMA sequence for both keeps the code small).
DEVICE qf_f32x4 qf_load4(const float* p, bool vec) {
  if (vec) return *(const qf_f32x4*)p;
  qf_f32x4 a;
#pragma unroll
  for (int i = 0; i < 4; ++i) a.v[i] = p[i];
  return a;
}

// qf_group_sum: the sum of v over this thread's aligned group of 32
// threads, by butterfly (every thread gets the same value).
DEVICE float qf_group_sum(float v) {
  for (uint32_t m = 16; m >= 1; m >>= 1) v += lane_xor_f32(v, m);
  return v;
}

DEVICE void qf_store(float* y, const float* bias, uint64_t i, uint32_t o, float acc, uint32_t accumulate) {
  float v = acc;
  if (bias) v += bias[o];
  if (accumulate) v += y[i];
  y[i] = v;
}

// =====================================================================
// embed_Q: out[t] = dequant(table row tokens[t]) for t < n; a token >=
// vocab gives a zero row. Block QF_EMBED_THREADS, grid n (block t fills
// row t, a thread per 32 weights).
// =====================================================================
template <class Q>
DEVICE void qembed(float* out, const uint8_t* table, const uint32_t* tokens, uint32_t n, uint32_t hidden,
                   uint32_t vocab) {
  const uint32_t t = block_idx_x();
  if (t >= n || hidden % (QF_UNIT * Q::UNITS) != 0) return;
  const uint32_t id = tokens[t];
  float* o = out + (uint64_t)t * hidden;
  const uint8_t* row = table + (uint64_t)id * qf_row_bytes<Q>(hidden);
  for (uint32_t p = thread_idx_x(); p < hidden / 8; p += QF_EMBED_THREADS) {
    const uint32_t pp = p % Q::PIECES, base = (p / Q::PIECES) * (QF_UNIT * Q::UNITS);
    float v[8];
    if (id < vocab) {
      Q::piece(Q::load(row + (uint64_t)(p / Q::PIECES) * Q::BYTES, pp), pp, v);
    } else {
#pragma unroll
      for (uint32_t i = 0; i < 8; ++i) v[i] = 0.0f;
    }
#pragma unroll
    for (uint32_t i = 0; i < 4; ++i) {
      o[base + Q::off0(pp) + i] = v[i];
      o[base + Q::off1(pp) + i] = v[4 + i];
    }
  }
}

// =====================================================================
// matvec_Q, matvec1_Q and matmul_Q: y[r, o] (+)= x[r] . dequant(w row o)
// (+ bias[o]) for r < rows, o < out; x [rows, in] f32, bias [out] f32 or
// null, f32 accumulation; accumulate != 0 adds into y. Block QF_MM_THREADS
// (256). All three compute the same for any rows, and a lane accumulates
// its pieces in the same order in matvec_Q and matvec1_Q; the backend
// launches matvec1_Q for one row and matvec_Q for more.
//
// matvec_Q, grid ceil(out / 8) * ceil(rows / 8): block b takes outputs
// [8c, 8c+8) with c = b / ceil(rows/8) and input rows [8s, 8s+8) with
// s = b % ceil(rows/8) (the blocks of one output group are neighbours, so
// their weight reads meet in L2). Each 32-lane group streams one weight
// row once through shared memory, QF_MV_STAGE bytes of blocks at a time
// with the next stage's copies in flight (stream_copy16: cp.async with an
// evict-first hint on NVIDIA), and decodes it from there in pieces of 8
// weights (each type's PIECES per block): lane i takes pieces i, i+32, ...,
// so the x values a piece meets are two runs of 4, which the lanes read as
// consecutive 16-byte loads. A lane reads QF_MV_UNROLL pieces before it
// decodes any, decodes each piece once and applies it to up to 8 input
// rows. matvec1_Q is matvec_Q with one input row a block (grid
// ceil(out / 8) * rows): its registers for one row's accumulators let four
// times the blocks share an SM, which at one row doubles the speed (H100,
// Llama-3.2-1B shapes: docs/performance.md).
//
// matmul_Q, grid ceil(out / 64) * ceil(rows / 64): block b computes the
// 64 x 64 tile of rows [64s, 64s+64) and outputs [64c, 64c+64),
// s = b % ceil(rows/64), c = b / ceil(rows/64), one unit of in at a time:
// 64 threads decode the tile's 64 weight units into shared memory while
// the others stage x.
// =====================================================================
// qf_stage_blocks: how many of a row's blocks a 32-lane group stages in
// shared memory at a time (matvec_Q): as many as fit QF_MV_STAGE bytes, in
// whole steps of 32 * QF_MV_UNROLL pieces, so a lane meets its pieces in
// the same order as if the row were one stage.
template <class Q>
DEVICE constexpr uint32_t qf_stage_blocks() {
  constexpr uint32_t quantum = 32u * QF_MV_UNROLL / Q::PIECES;  // blocks a step
  constexpr uint32_t fit = QF_MV_STAGE / Q::BYTES;
  static_assert(fit >= quantum, "QF_MV_STAGE below one step of pieces");
  return fit / quantum * quantum;
}

template <class Q, uint32_t R>
DEVICE void qmatvec(float* y, const float* x, const uint8_t* w, const float* bias, uint32_t rows, uint32_t in,
                    uint32_t out, uint32_t accumulate) {
  // Two stages a group (the next one's copies fly while this one decodes),
  // each QF_MV_STAGE bytes of blocks plus the 16-byte words that straddle
  // its ends.
  __shared__ __attribute__((aligned(16))) uint8_t stage[2][QF_MM_GROUPS][QF_MV_STAGE + 32];
  const uint32_t tiles = (rows + R - 1) / R;
  const uint32_t b = block_idx_x();
  const uint32_t c = b / tiles, s = b % tiles;
  const uint32_t lane = thread_idx_x() & 31u, g = thread_idx_x() / 32u;
  const uint32_t o = c * QF_MM_GROUPS + g;
  if (o >= out) return;  // whole 32-groups leave together: group_sync only below
  const uint32_t r0 = s * R;
  const uint32_t nr = rows - r0 < R ? rows - r0 : R;
  constexpr uint32_t SB = qf_stage_blocks<Q>();
  const uint32_t nblk = in / (QF_UNIT * Q::UNITS);
  const uint32_t nstages = (nblk + SB - 1) / SB;
  const uint8_t* wr = w + (uint64_t)o * qf_row_bytes<Q>(in);
  const float* xr = x + (uint64_t)r0 * in;
  const bool vec = ((__UINTPTR_TYPE__)x & 15u) == 0;
  // stage_in(k): the copies of stage k's blocks into stage[k & 1][g], from
  // the 16-byte word that holds its first byte (so a block keeps its
  // alignment there) to its last byte, no further (the partial last word
  // reads only its own bytes: the row may end the allocation).
  auto stage_in = [&](uint32_t k) {
    const uint8_t* first = wr + (uint64_t)k * SB * Q::BYTES;
    const uint32_t nb = nblk - k * SB < SB ? nblk - k * SB : SB;
    const uint8_t* base = (const uint8_t*)((__UINTPTR_TYPE__)first & ~(__UINTPTR_TYPE__)15);
    const uint32_t len = (uint32_t)(first - base) + nb * Q::BYTES;
    for (uint32_t i = lane; 16u * i < len; i += 32u) {
      uint8_t* d = &stage[k & 1u][g][16u * i];
      if (16u * i + 16u <= len) {
        stream_copy16(d, base + 16u * i, true);
      } else {
        stream_copy16n(d, base + 16u * i, len - 16u * i);
      }
    }
    async_commit();
  };
  // Two accumulators a row (alternate pieces) halve the chain of
  // dependent fused multiply-adds.
  float acc[2][R];
#pragma unroll
  for (int r = 0; r < R; ++r) acc[0][r] = acc[1][r] = 0.0f;
  stage_in(0);
  for (uint32_t k = 0; k < nstages; ++k) {
    if (k + 1 < nstages) {
      stage_in(k + 1);
      async_wait<1>();
    } else {
      async_wait<0>();
    }
    group_sync();
    const uint8_t* sb = &stage[k & 1u][g][(__UINTPTR_TYPE__)(wr + (uint64_t)k * SB * Q::BYTES) & 15u];
    const uint32_t nb = nblk - k * SB < SB ? nblk - k * SB : SB;
    const uint32_t pieces = nb * Q::PIECES;
    const uint32_t xbase = k * SB * (QF_UNIT * Q::UNITS);
    for (uint32_t p0 = lane; p0 < pieces; p0 += 32 * QF_MV_UNROLL) {
      typename Q::Raw raw[QF_MV_UNROLL] = {};
#pragma unroll
      for (uint32_t u = 0; u < QF_MV_UNROLL; ++u) {
        const uint32_t p = p0 + 32 * u;
        if (p < pieces) raw[u] = Q::load(sb + (p / Q::PIECES) * Q::BYTES, p % Q::PIECES);
      }
#pragma unroll
      for (uint32_t u = 0; u < QF_MV_UNROLL; ++u) {
        const uint32_t p = p0 + 32 * u;
        if (p >= pieces) break;
        const uint32_t pp = p % Q::PIECES, base = xbase + (p / Q::PIECES) * (QF_UNIT * Q::UNITS);
        float v[8];
        Q::piece(raw[u], pp, v);
#pragma unroll
        for (uint32_t r = 0; r < R; ++r) {
          if (r < nr) {
            const float* xp = xr + (uint64_t)r * in + base;
            const qf_f32x4 a0 = qf_load4(xp + Q::off0(pp), vec), a1 = qf_load4(xp + Q::off1(pp), vec);
            float d = acc[u & 1][r];
#pragma unroll
            for (uint32_t e = 0; e < 4; ++e) d = __builtin_fmaf(v[e], a0.v[e], d);
#pragma unroll
            for (uint32_t e = 0; e < 4; ++e) d = __builtin_fmaf(v[4 + e], a1.v[e], d);
            acc[u & 1][r] = d;
          }
        }
      }
    }
    group_sync();  // every lane is done with stage k & 1 before stage k + 2 lands there
  }
#pragma unroll
  for (uint32_t r = 0; r < R; ++r) {
    if (r >= nr) break;  // nr is the same for the whole block
    const float v = qf_group_sum(acc[0][r] + acc[1][r]);
    if (lane == 0) qf_store(y, bias, (uint64_t)(r0 + r) * out + o, o, v, accumulate);
  }
}

template <class Q>
DEVICE void qmatmul_tiled(float* y, const float* x, const uint8_t* w, const float* bias, uint32_t rows,
                          uint32_t in, uint32_t out, uint32_t accumulate) {
  // xs[k][r], ws[k][o]: one unit (32 values of in) for the tile's 64 rows
  // and 64 outputs; +4 keeps the float4 reads aligned.
  __shared__ float xs[QF_UNIT][QF_MM_TILE + 4];
  __shared__ float ws[QF_UNIT][QF_MM_TILE + 4];
  const uint32_t tiles = (rows + QF_MM_TILE - 1) / QF_MM_TILE;
  const uint32_t b = block_idx_x();
  const uint32_t c = b / tiles, s = b % tiles;
  if (c >= (out + QF_MM_TILE - 1) / QF_MM_TILE) return;  // whole block
  const uint32_t r0 = s * QF_MM_TILE, o0 = c * QF_MM_TILE;
  const uint32_t t = thread_idx_x();
  const uint32_t tr = (t / 16u) * 4u, tc = (t % 16u) * 4u;  // this thread's 4 x 4 of the tile
  const uint64_t rb = qf_row_bytes<Q>(in);
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  for (uint32_t u = 0; u < in / QF_UNIT; ++u) {
    if (t < QF_MM_TILE) {
      float v[QF_UNIT];
      if (o0 + t < out) {
        qf_unit<Q>(w + (uint64_t)(o0 + t) * rb, u, v);
      } else {
#pragma unroll
        for (uint32_t k = 0; k < QF_UNIT; ++k) v[k] = 0.0f;
      }
#pragma unroll
      for (uint32_t k = 0; k < QF_UNIT; ++k) ws[k][t] = v[k];
    }
    // 2048 values of x, 8 per thread: 32 consecutive k per row (coalesced).
#pragma unroll
    for (uint32_t q = 0; q < 8; ++q) {
      const uint32_t idx = t + QF_MM_THREADS * q, i = idx / QF_UNIT, k = idx % QF_UNIT;
      const uint32_t r = r0 + i;
      xs[k][i] = r < rows ? x[(uint64_t)r * in + (uint64_t)u * QF_UNIT + k] : 0.0f;
    }
    block_sync();
#pragma unroll 8
    for (uint32_t k = 0; k < QF_UNIT; ++k) {
      const qf_f32x4 xv = *(const qf_f32x4*)&xs[k][tr];
      const qf_f32x4 wv = *(const qf_f32x4*)&ws[k][tc];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = __builtin_fmaf(xv.v[i], wv.v[j], acc[i][j]);
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
      if (o < out) qf_store(y, bias, (uint64_t)r * out + o, o, acc[i][j], accumulate);
    }
  }
}

// =====================================================================
// dequant_Q: out[o, k] = f16(dequant(w row o)[k]) for o < out, k < in:
// the matrix as float16 (each weight decoded as everywhere here, then
// rounded to nearest even), for the tensor-core products from 64 rows
// (the backend's prefill route). out is [out, in] halves, 8-byte aligned.
// Block QF_DEQUANT_THREADS, grid ceil(out * in / 8 / QF_DEQUANT_THREADS):
// thread i decodes piece i of the matrix (row i / (in/8)).
// =====================================================================
template <class Q>
DEVICE void qdequant(uint16_t* dst, const uint8_t* w, uint32_t out, uint32_t in) {
  if (in % (QF_UNIT * Q::UNITS) != 0) return;
  const uint32_t per_row = in / 8;
  const uint64_t i = global_idx_x();
  if (i >= (uint64_t)out * per_row) return;
  const uint32_t o = (uint32_t)(i / per_row), p = (uint32_t)(i % per_row);
  const uint32_t pp = p % Q::PIECES, blk = p / Q::PIECES;
  float v[8];
  Q::piece(Q::load(w + (uint64_t)o * qf_row_bytes<Q>(in) + (uint64_t)blk * Q::BYTES, pp), pp, v);
  uint16_t* d = dst + (uint64_t)o * in + (uint64_t)blk * (QF_UNIT * Q::UNITS);
  uint32_t h[4];
#pragma unroll
  for (uint32_t e = 0; e < 4; ++e) h[e] = qf_f2h(v[2 * e]) | qf_f2h(v[2 * e + 1]) << 16;
  // Two runs of 4 halves (8 bytes each): off0 and off1 are multiples of 4.
  *(qf_u32x2*)(d + Q::off0(pp)) = qf_u32x2{h[0], h[1]};
  *(qf_u32x2*)(d + Q::off1(pp)) = qf_u32x2{h[2], h[3]};
}

// =====================================================================
// scatter_cols_f32: dst[r*dst_stride + dst_off + c] = src[r*cols + c] for
// r < rows, c < cols (an unfused projection's output into its columns of
// the q|k|v or gate|up rows). Block QF_SCATTER_THREADS, grid rows.
// =====================================================================
KERNEL KBOUNDS(QF_SCATTER_THREADS) void scatter_cols_f32(float* dst, const float* src, uint32_t rows,
                                                         uint32_t cols, uint32_t dst_stride, uint32_t dst_off) {
  qf_early_start();
  const uint32_t r = block_idx_x();
  if (r >= rows) return;
  const float* s = src + (uint64_t)r * cols;
  float* d = dst + (uint64_t)r * dst_stride + dst_off;
  for (uint32_t c = thread_idx_x(); c < cols; c += QF_SCATTER_THREADS) d[c] = s[c];
}

// ---- the per-type entry points ----
#define QF_KERNELS(SUF, Q)                                                                                   \
  KERNEL KBOUNDS(QF_EMBED_THREADS) void embed_##SUF(float* out, const uint8_t* table, const uint32_t* tokens, \
                                                    uint32_t n, uint32_t hidden, uint32_t vocab) {            \
    qf_early_start();                                                                                         \
    qembed<Q>(out, table, tokens, n, hidden, vocab);                                                         \
  }                                                                                                          \
  KERNEL KBOUNDS(QF_MM_THREADS) void matvec_##SUF(float* y, const float* x, const uint8_t* w,                \
                                                  const float* bias, uint32_t rows, uint32_t in, uint32_t out, \
                                                  uint32_t accumulate) {                                      \
    qf_early_start();                                                                                         \
    if (in % (QF_UNIT * Q::UNITS) == 0) qmatvec<Q, QF_MM_VEC_ROWS>(y, x, w, bias, rows, in, out, accumulate); \
  }                                                                                                          \
  KERNEL KBOUNDS(QF_MM_THREADS) void matvec1_##SUF(float* y, const float* x, const uint8_t* w,               \
                                                   const float* bias, uint32_t rows, uint32_t in, uint32_t out, \
                                                   uint32_t accumulate) {                                     \
    qf_early_start();                                                                                         \
    if (in % (QF_UNIT * Q::UNITS) == 0) qmatvec<Q, 1>(y, x, w, bias, rows, in, out, accumulate);            \
  }                                                                                                          \
  KERNEL KBOUNDS(QF_MM_THREADS) void matmul_##SUF(float* y, const float* x, const uint8_t* w,                \
                                                  const float* bias, uint32_t rows, uint32_t in, uint32_t out, \
                                                  uint32_t accumulate) {                                      \
    qf_early_start();                                                                                         \
    if (in % (QF_UNIT * Q::UNITS) == 0) qmatmul_tiled<Q>(y, x, w, bias, rows, in, out, accumulate);         \
  }                                                                                                          \
  KERNEL KBOUNDS(QF_DEQUANT_THREADS) void dequant_##SUF(uint16_t* dst, const uint8_t* w, uint32_t out,         \
                                                        uint32_t in) {                                        \
    qf_early_start();                                                                                         \
    qdequant<Q>(dst, w, out, in);                                                                            \
  }

QF_KERNELS(q4_0, qf_q4_0)
QF_KERNELS(q4_1, qf_q4_1)
QF_KERNELS(q5_0, qf_q5_0)
QF_KERNELS(q5_1, qf_q5_1)
QF_KERNELS(q8_0, qf_q8_0)
QF_KERNELS(q4_k, qf_q4_k)
QF_KERNELS(q5_k, qf_q5_k)
QF_KERNELS(q6_k, qf_q6_k)
