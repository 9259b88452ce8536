package codeobj

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The AMDGPU metadata note is one MessagePack document. This is a small
// decoder for the subset a metadata note can hold (nil, bool, integers,
// floats, str, bin, array, map with string keys), written for untrusted input:
// every length is checked against the bytes that remain before anything is
// allocated, nesting is bounded, and every failure is a *MsgpackError.

// maxMsgpackDepth bounds nesting; real metadata is 5 levels deep.
const maxMsgpackDepth = 32

// MsgpackError reports malformed MessagePack at a byte offset in the note.
type MsgpackError struct {
	Offset int
	Reason string
}

func (e *MsgpackError) Error() string {
	return fmt.Sprintf("msgpack at byte %d: %s", e.Offset, e.Reason)
}

// decodeMsgpack decodes exactly one value that spans all of b. Maps become
// map[string]any, arrays []any, integers int64 (or uint64 above MaxInt64),
// floats float64, str string, bin []byte.
func decodeMsgpack(b []byte) (any, error) {
	d := msgpackDecoder{b: b}
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	if d.off != len(b) {
		return nil, d.fail("%d trailing bytes after the document", len(b)-d.off)
	}
	return v, nil
}

type msgpackDecoder struct {
	b   []byte
	off int
}

func (d *msgpackDecoder) fail(format string, args ...any) error {
	return &MsgpackError{Offset: d.off, Reason: fmt.Sprintf(format, args...)}
}

// take returns the next n bytes, or an error if fewer remain.
func (d *msgpackDecoder) take(n uint64) ([]byte, error) {
	if n > uint64(len(d.b)-d.off) {
		return nil, d.fail("needs %d bytes, %d remain", n, len(d.b)-d.off)
	}
	s := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return s, nil
}

func (d *msgpackDecoder) uint(n int) (uint64, error) {
	s, err := d.take(uint64(n))
	if err != nil {
		return 0, err
	}
	switch n {
	case 1:
		return uint64(s[0]), nil
	case 2:
		return uint64(binary.BigEndian.Uint16(s)), nil
	case 4:
		return uint64(binary.BigEndian.Uint32(s)), nil
	default:
		return binary.BigEndian.Uint64(s), nil
	}
}

func (d *msgpackDecoder) value(depth int) (any, error) {
	if depth > maxMsgpackDepth {
		return nil, d.fail("nested deeper than %d", maxMsgpackDepth)
	}
	tb, err := d.take(1)
	if err != nil {
		return nil, err
	}
	t := tb[0]
	switch {
	case t <= 0x7f: // positive fixint
		return int64(t), nil
	case t >= 0xe0: // negative fixint
		return int64(int8(t)), nil
	case t >= 0x80 && t <= 0x8f:
		return d.mapBody(uint64(t&0x0f), depth)
	case t >= 0x90 && t <= 0x9f:
		return d.arrayBody(uint64(t&0x0f), depth)
	case t >= 0xa0 && t <= 0xbf:
		return d.str(uint64(t & 0x1f))
	}
	switch t {
	case 0xc0:
		return nil, nil
	case 0xc2:
		return false, nil
	case 0xc3:
		return true, nil
	case 0xc4, 0xc5, 0xc6: // bin 8/16/32
		n, err := d.uint(1 << (t - 0xc4))
		if err != nil {
			return nil, err
		}
		s, err := d.take(n)
		if err != nil {
			return nil, err
		}
		return append([]byte(nil), s...), nil
	case 0xca:
		u, err := d.uint(4)
		if err != nil {
			return nil, err
		}
		return float64(math.Float32frombits(uint32(u))), nil
	case 0xcb:
		u, err := d.uint(8)
		if err != nil {
			return nil, err
		}
		return math.Float64frombits(u), nil
	case 0xcc, 0xcd, 0xce, 0xcf: // uint 8/16/32/64
		u, err := d.uint(1 << (t - 0xcc))
		if err != nil {
			return nil, err
		}
		if u > math.MaxInt64 {
			return u, nil
		}
		return int64(u), nil
	case 0xd0, 0xd1, 0xd2, 0xd3: // int 8/16/32/64
		n := 1 << (t - 0xd0)
		u, err := d.uint(n)
		if err != nil {
			return nil, err
		}
		shift := 64 - 8*n
		return int64(u<<shift) >> shift, nil
	case 0xd9, 0xda, 0xdb: // str 8/16/32
		n, err := d.uint(1 << (t - 0xd9))
		if err != nil {
			return nil, err
		}
		return d.str(n)
	case 0xdc, 0xdd: // array 16/32
		n, err := d.uint(2 << (t - 0xdc))
		if err != nil {
			return nil, err
		}
		return d.arrayBody(n, depth)
	case 0xde, 0xdf: // map 16/32
		n, err := d.uint(2 << (t - 0xde))
		if err != nil {
			return nil, err
		}
		return d.mapBody(n, depth)
	}
	// 0xc1 is never used; ext types (0xc7-0xc9, 0xd4-0xd8) do not occur in
	// AMDGPU metadata.
	d.off--
	return nil, d.fail("unsupported type byte 0x%02x", t)
}

func (d *msgpackDecoder) str(n uint64) (string, error) {
	s, err := d.take(n)
	if err != nil {
		return "", err
	}
	return string(s), nil
}

// arrayBody decodes n elements. Each element takes at least one byte, so a
// count above the remaining length is rejected before allocating.
func (d *msgpackDecoder) arrayBody(n uint64, depth int) ([]any, error) {
	if n > uint64(len(d.b)-d.off) {
		return nil, d.fail("array of %d elements in %d bytes", n, len(d.b)-d.off)
	}
	a := make([]any, 0, n)
	for i := uint64(0); i < n; i++ {
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
	}
	return a, nil
}

// mapBody decodes n key/value pairs; keys must be distinct strings.
func (d *msgpackDecoder) mapBody(n uint64, depth int) (map[string]any, error) {
	if n > uint64(len(d.b)-d.off)/2 {
		return nil, d.fail("map of %d entries in %d bytes", n, len(d.b)-d.off)
	}
	m := make(map[string]any, n)
	for i := uint64(0); i < n; i++ {
		keyAt := d.off
		k, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		ks, ok := k.(string)
		if !ok {
			d.off = keyAt
			return nil, d.fail("map key is %T, not a string", k)
		}
		if _, dup := m[ks]; dup {
			d.off = keyAt
			return nil, d.fail("duplicate map key %q", ks)
		}
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		m[ks] = v
	}
	return m, nil
}
