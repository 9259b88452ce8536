package gguf

import (
	"fmt"
	"math"
)

// Value is one metadata value. A scalar holds its Go type (uint8, int8,
// uint16, int16, uint32, int32, float32, bool, string, uint64, int64,
// float64); an array holds a slice of one of those ([]string, []int32, ...),
// or []Value for an array of arrays.
type Value struct {
	typ  ValueType
	elem ValueType // element type of an array
	v    any
}

// KV is one metadata entry.
type KV struct {
	Key   string
	Value Value
}

// ValueOf makes a Value from one of the Go types Value documents.
func ValueOf(v any) (Value, error) {
	switch x := v.(type) {
	case uint8:
		return Value{typ: TypeUint8, v: x}, nil
	case int8:
		return Value{typ: TypeInt8, v: x}, nil
	case uint16:
		return Value{typ: TypeUint16, v: x}, nil
	case int16:
		return Value{typ: TypeInt16, v: x}, nil
	case uint32:
		return Value{typ: TypeUint32, v: x}, nil
	case int32:
		return Value{typ: TypeInt32, v: x}, nil
	case float32:
		return Value{typ: TypeFloat32, v: x}, nil
	case bool:
		return Value{typ: TypeBool, v: x}, nil
	case string:
		return Value{typ: TypeString, v: x}, nil
	case uint64:
		return Value{typ: TypeUint64, v: x}, nil
	case int64:
		return Value{typ: TypeInt64, v: x}, nil
	case float64:
		return Value{typ: TypeFloat64, v: x}, nil
	case []uint8:
		return array(TypeUint8, x), nil
	case []int8:
		return array(TypeInt8, x), nil
	case []uint16:
		return array(TypeUint16, x), nil
	case []int16:
		return array(TypeInt16, x), nil
	case []uint32:
		return array(TypeUint32, x), nil
	case []int32:
		return array(TypeInt32, x), nil
	case []float32:
		return array(TypeFloat32, x), nil
	case []bool:
		return array(TypeBool, x), nil
	case []string:
		return array(TypeString, x), nil
	case []uint64:
		return array(TypeUint64, x), nil
	case []int64:
		return array(TypeInt64, x), nil
	case []float64:
		return array(TypeFloat64, x), nil
	case []Value:
		for i, e := range x {
			if e.typ != TypeArray {
				return Value{}, fmt.Errorf("gguf: array of arrays: element %d is a %s", i, e.typ)
			}
		}
		return array(TypeArray, x), nil
	}
	return Value{}, fmt.Errorf("gguf: %T is not a GGUF value type", v)
}

func array(elem ValueType, v any) Value { return Value{typ: TypeArray, elem: elem, v: v} }

// Type is the value's type; for an array, Elem is its elements' type.
func (v Value) Type() ValueType { return v.typ }

// Elem is an array's element type.
func (v Value) Elem() ValueType { return v.elem }

// Any is the value as its Go type.
func (v Value) Any() any { return v.v }

// Uint is an integer value of any width that is not negative.
func (v Value) Uint() (uint64, bool) {
	switch x := v.v.(type) {
	case uint8:
		return uint64(x), true
	case uint16:
		return uint64(x), true
	case uint32:
		return uint64(x), true
	case uint64:
		return x, true
	case int8, int16, int32, int64:
		i, _ := v.Int()
		if i >= 0 {
			return uint64(i), true
		}
	}
	return 0, false
}

// Int is an integer value of any width that fits an int64.
func (v Value) Int() (int64, bool) {
	switch x := v.v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8, uint16, uint32, uint64:
		u, _ := v.Uint()
		if u <= math.MaxInt64 {
			return int64(u), true
		}
	}
	return 0, false
}

// Float is a float32 or float64 value.
func (v Value) Float() (float64, bool) {
	switch x := v.v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// String is the value of a string, or a description of any other value.
func (v Value) String() string {
	if s, ok := v.v.(string); ok {
		return s
	}
	if v.typ == TypeArray {
		return fmt.Sprintf("[%s array of %d]", v.elem, v.Len())
	}
	return fmt.Sprint(v.v)
}

// Len is an array's length (0 for a scalar).
func (v Value) Len() int {
	switch x := v.v.(type) {
	case []uint8:
		return len(x)
	case []int8:
		return len(x)
	case []uint16:
		return len(x)
	case []int16:
		return len(x)
	case []uint32:
		return len(x)
	case []int32:
		return len(x)
	case []float32:
		return len(x)
	case []bool:
		return len(x)
	case []string:
		return len(x)
	case []uint64:
		return len(x)
	case []int64:
		return len(x)
	case []float64:
		return len(x)
	case []Value:
		return len(x)
	}
	return 0
}

// Ints is an array of integers of any width, widened to int64.
func (v Value) Ints() ([]int64, bool) {
	if v.typ != TypeArray {
		return nil, false
	}
	switch x := v.v.(type) {
	case []uint8:
		return widen(x), true
	case []int8:
		return widen(x), true
	case []uint16:
		return widen(x), true
	case []int16:
		return widen(x), true
	case []uint32:
		return widen(x), true
	case []int32:
		return widen(x), true
	case []int64:
		return x, true
	case []uint64:
		out := make([]int64, len(x))
		for i, u := range x {
			if u > math.MaxInt64 {
				return nil, false
			}
			out[i] = int64(u)
		}
		return out, true
	}
	return nil, false
}

func widen[T uint8 | int8 | uint16 | int16 | uint32 | int32](x []T) []int64 {
	out := make([]int64, len(x))
	for i, e := range x {
		out[i] = int64(e)
	}
	return out
}

// Floats is an array of float32 or float64, as float32.
func (v Value) Floats() ([]float32, bool) {
	switch x := v.v.(type) {
	case []float32:
		return x, true
	case []float64:
		out := make([]float32, len(x))
		for i, f := range x {
			out[i] = float32(f)
		}
		return out, true
	}
	return nil, false
}

// Strings is an array of strings.
func (v Value) Strings() ([]string, bool) {
	x, ok := v.v.([]string)
	return x, ok
}
