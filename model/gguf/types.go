package gguf

import "fmt"

// Type is a tensor's ggml type, with ggml's numeric ids (ggml.h's enum
// ggml_type; ids that ggml removed are not defined).
type Type uint32

// The ggml tensor types.
const (
	F32     Type = 0
	F16     Type = 1
	Q4_0    Type = 2
	Q4_1    Type = 3
	Q5_0    Type = 6
	Q5_1    Type = 7
	Q8_0    Type = 8
	Q8_1    Type = 9
	Q2_K    Type = 10
	Q3_K    Type = 11
	Q4_K    Type = 12
	Q5_K    Type = 13
	Q6_K    Type = 14
	Q8_K    Type = 15
	IQ2_XXS Type = 16
	IQ2_XS  Type = 17
	IQ3_XXS Type = 18
	IQ1_S   Type = 19
	IQ4_NL  Type = 20
	IQ3_S   Type = 21
	IQ2_S   Type = 22
	IQ4_XS  Type = 23
	I8      Type = 24
	I16     Type = 25
	I32     Type = 26
	I64     Type = 27
	F64     Type = 28
	IQ1_M   Type = 29
	BF16    Type = 30
	TQ1_0   Type = 34
	TQ2_0   Type = 35
	MXFP4   Type = 39
	NVFP4   Type = 40
	Q1_0    Type = 41
)

// typeInfo is a type's block: elements per block and bytes per block (as in
// ggml's type traits and gguf-py's GGML_QUANT_SIZES).
type typeInfo struct {
	name        string
	block, size int
}

var types = map[Type]typeInfo{
	F32: {"F32", 1, 4}, F16: {"F16", 1, 2}, Q4_0: {"Q4_0", 32, 18}, Q4_1: {"Q4_1", 32, 20},
	Q5_0: {"Q5_0", 32, 22}, Q5_1: {"Q5_1", 32, 24}, Q8_0: {"Q8_0", 32, 34}, Q8_1: {"Q8_1", 32, 40},
	Q2_K: {"Q2_K", 256, 84}, Q3_K: {"Q3_K", 256, 110}, Q4_K: {"Q4_K", 256, 144}, Q5_K: {"Q5_K", 256, 176},
	Q6_K: {"Q6_K", 256, 210}, Q8_K: {"Q8_K", 256, 292}, IQ2_XXS: {"IQ2_XXS", 256, 66}, IQ2_XS: {"IQ2_XS", 256, 74},
	IQ3_XXS: {"IQ3_XXS", 256, 98}, IQ1_S: {"IQ1_S", 256, 50}, IQ4_NL: {"IQ4_NL", 32, 18}, IQ3_S: {"IQ3_S", 256, 110},
	IQ2_S: {"IQ2_S", 256, 82}, IQ4_XS: {"IQ4_XS", 256, 136}, I8: {"I8", 1, 1}, I16: {"I16", 1, 2},
	I32: {"I32", 1, 4}, I64: {"I64", 1, 8}, F64: {"F64", 1, 8}, IQ1_M: {"IQ1_M", 256, 56},
	BF16: {"BF16", 1, 2}, TQ1_0: {"TQ1_0", 256, 54}, TQ2_0: {"TQ2_0", 256, 66}, MXFP4: {"MXFP4", 32, 17},
	NVFP4: {"NVFP4", 64, 36}, Q1_0: {"Q1_0", 128, 18},
}

// Known reports whether ggml defines t.
func (t Type) Known() bool { _, ok := types[t]; return ok }

func (t Type) String() string {
	if ti, ok := types[t]; ok {
		return ti.name
	}
	return fmt.Sprintf("Type(%d)", uint32(t))
}

// BlockSize is the number of elements one block of t holds (1 for plain
// types, 0 for an unknown type).
func (t Type) BlockSize() int { return types[t].block }

// BlockBytes is the size of one block of t in bytes (0 for an unknown type).
func (t Type) BlockBytes() int { return types[t].size }

// RowBytes is the size of n consecutive elements of t, or -1 when n is not a
// whole number of blocks or t is unknown.
func (t Type) RowBytes(n int64) int64 {
	ti, ok := types[t]
	if !ok || n < 0 || n%int64(ti.block) != 0 {
		return -1
	}
	return n / int64(ti.block) * int64(ti.size)
}

// ValueType is the type of a metadata value (gguf.h's enum gguf_type).
type ValueType uint32

// The metadata value types.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

func (v ValueType) String() string {
	if int(v) < len(valueTypeNames) {
		return valueTypeNames[v]
	}
	return fmt.Sprintf("ValueType(%d)", uint32(v))
}

// size is the encoded size of a fixed-size scalar, 0 for string and array
// and -1 for an unknown type.
func (v ValueType) size() int {
	switch v {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	case TypeString, TypeArray:
		return 0
	}
	return -1
}

// minSize is the fewest bytes a value of type v takes (a string's or an
// array's length prefix), used to bound counts before allocating.
func (v ValueType) minSize() int64 {
	switch v {
	case TypeString:
		return 8
	case TypeArray:
		return 12
	}
	return int64(v.size())
}
