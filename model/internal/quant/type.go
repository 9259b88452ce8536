package quant

import (
	"errors"
	"fmt"
)

// Type is a weight format; its values are ggml's type ids (enum ggml_type).
type Type uint32

// The supported types. The gaps (Q5_0=6, Q8_1=9, Q2_K=10, ...) are ggml
// types this package does not decode.
const (
	F32  Type = 0
	F16  Type = 1
	Q4_0 Type = 2
	Q4_1 Type = 3
	Q8_0 Type = 8
	Q4_K Type = 12
	Q5_K Type = 13
	Q6_K Type = 14
	BF16 Type = 30
)

var (
	// ErrUnknownType reports a type id this package does not decode.
	ErrUnknownType = errors.New("quant: unsupported type")
	// ErrBlockSize reports a row length that is not a whole number of blocks.
	ErrBlockSize = errors.New("quant: length is not a multiple of the block size")
	// ErrSize reports a byte buffer that does not hold exactly one row.
	ErrSize = errors.New("quant: buffer size does not match the row")
)

// qk is the element count of a K-quant super-block (ggml's QK_K).
const qk = 256

type layout struct {
	name         string
	elems, bytes int
}

var layouts = map[Type]layout{
	F32:  {"F32", 1, 4},
	F16:  {"F16", 1, 2},
	BF16: {"BF16", 1, 2},
	Q4_0: {"Q4_0", 32, 2 + 16},                   // d, 32 nibbles
	Q4_1: {"Q4_1", 32, 2 + 2 + 16},               // d, m, 32 nibbles
	Q8_0: {"Q8_0", 32, 2 + 32},                   // d, 32 int8
	Q4_K: {"Q4_K", qk, 2 + 2 + 12 + qk/2},        // d, dmin, 8 6-bit scale/min pairs, nibbles
	Q5_K: {"Q5_K", qk, 2 + 2 + 12 + qk/8 + qk/2}, // as Q4_K plus one high bit per element
	Q6_K: {"Q6_K", qk, qk/2 + qk/4 + qk/16 + 2},  // low nibbles, high 2 bits, 16 int8 scales, d
}

// String is ggml's name for the type ("Q4_K"), or "Type(n)" when unknown.
func (t Type) String() string {
	if l, ok := layouts[t]; ok {
		return l.name
	}
	return fmt.Sprintf("Type(%d)", uint32(t))
}

// Known reports whether this package decodes t.
func (t Type) Known() bool {
	_, ok := layouts[t]
	return ok
}

// BlockSize returns how many elements one block of t holds and how many
// bytes it takes; 0, 0 for an unknown type.
func BlockSize(t Type) (elems, bytes int) {
	l := layouts[t]
	return l.elems, l.bytes
}

// RowBytes is the size of a row of n elements of type t. It fails for an
// unknown type and for n negative or not a multiple of the block size.
func RowBytes(t Type, n int) (int, error) {
	l, ok := layouts[t]
	if !ok {
		return 0, fmt.Errorf("%w: %v", ErrUnknownType, t)
	}
	if n < 0 || n%l.elems != 0 {
		return 0, fmt.Errorf("%w: %d elements of %v (blocks of %d)", ErrBlockSize, n, t, l.elems)
	}
	return n / l.elems * l.bytes, nil
}
