// mathf.h: exp, sin and cos accurate to about one float32 ulp, written with
// nothing but float32 +, *, fma and rint, so the same text runs on NVPTX
// (which has no libm without libdevice), AMDGPU and the host emulation, and
// matches the CPU backend (model/internal/cpu: Exp, and math.Cos/math.Sin
// of the float32 angle) to float32 rounding rather than to the hardware
// approximations' 2^-22 relative (and, for lg2.approx near 1, absolute)
// error.
//
// Included after portable.h or the host shim (both provide DEVICE).
#ifndef HIPGO_MATHF_H
#define HIPGO_MATHF_H

DEVICE float mf_fma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
DEVICE float mf_rint(float x) { return __builtin_rintf(x); }
DEVICE float mf_bits2f(uint32_t b) { return __builtin_bit_cast(float, b); }

// mf_exp2i: 2^n as a float for -126 <= n <= 127.
DEVICE float mf_exp2i(int32_t n) { return mf_bits2f((uint32_t)(n + 127) << 23); }

// mf_expf: e^x. n = rint(x log2 e), r = x - n ln2 by Cody-Waite (ln2hi has
// 16 significant bits, so n*ln2hi is exact for |n| <= 256, and fma keeps
// the second product exact too), |r| <= ln2/2, then e^r by its Taylor
// series to r^7 (remainder below 5.3e-9 relative, under 0.1 ulp) and the
// scale 2^n applied in two halves so subnormal results come out right.
// x > 88.7228394 overflows to +inf, x < -103.972 underflows to 0, NaN stays.
DEVICE float mf_expf(float x) {
  if (!(x == x)) return x;
  if (x > 88.7228394f) return __builtin_inff();
  if (x < -103.972084f) return 0.0f;
  const float n = mf_rint(x * 1.44269502f);
  float r = mf_fma(-n, 0.693145751953125f, x);
  r = mf_fma(-n, 1.42860677e-06f, r);
  float p = 1.98412698e-04f;  // 1/5040
  p = mf_fma(p, r, 1.38888889e-03f);
  p = mf_fma(p, r, 8.33333377e-03f);
  p = mf_fma(p, r, 4.16666679e-02f);
  p = mf_fma(p, r, 1.66666672e-01f);
  p = mf_fma(p, r, 0.5f);
  p = mf_fma(p, r, 1.0f);
  p = mf_fma(p, r, 1.0f);
  const int32_t ni = (int32_t)n;
  const int32_t n1 = ni / 2;
  return p * mf_exp2i(n1) * mf_exp2i(ni - n1);
}

// mf_sincosf: sin(x) and cos(x) for |x| < 2^24 (RoPE angles: inv_freq times
// a position), absolute error about 1e-7. k = rint(x 2/pi), r = x - k pi/2
// with pi/2 = C1 + C2 + C3 (three float32 pieces, 72 bits): fma forms each
// product exactly; x - k*C1 is exact (both are multiples of 2^-23 and the
// difference is below 2), and the two later roundings cost about 2^-25
// absolute. |r| <= pi/4, where the Taylor series of sin to r^9 and of cos
// to r^10 are within 2e-9. The quadrant k mod 4 picks and signs the pair.
// Non-finite x gives NaN for both.
DEVICE void mf_sincosf(float x, float* s, float* c) {
  // inf or NaN, by the exponent bits: an arithmetic test such as x - x == 0
  // is not safe here, because the GPU compilers contract x = a*b; x - x
  // into fma(a, b, -x), the product's rounding error, which is not 0 (it
  // made every RoPE angle NaN on the H200).
  if ((__builtin_bit_cast(uint32_t, x) & 0x7f800000u) == 0x7f800000u) {
    *s = *c = __builtin_nanf("");
    return;
  }
  const float k = mf_rint(x * 0.636619747f);
  float r = mf_fma(-k, 1.57079637e+00f, x);
  r = mf_fma(-k, -4.37113883e-08f, r);
  r = mf_fma(-k, -1.71512451e-15f, r);
  const float r2 = r * r;
  float ps = 2.75573192e-06f;  // 1/9!
  ps = mf_fma(ps, r2, -1.98412698e-04f);
  ps = mf_fma(ps, r2, 8.33333377e-03f);
  ps = mf_fma(ps, r2, -1.66666672e-01f);
  const float sr = mf_fma(ps * r2, r, r);
  float pc = -2.75573192e-07f;  // -1/10!
  pc = mf_fma(pc, r2, 2.48015873e-05f);
  pc = mf_fma(pc, r2, -1.38888889e-03f);
  pc = mf_fma(pc, r2, 4.16666679e-02f);
  pc = mf_fma(pc, r2, -0.5f);
  const float cr = mf_fma(pc, r2, 1.0f);
  // k is an integer below 2^24 in magnitude; its low two bits are the
  // quadrant (two's complement keeps that right for negative k).
  const uint32_t q = (uint32_t)(int32_t)k & 3u;
  float sv = (q & 1u) ? cr : sr;
  float cv = (q & 1u) ? sr : cr;
  if (q == 1u || q == 2u) cv = -cv;
  if (q >= 2u) sv = -sv;
  *s = sv;
  *c = cv;
}

#endif  // HIPGO_MATHF_H
