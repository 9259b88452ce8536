package safetensors

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"unsafe"

	"golang.org/x/exp/mmap"
)

// File is one safetensors file with a validated header. Its methods are safe
// for concurrent use; Close must not race with reads.
type File struct {
	name   string
	r      io.ReaderAt
	size   int64
	closer io.Closer
	h      *header
	mapped *Mapping // nil unless Open mapped the file itself (see Mapped)
}

// Open maps the file at path read-only and validates its header. The mapping
// is shared with the page cache, so opening a large checkpoint costs no copy.
// On Linux and macOS tensors can also be used in place (Mapped).
func Open(path string) (*File, error) {
	mp, ok, err := mapFile(path)
	if err != nil {
		return nil, &Error{File: path, Kind: ErrIO, Detail: "open", Err: err}
	}
	if ok {
		f, err := NewReader(path, mp, int64(len(mp.data)))
		if err != nil {
			mp.Close()
			return nil, err
		}
		f.closer, f.mapped = mp, mp
		return f, nil
	}
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

// FromBytes reads a file held in memory; data must not change while f is used.
func FromBytes(name string, data []byte) (*File, error) {
	return NewReader(name, bytes.NewReader(data), int64(len(data)))
}

// OpenFS opens name in fsys. When the fs.File implements io.ReaderAt (embed.FS
// and fstest.MapFS files do) tensors are read in place; otherwise the file is
// read into memory once.
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

// NewReader validates the header of a size-byte file read through r. name is
// used in errors only.
func NewReader(name string, r io.ReaderAt, size int64) (*File, error) {
	var prefix [8]byte
	if size >= 8 {
		if _, err := r.ReadAt(prefix[:], 0); err != nil {
			return nil, &Error{File: name, Kind: ErrIO, Detail: "reading the header length", Err: err}
		}
	}
	n, err := parseHeaderLength(name, prefix[:], size)
	if err != nil {
		return nil, err
	}
	js := make([]byte, n)
	if _, err := r.ReadAt(js, 8); err != nil {
		return nil, &Error{File: name, Kind: ErrIO, Detail: "reading the header", Err: err}
	}
	h, err := parseHeader(name, js, size)
	if err != nil {
		return nil, err
	}
	return &File{name: name, r: r, size: size, h: h}, nil
}

// Name is the name the file was opened with.
func (f *File) Name() string { return f.name }

// Metadata is the header's __metadata__ map (nil when absent).
func (f *File) Metadata() map[string]string { return f.h.metadata }

// Names lists the tensors in sorted order.
func (f *File) Names() []string { return append([]string(nil), f.h.names...) }

// Info describes the named tensor.
func (f *File) Info(name string) (TensorInfo, bool) {
	t, ok := f.h.tensors[name]
	if !ok {
		return TensorInfo{}, false
	}
	c := *t
	c.Shape = append([]int(nil), t.Shape...)
	return c, true
}

// Close releases the mapping or the fs file. A mapping that Mapped lent
// tensors of stays until its *Mapping is unreachable.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	c := f.closer
	f.closer = nil
	return c.Close()
}

// Mapped returns the named tensor's little-endian bytes in place, a slice of
// the file's read-only memory map, and the Mapping that holds them. It
// returns a nil Mapping (and no bytes, and no error) when f is not mapped:
// opened by FromBytes, OpenFS or NewReader, or by Open on a platform other
// than Linux and macOS; the Read methods copy the tensor then.
//
// The bytes must never be written (the write faults). They stay valid after
// f.Close for as long as the caller keeps the *Mapping reachable, and no
// longer: keep it beside whatever the bytes end up in.
func (f *File) Mapped(name string) ([]byte, *Mapping, error) {
	t, err := f.lookup(name)
	if err != nil {
		return nil, nil, err
	}
	if f.mapped == nil {
		return nil, nil, nil
	}
	b, err := f.mapped.lend(t.Offset, t.Size)
	if err != nil {
		return nil, nil, &Error{File: f.name, Tensor: name, Kind: ErrIO, Err: err}
	}
	return b, f.mapped, nil
}

func (f *File) lookup(name string) (*TensorInfo, error) {
	t, ok := f.h.tensors[name]
	if !ok {
		return nil, errorf(f.name, name, ErrNotFound, "")
	}
	return t, nil
}

// ReadRaw copies the tensor's little-endian bytes into dst, which must be exactly Size long.
func (f *File) ReadRaw(name string, dst []byte) error {
	t, err := f.lookup(name)
	if err != nil {
		return err
	}
	if int64(len(dst)) != t.Size {
		return errorf(f.name, name, ErrDType, "destination holds %d bytes, tensor has %d", len(dst), t.Size)
	}
	return f.readAt(t, dst, t.Offset)
}

func (f *File) readAt(t *TensorInfo, dst []byte, off int64) error {
	if len(dst) == 0 {
		return nil
	}
	n, err := f.r.ReadAt(dst, off)
	if n == len(dst) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return errorf(f.name, t.Name, ErrTruncated, "read %d of %d bytes at offset %d", n, len(dst), off)
	}
	return &Error{File: f.name, Tensor: t.Name, Kind: ErrIO, Err: err}
}

// chunkBytes bounds the scratch buffer for dtype conversion.
const chunkBytes = 1 << 20

// ReadFloat32 reads an F32, F16 or BF16 tensor into dst as float32; len(dst)
// must equal its element count.
func (f *File) ReadFloat32(name string, dst []float32) error {
	t, err := f.lookup(name)
	if err != nil {
		return err
	}
	if t.DType != F32 && t.DType != F16 && t.DType != BF16 {
		return errorf(f.name, name, ErrDType, "%s does not convert to float32 (want F32, F16 or BF16)", t.DType)
	}
	if len(dst) != t.NumElements() {
		return errorf(f.name, name, ErrDType, "destination holds %d elements, tensor %v has %d", len(dst), t.Shape, t.NumElements())
	}
	if t.DType == F32 && littleEndian && len(dst) > 0 {
		// Same layout as the file: read straight into dst.
		return f.readAt(t, unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), 4*len(dst)), t.Offset)
	}
	return f.convert(t, func(raw []byte, first, n int) { decodeF32(t.DType, raw, dst[first:first+n]) })
}

// ReadBF16 reads a BF16 tensor's raw bits into dst (len = element count).
func (f *File) ReadBF16(name string, dst []uint16) error {
	t, err := f.lookup(name)
	if err != nil {
		return err
	}
	if t.DType != BF16 {
		return errorf(f.name, name, ErrDType, "%s is not BF16", t.DType)
	}
	if len(dst) != t.NumElements() {
		return errorf(f.name, name, ErrDType, "destination holds %d elements, tensor %v has %d", len(dst), t.Shape, t.NumElements())
	}
	if littleEndian && len(dst) > 0 {
		return f.readAt(t, unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), 2*len(dst)), t.Offset)
	}
	return f.convert(t, func(raw []byte, first, n int) {
		for i := range n {
			dst[first+i] = uint16(raw[2*i]) | uint16(raw[2*i+1])<<8
		}
	})
}

// convert reads t in chunks and hands each (raw bytes, first element, count) to put.
func (f *File) convert(t *TensorInfo, put func(raw []byte, first, n int)) error {
	es := t.DType.Size()
	per := max(1, chunkBytes/es)
	buf := make([]byte, min(int64(per*es), t.Size))
	total := t.NumElements()
	for first := 0; first < total; first += per {
		n := min(per, total-first)
		raw := buf[:n*es]
		if err := f.readAt(t, raw, t.Offset+int64(first*es)); err != nil {
			return err
		}
		put(raw, first, n)
	}
	return nil
}

// littleEndian: the host stores numbers as the format does, so F32 and BF16
// data can be read straight into typed slices.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()
