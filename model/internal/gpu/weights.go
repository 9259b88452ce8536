package gpu

import (
	"fmt"
	"unsafe"
)

// DType is a weight's element type on the device (its file's dtype).
type DType uint8

const (
	F32 DType = iota
	F16
	BF16
)

// Size is the element size in bytes.
func (t DType) Size() int {
	if t == F32 {
		return 4
	}
	return 2
}

// Suffix names the kernel variant that reads this dtype ("matmul_bf16").
func (t DType) Suffix() string {
	switch t {
	case F16:
		return "f16"
	case BF16:
		return "bf16"
	}
	return "f32"
}

func (t DType) String() string { return t.Suffix() }

// Tensor is a weight as its file stores it: little-endian elements of DType,
// row-major.
type Tensor struct {
	DType DType
	Data  []byte
}

// F32Tensor wraps float32 values (biases, tests) as a tensor.
func F32Tensor(v []float32) Tensor {
	if len(v) == 0 {
		return Tensor{DType: F32}
	}
	return Tensor{DType: F32, Data: unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))}
}

func (t Tensor) elems() int { return len(t.Data) / t.DType.Size() }

// Layer is one decoder layer's weights. Matrices are [out, in] (Hugging Face
// layout); QKV is q|k|v stacked by rows, GateUp gate|up. Biases are nil when
// the model has none.
type Layer struct {
	AttnNorm, MLPNorm Tensor
	QKV               Tensor
	QKVBias           []float32
	O                 Tensor
	OBias             []float32
	GateUp            Tensor
	GateUpBias        []float32
	Down              Tensor
	DownBias          []float32
}

// Weights are a checkpoint's tensors for upload. LMHead is ignored when Tied
// (the embedding table is the head).
type Weights struct {
	Embed  Tensor
	LMHead Tensor
	Tied   bool
	Norm   Tensor
	Layers []Layer
}

// MaxHeadDim is the largest head_dim attention_f32 takes
// (FW_ATT_MAX_HEADDIM in kernels/src/forward.cu).
const MaxHeadDim = 256

// Config is the model's shape.
type Config struct {
	Hidden, Intermediate int
	Layers               int
	Heads, KVHeads       int
	HeadDim              int
	Vocab                int
	Eps                  float32
	InvFreq              []float32 // RoPE inverse frequencies, HeadDim/2 (default or llama3 scaling, computed on the host)
}

func (c Config) qDim() int   { return c.Heads * c.HeadDim }
func (c Config) kvDim() int  { return c.KVHeads * c.HeadDim }
func (c Config) qkvDim() int { return c.qDim() + 2*c.kvDim() }

// check validates every tensor's element count against the shape, so a
// mistake upstream is an error here rather than a kernel reading past a
// buffer.
func (w *Weights) check(c Config) error {
	D, I, V := c.Hidden, c.Intermediate, c.Vocab
	type want struct {
		name string
		t    Tensor
		n    int
	}
	ws := []want{{"embed", w.Embed, V * D}, {"norm", w.Norm, D}}
	if !w.Tied {
		ws = append(ws, want{"lm_head", w.LMHead, V * D})
	}
	if len(w.Layers) != c.Layers {
		return fmt.Errorf("gpu: %d layers of weights for a %d-layer config", len(w.Layers), c.Layers)
	}
	for i, l := range w.Layers {
		p := fmt.Sprintf("layer %d ", i)
		ws = append(ws,
			want{p + "attn norm", l.AttnNorm, D}, want{p + "mlp norm", l.MLPNorm, D},
			want{p + "qkv", l.QKV, c.qkvDim() * D}, want{p + "o", l.O, D * c.qDim()},
			want{p + "gate|up", l.GateUp, 2 * I * D}, want{p + "down", l.Down, D * I})
		for _, b := range []struct {
			name string
			v    []float32
			n    int
		}{{"qkv bias", l.QKVBias, c.qkvDim()}, {"o bias", l.OBias, D}, {"gate|up bias", l.GateUpBias, 2 * I}, {"down bias", l.DownBias, D}} {
			if b.v != nil && len(b.v) != b.n {
				return fmt.Errorf("gpu: %s%s has %d values, want %d", p, b.name, len(b.v), b.n)
			}
		}
	}
	for _, x := range ws {
		if len(x.t.Data)%x.t.DType.Size() != 0 || x.t.elems() != x.n {
			return fmt.Errorf("gpu: %s has %d bytes of %s, want %d elements", x.name, len(x.t.Data), x.t.DType, x.n)
		}
	}
	if len(c.InvFreq) != c.HeadDim/2 {
		return fmt.Errorf("gpu: %d RoPE frequencies for head_dim %d", len(c.InvFreq), c.HeadDim)
	}
	if c.HeadDim > MaxHeadDim || c.HeadDim%2 != 0 {
		return fmt.Errorf("gpu: head_dim %d: the attention kernel takes an even head_dim up to %d", c.HeadDim, MaxHeadDim)
	}
	if c.Heads%c.KVHeads != 0 {
		return fmt.Errorf("gpu: %d heads are not a multiple of %d KV heads", c.Heads, c.KVHeads)
	}
	return nil
}
