#include "textflag.h"

// Exp's constants (ops.go), as float64 bits, then float32 bounds.
DATA expk<>+0(SB)/8, $0x3ff71547652b82fe   // log2e
DATA expk<>+8(SB)/8, $0x3fe0000000000000   // 0.5
DATA expk<>+16(SB)/8, $0x3fe62e42fee00000  // ln2hi
DATA expk<>+24(SB)/8, $0x3dea39ef35793c76  // ln2lo
DATA expk<>+32(SB)/8, $0x3ec71de3a556c734  // 1/9!
DATA expk<>+40(SB)/8, $0x3efa01a01a01a01a  // 1/8!
DATA expk<>+48(SB)/8, $0x3f2a01a01a01a01a  // 1/7!
DATA expk<>+56(SB)/8, $0x3f56c16c16c16c17  // 1/6!
DATA expk<>+64(SB)/8, $0x3f81111111111111  // 1/5!
DATA expk<>+72(SB)/8, $0x3fa5555555555555  // 1/4!
DATA expk<>+80(SB)/8, $0x3fc5555555555555  // 1/3!
DATA expk<>+88(SB)/8, $0x3fe0000000000000  // 1/2!
DATA expk<>+96(SB)/8, $0x3ff0000000000000  // 1
DATA expk<>+104(SB)/8, $1023               // the float64 exponent bias
DATA expk<>+112(SB)/4, $0x42b1999a         // 88.8 (float32): above it, +Inf
DATA expk<>+116(SB)/4, $0xc2d00000         // -104: below it, 0
DATA expk<>+120(SB)/4, $0x7f800000         // +Inf
DATA expk<>+124(SB)/4, $0x3f800000         // 1 (float32)
DATA expk<>+128(SB)/4, $0x80000000         // the float32 sign bit
GLOBL expk<>(SB), RODATA|NOPTR, $132

// EXP4 sets X1 to Exp of the four float32 in X0, with Exp's operations in
// Exp's order (float64, separate multiplies and adds), so each value is
// Exp's to the bit where the Go compiler does not fuse them (GOAMD64 below
// v3). Clobbers X2-X8 (their Y halves).
#define EXP4 \
	VCMPPS $3, X0, X0, X2; \
	VBROADCASTSS expk<>+116(SB), X3; \
	VMAXPS X3, X0, X3; \
	VBROADCASTSS expk<>+112(SB), X4; \
	VMINPS X4, X3, X3; \
	VCVTPS2PD X3, Y3; \
	VBROADCASTSD expk<>+0(SB), Y4; \
	VMULPD Y4, Y3, Y4; \
	VBROADCASTSD expk<>+8(SB), Y5; \
	VADDPD Y5, Y4, Y4; \
	VROUNDPD $1, Y4, Y4; \
	VBROADCASTSD expk<>+16(SB), Y5; \
	VMULPD Y5, Y4, Y5; \
	VSUBPD Y5, Y3, Y5; \
	VBROADCASTSD expk<>+24(SB), Y6; \
	VMULPD Y6, Y4, Y6; \
	VSUBPD Y6, Y5, Y5; \
	VBROADCASTSD expk<>+32(SB), Y6; \
	VMULPD Y6, Y5, Y6; \
	VBROADCASTSD expk<>+40(SB), Y7; \
	VADDPD Y7, Y6, Y6; \
	VMULPD Y6, Y5, Y6; \
	VBROADCASTSD expk<>+48(SB), Y7; \
	VADDPD Y7, Y6, Y6; \
	VMULPD Y6, Y5, Y6; \
	VBROADCASTSD expk<>+56(SB), Y7; \
	VADDPD Y7, Y6, Y6; \
	VMULPD Y6, Y5, Y6; \
	VBROADCASTSD expk<>+64(SB), Y7; \
	VADDPD Y7, Y6, Y6; \
	VMULPD Y6, Y5, Y6; \
	VBROADCASTSD expk<>+72(SB), Y7; \
	VADDPD Y7, Y6, Y6; \
	VMULPD Y6, Y5, Y6; \
	VBROADCASTSD expk<>+80(SB), Y7; \
	VADDPD Y7, Y6, Y6; \
	VMULPD Y6, Y5, Y6; \
	VBROADCASTSD expk<>+88(SB), Y7; \
	VADDPD Y7, Y6, Y6; \
	VMULPD Y6, Y5, Y6; \
	VBROADCASTSD expk<>+96(SB), Y7; \
	VADDPD Y7, Y6, Y6; \
	VMULPD Y6, Y5, Y6; \
	VADDPD Y7, Y6, Y6; \
	VCVTTPD2DQY Y4, X8; \
	VPMOVSXDQ X8, Y8; \
	VPBROADCASTQ expk<>+104(SB), Y7; \
	VPADDQ Y7, Y8, Y8; \
	VPSLLQ $52, Y8, Y8; \
	VMULPD Y8, Y6, Y6; \
	VCVTPD2PSY Y6, X1; \
	VBROADCASTSS expk<>+112(SB), X4; \
	VCMPPS $0x1e, X4, X0, X8; \
	VBROADCASTSS expk<>+120(SB), X4; \
	VBLENDVPS X8, X4, X1, X1; \
	VBROADCASTSS expk<>+116(SB), X4; \
	VCMPPS $0x11, X4, X0, X8; \
	VANDNPS X1, X8, X1; \
	VBLENDVPS X2, X0, X1, X1

// func expShiftAVX2(dst, src *float32, n int, shift float32)
// dst[i] = Exp(src[i] - shift) for i < n, n a multiple of 4.
TEXT ·expShiftAVX2(SB), NOSPLIT, $0-28
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS shift+24(FP), X15
	TESTQ CX, CX
	JLE  edone

eloop:
	VMOVUPS (SI), X0
	VSUBPS X15, X0, X0
	EXP4
	VMOVUPS X1, (DI)
	ADDQ $16, SI
	ADDQ $16, DI
	SUBQ $4, CX
	JNZ  eloop

edone:
	VZEROUPPER
	RET

// func swigluAVX2(out, gate, up *float32, n int)
// out[i] = gate[i] / (1 + Exp(-gate[i])) * up[i] for i < n, n a multiple
// of 4, in SwiGLU's order.
TEXT ·swigluAVX2(SB), NOSPLIT, $0-32
	MOVQ out+0(FP), DI
	MOVQ gate+8(FP), SI
	MOVQ up+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSS expk<>+128(SB), X15
	VBROADCASTSS expk<>+124(SB), X14
	TESTQ CX, CX
	JLE  sdone

sloop:
	VMOVUPS (SI), X9
	VXORPS X15, X9, X0
	EXP4
	VADDPS X14, X1, X1
	VDIVPS X1, X9, X9
	VMULPS (DX), X9, X9
	VMOVUPS X9, (DI)
	ADDQ $16, SI
	ADDQ $16, DX
	ADDQ $16, DI
	SUBQ $4, CX
	JNZ  sloop

sdone:
	VZEROUPPER
	RET
