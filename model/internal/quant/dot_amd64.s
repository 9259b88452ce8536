#include "textflag.h"

// Row products and row decoders over whole blocks (nb >= 1) of ggml block
// formats, float32 activations, float32 accumulation. A block's codes are
// widened to float32 in registers (VPMOVZXBD/VPMOVSXBD, VCVTDQ2PS) and its
// float16 constants with VCVTPH2PS. The products either form each weight
// with one FMA (q*d + m) and multiply it into an accumulator, or sum x*q
// and apply the scale once per block (Q8_0, Q6_K's groups of 16); the row
// is never written out (a few scales and codes pass through the stack).

// REDUCE folds the eight lanes of Y0 into X0's low float.
#define REDUCE \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VHADDPS X0, X0, X0 \
	VHADDPS X0, X0, X0

// HALF2 loads the float16 pair at off(SI) as floats: YD = first, YM =
// second, broadcast; XT is a scratch register other than YD and YM.
#define HALF2(off, YD, YM, XT) \
	MOVL off(SI), AX \
	VMOVD AX, XT \
	VCVTPH2PS XT, XT \
	VBROADCASTSS XT, YD \
	VMOVSHDUP XT, XT \
	VBROADCASTSS XT, YM

// NIBBLES4 widens the 16 nibble bytes at off(SI) into Y4..Y7 as float32:
// Y4 = elements 0-7 (low nibbles of bytes 0-7), Y6 = 8-15, Y5 = 16-23
// (high nibbles of bytes 0-7), Y7 = 24-31. Y15 holds dwords 0x0F.
#define NIBBLES4(off) \
	VPMOVZXBD off(SI), Y4 \
	VPMOVZXBD off+8(SI), Y6 \
	VPSRLD $4, Y4, Y5 \
	VPSRLD $4, Y6, Y7 \
	VPAND Y15, Y4, Y4 \
	VPAND Y15, Y6, Y6 \
	VCVTDQ2PS Y4, Y4 \
	VCVTDQ2PS Y5, Y5 \
	VCVTDQ2PS Y6, Y6 \
	VCVTDQ2PS Y7, Y7

// KSCALES unpacks the eight 6-bit scales and mins of the Q4_K/Q5_K block
// at SI (12 bytes at 4(SI)), multiplies them by d and dmin (f16 at 0(SI)
// and 2(SI)) and stores d*sc[0..7] at 0(SP) and dmin*m[0..7] at 32(SP).
// With a = bytes 0-3, b = 4-7, c = 8-11: sc[0:4] = a&63, m[0:4] = b&63,
// sc[4:8] = c&0x0F | (a>>6)<<4, m[4:8] = c>>4 | (b>>6)<<4, bytewise.
#define KSCALES \
	MOVL 4(SI), AX \
	MOVL 8(SI), BX \
	MOVL 12(SI), DX \
	MOVL AX, R8 \
	ANDL $0x3f3f3f3f, R8 \
	MOVL BX, R9 \
	ANDL $0x3f3f3f3f, R9 \
	MOVL DX, R10 \
	ANDL $0x0f0f0f0f, R10 \
	SHRL $2, AX \
	ANDL $0x30303030, AX \
	ORL  AX, R10 \
	SHRL $4, DX \
	ANDL $0x0f0f0f0f, DX \
	SHRL $2, BX \
	ANDL $0x30303030, BX \
	ORL  BX, DX \
	SHLQ $32, R10 \
	ORQ  R10, R8 \
	SHLQ $32, DX \
	ORQ  DX, R9 \
	VMOVQ R8, X4 \
	VPMOVZXBD X4, Y4 \
	VCVTDQ2PS Y4, Y4 \
	VMOVQ R9, X5 \
	VPMOVZXBD X5, Y5 \
	VCVTDQ2PS Y5, Y5 \
	HALF2(0, Y6, Y7, X8) \
	VMULPS Y6, Y4, Y4 \
	VMULPS Y7, Y5, Y5 \
	VMOVUPS Y4, 0(SP) \
	VMOVUPS Y5, 32(SP)

// Q4KPAIR does sub-blocks 2i and 2i+1 of a Q4_K block: element l of 2i
// is the low nibble of byte l of the 32 at qoff(SI), element l of 2i+1 its
// high nibble; x at DI (64 floats); d*sc at soff(SP), dmin*m at soff+32(SP).
#define Q4KPAIR(qoff, soff) \
	VPMOVZXBD qoff(SI), Y4 \
	VPMOVZXBD qoff+8(SI), Y5 \
	VPMOVZXBD qoff+16(SI), Y6 \
	VPMOVZXBD qoff+24(SI), Y7 \
	VPSRLD $4, Y4, Y8 \
	VPSRLD $4, Y5, Y9 \
	VPSRLD $4, Y6, Y10 \
	VPSRLD $4, Y7, Y11 \
	VPAND Y15, Y4, Y4 \
	VPAND Y15, Y5, Y5 \
	VPAND Y15, Y6, Y6 \
	VPAND Y15, Y7, Y7 \
	Q4KSUMS(soff)

// Q4KSUMS finishes a pair from the codes of sub-block 2i in Y4-Y7 and of
// 2i+1 in Y8-Y11 (dwords): each weight q*(d*sc) - dmin*m is one FMA and
// its product with x another, into the four accumulators Y0-Y3.
#define Q4KSUMS(soff) \
	VCVTDQ2PS Y4, Y4 \
	VCVTDQ2PS Y5, Y5 \
	VCVTDQ2PS Y6, Y6 \
	VCVTDQ2PS Y7, Y7 \
	VCVTDQ2PS Y8, Y8 \
	VCVTDQ2PS Y9, Y9 \
	VCVTDQ2PS Y10, Y10 \
	VCVTDQ2PS Y11, Y11 \
	VBROADCASTSS soff(SP), Y12 \
	VBROADCASTSS soff+32(SP), Y13 \
	VFMSUB213PS Y13, Y12, Y4 \
	VFMSUB213PS Y13, Y12, Y5 \
	VFMSUB213PS Y13, Y12, Y6 \
	VFMSUB213PS Y13, Y12, Y7 \
	VBROADCASTSS soff+4(SP), Y12 \
	VBROADCASTSS soff+36(SP), Y13 \
	VFMSUB213PS Y13, Y12, Y8 \
	VFMSUB213PS Y13, Y12, Y9 \
	VFMSUB213PS Y13, Y12, Y10 \
	VFMSUB213PS Y13, Y12, Y11 \
	VFMADD231PS (DI), Y4, Y0 \
	VFMADD231PS 32(DI), Y5, Y1 \
	VFMADD231PS 64(DI), Y6, Y2 \
	VFMADD231PS 96(DI), Y7, Y3 \
	VFMADD231PS 128(DI), Y8, Y0 \
	VFMADD231PS 160(DI), Y9, Y1 \
	VFMADD231PS 192(DI), Y10, Y2 \
	VFMADD231PS 224(DI), Y11, Y3

// Q6GROUP does one group of 16 Q6_K elements: signed codes at qoff(SP),
// x at xoff(DI), scale d*sc at soff(SP); A, B, S are scratch; adds to ACC.
#define Q6GROUP(qoff, xoff, soff, A, B, S, ACC) \
	VPMOVSXBD qoff(SP), A \
	VPMOVSXBD qoff+8(SP), B \
	VCVTDQ2PS A, A \
	VCVTDQ2PS B, B \
	VMULPS xoff(DI), A, A \
	VFMADD231PS xoff+32(DI), B, A \
	VBROADCASTSS soff(SP), S \
	VFMADD231PS A, S, ACC

// Q6CODES builds the 128 signed codes of half a Q6_K block at
// dst(SP)..dst+127(SP), from 64 low-nibble bytes at qloff(SI) and 32 high-pair
// bytes at qhoff(SI). Within the half, element 32k+l takes its low four
// bits from ql[l] (k=0,2) or ql[l+32] (k=1,3), low nibble for k<2, and bits
// 2k,2k+1 of qh[l] as bits 4,5; minus 32. The codes are built 32 bytes at
// a time (word shifts are safe: the masks drop the bits that cross bytes)
// and widened from the stack by the caller, which builds both halves
// before widening either: a load right behind the store it reads waited on
// it (Q6_K 10.9 against 13.2 Gweights/s). Y13-Y15: bytes 32, 0x30, 0x0F.
#define Q6CODES(qloff, qhoff, dst) \
	VMOVDQU qloff(SI), Y4 \
	VMOVDQU qloff+32(SI), Y5 \
	VMOVDQU qhoff(SI), Y6 \
	VPSRLW $4, Y4, Y8 \
	VPAND Y15, Y8, Y8 \
	VPSRLW $4, Y5, Y9 \
	VPAND Y15, Y9, Y9 \
	VPAND Y15, Y4, Y4 \
	VPAND Y15, Y5, Y5 \
	VPSLLW $4, Y6, Y10 \
	VPAND Y14, Y10, Y10 \
	VPOR Y10, Y4, Y4 \
	VPSLLW $2, Y6, Y10 \
	VPAND Y14, Y10, Y10 \
	VPOR Y10, Y5, Y5 \
	VPAND Y14, Y6, Y10 \
	VPOR Y10, Y8, Y8 \
	VPSRLW $2, Y6, Y10 \
	VPAND Y14, Y10, Y10 \
	VPOR Y10, Y9, Y9 \
	VPSUBB Y13, Y4, Y4 \
	VPSUBB Y13, Y5, Y5 \
	VPSUBB Y13, Y8, Y8 \
	VPSUBB Y13, Y9, Y9 \
	VMOVDQU Y4, dst(SP) \
	VMOVDQU Y5, dst+32(SP) \
	VMOVDQU Y8, dst+64(SP) \
	VMOVDQU Y9, dst+96(SP)

// Q6HALF does 128 elements of a Q6_K block from the codes at q(SP) (see
// Q6CODES), x at DI, scales d*sc at soff(SP) (one per 16 elements).
#define Q6HALF(q, soff) \
	Q6GROUP(q, 0, soff, Y4, Y5, Y6, Y0) \
	Q6GROUP(q+16, 64, soff+4, Y7, Y8, Y9, Y1) \
	Q6GROUP(q+32, 128, soff+8, Y4, Y5, Y6, Y0) \
	Q6GROUP(q+48, 192, soff+12, Y7, Y8, Y9, Y1) \
	Q6GROUP(q+64, 256, soff+16, Y4, Y5, Y6, Y0) \
	Q6GROUP(q+80, 320, soff+20, Y7, Y8, Y9, Y1) \
	Q6GROUP(q+96, 384, soff+24, Y4, Y5, Y6, Y0) \
	Q6GROUP(q+112, 448, soff+28, Y7, Y8, Y9, Y1)

// BYTES broadcasts the byte value v into every byte of Y.
#define BYTES(v, Y, X) \
	MOVL v, AX \
	VMOVD AX, X \
	VPBROADCASTB X, Y

// Q5KBUILD stores at dst(SP) the 64 5-bit codes (bytes) of sub-blocks 2i
// (dst..dst+31) and 2i+1 (dst+32..dst+63) of a Q5_K block: nibbles at
// qoff(SI) as Q4_K, high bits in the 32 bytes at 16(SI) (bit 2i of qh[l]
// is bit 4 of element l of sub-block 2i, bit 2i+1 that of 2i+1, moved to
// bit 4 by the LO/HI word shifts and masked by Y14 = bytes 0x10). A block's
// four pairs are built before any is widened, so the loads of the codes do
// not wait on the stores just before them.
#define Q5KBUILD(qoff, LO, lok, HI, hik, dst) \
	VMOVDQU qoff(SI), Y4 \
	VPSRLW $4, Y4, Y5 \
	VPAND Y15, Y5, Y5 \
	VPAND Y15, Y4, Y4 \
	VMOVDQU 16(SI), Y6 \
	LO $lok, Y6, Y7 \
	VPAND Y14, Y7, Y7 \
	VPOR Y7, Y4, Y4 \
	HI $hik, Y6, Y7 \
	VPAND Y14, Y7, Y7 \
	VPOR Y7, Y5, Y5 \
	VMOVDQU Y4, dst(SP) \
	VMOVDQU Y5, dst+32(SP)

// Q5KALL builds the codes of all four pairs at 64(SP)..319(SP).
#define Q5KALL \
	Q5KBUILD(48, VPSLLW, 4, VPSLLW, 3, 64) \
	Q5KBUILD(80, VPSLLW, 2, VPSLLW, 1, 128) \
	Q5KBUILD(112, VPSLLW, 0, VPSRLW, 1, 192) \
	Q5KBUILD(144, VPSRLW, 2, VPSRLW, 3, 256)

// Q5KLOAD widens the 64 codes at src(SP): sub-block 2i to Y4-Y7, 2i+1 to
// Y8-Y11 (dwords).
#define Q5KLOAD(src) \
	VPMOVZXBD src(SP), Y4 \
	VPMOVZXBD src+8(SP), Y5 \
	VPMOVZXBD src+16(SP), Y6 \
	VPMOVZXBD src+24(SP), Y7 \
	VPMOVZXBD src+32(SP), Y8 \
	VPMOVZXBD src+40(SP), Y9 \
	VPMOVZXBD src+48(SP), Y10 \
	VPMOVZXBD src+56(SP), Y11

// KOUT writes one sub-block of 32 elements from dword codes A B C D:
// float(q) * (d*sc at soff(SP)) - (dmin*m at soff+32(SP)), to xoff(DI).
// Multiply then subtract, each rounded, as the reference does.
#define KOUT(A, B, C, D, xoff, soff) \
	VBROADCASTSS soff(SP), Y12 \
	VBROADCASTSS soff+32(SP), Y13 \
	VCVTDQ2PS A, A \
	VCVTDQ2PS B, B \
	VCVTDQ2PS C, C \
	VCVTDQ2PS D, D \
	VMULPS Y12, A, A \
	VMULPS Y12, B, B \
	VMULPS Y12, C, C \
	VMULPS Y12, D, D \
	VSUBPS Y13, A, A \
	VSUBPS Y13, B, B \
	VSUBPS Y13, C, C \
	VSUBPS Y13, D, D \
	VMOVUPS A, xoff(DI) \
	VMOVUPS B, xoff+32(DI) \
	VMOVUPS C, xoff+64(DI) \
	VMOVUPS D, xoff+96(DI)

// Q6OUT writes 16 Q6_K elements: signed codes at qoff(SP) times the scale
// d*sc at soff(SP), to xoff(DI).
#define Q6OUT(qoff, xoff, soff) \
	VPMOVSXBD qoff(SP), Y4 \
	VPMOVSXBD qoff+8(SP), Y5 \
	VCVTDQ2PS Y4, Y4 \
	VCVTDQ2PS Y5, Y5 \
	VBROADCASTSS soff(SP), Y6 \
	VMULPS Y6, Y4, Y4 \
	VMULPS Y6, Y5, Y5 \
	VMOVUPS Y4, xoff(DI) \
	VMOVUPS Y5, xoff+32(DI)

// Q4KDQPAIR writes sub-blocks 2i and 2i+1 of a Q4_K block (see Q4KPAIR).
#define Q4KDQPAIR(qoff, soff) \
	VPMOVZXBD qoff(SI), Y4 \
	VPMOVZXBD qoff+8(SI), Y5 \
	VPMOVZXBD qoff+16(SI), Y6 \
	VPMOVZXBD qoff+24(SI), Y7 \
	VPSRLD $4, Y4, Y8 \
	VPSRLD $4, Y5, Y9 \
	VPSRLD $4, Y6, Y10 \
	VPSRLD $4, Y7, Y11 \
	VPAND Y15, Y4, Y4 \
	VPAND Y15, Y5, Y5 \
	VPAND Y15, Y6, Y6 \
	VPAND Y15, Y7, Y7 \
	KOUT(Y4, Y5, Y6, Y7, 0, soff) \
	KOUT(Y8, Y9, Y10, Y11, 128, soff+4)

// Q6DQHALF writes 128 elements of a Q6_K block from the codes at q(SP).
#define Q6DQHALF(q, soff) \
	Q6OUT(q, 0, soff) \
	Q6OUT(q+16, 64, soff+4) \
	Q6OUT(q+32, 128, soff+8) \
	Q6OUT(q+48, 192, soff+12) \
	Q6OUT(q+64, 256, soff+16) \
	Q6OUT(q+80, 320, soff+20) \
	Q6OUT(q+96, 384, soff+24) \
	Q6OUT(q+112, 448, soff+28)

// WSUM adds x . (d*q + m) for one block's float codes in Y4-Y7 (as
// NIBBLES4 leaves them), x at xoff(DI), d and m broadcast in Y2 and Y3:
// each weight is one FMA and its product with x another, into four
// accumulators (Y0, Y1, Y8, Y9).
#define WSUM(xoff) \
	VFMADD213PS Y3, Y2, Y4 \
	VFMADD213PS Y3, Y2, Y5 \
	VFMADD213PS Y3, Y2, Y6 \
	VFMADD213PS Y3, Y2, Y7 \
	VFMADD231PS xoff(DI), Y4, Y0 \
	VFMADD231PS xoff+32(DI), Y6, Y1 \
	VFMADD231PS xoff+64(DI), Y5, Y8 \
	VFMADD231PS xoff+96(DI), Y7, Y9

// Q41BLOCK adds x . (d*q + m) for the Q4_1 block whose nibbles are at
// qoff(SI) and x at xoff(DI) (see WSUM).
#define Q41BLOCK(qoff, xoff) \
	NIBBLES4(qoff) \
	WSUM(xoff)

// Q5CONST sets the constants of NIBBLES5: Y15 dwords 0x0F, Y12 dwords
// 0x10, Y13 dwords 0-7.
#define Q5CONST \
	MOVL $15, AX \
	VMOVD AX, X15 \
	VPBROADCASTD X15, Y15 \
	MOVL $0x10, AX \
	VMOVD AX, X12 \
	VPBROADCASTD X12, Y12 \
	VMOVDQU q5lanes<>(SB), Y13

DATA q5lanes<>+0(SB)/8, $0x0000000100000000
DATA q5lanes<>+8(SB)/8, $0x0000000300000002
DATA q5lanes<>+16(SB)/8, $0x0000000500000004
DATA q5lanes<>+24(SB)/8, $0x0000000700000006
GLOBL q5lanes<>(SB), RODATA|NOPTR, $32

// FIFTH moves bit 8g of each lane of Y10 (lane k: qh >> k, so bit 8g+k of
// qh) to bit 4 with the shift SH $n and ORs it into the codes R.
#define FIFTH(SH, n, R) \
	SH $n, Y10, Y11 \
	VPAND Y12, Y11, Y11 \
	VPOR Y11, R, R

// NIBBLES5 widens the 5-bit codes of a Q5_0/Q5_1 block into Y4-Y7 as
// float32, in NIBBLES4's layout: nibbles at qoff(SI) as NIBBLES4, and bit
// i of the 32-bit qh at hoff(SI) as bit 4 of element i. Constants from
// Q5CONST; Y10 and Y11 are scratch.
#define NIBBLES5(qoff, hoff) \
	VPMOVZXBD qoff(SI), Y4 \
	VPMOVZXBD qoff+8(SI), Y6 \
	VPSRLD $4, Y4, Y5 \
	VPSRLD $4, Y6, Y7 \
	VPAND Y15, Y4, Y4 \
	VPAND Y15, Y6, Y6 \
	VPBROADCASTD hoff(SI), Y10 \
	VPSRLVD Y13, Y10, Y10 \
	FIFTH(VPSLLD, 4, Y4) \
	FIFTH(VPSRLD, 4, Y6) \
	FIFTH(VPSRLD, 12, Y5) \
	FIFTH(VPSRLD, 20, Y7) \
	VCVTDQ2PS Y4, Y4 \
	VCVTDQ2PS Y5, Y5 \
	VCVTDQ2PS Y6, Y6 \
	VCVTDQ2PS Y7, Y7

// Q51BLOCK adds x . (d*q + m) for the Q5_0/Q5_1 block whose nibbles are
// at qoff(SI) and fifth bits at hoff(SI) (see NIBBLES5, WSUM).
#define Q51BLOCK(qoff, hoff, xoff) \
	NIBBLES5(qoff, hoff) \
	WSUM(xoff)

// func dotQ8_0AVX2(row *byte, x *float32, nb int) float32
// Block: d (f16), 32 int8. Sum d * (x . q).
TEXT ·dotQ8_0AVX2(SB), NOSPLIT, $0-28
	MOVQ row+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

q8loop:
	MOVWLZX (SI), AX
	VMOVD AX, X2
	VCVTPH2PS X2, X2
	VBROADCASTSS X2, Y2
	VPMOVSXBD 2(SI), Y4
	VPMOVSXBD 10(SI), Y5
	VPMOVSXBD 18(SI), Y6
	VPMOVSXBD 26(SI), Y7
	VCVTDQ2PS Y4, Y4
	VCVTDQ2PS Y5, Y5
	VCVTDQ2PS Y6, Y6
	VCVTDQ2PS Y7, Y7
	VMULPS (DI), Y4, Y4
	VMULPS 32(DI), Y5, Y5
	VFMADD231PS 64(DI), Y6, Y4
	VFMADD231PS 96(DI), Y7, Y5
	VADDPS Y5, Y4, Y4
	VFMADD231PS Y4, Y2, Y0
	ADDQ $34, SI
	ADDQ $128, DI
	DECQ CX
	JZ   q8done

	// A second block into the second accumulator, so consecutive blocks'
	// final FMAs do not wait on each other.
	MOVWLZX (SI), AX
	VMOVD AX, X3
	VCVTPH2PS X3, X3
	VBROADCASTSS X3, Y3
	VPMOVSXBD 2(SI), Y8
	VPMOVSXBD 10(SI), Y9
	VPMOVSXBD 18(SI), Y10
	VPMOVSXBD 26(SI), Y11
	VCVTDQ2PS Y8, Y8
	VCVTDQ2PS Y9, Y9
	VCVTDQ2PS Y10, Y10
	VCVTDQ2PS Y11, Y11
	VMULPS (DI), Y8, Y8
	VMULPS 32(DI), Y9, Y9
	VFMADD231PS 64(DI), Y10, Y8
	VFMADD231PS 96(DI), Y11, Y9
	VADDPS Y9, Y8, Y8
	VFMADD231PS Y8, Y3, Y1
	ADDQ $34, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  q8loop

q8done:
	VADDPS Y1, Y0, Y0
	REDUCE
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotQ4_0AVX2(row *byte, x *float32, nb int) float32
// Block: d (f16), 16 bytes of nibbles; weight d*q - 8d, as Q4_1 with
// m = -8d. Two blocks per iteration share one float16 conversion.
TEXT ·dotQ4_0AVX2(SB), NOSPLIT, $32-28
	MOVQ row+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	MOVL $15, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0xc1000000, AX // -8.0
	VMOVD AX, X14
	VBROADCASTSS X14, X14
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9

q40pair:
	CMPQ CX, $2
	JL   q40one
	MOVWLZX (SI), AX
	MOVWLZX 18(SI), BX
	SHLL $16, BX
	ORL  BX, AX
	VMOVD AX, X10
	VCVTPH2PS X10, X10 // d0 d1
	VMULPS X14, X10, X11 // -8d0 -8d1
	VMOVUPS X10, 0(SP)
	VMOVUPS X11, 8(SP)
	VBROADCASTSS 0(SP), Y2
	VBROADCASTSS 8(SP), Y3
	Q41BLOCK(2, 0)
	VBROADCASTSS 4(SP), Y2
	VBROADCASTSS 12(SP), Y3
	Q41BLOCK(20, 128)
	ADDQ $36, SI
	ADDQ $256, DI
	SUBQ $2, CX
	JMP  q40pair

q40one:
	CMPQ CX, $1
	JL   q40done
	MOVWLZX (SI), AX
	VMOVD AX, X10
	VCVTPH2PS X10, X10
	VMULPS X14, X10, X11
	VBROADCASTSS X10, Y2
	VBROADCASTSS X11, Y3
	Q41BLOCK(2, 0)

q40done:
	VADDPS Y1, Y0, Y0
	VADDPS Y9, Y8, Y8
	VADDPS Y8, Y0, Y0
	REDUCE
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotQ4_1AVX2(row *byte, x *float32, nb int) float32
// Block: d, m (f16), 16 bytes of nibbles. Two blocks per iteration share
// one float16 conversion of their four constants.
TEXT ·dotQ4_1AVX2(SB), NOSPLIT, $16-28
	MOVQ row+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	MOVL $15, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9

q41pair:
	CMPQ CX, $2
	JL   q41one
	MOVL (SI), AX
	MOVL 20(SI), BX
	SHLQ $32, BX
	ORQ  BX, AX
	VMOVQ AX, X10
	VCVTPH2PS X10, X10 // d0 m0 d1 m1
	VMOVUPS X10, 0(SP)
	VBROADCASTSS 0(SP), Y2
	VBROADCASTSS 4(SP), Y3
	Q41BLOCK(4, 0)
	VBROADCASTSS 8(SP), Y2
	VBROADCASTSS 12(SP), Y3
	Q41BLOCK(24, 128)
	ADDQ $40, SI
	ADDQ $256, DI
	SUBQ $2, CX
	JMP  q41pair

q41one:
	CMPQ CX, $1
	JL   q41done
	HALF2(0, Y2, Y3, X10)
	Q41BLOCK(4, 0)

q41done:
	VADDPS Y1, Y0, Y0
	VADDPS Y9, Y8, Y8
	VADDPS Y8, Y0, Y0
	REDUCE
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotQ5_0AVX2(row *byte, x *float32, nb int) float32
// Block: d (f16), qh (32 fifth bits), 16 bytes of nibbles; weight
// d*q - 16d, as Q5_1 with m = -16d. Two blocks per iteration share one
// float16 conversion.
TEXT ·dotQ5_0AVX2(SB), NOSPLIT, $32-28
	MOVQ row+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	Q5CONST
	MOVL $0xc1800000, AX // -16.0
	VMOVD AX, X14
	VBROADCASTSS X14, X14
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9

q50pair:
	CMPQ CX, $2
	JL   q50one
	MOVWLZX (SI), AX
	MOVWLZX 22(SI), BX
	SHLL $16, BX
	ORL  BX, AX
	VMOVD AX, X10
	VCVTPH2PS X10, X10 // d0 d1
	VMULPS X14, X10, X11 // -16d0 -16d1
	VMOVUPS X10, 0(SP)
	VMOVUPS X11, 8(SP)
	VBROADCASTSS 0(SP), Y2
	VBROADCASTSS 8(SP), Y3
	Q51BLOCK(6, 2, 0)
	VBROADCASTSS 4(SP), Y2
	VBROADCASTSS 12(SP), Y3
	Q51BLOCK(28, 24, 128)
	ADDQ $44, SI
	ADDQ $256, DI
	SUBQ $2, CX
	JMP  q50pair

q50one:
	CMPQ CX, $1
	JL   q50done
	MOVWLZX (SI), AX
	VMOVD AX, X10
	VCVTPH2PS X10, X10
	VMULPS X14, X10, X11
	VBROADCASTSS X10, Y2
	VBROADCASTSS X11, Y3
	Q51BLOCK(6, 2, 0)

q50done:
	VADDPS Y1, Y0, Y0
	VADDPS Y9, Y8, Y8
	VADDPS Y8, Y0, Y0
	REDUCE
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotQ5_1AVX2(row *byte, x *float32, nb int) float32
// Block: d, m (f16), qh (32 fifth bits), 16 bytes of nibbles. Two blocks
// per iteration share one float16 conversion of their four constants.
TEXT ·dotQ5_1AVX2(SB), NOSPLIT, $16-28
	MOVQ row+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	Q5CONST
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9

q51pair:
	CMPQ CX, $2
	JL   q51one
	MOVL (SI), AX
	MOVL 24(SI), BX
	SHLQ $32, BX
	ORQ  BX, AX
	VMOVQ AX, X10
	VCVTPH2PS X10, X10 // d0 m0 d1 m1
	VMOVUPS X10, 0(SP)
	VBROADCASTSS 0(SP), Y2
	VBROADCASTSS 4(SP), Y3
	Q51BLOCK(8, 4, 0)
	VBROADCASTSS 8(SP), Y2
	VBROADCASTSS 12(SP), Y3
	Q51BLOCK(32, 28, 128)
	ADDQ $48, SI
	ADDQ $256, DI
	SUBQ $2, CX
	JMP  q51pair

q51one:
	CMPQ CX, $1
	JL   q51done
	HALF2(0, Y2, Y3, X10)
	Q51BLOCK(8, 4, 0)

q51done:
	VADDPS Y1, Y0, Y0
	VADDPS Y9, Y8, Y8
	VADDPS Y8, Y0, Y0
	REDUCE
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotQ4_KAVX2(row *byte, x *float32, nb int) float32
// Block (256 elements): d, dmin (f16), 12 scale bytes, 128 nibble bytes
// (four pairs of sub-blocks).
TEXT ·dotQ4_KAVX2(SB), NOSPLIT, $64-28
	MOVQ row+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	MOVL $15, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

q4kloop:
	KSCALES
	ADDQ $16, SI
	Q4KPAIR(0, 0)
	ADDQ $256, DI
	Q4KPAIR(32, 8)
	ADDQ $256, DI
	Q4KPAIR(64, 16)
	ADDQ $256, DI
	Q4KPAIR(96, 24)
	ADDQ $256, DI
	ADDQ $128, SI
	DECQ CX
	JNZ  q4kloop

	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	REDUCE
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotQ5_KAVX2(row *byte, x *float32, nb int) float32
// Block (256 elements): d, dmin (f16), 12 scale bytes, 32 bytes of high
// bits, 128 nibble bytes. As Q4_K with a fifth bit per code.
TEXT ·dotQ5_KAVX2(SB), NOSPLIT, $320-28
	MOVQ row+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	BYTES($0x0f, Y15, X15)
	BYTES($0x10, Y14, X14)
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

q5kloop:
	KSCALES
	Q5KALL
	Q5KLOAD(64)
	Q4KSUMS(0)
	ADDQ $256, DI
	Q5KLOAD(128)
	Q4KSUMS(8)
	ADDQ $256, DI
	Q5KLOAD(192)
	Q4KSUMS(16)
	ADDQ $256, DI
	Q5KLOAD(256)
	Q4KSUMS(24)
	ADDQ $256, DI
	ADDQ $176, SI
	DECQ CX
	JNZ  q5kloop

	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	REDUCE
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotQ6_KAVX2(row *byte, x *float32, nb int) float32
// Block (256 elements): 128 low-nibble bytes, 64 bytes of high pairs, 16
// int8 scales (one per 16 elements), d (f16). Sum d*sc * x.(q-32) per 16.
TEXT ·dotQ6_KAVX2(SB), NOSPLIT, $320-28
	MOVQ row+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	BYTES($0x0f, Y15, X15)
	BYTES($0x30, Y14, X14)
	BYTES($0x20, Y13, X13)
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

q6kloop:
	VPMOVSXBD 192(SI), Y4
	VPMOVSXBD 200(SI), Y5
	VCVTDQ2PS Y4, Y4
	VCVTDQ2PS Y5, Y5
	MOVWLZX 208(SI), AX
	VMOVD AX, X6
	VCVTPH2PS X6, X6
	VBROADCASTSS X6, Y6
	VMULPS Y6, Y4, Y4
	VMULPS Y6, Y5, Y5
	VMOVUPS Y4, 0(SP)
	VMOVUPS Y5, 32(SP)
	Q6CODES(0, 128, 64)
	Q6CODES(64, 160, 192)
	Q6HALF(64, 0)
	ADDQ $512, DI
	Q6HALF(192, 32)
	ADDQ $512, DI
	ADDQ $210, SI
	DECQ CX
	JNZ  q6kloop

	VADDPS Y1, Y0, Y0
	REDUCE
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotF16AVX2(row *byte, x *float32, n int) float32
// n a positive multiple of 8; VCVTPH2PS widens eight halves at a time.
TEXT ·dotF16AVX2(SB), NOSPLIT, $0-28
	MOVQ row+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

h32:
	CMPQ CX, $32
	JL   h8
	VCVTPH2PS (SI), Y4
	VCVTPH2PS 16(SI), Y5
	VCVTPH2PS 32(SI), Y6
	VCVTPH2PS 48(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  h32

h8:
	CMPQ CX, $8
	JL   hdone
	VCVTPH2PS (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  h8

hdone:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	REDUCE
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// The dequantizing kernels write nb blocks to dst with the reference's
// rounding: each value is one product (or a product then one add or
// subtract), never fused.

// func dequantQ8_0AVX2(src *byte, dst *float32, nb int)
TEXT ·dequantQ8_0AVX2(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ nb+16(FP), CX

dq8loop:
	MOVWLZX (SI), AX
	VMOVD AX, X2
	VCVTPH2PS X2, X2
	VBROADCASTSS X2, Y2
	VPMOVSXBD 2(SI), Y4
	VPMOVSXBD 10(SI), Y5
	VPMOVSXBD 18(SI), Y6
	VPMOVSXBD 26(SI), Y7
	VCVTDQ2PS Y4, Y4
	VCVTDQ2PS Y5, Y5
	VCVTDQ2PS Y6, Y6
	VCVTDQ2PS Y7, Y7
	VMULPS Y2, Y4, Y4
	VMULPS Y2, Y5, Y5
	VMULPS Y2, Y6, Y6
	VMULPS Y2, Y7, Y7
	VMOVUPS Y4, (DI)
	VMOVUPS Y5, 32(DI)
	VMOVUPS Y6, 64(DI)
	VMOVUPS Y7, 96(DI)
	ADDQ $34, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  dq8loop
	VZEROUPPER
	RET

// func dequantQ4_0AVX2(src *byte, dst *float32, nb int)
// (q - 8) is exact in float32, so subtracting after the conversion rounds
// nothing; then one product with d.
TEXT ·dequantQ4_0AVX2(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ nb+16(FP), CX
	MOVL $15, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x41000000, AX // 8.0
	VMOVD AX, X14
	VBROADCASTSS X14, Y14

dq40loop:
	MOVWLZX (SI), AX
	VMOVD AX, X2
	VCVTPH2PS X2, X2
	VBROADCASTSS X2, Y2
	NIBBLES4(2)
	VSUBPS Y14, Y4, Y4
	VSUBPS Y14, Y5, Y5
	VSUBPS Y14, Y6, Y6
	VSUBPS Y14, Y7, Y7
	VMULPS Y2, Y4, Y4
	VMULPS Y2, Y5, Y5
	VMULPS Y2, Y6, Y6
	VMULPS Y2, Y7, Y7
	VMOVUPS Y4, (DI)
	VMOVUPS Y6, 32(DI)
	VMOVUPS Y5, 64(DI)
	VMOVUPS Y7, 96(DI)
	ADDQ $18, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  dq40loop
	VZEROUPPER
	RET

// func dequantQ4_1AVX2(src *byte, dst *float32, nb int)
TEXT ·dequantQ4_1AVX2(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ nb+16(FP), CX
	MOVL $15, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15

dq41loop:
	HALF2(0, Y2, Y3, X8)
	NIBBLES4(4)
	VMULPS Y2, Y4, Y4
	VMULPS Y2, Y5, Y5
	VMULPS Y2, Y6, Y6
	VMULPS Y2, Y7, Y7
	VADDPS Y3, Y4, Y4
	VADDPS Y3, Y5, Y5
	VADDPS Y3, Y6, Y6
	VADDPS Y3, Y7, Y7
	VMOVUPS Y4, (DI)
	VMOVUPS Y6, 32(DI)
	VMOVUPS Y5, 64(DI)
	VMOVUPS Y7, 96(DI)
	ADDQ $20, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  dq41loop
	VZEROUPPER
	RET

// func dequantQ5_0AVX2(src *byte, dst *float32, nb int)
// As Q4_0: (q - 16) is exact, then one product with d.
TEXT ·dequantQ5_0AVX2(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ nb+16(FP), CX
	Q5CONST
	MOVL $0x41800000, AX // 16.0
	VMOVD AX, X14
	VBROADCASTSS X14, Y14

dq50loop:
	MOVWLZX (SI), AX
	VMOVD AX, X2
	VCVTPH2PS X2, X2
	VBROADCASTSS X2, Y2
	NIBBLES5(6, 2)
	VSUBPS Y14, Y4, Y4
	VSUBPS Y14, Y5, Y5
	VSUBPS Y14, Y6, Y6
	VSUBPS Y14, Y7, Y7
	VMULPS Y2, Y4, Y4
	VMULPS Y2, Y5, Y5
	VMULPS Y2, Y6, Y6
	VMULPS Y2, Y7, Y7
	VMOVUPS Y4, (DI)
	VMOVUPS Y6, 32(DI)
	VMOVUPS Y5, 64(DI)
	VMOVUPS Y7, 96(DI)
	ADDQ $22, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  dq50loop
	VZEROUPPER
	RET

// func dequantQ5_1AVX2(src *byte, dst *float32, nb int)
TEXT ·dequantQ5_1AVX2(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ nb+16(FP), CX
	Q5CONST

dq51loop:
	HALF2(0, Y2, Y3, X8)
	NIBBLES5(8, 4)
	VMULPS Y2, Y4, Y4
	VMULPS Y2, Y5, Y5
	VMULPS Y2, Y6, Y6
	VMULPS Y2, Y7, Y7
	VADDPS Y3, Y4, Y4
	VADDPS Y3, Y5, Y5
	VADDPS Y3, Y6, Y6
	VADDPS Y3, Y7, Y7
	VMOVUPS Y4, (DI)
	VMOVUPS Y6, 32(DI)
	VMOVUPS Y5, 64(DI)
	VMOVUPS Y7, 96(DI)
	ADDQ $24, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  dq51loop
	VZEROUPPER
	RET

// func dequantQ4_KAVX2(src *byte, dst *float32, nb int)
TEXT ·dequantQ4_KAVX2(SB), NOSPLIT, $64-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ nb+16(FP), CX
	MOVL $15, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15

dq4kloop:
	KSCALES
	Q4KDQPAIR(16, 0)
	ADDQ $256, DI
	Q4KDQPAIR(48, 8)
	ADDQ $256, DI
	Q4KDQPAIR(80, 16)
	ADDQ $256, DI
	Q4KDQPAIR(112, 24)
	ADDQ $256, DI
	ADDQ $144, SI
	DECQ CX
	JNZ  dq4kloop
	VZEROUPPER
	RET

// func dequantQ5_KAVX2(src *byte, dst *float32, nb int)
TEXT ·dequantQ5_KAVX2(SB), NOSPLIT, $320-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ nb+16(FP), CX
	BYTES($0x0f, Y15, X15)
	BYTES($0x10, Y14, X14)

dq5kloop:
	KSCALES
	Q5KALL
	Q5KLOAD(64)
	KOUT(Y4, Y5, Y6, Y7, 0, 0)
	KOUT(Y8, Y9, Y10, Y11, 128, 4)
	ADDQ $256, DI
	Q5KLOAD(128)
	KOUT(Y4, Y5, Y6, Y7, 0, 8)
	KOUT(Y8, Y9, Y10, Y11, 128, 12)
	ADDQ $256, DI
	Q5KLOAD(192)
	KOUT(Y4, Y5, Y6, Y7, 0, 16)
	KOUT(Y8, Y9, Y10, Y11, 128, 20)
	ADDQ $256, DI
	Q5KLOAD(256)
	KOUT(Y4, Y5, Y6, Y7, 0, 24)
	KOUT(Y8, Y9, Y10, Y11, 128, 28)
	ADDQ $256, DI
	ADDQ $176, SI
	DECQ CX
	JNZ  dq5kloop
	VZEROUPPER
	RET

// func dequantQ6_KAVX2(src *byte, dst *float32, nb int)
TEXT ·dequantQ6_KAVX2(SB), NOSPLIT, $320-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ nb+16(FP), CX
	BYTES($0x0f, Y15, X15)
	BYTES($0x30, Y14, X14)
	BYTES($0x20, Y13, X13)

dq6kloop:
	VPMOVSXBD 192(SI), Y4
	VPMOVSXBD 200(SI), Y5
	VCVTDQ2PS Y4, Y4
	VCVTDQ2PS Y5, Y5
	MOVWLZX 208(SI), AX
	VMOVD AX, X6
	VCVTPH2PS X6, X6
	VBROADCASTSS X6, Y6
	VMULPS Y6, Y4, Y4
	VMULPS Y6, Y5, Y5
	VMOVUPS Y4, 0(SP)
	VMOVUPS Y5, 32(SP)
	Q6CODES(0, 128, 64)
	Q6CODES(64, 160, 192)
	Q6DQHALF(64, 0)
	ADDQ $512, DI
	Q6DQHALF(192, 32)
	ADDQ $512, DI
	ADDQ $210, SI
	DECQ CX
	JNZ  dq6kloop
	VZEROUPPER
	RET

// func dequantF16AVX2(src *byte, dst *float32, n int)
// n a positive multiple of 8.
TEXT ·dequantF16AVX2(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ n+16(FP), CX

dh8:
	VCVTPH2PS (SI), Y4
	VMOVUPS Y4, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  dh8
	VZEROUPPER
	RET
