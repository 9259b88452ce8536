package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/hipgo/hipgo/mlx"
	"github.com/hipgo/hipgo/model/internal/cpu"
)

// mlxBackend runs the llama forward pass with MLX ops (package mlx over
// libmlxc) on MLX's default GPU stream where MLX has a GPU, else its CPU
// stream. Weights are converted once from the CPU loader's matrices to
// float32 MLX arrays (bf16 widened, GGUF block formats dequantized); logits
// come back to the host and are sampled there with hostStep.
type mlxBackend struct {
	cfg    *Config
	stream *mlx.Stream
	label  string
	// mu serialises steps: sequences of one backend share the stream.
	mu sync.Mutex

	embed, lmHeadT *mlx.Array // [V, D]; lm head transposed to [D, V]
	norm           *mlx.Array
	freqs          *mlx.Array // RoPE periods 1/inv_freq, headDim/2
	layers         []mlxLayer
	owned          []*mlx.Array // every array above, freed by close
	bytes          int64        // MLX memory the weights take (float32)
}

// mlxLayer holds one layer's weights; matrices are transposed to [in, out]
// views so x·W is one Matmul. Biases are nil when absent.
type mlxLayer struct {
	attnNorm, mlpNorm        *mlx.Array
	qkvT, oT, gateUpT, downT *mlx.Array
	qkvBias, oBias           *mlx.Array
	gateUpBias, downBias     *mlx.Array
}

// newMLXBackend converts w to MLX arrays. w is not kept.
func newMLXBackend(cfg *Config, w *weights) (_ *mlxBackend, err error) {
	if err := mlx.Load(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoMLX, err)
	}
	b := &mlxBackend{cfg: cfg}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.close())
		}
	}()
	kind := "cpu"
	if n, err := mlx.DeviceCount(mlx.GPU); err == nil && n > 0 {
		kind = "gpu"
		b.stream, err = mlx.DefaultGPUStream()
		if err != nil {
			return nil, fmt.Errorf("model: mlx: %w", err)
		}
	} else if b.stream, err = mlx.DefaultCPUStream(); err != nil {
		return nil, fmt.Errorf("model: mlx: %w", err)
	}
	b.label = "mlx " + kind
	if v, err := mlx.Version(); err == nil {
		b.label += " " + v
	}

	if b.embed, err = b.matrix(&w.embed, nil, false); err != nil {
		return nil, err
	}
	if w.tied {
		if b.lmHeadT, err = b.keep(mlx.Transpose(b.embed, []int{1, 0}, b.stream)); err != nil {
			return nil, err
		}
	} else if b.lmHeadT, err = b.matrix(&w.lmHead, nil, true); err != nil {
		return nil, err
	}
	if b.norm, err = b.vector(w.norm); err != nil {
		return nil, err
	}
	inv := cfg.ropeInvFreq()
	periods := make([]float32, len(inv))
	for i, f := range inv {
		periods[i] = 1 / f
	}
	if b.freqs, err = b.vector(periods); err != nil {
		return nil, err
	}
	b.layers = make([]mlxLayer, len(w.layers))
	for i := range w.layers {
		lw, ml := &w.layers[i], &b.layers[i]
		for _, v := range []struct {
			dst **mlx.Array
			src []float32
		}{{&ml.attnNorm, lw.attnNorm}, {&ml.mlpNorm, lw.mlpNorm}, {&ml.qkvBias, lw.qkvBias},
			{&ml.oBias, lw.oBias}, {&ml.gateUpBias, lw.gateUpBias}, {&ml.downBias, lw.downBias}} {
			if v.src == nil {
				continue
			}
			if *v.dst, err = b.vector(v.src); err != nil {
				return nil, fmt.Errorf("model: mlx: layer %d: %w", i, err)
			}
		}
		for _, m := range []struct {
			dst   **mlx.Array
			src   *cpu.Matrix
			parts []cpu.Matrix
		}{{&ml.qkvT, &lw.qkv, lw.qkvParts}, {&ml.oT, &lw.o, nil}, {&ml.gateUpT, &lw.gateUp, lw.gateUpParts}, {&ml.downT, &lw.down, nil}} {
			if *m.dst, err = b.matrix(m.src, m.parts, true); err != nil {
				return nil, fmt.Errorf("model: mlx: layer %d: %w", i, err)
			}
		}
	}
	// Materialise everything now, so a bad weight fails Load, not a step.
	if err := mlx.Eval(b.owned...); err != nil {
		return nil, fmt.Errorf("model: mlx: weights: %w", err)
	}
	return b, nil
}

// ErrNoMLX: DeviceMLX was asked for and libmlxc could not be loaded.
var ErrNoMLX = errors.New("model: device mlx asked for")

func (b *mlxBackend) keep(a *mlx.Array, err error) (*mlx.Array, error) {
	if err != nil {
		return nil, fmt.Errorf("model: mlx: %w", err)
	}
	b.owned = append(b.owned, a)
	return a, nil
}

func (b *mlxBackend) vector(v []float32) (*mlx.Array, error) {
	b.bytes += 4 * int64(len(v))
	return b.keep(mlx.FromSlice(v, len(v)))
}

// matrix copies m (or its parts stacked by rows) to a float32 array,
// [rows, cols], or its transpose when transposed is set.
func (b *mlxBackend) matrix(m *cpu.Matrix, parts []cpu.Matrix, transposed bool) (*mlx.Array, error) {
	if parts == nil {
		parts = []cpu.Matrix{*m}
	}
	rows, cols := 0, parts[0].Cols
	for i := range parts {
		rows += parts[i].Rows
	}
	host := make([]float32, rows*cols)
	r := 0
	for i := range parts {
		p := &parts[i]
		if p.F32 != nil {
			copy(host[r*cols:], p.F32[:p.Rows*cols])
			r += p.Rows
			continue
		}
		for j := range p.Rows { // bf16 widened, block formats dequantized
			if err := p.Row(host[r*cols:(r+1)*cols], j); err != nil {
				return nil, fmt.Errorf("model: mlx: %w", err)
			}
			r++
		}
	}
	b.bytes += 4 * int64(len(host))
	a, err := mlx.FromSlice(host, rows, cols)
	if err != nil {
		return nil, fmt.Errorf("model: mlx: %w", err)
	}
	if !transposed {
		return b.keep(a, nil)
	}
	t, err := mlx.Transpose(a, []int{1, 0}, b.stream)
	err = errors.Join(err, a.Free()) // the view keeps the data alive
	return b.keep(t, err)
}

func (b *mlxBackend) name() string { return b.label }

func (b *mlxBackend) close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	for _, a := range b.owned {
		errs = append(errs, a.Free())
	}
	b.owned = nil
	if b.stream != nil {
		errs = append(errs, b.stream.Free())
		b.stream = nil
	}
	return errors.Join(errs...)
}

func (b *mlxBackend) step(ctx context.Context, items []stepItem, out []uint32) error {
	return hostStep(ctx, b.cfg.VocabSize, items, out)
}

// The MLX backend copies each step's logits to the host and samples there
// (hostStep), where the penalties apply and the logprobs are computed.
func (b *mlxBackend) samplesOnHost() bool { return true }

func (b *mlxBackend) newSequence(capacity int) sequence {
	return &mlxSequence{b: b, capacity: capacity, k: make([]*mlx.Array, b.cfg.NumLayers), v: make([]*mlx.Array, b.cfg.NumLayers)}
}

// mlxSequence keeps each layer's keys and values as [1, kvHeads, n, headDim]
// arrays, grown by concatenation each step.
type mlxSequence struct {
	b        *mlxBackend
	capacity int
	n        int
	k, v     []*mlx.Array
}

func (s *mlxSequence) len() int { return s.n }

func (s *mlxSequence) release() {
	for i := range s.k {
		freeAll(s.k[i], s.v[i])
		s.k[i], s.v[i] = nil, nil
	}
}

func freeAll(arrays ...*mlx.Array) error {
	var errs []error
	for _, a := range arrays {
		if a != nil {
			errs = append(errs, a.Free())
		}
	}
	return errors.Join(errs...)
}

// graph builds one step's MLX graph: every op's result goes to the arena,
// freed at the end of the step, and the first error sticks (later ops see
// nil inputs and fail without reaching MLX; their errors are dropped).
type graph struct {
	s     *mlx.Stream
	arena []*mlx.Array
	err   error
}

func (g *graph) add(a *mlx.Array, err error) *mlx.Array {
	if g.err != nil {
		if a != nil {
			_ = a.Free()
		}
		return nil
	}
	if err != nil {
		g.err = err
		return nil
	}
	g.arena = append(g.arena, a)
	return a
}

func (g *graph) free() error {
	err := freeAll(g.arena...)
	g.arena = nil
	return err
}

// linear is x·wT + bias (bias may be nil).
func (g *graph) linear(x, wT, bias *mlx.Array) *mlx.Array {
	y := g.add(mlx.Matmul(x, wT, g.s))
	if bias != nil {
		y = g.add(mlx.Add(y, bias, g.s))
	}
	return y
}

// heads slices columns [lo, hi) of a [T, cols] array and lays them out as
// [1, n, T, headDim].
func (g *graph) heads(x *mlx.Array, T, lo, hi, n, hd int) *mlx.Array {
	x = g.add(mlx.Slice(x, []int{0, lo}, []int{T, hi}, nil, g.s))
	x = g.add(mlx.Reshape(x, []int{1, T, n, hd}, g.s))
	return g.add(mlx.Transpose(x, []int{0, 2, 1, 3}, g.s))
}

func (s *mlxSequence) forward(ctx context.Context, tokens []uint32, all bool, logits []float32) error {
	if s.n+len(tokens) > s.capacity {
		return &ContextError{Tokens: s.n + len(tokens), Context: s.capacity, What: "sequence"}
	}
	if len(tokens) == 0 {
		return nil
	}
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	if s.b.stream == nil {
		return errors.New("model: mlx: the model is closed")
	}
	g := &graph{s: s.b.stream}
	newK, newV, out, err := s.build(ctx, g, tokens, all)
	if err == nil {
		err = mlx.Eval(append(append([]*mlx.Array{out}, newK...), newV...)...)
	}
	var host []float32
	if err == nil && logits != nil {
		host, err = mlx.Data[float32](out)
	}
	if err == nil && logits != nil && len(host) != len(logits) {
		err = fmt.Errorf("mlx returned %d logits, want %d", len(host), len(logits))
	}
	if err != nil {
		// The cache keeps its old arrays; the new ones were in the arena
		// or are freed here.
		err = errors.Join(err, g.free())
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return ctx.Err()
		}
		return fmt.Errorf("model: mlx: %w", err)
	}
	copy(logits, host)
	// Commit: the new caches leave the arena and replace the old ones.
	keep := make(map[*mlx.Array]bool, 2*len(newK))
	for i := range newK {
		keep[newK[i]], keep[newV[i]] = true, true
		if ferr := freeAll(s.k[i], s.v[i]); ferr != nil {
			err = ferr
		}
		s.k[i], s.v[i] = newK[i], newV[i]
	}
	rest := g.arena[:0]
	for _, a := range g.arena {
		if !keep[a] {
			rest = append(rest, a)
		}
	}
	g.arena = rest
	s.n += len(tokens)
	if ferr := g.free(); ferr != nil {
		err = ferr
	}
	if err != nil {
		return fmt.Errorf("model: mlx: freeing a step's arrays: %w", err)
	}
	return nil
}

// build records the step's graph: the new per-layer caches and the logits,
// [T or 1, vocab] float32. Nothing is evaluated yet.
func (s *mlxSequence) build(ctx context.Context, g *graph, tokens []uint32, all bool) (newK, newV []*mlx.Array, logits *mlx.Array, err error) {
	b, c := s.b, s.b.cfg
	T := len(tokens)
	H, KV, hd := c.NumHeads, c.NumKVHeads, c.HeadDim
	qD, kvD, I := H*hd, KV*hd, c.IntermediateSize
	eps := float32(c.RMSNormEps)
	scale := float32(1 / math.Sqrt(float64(hd)))
	ids := make([]int32, T)
	for i, t := range tokens {
		ids[i] = int32(t)
	}
	x := g.add(mlx.Take(b.embed, g.add(mlx.FromSlice(ids, T)), 0, g.s))
	// One query attends to every key: no mask. Several queries at positions
	// n.. use MLX's causal mask, aligned to the last key.
	mask := ""
	if T > 1 {
		mask = "causal"
	}
	newK, newV = make([]*mlx.Array, len(b.layers)), make([]*mlx.Array, len(b.layers))
	for l := range b.layers {
		if err := ctx.Err(); err != nil {
			return nil, nil, nil, err
		}
		lw := &b.layers[l]
		h := g.add(mlx.RMSNorm(x, lw.attnNorm, eps, g.s))
		qkv := g.linear(h, lw.qkvT, lw.qkvBias)
		q := g.heads(qkv, T, 0, qD, H, hd)
		k := g.heads(qkv, T, qD, qD+kvD, KV, hd)
		v := g.heads(qkv, T, qD+kvD, qD+2*kvD, KV, hd)
		q = g.add(mlx.RoPE(q, hd, false, 0, 1, s.n, b.freqs, g.s))
		k = g.add(mlx.RoPE(k, hd, false, 0, 1, s.n, b.freqs, g.s))
		if s.k[l] != nil {
			k = g.add(mlx.Concatenate([]*mlx.Array{s.k[l], k}, 2, g.s))
			v = g.add(mlx.Concatenate([]*mlx.Array{s.v[l], v}, 2, g.s))
		}
		newK[l], newV[l] = k, v
		a := g.add(mlx.ScaledDotProductAttention(q, k, v, scale, mask, g.s))
		a = g.add(mlx.Transpose(a, []int{0, 2, 1, 3}, g.s))
		a = g.add(mlx.Reshape(a, []int{T, qD}, g.s))
		x = g.add(mlx.Add(x, g.linear(a, lw.oT, lw.oBias), g.s))

		h = g.add(mlx.RMSNorm(x, lw.mlpNorm, eps, g.s))
		gu := g.linear(h, lw.gateUpT, lw.gateUpBias)
		gate := g.add(mlx.Slice(gu, []int{0, 0}, []int{T, I}, nil, g.s))
		up := g.add(mlx.Slice(gu, []int{0, I}, []int{T, 2 * I}, nil, g.s))
		act := g.add(mlx.Multiply(g.add(mlx.Multiply(gate, g.add(mlx.Sigmoid(gate, g.s)), g.s)), up, g.s))
		x = g.add(mlx.Add(x, g.linear(act, lw.downT, lw.downBias), g.s))
		if g.err != nil {
			return nil, nil, nil, g.err
		}
	}
	if !all && T > 1 {
		x = g.add(mlx.Slice(x, []int{T - 1, 0}, []int{T, c.HiddenSize}, nil, g.s))
	}
	x = g.add(mlx.RMSNorm(x, b.norm, eps, g.s))
	logits = g.add(mlx.Matmul(x, b.lmHeadT, g.s))
	return newK, newV, logits, g.err
}
