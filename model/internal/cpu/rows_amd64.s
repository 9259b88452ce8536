#include "textflag.h"

// func weightedRows64AVX2(o, p, v *float32, n, stride int)
// o[c] = sum over j < n of p[j] * v[j*stride+c], for c < 64: attention's
// weighted sum of value rows, one head's 64 columns in eight accumulators,
// so each key costs one broadcast and eight FMAs and no store.
TEXT ·weightedRows64AVX2(SB), NOSPLIT, $0-40
	MOVQ o+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ v+16(FP), R8
	MOVQ n+24(FP), CX
	MOVQ stride+32(FP), DX
	SHLQ $2, DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	TESTQ CX, CX
	JLE  w64done

w64loop:
	VBROADCASTSS (SI), Y8
	VFMADD231PS (R8), Y8, Y0
	VFMADD231PS 32(R8), Y8, Y1
	VFMADD231PS 64(R8), Y8, Y2
	VFMADD231PS 96(R8), Y8, Y3
	VFMADD231PS 128(R8), Y8, Y4
	VFMADD231PS 160(R8), Y8, Y5
	VFMADD231PS 192(R8), Y8, Y6
	VFMADD231PS 224(R8), Y8, Y7
	ADDQ $4, SI
	ADDQ DX, R8
	DECQ CX
	JNZ  w64loop

w64done:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	VZEROUPPER
	RET

// func weightedRows8AVX2(o, p, v *float32, n, stride int)
// weightedRows64AVX2 for 8 columns: the columns a head has past its
// multiples of 64.
TEXT ·weightedRows8AVX2(SB), NOSPLIT, $0-40
	MOVQ o+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ v+16(FP), R8
	MOVQ n+24(FP), CX
	MOVQ stride+32(FP), DX
	SHLQ $2, DX
	VXORPS Y0, Y0, Y0
	TESTQ CX, CX
	JLE  w8done

w8loop:
	VBROADCASTSS (SI), Y8
	VFMADD231PS (R8), Y8, Y0
	ADDQ $4, SI
	ADDQ DX, R8
	DECQ CX
	JNZ  w8loop

w8done:
	VMOVUPS Y0, (DI)
	VZEROUPPER
	RET
