package gpu

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/hipgo/hipgo/model/internal/quant"
)

// DType is a weight's element type on the device (its file's dtype): a
// float type, or a GGUF block format kept as its blocks (the quantized
// kernels of module qforward decode it inside the products).
type DType uint8

const (
	F32 DType = iota
	F16
	BF16
	Q4_0
	Q4_1
	Q5_0
	Q5_1
	Q8_0
	Q4_K
	Q5_K
	Q6_K
)

// ErrDType reports a weight type the backend has no kernel for.
var ErrDType = errors.New("gpu: no kernel for the weight type")

var dtypes = [...]struct {
	suffix string
	q      quant.Type
}{
	F32: {"f32", quant.F32}, F16: {"f16", quant.F16}, BF16: {"bf16", quant.BF16},
	Q4_0: {"q4_0", quant.Q4_0}, Q4_1: {"q4_1", quant.Q4_1}, Q5_0: {"q5_0", quant.Q5_0}, Q5_1: {"q5_1", quant.Q5_1}, Q8_0: {"q8_0", quant.Q8_0},
	Q4_K: {"q4_k", quant.Q4_K}, Q5_K: {"q5_k", quant.Q5_K}, Q6_K: {"q6_k", quant.Q6_K},
}

// QuantDType is the device type of a GGUF block format, or ErrDType.
func QuantDType(t quant.Type) (DType, error) {
	for i, d := range dtypes {
		if d.q == t {
			return DType(i), nil
		}
	}
	return 0, fmt.Errorf("%w: %v", ErrDType, t)
}

// Size is the element size in bytes of a float type (0 for a block format:
// use RowBytes).
func (t DType) Size() int {
	switch t {
	case F32:
		return 4
	case F16, BF16:
		return 2
	}
	return 0
}

// Quantized reports a block format (its kernels live in module qforward).
func (t DType) Quantized() bool { return t >= Q4_0 && int(t) < len(dtypes) }

// RowBytes is the size of a row of n weights; it fails for an unknown type
// or an n that is not a whole number of the type's blocks.
func (t DType) RowBytes(n int) (int, error) {
	if int(t) >= len(dtypes) {
		return 0, fmt.Errorf("%w: %d", ErrDType, t)
	}
	return quant.RowBytes(dtypes[t].q, n)
}

// Suffix names the kernel variant that reads this dtype ("matmul_bf16",
// "matmul_q4_k").
func (t DType) Suffix() string {
	if int(t) < len(dtypes) {
		return dtypes[t].suffix
	}
	return fmt.Sprintf("dtype%d", t)
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

// holds checks that t is exactly rows rows of cols weights.
func (t Tensor) holds(rows, cols int) error {
	rb, err := t.DType.RowBytes(cols)
	if err != nil {
		return err
	}
	if len(t.Data) != rows*rb {
		return fmt.Errorf("%d bytes of %s, want %d rows of %d (%d bytes)", len(t.Data), t.DType, rows, cols, rows*rb)
	}
	return nil
}

// Layer is one decoder layer's weights. Matrices are [out, in] (Hugging Face
// layout); QKV is q|k|v stacked by rows, GateUp gate|up. Biases are nil when
// the model has none (a fused bias stays fused either way).
//
// When q, k and v (gate and up) differ in type, which a fused matrix cannot
// hold (GGUF's Q4_K_M keeps attn_v in Q6_K, attn_q/attn_k in Q4_K), they
// come unfused in QKVParts (GateUpParts), in that order, and QKV (GateUp)
// is empty: each part is its own launch, written into its columns of the
// fused activations.
type Layer struct {
	AttnNorm, MLPNorm Tensor
	QKV               Tensor
	QKVParts          []Tensor
	QKVBias           []float32
	O                 Tensor
	OBias             []float32
	GateUp            Tensor
	GateUpParts       []Tensor
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

// MaxHeadDim is the largest head_dim attention_f32 and attention_prefill_f32 take
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

// qkvRows and gateUpRows are the rows of the parts of the fused matrices.
func (c Config) qkvRows() []int    { return []int{c.qDim(), c.kvDim(), c.kvDim()} }
func (c Config) gateUpRows() []int { return []int{c.Intermediate, c.Intermediate} }

// check validates every tensor's element count against the shape, so a
// mistake upstream is an error here rather than a kernel reading past a
// buffer.
func (w *Weights) check(c Config) error {
	D, I, V := c.Hidden, c.Intermediate, c.Vocab
	type want struct {
		name       string
		t          Tensor
		rows, cols int
		vector     bool // a norm weight: a float type
	}
	ws := []want{{"embed", w.Embed, V, D, false}, {"norm", w.Norm, 1, D, true}}
	if !w.Tied {
		ws = append(ws, want{"lm_head", w.LMHead, V, D, false})
	}
	if len(w.Layers) != c.Layers {
		return fmt.Errorf("gpu: %d layers of weights for a %d-layer config", len(w.Layers), c.Layers)
	}
	// fused adds a fused matrix, or its parts when it comes unfused.
	fused := func(name string, t Tensor, parts []Tensor, partNames []string, rows []int) error {
		if parts == nil {
			n := 0
			for _, r := range rows {
				n += r
			}
			ws = append(ws, want{name, t, n, D, false})
			return nil
		}
		if len(parts) != len(rows) || len(t.Data) != 0 {
			return fmt.Errorf("gpu: %s: %d parts (and %d fused bytes), want %d parts and no fused matrix", name, len(parts), len(t.Data), len(rows))
		}
		for i, p := range parts {
			ws = append(ws, want{partNames[i], p, rows[i], D, false})
		}
		return nil
	}
	for i, l := range w.Layers {
		p := fmt.Sprintf("layer %d ", i)
		ws = append(ws,
			want{p + "attn norm", l.AttnNorm, 1, D, true}, want{p + "mlp norm", l.MLPNorm, 1, D, true},
			want{p + "o", l.O, D, c.qDim(), false}, want{p + "down", l.Down, D, I, false})
		if err := fused(p+"qkv", l.QKV, l.QKVParts, []string{p + "q", p + "k", p + "v"}, c.qkvRows()); err != nil {
			return err
		}
		if err := fused(p+"gate|up", l.GateUp, l.GateUpParts, []string{p + "gate", p + "up"}, c.gateUpRows()); err != nil {
			return err
		}
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
		if x.vector && x.t.DType.Quantized() {
			return fmt.Errorf("gpu: %s is %s: %w (norm weights are f32, f16 or bf16)", x.name, x.t.DType, ErrDType)
		}
		if err := x.t.holds(x.rows, x.cols); err != nil {
			return fmt.Errorf("gpu: %s: %w", x.name, err)
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
