package gguf

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"math"

	"golang.org/x/exp/mmap"
)

// File is one GGUF file with a validated header. Its methods are safe for
// concurrent use; Close must not race with reads.
type File struct {
	name   string
	r      io.ReaderAt
	size   int64
	closer io.Closer
	h      *header
}

// Open maps the file at path read-only and validates its header.
func Open(path string) (*File, error) {
	m, err := mmap.Open(path)
	if err != nil {
		return nil, &Error{File: path, Kind: ErrIO, Detail: "open", Err: err}
	}
	f, err := NewReader(path, m, int64(m.Len()))
	if err != nil {
		m.Close()
		return nil, err
	}
	f.closer = m
	return f, nil
}

// OpenFS opens name in fsys, reading in place when the fs.File implements
// io.ReaderAt (embed.FS and fstest.MapFS files do), else into memory once.
func OpenFS(fsys fs.FS, name string) (*File, error) {
	fl, err := fsys.Open(name)
	if err != nil {
		return nil, &Error{File: name, Kind: ErrIO, Detail: "open", Err: err}
	}
	st, err := fl.Stat()
	if err != nil {
		fl.Close()
		return nil, &Error{File: name, Kind: ErrIO, Detail: "stat", Err: err}
	}
	if ra, ok := fl.(io.ReaderAt); ok {
		f, err := NewReader(name, ra, st.Size())
		if err != nil {
			fl.Close()
			return nil, err
		}
		f.closer = fl
		return f, nil
	}
	data, err := io.ReadAll(fl)
	fl.Close()
	if err != nil {
		return nil, &Error{File: name, Kind: ErrIO, Detail: "read", Err: err}
	}
	return FromBytes(name, data)
}

// FromBytes reads a file held in memory; data must not change while f is used.
func FromBytes(name string, data []byte) (*File, error) {
	return NewReader(name, bytes.NewReader(data), int64(len(data)))
}

// NewReader validates the header of a size-byte file read through r. name
// is used in errors only.
func NewReader(name string, r io.ReaderAt, size int64) (*File, error) {
	h, err := parseHeader(name, r, size)
	if err != nil {
		return nil, err
	}
	return &File{name: name, r: r, size: size, h: h}, nil
}

// Close releases the mapping or the fs file.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	err := f.closer.Close()
	f.closer = nil
	return err
}

// Name is the name the file was opened with.
func (f *File) Name() string { return f.name }

// Version is the GGUF version (2 or 3).
func (f *File) Version() uint32 { return f.h.version }

// Alignment is the data alignment (general.alignment, default 32).
func (f *File) Alignment() int64 { return f.h.alignment }

// DataOffset is where the tensor data section starts.
func (f *File) DataOffset() int64 { return f.h.dataOffset }

// Metadata is every key-value pair in file order.
func (f *File) Metadata() []KV { return append([]KV(nil), f.h.kvs...) }

// Lookup returns the value of key.
func (f *File) Lookup(key string) (Value, bool) {
	i, ok := f.h.keys[key]
	if !ok {
		return Value{}, false
	}
	return f.h.kvs[i].Value, true
}

// Tensors lists the tensor infos in file order.
func (f *File) Tensors() []TensorInfo {
	out := make([]TensorInfo, len(f.h.tensors))
	for i, t := range f.h.tensors {
		t.Dims = append([]int64(nil), t.Dims...)
		out[i] = t
	}
	return out
}

// Tensor describes the named tensor.
func (f *File) Tensor(name string) (TensorInfo, bool) {
	i, ok := f.h.names[name]
	if !ok {
		return TensorInfo{}, false
	}
	t := f.h.tensors[i]
	t.Dims = append([]int64(nil), t.Dims...)
	return t, true
}

// ReadTensor copies the named tensor's bytes, as stored, into dst, which
// must be exactly its Size.
func (f *File) ReadTensor(name string, dst []byte) error {
	return f.ReadTensorAt(name, dst, 0)
}

// ReadTensorAt copies len(dst) bytes of the named tensor starting off bytes
// into it (a range of rows, say).
func (f *File) ReadTensorAt(name string, dst []byte, off int64) error {
	i, ok := f.h.names[name]
	if !ok {
		return &Error{File: f.name, Tensor: name, Kind: ErrNotFound}
	}
	t := &f.h.tensors[i]
	if off < 0 || off > t.Size || int64(len(dst)) > t.Size-off {
		return &Error{File: f.name, Tensor: name, Kind: ErrFormat, Detail: fmt.Sprintf("read of %d bytes at %d is outside its %d bytes", len(dst), off, t.Size)}
	}
	if len(dst) == 0 {
		return nil
	}
	if _, err := f.r.ReadAt(dst, t.Offset+off); err != nil {
		return &Error{File: f.name, Tensor: name, Kind: ErrIO, Err: err}
	}
	return nil
}

func (f *File) get(key string) (Value, error) {
	v, ok := f.Lookup(key)
	if !ok {
		return v, &Error{File: f.name, Field: key, Kind: ErrNotFound}
	}
	return v, nil
}

func (f *File) typeErr(key string, v Value, want string) error {
	got := v.Type().String()
	if v.Type() == TypeArray {
		got = "array of " + v.Elem().String()
	}
	return &Error{File: f.name, Field: key, Kind: ErrType, Detail: fmt.Sprintf("is %s, want %s", got, want)}
}

// Uint reads a non-negative integer of any width.
func (f *File) Uint(key string) (uint64, error) {
	v, err := f.get(key)
	if err != nil {
		return 0, err
	}
	u, ok := v.Uint()
	if !ok {
		return 0, f.typeErr(key, v, "a non-negative integer")
	}
	return u, nil
}

// Int reads an integer no larger than max (and not negative): a dimension,
// a count, a token id.
func (f *File) Int(key string, max int) (int, error) {
	u, err := f.Uint(key)
	if err != nil {
		return 0, err
	}
	if u > uint64(max) || u > math.MaxInt {
		return 0, &Error{File: f.name, Field: key, Kind: ErrFormat, Detail: fmt.Sprintf("%d is out of range [0, %d]", u, max)}
	}
	return int(u), nil
}

// Float reads a float32 or float64.
func (f *File) Float(key string) (float64, error) {
	v, err := f.get(key)
	if err != nil {
		return 0, err
	}
	x, ok := v.Float()
	if !ok {
		return 0, f.typeErr(key, v, "a float")
	}
	return x, nil
}

// String reads a string.
func (f *File) String(key string) (string, error) {
	v, err := f.get(key)
	if err != nil {
		return "", err
	}
	if v.Type() != TypeString {
		return "", f.typeErr(key, v, "string")
	}
	return v.String(), nil
}

// Bool reads a bool.
func (f *File) Bool(key string) (bool, error) {
	v, err := f.get(key)
	if err != nil {
		return false, err
	}
	b, ok := v.Any().(bool)
	if !ok {
		return false, f.typeErr(key, v, "bool")
	}
	return b, nil
}

// Strings reads an array of strings.
func (f *File) Strings(key string) ([]string, error) {
	v, err := f.get(key)
	if err != nil {
		return nil, err
	}
	s, ok := v.Strings()
	if !ok {
		return nil, f.typeErr(key, v, "array of string")
	}
	return s, nil
}

// Ints reads an array of integers of any width.
func (f *File) Ints(key string) ([]int64, error) {
	v, err := f.get(key)
	if err != nil {
		return nil, err
	}
	s, ok := v.Ints()
	if !ok {
		return nil, f.typeErr(key, v, "array of integers")
	}
	return s, nil
}

// Floats reads an array of float32 or float64.
func (f *File) Floats(key string) ([]float32, error) {
	v, err := f.get(key)
	if err != nil {
		return nil, err
	}
	s, ok := v.Floats()
	if !ok {
		return nil, f.typeErr(key, v, "array of floats")
	}
	return s, nil
}
