package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
)

// Tensor is one tensor to write: Data holds its little-endian bytes.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// Write writes tensors (sorted by name, data contiguous in that order) and
// optional metadata in the safetensors format. It checks each tensor's byte
// length against its dtype and shape.
func Write(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	ts := append([]Tensor(nil), tensors...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	hdr := map[string]any{}
	if len(metadata) > 0 {
		hdr["__metadata__"] = metadata
	}
	var off int64
	for i, t := range ts {
		if i > 0 && ts[i-1].Name == t.Name {
			return fmt.Errorf("safetensors: write: duplicate tensor %q", t.Name)
		}
		if t.Name == "__metadata__" {
			return fmt.Errorf("safetensors: write: tensor name %q is reserved", t.Name)
		}
		size := t.DType.Size()
		if size == 0 {
			return fmt.Errorf("safetensors: write: tensor %q: unknown dtype %q", t.Name, t.DType)
		}
		n := 1
		for _, d := range t.Shape {
			if d < 0 {
				return fmt.Errorf("safetensors: write: tensor %q: negative dimension in %v", t.Name, t.Shape)
			}
			n *= d
		}
		if len(t.Data) != n*size {
			return fmt.Errorf("safetensors: write: tensor %q: %d bytes, %s%v needs %d", t.Name, len(t.Data), t.DType, t.Shape, n*size)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		hdr[t.Name] = map[string]any{"dtype": t.DType, "shape": shape, "data_offsets": []int64{off, off + int64(len(t.Data))}}
		off += int64(len(t.Data))
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		return fmt.Errorf("safetensors: write: header: %w", err)
	}
	// Pad with spaces so the data starts 8-byte aligned, as the reference writer does.
	if pad := (8 - len(js)%8) % 8; pad > 0 {
		js = append(js, bytes.Repeat([]byte(" "), pad)...)
	}
	var prefix [8]byte
	binary.LittleEndian.PutUint64(prefix[:], uint64(len(js)))
	if _, err := w.Write(prefix[:]); err != nil {
		return err
	}
	if _, err := w.Write(js); err != nil {
		return err
	}
	for _, t := range ts {
		if _, err := w.Write(t.Data); err != nil {
			return err
		}
	}
	return nil
}

// EncodeFloat32 encodes v as little-endian F32, F16 (round to nearest even) or
// BF16 (round to nearest even).
func EncodeFloat32(dt DType, v []float32) ([]byte, error) {
	switch dt {
	case F32:
		out := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
		}
		return out, nil
	case F16, BF16:
		out := make([]byte, 2*len(v))
		for i, x := range v {
			h := Float32ToBF16(x)
			if dt == F16 {
				h = Float32ToF16(x)
			}
			binary.LittleEndian.PutUint16(out[2*i:], h)
		}
		return out, nil
	}
	return nil, fmt.Errorf("safetensors: encode: dtype %q is not F32, F16 or BF16", dt)
}
