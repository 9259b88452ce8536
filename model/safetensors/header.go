package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"sort"
)

// MaxHeaderSize bounds the JSON header (the reference implementation uses the
// same 100 MB limit), so a corrupt length cannot make us allocate gigabytes.
const MaxHeaderSize = 100 << 20

// TensorInfo describes one tensor of a file.
type TensorInfo struct {
	Name  string
	DType DType
	Shape []int
	// Offset is the absolute byte offset of the data in the file and Size its
	// length in bytes (= NumElements * DType.Size()).
	Offset, Size int64
}

// NumElements is the product of the shape (1 for a scalar).
func (t *TensorInfo) NumElements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

type headerEntry struct {
	DType       *string  `json:"dtype"`
	Shape       *[]int64 `json:"shape"`
	DataOffsets *[]int64 `json:"data_offsets"`
}

// header is a parsed, validated header.
type header struct {
	dataStart int64 // 8 + header length
	metadata  map[string]string
	tensors   map[string]*TensorInfo
	names     []string // sorted
}

// parseHeaderLength reads the 8-byte prefix and bounds it by the file size.
func parseHeaderLength(file string, prefix []byte, fileSize int64) (int64, error) {
	if fileSize < 8 {
		return 0, errorf(file, "", ErrTruncated, "%d bytes, shorter than the 8-byte header length", fileSize)
	}
	n := binary.LittleEndian.Uint64(prefix)
	if n > MaxHeaderSize {
		return 0, errorf(file, "", ErrHeader, "header length %d exceeds the %d-byte limit", n, MaxHeaderSize)
	}
	if int64(n) > fileSize-8 {
		return 0, errorf(file, "", ErrTruncated, "header length %d but only %d bytes follow the length", n, fileSize-8)
	}
	if n < 2 {
		return 0, errorf(file, "", ErrHeader, "header length %d is too short for a JSON object", n)
	}
	return int64(n), nil
}

// parseHeader validates the JSON header js of a file of fileSize bytes.
func parseHeader(file string, js []byte, fileSize int64) (*header, error) {
	h := &header{dataStart: 8 + int64(len(js)), tensors: map[string]*TensorInfo{}}
	trimmed := bytes.TrimRight(js, " \x00")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, errorf(file, "", ErrHeader, "header is not a JSON object")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return nil, &Error{File: file, Kind: ErrHeader, Detail: "invalid JSON", Err: err}
	}
	dataLen := fileSize - h.dataStart
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &h.metadata); err != nil {
				return nil, &Error{File: file, Kind: ErrHeader, Detail: "__metadata__ is not a map of strings", Err: err}
			}
			continue
		}
		ti, err := parseEntry(file, name, msg, dataLen)
		if err != nil {
			return nil, err
		}
		ti.Offset += h.dataStart
		h.tensors[name] = ti
		h.names = append(h.names, name)
	}
	sort.Strings(h.names)
	if err := checkOverlap(file, h); err != nil {
		return nil, err
	}
	return h, nil
}

func parseEntry(file, name string, msg json.RawMessage, dataLen int64) (*TensorInfo, error) {
	var e headerEntry
	if err := json.Unmarshal(msg, &e); err != nil {
		return nil, &Error{File: file, Tensor: name, Kind: ErrHeader, Detail: "entry is not {dtype, shape, data_offsets}", Err: err}
	}
	if e.DType == nil || e.Shape == nil || e.DataOffsets == nil {
		return nil, errorf(file, name, ErrHeader, "entry needs dtype, shape and data_offsets")
	}
	dt := DType(*e.DType)
	size := dt.Size()
	if size == 0 {
		return nil, errorf(file, name, ErrHeader, "unknown dtype %q", *e.DType)
	}
	shape := make([]int, len(*e.Shape))
	numel := int64(1)
	for i, d := range *e.Shape {
		if d < 0 {
			return nil, errorf(file, name, ErrHeader, "negative dimension %d in shape %v", d, *e.Shape)
		}
		// Any real tensor fits in the data section, so a product past it is corrupt;
		// checking before multiplying also rules out overflow.
		if d != 0 && numel > (math.MaxInt64/int64(size))/d {
			return nil, errorf(file, name, ErrHeader, "shape %v is too large", *e.Shape)
		}
		numel *= d
		shape[i] = int(d)
	}
	offs := *e.DataOffsets
	if len(offs) != 2 {
		return nil, errorf(file, name, ErrHeader, "data_offsets has %d values, want 2", len(offs))
	}
	begin, end := offs[0], offs[1]
	if begin < 0 || end < begin {
		return nil, errorf(file, name, ErrHeader, "data_offsets [%d, %d] are not an increasing range", begin, end)
	}
	if want := numel * int64(size); end-begin != want {
		return nil, errorf(file, name, ErrHeader, "data_offsets [%d, %d] hold %d bytes but %s%v needs %d",
			begin, end, end-begin, dt, *e.Shape, want)
	}
	if end > dataLen {
		return nil, errorf(file, name, ErrTruncated, "data_offsets [%d, %d] end beyond the %d bytes of data", begin, end, dataLen)
	}
	return &TensorInfo{Name: name, DType: dt, Shape: shape, Offset: begin, Size: end - begin}, nil
}

// checkOverlap rejects tensors whose byte ranges overlap: a writer never
// produces them, and a reader that trusted them could alias two weights.
func checkOverlap(file string, h *header) error {
	ts := make([]*TensorInfo, 0, len(h.tensors))
	for _, n := range h.names {
		if t := h.tensors[n]; t.Size > 0 {
			ts = append(ts, t)
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Offset < ts[j].Offset })
	for i := 1; i < len(ts); i++ {
		prev, cur := ts[i-1], ts[i]
		if cur.Offset < prev.Offset+prev.Size {
			return errorf(file, cur.Name, ErrHeader, "data overlaps tensor %q", prev.Name)
		}
	}
	return nil
}
