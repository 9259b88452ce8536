package quant

import (
	"errors"
	"fmt"
)

// Type is a weight format; its values are ggml's type ids (enum ggml_type).
type Type uint32

// The supported types. The gaps (Q8_1=9, Q2_K=10, ...) are ggml types this
// package does not decode.
const (
	F32  Type = 0
	F16  Type = 1
	Q4_0 Type = 2
	Q4_1 Type = 3
	Q5_0 Type = 6
	Q5_1 Type = 7
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

// layout is one type's block: elems = 1<<shift elements in bytes bytes.
type layout struct {
	name         string
	shift, bytes int
}

// layouts is indexed by Type (an array, not a map: DotRow reads it per row).
var layouts = [BF16 + 1]layout{
	F32:  {"F32", 0, 4},
	F16:  {"F16", 0, 2},
	BF16: {"BF16", 0, 2},
	Q4_0: {"Q4_0", 5, 2 + 16},                   // d, 32 nibbles
	Q4_1: {"Q4_1", 5, 2 + 2 + 16},               // d, m, 32 nibbles
	Q5_0: {"Q5_0", 5, 2 + 4 + 16},               // d, 32 fifth bits, 32 nibbles
	Q5_1: {"Q5_1", 5, 2 + 2 + 4 + 16},           // d, m, 32 fifth bits, 32 nibbles
	Q8_0: {"Q8_0", 5, 2 + 32},                   // d, 32 int8
	Q4_K: {"Q4_K", 8, 2 + 2 + 12 + qk/2},        // d, dmin, 8 6-bit scale/min pairs, nibbles
	Q5_K: {"Q5_K", 8, 2 + 2 + 12 + qk/8 + qk/2}, // as Q4_K plus one high bit per element
	Q6_K: {"Q6_K", 8, qk/2 + qk/4 + qk/16 + 2},  // low nibbles, high 2 bits, 16 int8 scales, d
}

func lookup(t Type) (layout, bool) {
	if t >= Type(len(layouts)) || layouts[t].bytes == 0 {
		return layout{}, false
	}
	return layouts[t], true
}

// String is ggml's name for the type ("Q4_K"), or "Type(n)" when unknown.
func (t Type) String() string {
	if l, ok := lookup(t); ok {
		return l.name
	}
	return fmt.Sprintf("Type(%d)", uint32(t))
}

// Known reports whether this package decodes t.
func (t Type) Known() bool {
	_, ok := lookup(t)
	return ok
}

// BlockSize returns how many elements one block of t holds and how many
// bytes it takes; 0, 0 for an unknown type.
func BlockSize(t Type) (elems, bytes int) {
	l, ok := lookup(t)
	if !ok {
		return 0, 0
	}
	return 1 << l.shift, l.bytes
}

// RowBytes is the size of a row of n elements of type t. It fails for an
// unknown type and for n negative or not a multiple of the block size.
func RowBytes(t Type, n int) (int, error) {
	l, ok := lookup(t)
	if !ok {
		return 0, fmt.Errorf("%w: %v", ErrUnknownType, t)
	}
	if n < 0 || n&(1<<l.shift-1) != 0 {
		return 0, fmt.Errorf("%w: %d elements of %v (blocks of %d)", ErrBlockSize, n, t, 1<<l.shift)
	}
	return n >> l.shift * l.bytes, nil
}
