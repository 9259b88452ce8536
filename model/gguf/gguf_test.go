package gguf

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func val(t testing.TB, v any) Value {
	t.Helper()
	x, err := ValueOf(v)
	require.NoError(t, err)
	return x
}

func kv(t testing.TB, key string, v any) KV { return KV{Key: key, Value: val(t, v)} }

// sampleMeta has one value of every type, arrays of every element type and
// an array of arrays.
func sampleMeta(t testing.TB) []KV {
	return []KV{
		kv(t, "general.architecture", "llama"),
		kv(t, "u8", uint8(200)), kv(t, "i8", int8(-5)), kv(t, "u16", uint16(60000)), kv(t, "i16", int16(-30000)),
		kv(t, "u32", uint32(4000000000)), kv(t, "i32", int32(-2000000000)), kv(t, "f32", float32(1.5)),
		kv(t, "b", true), kv(t, "u64", uint64(math.MaxUint64)), kv(t, "i64", int64(math.MinInt64)), kv(t, "f64", 2.25),
		kv(t, "a.u8", []uint8{1, 2}), kv(t, "a.i8", []int8{-1}), kv(t, "a.u16", []uint16{7}), kv(t, "a.i16", []int16{-7}),
		kv(t, "a.u32", []uint32{9, 10}), kv(t, "a.i32", []int32{-9}), kv(t, "a.f32", []float32{0.5, -0.25}),
		kv(t, "a.b", []bool{true, false}), kv(t, "a.s", []string{"a", "", "ü"}), kv(t, "a.u64", []uint64{1 << 40}),
		kv(t, "a.i64", []int64{-1 << 40}), kv(t, "a.f64", []float64{1e-300}),
		kv(t, "a.nested", []Value{val(t, []string{"x"}), val(t, []int32{1, 2, 3})}),
		kv(t, "a.empty", []float32{}),
	}
}

func sampleTensors() []Tensor {
	q8 := make([]byte, 2*34) // two rows of one Q8_0 block each
	for i := range q8 {
		q8[i] = byte(i)
	}
	f32 := make([]byte, 12)
	binary.LittleEndian.PutUint32(f32, math.Float32bits(1))
	return []Tensor{
		{Name: "token_embd.weight", Dims: []int64{32, 2}, Type: Q8_0, Data: q8},
		{Name: "output_norm.weight", Dims: []int64{3}, Type: F32, Data: f32},
		{Name: "blk.0.attn_q.weight", Dims: []int64{256, 1}, Type: Q4_K, Data: bytes.Repeat([]byte{7}, 144)},
	}
}

func encode(t testing.TB, meta []KV, tensors []Tensor) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, meta, tensors))
	return buf.Bytes()
}

// TestRoundTripEveryValueTypeAndTensor proves Write and the reader agree on
// every metadata value type (arrays of arrays included) and tensor bytes,
// for v3 and for v2 (which differs only in its version field).
func TestRoundTripEveryValueTypeAndTensor(t *testing.T) {
	meta, tensors := sampleMeta(t), sampleTensors()
	data := encode(t, meta, tensors)
	for _, version := range []uint32{3, 2} {
		binary.LittleEndian.PutUint32(data[4:], version)
		f, err := FromBytes("sample.gguf", data)
		require.NoError(t, err)
		require.Equal(t, version, f.Version())
		require.Equal(t, meta, f.Metadata())
		require.EqualValues(t, DefaultAlignment, f.Alignment())
		require.Len(t, f.Tensors(), len(tensors))
		for i, want := range tensors {
			info, ok := f.Tensor(want.Name)
			require.True(t, ok)
			require.Equal(t, f.Tensors()[i], info)
			require.Equal(t, want.Dims, info.Dims)
			require.Equal(t, want.Type, info.Type)
			require.EqualValues(t, len(want.Data), info.Size)
			require.Zero(t, (info.Offset-f.DataOffset())%f.Alignment())
			got := make([]byte, info.Size)
			require.NoError(t, f.ReadTensor(want.Name, got))
			require.Equal(t, want.Data, got)
		}
		require.Equal(t, []int{2, 32}, tensors[0].shape())
	}
}

func (t Tensor) shape() []int { return TensorInfo{Dims: t.Dims}.Shape() }

func TestTypedAccessors(t *testing.T) {
	f, err := FromBytes("sample.gguf", encode(t, sampleMeta(t), nil))
	require.NoError(t, err)
	s, err := f.String("general.architecture")
	require.NoError(t, err)
	require.Equal(t, "llama", s)
	u, err := f.Uint("u32")
	require.NoError(t, err)
	require.EqualValues(t, 4000000000, u)
	n, err := f.Int("u16", 1<<20)
	require.NoError(t, err)
	require.Equal(t, 60000, n)
	_, err = f.Int("u16", 100)
	require.ErrorIs(t, err, ErrFormat)
	require.ErrorContains(t, err, "u16")
	x, err := f.Float("f32")
	require.NoError(t, err)
	require.Equal(t, 1.5, x)
	b, err := f.Bool("b")
	require.NoError(t, err)
	require.True(t, b)
	ss, err := f.Strings("a.s")
	require.NoError(t, err)
	require.Equal(t, []string{"a", "", "ü"}, ss)
	is, err := f.Ints("a.i32")
	require.NoError(t, err)
	require.Equal(t, []int64{-9}, is)
	fs, err := f.Floats("a.f32")
	require.NoError(t, err)
	require.Equal(t, []float32{0.5, -0.25}, fs)

	_, err = f.Uint("i8")
	require.ErrorIs(t, err, ErrType, "a negative int8 is not a uint")
	_, err = f.String("u8")
	require.ErrorIs(t, err, ErrType)
	require.ErrorContains(t, err, `u8: unsupported GGUF type: is uint8, want string`)
	_, err = f.Strings("a.i32")
	require.ErrorContains(t, err, "is array of int32, want array of string")
	_, err = f.Float("missing.key")
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorContains(t, err, "missing.key")
}

func TestAlignmentFromMetadata(t *testing.T) {
	meta := []KV{kv(t, AlignmentKey, uint32(256))}
	f, err := FromBytes("a.gguf", encode(t, meta, sampleTensors()))
	require.NoError(t, err)
	require.EqualValues(t, 256, f.Alignment())
	require.Zero(t, f.DataOffset()%256)
	for _, info := range f.Tensors() {
		require.Zero(t, (info.Offset-f.DataOffset())%256, info.Name)
	}
}

func TestReadTensorRejectsBadRanges(t *testing.T) {
	f, err := FromBytes("s.gguf", encode(t, nil, sampleTensors()))
	require.NoError(t, err)
	err = f.ReadTensor("nope", nil)
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorContains(t, err, `tensor "nope"`)
	require.ErrorIs(t, f.ReadTensorAt("output_norm.weight", make([]byte, 8), 8), ErrFormat)
	require.ErrorIs(t, f.ReadTensorAt("output_norm.weight", make([]byte, 1), -1), ErrFormat)
	part := make([]byte, 34)
	require.NoError(t, f.ReadTensorAt("token_embd.weight", part, 34))
	require.Equal(t, byte(34), part[0])
}

func TestValueOfRejectsOtherTypes(t *testing.T) {
	_, err := ValueOf(3)
	require.Error(t, err)
	_, err = ValueOf([]Value{val(t, uint8(1))})
	require.Error(t, err)
}

// header offsets in a file written by encode with no metadata: magic 4,
// version 4, tensor_count 8, kv_count 8.
const (
	offTensorCount = 8
	offKVCount     = 16
	offFirstKV     = 24
)

func putU64(b []byte, off int, v uint64) []byte {
	b = bytes.Clone(b)
	binary.LittleEndian.PutUint64(b[off:], v)
	return b
}

func putU32(b []byte, off int, v uint32) []byte {
	b = bytes.Clone(b)
	binary.LittleEndian.PutUint32(b[off:], v)
	return b
}

// tensorInfoOffset is where tensor i's info begins in a file with no metadata.
func tensorInfoOffset(tensors []Tensor, i int) int {
	off := offFirstKV
	for _, t := range tensors[:i] {
		off += 8 + len(t.Name) + 4 + 8*len(t.Dims) + 4 + 8
	}
	return off
}

// TestCorruptFilesNameTheFieldOrTensor proves each kind of bad file is an
// *Error of the right kind whose message names the metadata key or tensor.
func TestCorruptFilesNameTheFieldOrTensor(t *testing.T) {
	tensors := sampleTensors()
	good := encode(t, nil, tensors)
	withMeta := encode(t, []KV{kv(t, "tokenizer.ggml.tokens", []string{"a", "b"})}, nil)
	// In withMeta: key length 8, key 21 bytes, value type 4, elem type 4, count 8.
	arrayCountOff := offFirstKV + 8 + 21 + 4 + 4
	t0 := tensorInfoOffset(tensors, 0)
	t1 := tensorInfoOffset(tensors, 1)
	typeOff := func(i int) int {
		return tensorInfoOffset(tensors, i) + 8 + len(tensors[i].Name) + 4 + 8*len(tensors[i].Dims)
	}
	cases := []struct {
		name string
		data []byte
		kind error
		msg  string
	}{
		{"empty", nil, ErrTruncated, "magic"},
		{"bad magic", append([]byte("GGUX"), good[4:]...), ErrFormat, `"GGUX" is not "GGUF"`},
		{"version 1", putU32(good, 4, 1), ErrFormat, "version 1 is not supported"},
		{"metadata count 2^60", putU64(good, offKVCount, 1<<60), ErrFormat, "metadata_kv_count: malformed GGUF file: count 1152921504606846976 cannot fit"},
		{"tensor count 2^60", putU64(good, offTensorCount, 1<<60), ErrFormat, "tensor_count"},
		{"array count 2^60", putU64(withMeta, arrayCountOff, 1<<60), ErrFormat, "tokenizer.ggml.tokens: malformed GGUF file: count 1152921504606846976"},
		{"string length 2^60", putU64(withMeta, offFirstKV, 1<<60), ErrFormat, "metadata key 0"},
		{"unknown value type", putU32(withMeta, offFirstKV+8+21, 99), ErrFormat, "tokenizer.ggml.tokens: malformed GGUF file: value type 99 is unknown"},
		{"truncated in metadata", withMeta[:arrayCountOff+3], ErrTruncated, "tokenizer.ggml.tokens"},
		{"truncated in a tensor info", good[:t1+8+len(tensors[1].Name)+2], ErrTruncated, `tensor "output_norm.weight"`},
		{"truncated in tensor data", good[:len(good)-100], ErrTruncated, `tensor "blk.0.attn_q.weight": truncated GGUF file: data`},
		{"unknown quant type", putU32(good, typeOff(1), 4), ErrType, `type: tensor "output_norm.weight": unsupported GGUF type: ggml type 4 is unknown`},
		{"too many dims", putU32(good, t0+8+len(tensors[0].Name), 5), ErrFormat, `n_dims: tensor "token_embd.weight"`},
		{"row not whole blocks", putU64(good, t0+8+len(tensors[0].Name)+4, 33), ErrFormat, `tensor "token_embd.weight": malformed GGUF file: a row of 33 elements`},
		{"misaligned tensor", putU64(good, typeOff(1)+4, 100), ErrLayout, `offset: tensor "output_norm.weight": bad GGUF tensor layout: data offset 100 is not a multiple of the alignment 32`},
		{"tensor beyond the file", putU64(good, typeOff(2)+4, 1<<20), ErrTruncated, `tensor "blk.0.attn_q.weight": truncated GGUF file: data`},
		{"overlapping tensors", putU64(good, typeOff(1)+4, 64), ErrLayout, `tensor "output_norm.weight": bad GGUF tensor layout: data [`},
		{"duplicate tensor", encode(t, nil, append(sampleTensors(), sampleTensors()[1])), ErrFormat, `tensor "output_norm.weight": malformed GGUF file: duplicate tensor name`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := FromBytes("bad.gguf", c.data)
			require.Error(t, err)
			var ge *Error
			require.ErrorAs(t, err, &ge)
			require.ErrorIs(t, err, c.kind)
			require.ErrorContains(t, err, "gguf: bad.gguf: ")
			require.ErrorContains(t, err, c.msg)
		})
	}
}

func TestBadAlignmentMetadata(t *testing.T) {
	for _, c := range []struct {
		v    any
		kind error
		msg  string
	}{
		{uint32(48), ErrFormat, "general.alignment: malformed GGUF file: 48 is not a power of two"},
		{uint32(0), ErrFormat, "0 is not a power of two"},
		{"32", ErrType, "general.alignment: unsupported GGUF type: is a string, want uint32"},
	} {
		var buf bytes.Buffer
		e := &encoder{w: bufioWriter(&buf)}
		e.bytes([]byte(Magic))
		e.u32(3)
		e.u64(0)
		e.u64(1)
		e.str(AlignmentKey)
		v := val(t, c.v)
		e.u32(uint32(v.Type()))
		require.NoError(t, e.value(v))
		require.NoError(t, e.w.Flush())
		_, err := FromBytes("bad.gguf", buf.Bytes())
		require.ErrorIs(t, err, c.kind)
		require.ErrorContains(t, err, c.msg)
	}
}

func TestDuplicateKeyIsAnError(t *testing.T) {
	_, err := FromBytes("d.gguf", encode(t, []KV{kv(t, "k", uint8(1)), kv(t, "k", uint8(2))}, nil))
	require.ErrorIs(t, err, ErrFormat)
	require.ErrorContains(t, err, "k: malformed GGUF file: duplicate metadata key")
}

func TestErrorUnwrapsTheCause(t *testing.T) {
	cause := errors.New("disk on fire")
	err := error(&Error{File: "f", Kind: ErrIO, Err: cause})
	require.ErrorIs(t, err, cause)
	require.ErrorIs(t, err, ErrIO)
}

func bufioWriter(b *bytes.Buffer) *bufio.Writer { return bufio.NewWriter(b) }
