package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Tensor is one tensor to Write: Data holds its bytes as stored.
type Tensor struct {
	Name string
	Dims []int64 // ggml order, innermost first
	Type Type
	Data []byte
}

// Write writes a GGUF v3 file: meta in order, then the tensor infos, then
// the data, each tensor aligned to general.alignment (when meta sets it) or
// DefaultAlignment.
func Write(w io.Writer, meta []KV, tensors []Tensor) error {
	align := int64(DefaultAlignment)
	for _, kv := range meta {
		if kv.Key == AlignmentKey {
			a, ok := kv.Value.Uint()
			if !ok || a == 0 || a&(a-1) != 0 {
				return fmt.Errorf("gguf: write: %s %v is not a power of two", AlignmentKey, kv.Value)
			}
			align = int64(a)
		}
	}
	bw := bufio.NewWriter(w)
	e := &encoder{w: bw}
	e.bytes([]byte(Magic))
	e.u32(3)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(meta)))
	for _, kv := range meta {
		e.str(kv.Key)
		e.u32(uint32(kv.Value.typ))
		if err := e.value(kv.Value); err != nil {
			return fmt.Errorf("gguf: write %s: %w", kv.Key, err)
		}
	}
	off := int64(0)
	for _, t := range tensors {
		n := int64(1)
		for _, d := range t.Dims {
			n *= d
		}
		if want := t.Type.RowBytes(n); want != int64(len(t.Data)) {
			return fmt.Errorf("gguf: write tensor %q: %d bytes of data, want %d for %d %s elements", t.Name, len(t.Data), want, n, t.Type)
		}
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(uint64(d))
		}
		e.u32(uint32(t.Type))
		e.u64(uint64(off))
		off = (off + int64(len(t.Data)) + align - 1) / align * align
	}
	e.pad(align)
	for _, t := range tensors {
		e.bytes(t.Data)
		e.pad(align)
	}
	if e.err != nil {
		return e.err
	}
	return bw.Flush()
}

type encoder struct {
	w   *bufio.Writer
	n   int64
	err error
}

func (e *encoder) bytes(b []byte) {
	if e.err != nil {
		return
	}
	var n int
	n, e.err = e.w.Write(b)
	e.n += int64(n)
}

func (e *encoder) u32(v uint32) { e.bytes(binary.LittleEndian.AppendUint32(nil, v)) }
func (e *encoder) u64(v uint64) { e.bytes(binary.LittleEndian.AppendUint64(nil, v)) }
func (e *encoder) str(s string) { e.u64(uint64(len(s))); e.bytes([]byte(s)) }

func (e *encoder) pad(align int64) {
	if r := e.n % align; r != 0 {
		e.bytes(make([]byte, align-r))
	}
}

func (e *encoder) value(v Value) error {
	switch x := v.v.(type) {
	case string:
		e.str(x)
		return nil
	case bool:
		if x {
			e.bytes([]byte{1})
		} else {
			e.bytes([]byte{0})
		}
		return nil
	case uint8:
		e.bytes([]byte{x})
		return nil
	case int8:
		e.bytes([]byte{byte(x)})
		return nil
	case uint16:
		e.bytes(binary.LittleEndian.AppendUint16(nil, x))
		return nil
	case int16:
		e.bytes(binary.LittleEndian.AppendUint16(nil, uint16(x)))
		return nil
	case uint32:
		e.u32(x)
		return nil
	case int32:
		e.u32(uint32(x))
		return nil
	case float32:
		e.u32(math.Float32bits(x))
		return nil
	case uint64:
		e.u64(x)
		return nil
	case int64:
		e.u64(uint64(x))
		return nil
	case float64:
		e.u64(math.Float64bits(x))
		return nil
	}
	if v.typ != TypeArray {
		return fmt.Errorf("value of type %s holds %T", v.typ, v.v)
	}
	e.u32(uint32(v.elem))
	e.u64(uint64(v.Len()))
	switch x := v.v.(type) {
	case []Value:
		for _, el := range x {
			if err := e.value(el); err != nil {
				return err
			}
		}
		return nil
	case []string:
		for _, s := range x {
			e.str(s)
		}
		return nil
	}
	// Arrays of fixed-size scalars: encode element by element.
	for i := range v.Len() {
		if err := e.value(index(v, i)); err != nil {
			return err
		}
	}
	return nil
}

func index(v Value, i int) Value {
	var el any
	switch x := v.v.(type) {
	case []uint8:
		el = x[i]
	case []int8:
		el = x[i]
	case []uint16:
		el = x[i]
	case []int16:
		el = x[i]
	case []uint32:
		el = x[i]
	case []int32:
		el = x[i]
	case []float32:
		el = x[i]
	case []bool:
		el = x[i]
	case []uint64:
		el = x[i]
	case []int64:
		el = x[i]
	case []float64:
		el = x[i]
	}
	return Value{typ: v.elem, v: el}
}
