#include "textflag.h"

// func gemm6x16AVX2(xt, w *float32, k, ldw int, acc *[96]float32)
// acc[r*16+c] = sum over i < k of w[r*ldw+i] * xt[i*16+c], for r < 6 and
// c < 16: six weight rows against a tile of 16 input rows stored k-major
// (see matMulTiles). Each step loads the tile's 16 values of one k (two
// vectors) and broadcasts each row's weight: 12 FMAs for 2 loads and 6
// broadcasts, into 12 accumulators (Y4-Y15), so the FMA units, not the
// loads, bound it.
TEXT ·gemm6x16AVX2(SB), NOSPLIT, $0-40
	MOVQ xt+0(FP), SI
	MOVQ w+8(FP), DI
	MOVQ k+16(FP), CX
	MOVQ ldw+24(FP), DX
	SHLQ $2, DX
	LEAQ (DI)(DX*2), R10
	ADDQ DX, R10 // R10: row 3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15
	TESTQ CX, CX
	JLE  gdone

gloop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VBROADCASTSS (DI), Y2
	VFMADD231PS Y0, Y2, Y4
	VFMADD231PS Y1, Y2, Y5
	VBROADCASTSS (DI)(DX*1), Y3
	VFMADD231PS Y0, Y3, Y6
	VFMADD231PS Y1, Y3, Y7
	VBROADCASTSS (DI)(DX*2), Y2
	VFMADD231PS Y0, Y2, Y8
	VFMADD231PS Y1, Y2, Y9
	VBROADCASTSS (R10), Y3
	VFMADD231PS Y0, Y3, Y10
	VFMADD231PS Y1, Y3, Y11
	VBROADCASTSS (R10)(DX*1), Y2
	VFMADD231PS Y0, Y2, Y12
	VFMADD231PS Y1, Y2, Y13
	VBROADCASTSS (R10)(DX*2), Y3
	VFMADD231PS Y0, Y3, Y14
	VFMADD231PS Y1, Y3, Y15
	ADDQ $64, SI
	ADDQ $4, DI
	ADDQ $4, R10
	DECQ CX
	JNZ  gloop

gdone:
	MOVQ acc+32(FP), R8
	VMOVUPS Y4, (R8)
	VMOVUPS Y5, 32(R8)
	VMOVUPS Y6, 64(R8)
	VMOVUPS Y7, 96(R8)
	VMOVUPS Y8, 128(R8)
	VMOVUPS Y9, 160(R8)
	VMOVUPS Y10, 192(R8)
	VMOVUPS Y11, 224(R8)
	VMOVUPS Y12, 256(R8)
	VMOVUPS Y13, 288(R8)
	VMOVUPS Y14, 320(R8)
	VMOVUPS Y15, 352(R8)
	VZEROUPPER
	RET
