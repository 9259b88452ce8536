package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the data alignment when general.alignment is absent.
const DefaultAlignment = 32

// AlignmentKey is the metadata key that sets the data alignment.
const AlignmentKey = "general.alignment"

const (
	maxDims  = 4  // GGML_MAX_DIMS
	maxDepth = 16 // nesting of arrays of arrays
)

// TensorInfo describes one tensor as the file stores it.
type TensorInfo struct {
	Name string
	// Dims in ggml's order: Dims[0] is the contiguous (innermost) dimension,
	// so a [out, in] PyTorch weight has Dims {in, out}.
	Dims   []int64
	Type   Type
	Offset int64 // from the start of the file
	Size   int64 // bytes
}

// Shape is Dims reversed: the outermost dimension first, as PyTorch and
// safetensors write shapes.
func (t TensorInfo) Shape() []int {
	s := make([]int, len(t.Dims))
	for i, d := range t.Dims {
		s[len(t.Dims)-1-i] = int(d)
	}
	return s
}

// Elements is the number of elements.
func (t TensorInfo) Elements() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// header is a parsed and validated file header.
type header struct {
	version    uint32
	kvs        []KV
	keys       map[string]int
	tensors    []TensorInfo
	names      map[string]int
	alignment  int64
	dataOffset int64
}

// parser reads the header sequentially, tracking the position so every
// count and length can be checked against the bytes that remain.
type parser struct {
	file string
	r    *bufio.Reader
	pos  int64
	size int64
	buf  [8]byte
}

func (p *parser) errf(kind error, field, tensor, format string, args ...any) *Error {
	return &Error{File: p.file, Field: field, Tensor: tensor, Kind: kind, Detail: fmt.Sprintf(format, args...)}
}

func (p *parser) remaining() int64 { return p.size - p.pos }

// read fills b, naming field (and tensor) if the file ends first.
func (p *parser) read(b []byte, field, tensor string) error {
	if int64(len(b)) > p.remaining() {
		return p.errf(ErrTruncated, field, tensor, "needs %d bytes at offset %d, the file has %d", len(b), p.pos, p.size)
	}
	if _, err := io.ReadFull(p.r, b); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return p.errf(ErrTruncated, field, tensor, "at offset %d", p.pos)
		}
		return &Error{File: p.file, Field: field, Tensor: tensor, Kind: ErrIO, Detail: fmt.Sprintf("at offset %d", p.pos), Err: err}
	}
	p.pos += int64(len(b))
	return nil
}

func (p *parser) u32(field, tensor string) (uint32, error) {
	if err := p.read(p.buf[:4], field, tensor); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(p.buf[:4]), nil
}

func (p *parser) u64(field, tensor string) (uint64, error) {
	if err := p.read(p.buf[:8], field, tensor); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(p.buf[:8]), nil
}

// count reads a u64 count of items at least min bytes each and checks the
// file could hold them, so a corrupt count never drives an allocation.
func (p *parser) count(field, tensor string, min int64) (int, error) {
	n, err := p.u64(field, tensor)
	if err != nil {
		return 0, err
	}
	if min > 0 && n > uint64(p.remaining()/min) {
		return 0, p.errf(ErrFormat, field, tensor, "count %d cannot fit in the %d bytes left in the file", n, p.remaining())
	}
	return int(n), nil
}

func (p *parser) str(field, tensor string) (string, error) {
	n, err := p.count(field, tensor, 1)
	if err != nil {
		return "", err
	}
	b := make([]byte, n)
	if err := p.read(b, field, tensor); err != nil {
		return "", err
	}
	return string(b), nil
}

func parseHeader(file string, r io.ReaderAt, size int64) (*header, error) {
	p := &parser{file: file, r: bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 1<<16), size: size}
	var magic [4]byte
	if err := p.read(magic[:], "magic", ""); err != nil {
		return nil, err
	}
	if string(magic[:]) != Magic {
		return nil, p.errf(ErrFormat, "magic", "", "%q is not %q: not a GGUF file", magic[:], Magic)
	}
	h := &header{keys: map[string]int{}, names: map[string]int{}, alignment: DefaultAlignment}
	var err error
	if h.version, err = p.u32("version", ""); err != nil {
		return nil, err
	}
	if h.version != 2 && h.version != 3 {
		return nil, p.errf(ErrFormat, "version", "", "version %d is not supported (want 2 or 3)", h.version)
	}
	// A tensor info is at least a name length, a dimension count, a type
	// and an offset; a KV at least a key length and a value type.
	nt, err := p.count("tensor_count", "", 8+4+4+8)
	if err != nil {
		return nil, err
	}
	nkv, err := p.count("metadata_kv_count", "", 8+4)
	if err != nil {
		return nil, err
	}
	h.kvs = make([]KV, 0, nkv)
	for i := range nkv {
		field := fmt.Sprintf("metadata key %d", i)
		key, err := p.str(field, "")
		if err != nil {
			return nil, err
		}
		if _, dup := h.keys[key]; dup {
			return nil, p.errf(ErrFormat, key, "", "duplicate metadata key")
		}
		t, err := p.u32(key, "")
		if err != nil {
			return nil, err
		}
		v, err := p.value(key, ValueType(t), 0)
		if err != nil {
			return nil, err
		}
		h.keys[key] = len(h.kvs)
		h.kvs = append(h.kvs, KV{Key: key, Value: v})
	}
	if i, ok := h.keys[AlignmentKey]; ok {
		v := h.kvs[i].Value
		a, isInt := v.Uint()
		if v.Type() != TypeUint32 || !isInt {
			return nil, p.errf(ErrType, AlignmentKey, "", "is a %s, want uint32", v.Type())
		}
		if a == 0 || a&(a-1) != 0 {
			return nil, p.errf(ErrFormat, AlignmentKey, "", "%d is not a power of two", a)
		}
		h.alignment = int64(a)
	}
	h.tensors = make([]TensorInfo, 0, nt)
	for i := range nt {
		t, err := p.tensorInfo(i)
		if err != nil {
			return nil, err
		}
		if _, dup := h.names[t.Name]; dup {
			return nil, p.errf(ErrFormat, "", t.Name, "duplicate tensor name")
		}
		h.names[t.Name] = len(h.tensors)
		h.tensors = append(h.tensors, t)
	}
	h.dataOffset = (p.pos + h.alignment - 1) / h.alignment * h.alignment
	return h, h.layout(p)
}

func (p *parser) tensorInfo(i int) (TensorInfo, error) {
	field := fmt.Sprintf("tensor info %d", i)
	name, err := p.str(field, "")
	if err != nil {
		return TensorInfo{}, err
	}
	t := TensorInfo{Name: name}
	nd, err := p.u32("n_dims", name)
	if err != nil {
		return t, err
	}
	if nd == 0 || nd > maxDims {
		return t, p.errf(ErrFormat, "n_dims", name, "%d dimensions (want 1 to %d)", nd, maxDims)
	}
	elems := int64(1)
	for d := range nd {
		n, err := p.u64("dims", name)
		if err != nil {
			return t, err
		}
		if n > math.MaxInt64 || (n != 0 && elems > math.MaxInt64/int64(n)) {
			return t, p.errf(ErrFormat, "dims", name, "dimension %d (%d) overflows the element count", d, n)
		}
		elems *= int64(n)
		t.Dims = append(t.Dims, int64(n))
	}
	typ, err := p.u32("type", name)
	if err != nil {
		return t, err
	}
	t.Type = Type(typ)
	if !t.Type.Known() {
		return t, p.errf(ErrType, "type", name, "ggml type %d is unknown", typ)
	}
	if t.Dims[0]%int64(t.Type.BlockSize()) != 0 {
		return t, p.errf(ErrFormat, "dims", name, "a row of %d elements is not a whole number of %s blocks of %d", t.Dims[0], t.Type, t.Type.BlockSize())
	}
	blocks := elems / int64(t.Type.BlockSize())
	if blocks > math.MaxInt64/int64(t.Type.BlockBytes()) {
		return t, p.errf(ErrFormat, "dims", name, "%d elements of %s overflow the byte size", elems, t.Type)
	}
	t.Size = blocks * int64(t.Type.BlockBytes())
	off, err := p.u64("offset", name)
	if err != nil {
		return t, err
	}
	if off > math.MaxInt64/2 {
		return t, p.errf(ErrTruncated, "offset", name, "offset %d is beyond the file's %d bytes", off, p.size)
	}
	t.Offset = int64(off) // relative until layout adds the data offset
	return t, nil
}

// layout checks each tensor's alignment, extent and overlap, and makes the
// offsets absolute.
func (h *header) layout(p *parser) error {
	for i := range h.tensors {
		t := &h.tensors[i]
		if t.Offset%h.alignment != 0 {
			return p.errf(ErrLayout, "offset", t.Name, "data offset %d is not a multiple of the alignment %d", t.Offset, h.alignment)
		}
		t.Offset += h.dataOffset
		if t.Size > p.size || t.Offset > p.size-t.Size {
			return p.errf(ErrTruncated, "", t.Name, "data [%d, %d) is beyond the file's %d bytes", t.Offset, t.Offset+t.Size, p.size)
		}
	}
	order := make([]int, len(h.tensors))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return h.tensors[order[a]].Offset < h.tensors[order[b]].Offset })
	for i := 1; i < len(order); i++ {
		a, b := &h.tensors[order[i-1]], &h.tensors[order[i]]
		if a.Offset+a.Size > b.Offset && a.Size > 0 && b.Size > 0 {
			return p.errf(ErrLayout, "", b.Name, "data [%d, %d) overlaps tensor %q at [%d, %d)", b.Offset, b.Offset+b.Size, a.Name, a.Offset, a.Offset+a.Size)
		}
	}
	return nil
}

// value reads one value of type t.
func (p *parser) value(key string, t ValueType, depth int) (Value, error) {
	switch t {
	case TypeString:
		s, err := p.str(key, "")
		return Value{typ: t, v: s}, err
	case TypeArray:
		return p.array(key, depth)
	}
	n := t.size()
	if n <= 0 {
		return Value{}, p.errf(ErrFormat, key, "", "value type %d is unknown", uint32(t))
	}
	if err := p.read(p.buf[:n], key, ""); err != nil {
		return Value{}, err
	}
	return Value{typ: t, v: scalar(t, p.buf[:n])}, nil
}

func scalar(t ValueType, b []byte) any {
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return b[0]
	case TypeInt8:
		return int8(b[0])
	case TypeBool:
		return b[0] != 0
	case TypeUint16:
		return le.Uint16(b)
	case TypeInt16:
		return int16(le.Uint16(b))
	case TypeUint32:
		return le.Uint32(b)
	case TypeInt32:
		return int32(le.Uint32(b))
	case TypeFloat32:
		return math.Float32frombits(le.Uint32(b))
	case TypeUint64:
		return le.Uint64(b)
	case TypeInt64:
		return int64(le.Uint64(b))
	case TypeFloat64:
		return math.Float64frombits(le.Uint64(b))
	}
	return nil
}

func (p *parser) array(key string, depth int) (Value, error) {
	if depth >= maxDepth {
		return Value{}, p.errf(ErrFormat, key, "", "arrays nested more than %d deep", maxDepth)
	}
	et, err := p.u32(key, "")
	if err != nil {
		return Value{}, err
	}
	elem := ValueType(et)
	min := elem.minSize()
	if min < 0 {
		return Value{}, p.errf(ErrFormat, key, "", "array element type %d is unknown", et)
	}
	n, err := p.count(key, "", min)
	if err != nil {
		return Value{}, err
	}
	switch elem {
	case TypeString:
		out := make([]string, n)
		for i := range out {
			if out[i], err = p.str(key, ""); err != nil {
				return Value{}, err
			}
		}
		return array(elem, out), nil
	case TypeArray:
		out := make([]Value, n)
		for i := range out {
			if out[i], err = p.array(key, depth+1); err != nil {
				return Value{}, err
			}
		}
		return array(elem, out), nil
	}
	raw := make([]byte, n*int(min))
	if err := p.read(raw, key, ""); err != nil {
		return Value{}, err
	}
	return array(elem, decodeArray(elem, raw, n)), nil
}

func decodeArray(t ValueType, raw []byte, n int) any {
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return raw
	case TypeInt8:
		return fill(n, func(i int) int8 { return int8(raw[i]) })
	case TypeBool:
		return fill(n, func(i int) bool { return raw[i] != 0 })
	case TypeUint16:
		return fill(n, func(i int) uint16 { return le.Uint16(raw[2*i:]) })
	case TypeInt16:
		return fill(n, func(i int) int16 { return int16(le.Uint16(raw[2*i:])) })
	case TypeUint32:
		return fill(n, func(i int) uint32 { return le.Uint32(raw[4*i:]) })
	case TypeInt32:
		return fill(n, func(i int) int32 { return int32(le.Uint32(raw[4*i:])) })
	case TypeFloat32:
		return fill(n, func(i int) float32 { return math.Float32frombits(le.Uint32(raw[4*i:])) })
	case TypeUint64:
		return fill(n, func(i int) uint64 { return le.Uint64(raw[8*i:]) })
	case TypeInt64:
		return fill(n, func(i int) int64 { return int64(le.Uint64(raw[8*i:])) })
	case TypeFloat64:
		return fill(n, func(i int) float64 { return math.Float64frombits(le.Uint64(raw[8*i:])) })
	}
	return nil
}

func fill[T any](n int, f func(int) T) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}
