package mlx

import "fmt"

// DType is mlx_dtype, with mlx-c's values.
type DType int32

const (
	Bool DType = iota
	Uint8
	Uint16
	Uint32
	Uint64
	Int8
	Int16
	Int32
	Int64
	Float16
	Float32
	Float64
	BFloat16
	Complex64
)

var dtypeNames = [...]string{"bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
	"float16", "float32", "float64", "bfloat16", "complex64"}

func (d DType) String() string {
	if d >= 0 && int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return fmt.Sprintf("DType(%d)", int32(d))
}

// Size is the element size in bytes.
func (d DType) Size() int {
	switch d {
	case Bool, Uint8, Int8:
		return 1
	case Uint16, Int16, Float16, BFloat16:
		return 2
	case Uint32, Int32, Float32:
		return 4
	case Uint64, Int64, Float64, Complex64:
		return 8
	}
	return 0
}

// Element is a Go type an Array can be made from and read into.
type Element interface{ float32 | int32 | uint32 }

func dtypeOf[T Element]() DType {
	var z T
	switch any(z).(type) {
	case int32:
		return Int32
	case uint32:
		return Uint32
	}
	return Float32
}
