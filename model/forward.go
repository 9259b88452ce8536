package model

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"

	"github.com/hipgo/hipgo/model/internal/cpu"
)

// cpuBackend runs the llama forward pass in pure Go on the shared worker pool.
type cpuBackend struct {
	cfg     *Config
	w       *weights
	pool    *cpu.Pool
	chunks  int       // parallel ranges per loop
	invFreq []float32 // RoPE inverse frequencies, headDim/2
}

func newCPUBackend(cfg *Config, w *weights, pool *cpu.Pool, threads int) *cpuBackend {
	return &cpuBackend{cfg: cfg, w: w, pool: pool.WithLimit(threads), chunks: 4 * threads, invFreq: cfg.ropeInvFreq()}
}

func (b *cpuBackend) name() string { return "cpu" }

// prefillChunk bounds the tokens processed per forward step: it bounds scratch
// memory and lets cancellation interrupt a long prompt.
const prefillChunk = 64

func (b *cpuBackend) newSequence(capacity int) sequence {
	c := b.cfg
	s := &cpuSequence{b: b, capacity: capacity}
	s.kv = make([]kvCache, c.NumLayers)
	s.scores = make([][]float32, b.chunks)
	return s
}

// kvCache holds one layer's keys and values, [tokens, kvHeads*headDim] each,
// grown geometrically up to the sequence's capacity so short generations on
// long-context models do not reserve the whole context.
type kvCache struct{ k, v []float32 }

type cpuSequence struct {
	b        *cpuBackend
	capacity int
	n        int // tokens in the cache
	kv       []kvCache
	// scratch, sized for prefillChunk tokens on first use
	x, xb, qkv, att, gu, act, q []float32
	cos, sin                    []float32
	scores                      [][]float32 // per parallel range
	parts                       []float32   // one unfused projection's output
}

func (s *cpuSequence) len() int { return s.n }

func (s *cpuSequence) ensureScratch() {
	if s.x != nil {
		return
	}
	c := s.b.cfg
	T := prefillChunk
	qD, kvD := c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	s.x = make([]float32, T*c.HiddenSize)
	s.xb = make([]float32, T*max(c.HiddenSize, qD))
	s.qkv = make([]float32, T*(qD+2*kvD))
	s.q = make([]float32, T*qD)
	s.att = make([]float32, T*qD)
	s.gu = make([]float32, T*2*c.IntermediateSize)
	s.act = make([]float32, T*c.IntermediateSize)
	s.cos = make([]float32, T*c.HeadDim/2)
	s.sin = make([]float32, T*c.HeadDim/2)
}

// grow makes room for n tokens in every layer's cache.
func (s *cpuSequence) grow(n int) {
	kvD := s.b.cfg.NumKVHeads * s.b.cfg.HeadDim
	if len(s.kv[0].k) >= n*kvD {
		return
	}
	size := max(n, min(s.capacity, max(256, 2*len(s.kv[0].k)/kvD)))
	for i := range s.kv {
		k := make([]float32, size*kvD)
		v := make([]float32, size*kvD)
		copy(k, s.kv[i].k[:s.n*kvD])
		copy(v, s.kv[i].v[:s.n*kvD])
		s.kv[i] = kvCache{k, v}
	}
}

func (s *cpuSequence) forward(ctx context.Context, tokens []uint32, all bool, logits []float32) (err error) {
	// Weights read in place from a mapped file fault if the file is
	// truncated under the model: an error, not the end of the process.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			addr, ok := cpu.FaultAddr(r)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("model: %w: reading the weights faulted at %#x (%v): was the checkpoint file truncated or rewritten while loaded? Load it again", ErrWeights, addr, r)
		}
	}()
	if s.n+len(tokens) > s.capacity {
		return &ContextError{Tokens: s.n + len(tokens), Context: s.capacity, What: "sequence"}
	}
	s.ensureScratch()
	s.grow(s.n + len(tokens))
	V := s.b.cfg.VocabSize
	for start := 0; start < len(tokens); start += prefillChunk {
		chunk := tokens[start:min(len(tokens), start+prefillChunk)]
		last := start+len(chunk) == len(tokens)
		var out []float32
		switch {
		case all:
			out = logits[start*V : (start+len(chunk))*V]
		case last:
			out = logits[:V]
		}
		if err := s.step(ctx, chunk, all, out); err != nil {
			return err
		}
	}
	return nil
}

// step runs up to prefillChunk tokens through every layer. On cancellation
// the cache length is left unchanged, so the keys written so far are unused.
func (s *cpuSequence) step(ctx context.Context, tokens []uint32, all bool, logits []float32) error {
	b, c, w := s.b, s.b.cfg, s.b.w
	T, D := len(tokens), c.HiddenSize
	H, KV, hd := c.NumHeads, c.NumKVHeads, c.HeadDim
	qD, kvD := H*hd, KV*hd
	qkvD := qD + 2*kvD
	I := c.IntermediateSize
	eps := float32(c.RMSNormEps)
	pos0 := s.n

	x := s.x[:T*D]
	for t, id := range tokens {
		if err := w.embed.Row(x[t*D:(t+1)*D], int(id)); err != nil {
			return err // ids were checked against the vocabulary; unreachable
		}
	}
	// Angles are inv_freq*position rounded to float32, as transformers
	// computes them, then cos and sin of that angle.
	half := hd / 2
	for t := range T {
		p := float32(pos0 + t)
		for i, f := range b.invFreq {
			a := float64(f * p)
			s.cos[t*half+i] = float32(math.Cos(a))
			s.sin[t*half+i] = float32(math.Sin(a))
		}
	}

	xb, qkv, q, att := s.xb[:T*D], s.qkv[:T*qkvD], s.q[:T*qD], s.att[:T*qD]
	gu, act := s.gu[:T*2*I], s.act[:T*I]
	for l := range w.layers {
		if err := ctx.Err(); err != nil {
			return err
		}
		lw := &w.layers[l]
		kv := &s.kv[l]
		for t := range T {
			cpu.RMSNorm(xb[t*D:(t+1)*D], x[t*D:(t+1)*D], lw.attnNorm, eps)
		}
		b.project(qkv, xb, T, &lw.qkv, lw.qkvParts, lw.qkvBias, &s.parts)
		for t := range T {
			row := qkv[t*qkvD : (t+1)*qkvD]
			qt := q[t*qD : (t+1)*qD]
			copy(qt, row[:qD])
			cos, sin := s.cos[t*half:(t+1)*half], s.sin[t*half:(t+1)*half]
			cpu.RoPE(qt, H, hd, cos, sin)
			k := kv.k[(pos0+t)*kvD : (pos0+t+1)*kvD]
			copy(k, row[qD:qD+kvD])
			cpu.RoPE(k, KV, hd, cos, sin)
			copy(kv.v[(pos0+t)*kvD:(pos0+t+1)*kvD], row[qD+kvD:])
		}
		s.attention(T, pos0, q, kv, att)
		b.pool.MatMul(xb, att, T, &lw.o, lw.oBias)
		add(x, xb)
		for t := range T {
			cpu.RMSNorm(xb[t*D:(t+1)*D], x[t*D:(t+1)*D], lw.mlpNorm, eps)
		}
		b.project(gu, xb, T, &lw.gateUp, lw.gateUpParts, lw.gateUpBias, &s.parts)
		for t := range T {
			cpu.SwiGLU(act[t*I:(t+1)*I], gu[t*2*I:t*2*I+I], gu[t*2*I+I:(t+1)*2*I])
		}
		b.pool.MatMul(xb, act, T, &lw.down, lw.downBias)
		add(x, xb)
	}
	s.n += T
	if logits == nil {
		return nil
	}
	first := 0
	if !all {
		first = T - 1
	}
	for t := first; t < T; t++ {
		cpu.RMSNorm(xb[t*D:(t+1)*D], x[t*D:(t+1)*D], w.norm, eps)
	}
	b.pool.MatMul(logits, xb[first*D:T*D], T-first, &w.lmHead, nil)
	return nil
}

// attention computes causal grouped-query attention for T new queries at
// positions pos0.. against the cache, one (token, head) pair per work item.
func (s *cpuSequence) attention(T, pos0 int, q []float32, kv *kvCache, out []float32) {
	c := s.b.cfg
	H, hd := c.NumHeads, c.HeadDim
	kvD := c.NumKVHeads * hd
	group := H / c.NumKVHeads
	scale := float32(1 / math.Sqrt(float64(hd)))
	s.b.pool.ForChunks(T*H, s.b.chunks, 1, func(chunk, lo, hi int) {
		scores := s.scores[chunk]
		if cap(scores) < pos0+T {
			scores = make([]float32, 0, max(pos0+T, 2*cap(scores)))
			s.scores[chunk] = scores
		}
		for item := lo; item < hi; item++ {
			t, h := item/H, item%H
			n := pos0 + t + 1 // causal: keys 0..pos0+t
			qh := q[t*H*hd+h*hd : t*H*hd+(h+1)*hd]
			off := (h / group) * hd
			sc := scores[:n]
			cpu.Scores(sc, qh, kv.k[off:], kvD, scale)
			cpu.Softmax(sc)
			cpu.WeightedRows(out[t*H*hd+h*hd:t*H*hd+(h+1)*hd], sc, kv.v[off:], kvD)
		}
	})
}

func add(dst, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
	}
}

// project computes a fused projection, from its one matrix or, for
// unfused parts, part by part into columns of out, as if fused.
func (b *cpuBackend) project(out, x []float32, T int, m *cpu.Matrix, parts []cpu.Matrix, bias []float32, scratch *[]float32) {
	if parts == nil {
		b.pool.MatMul(out, x, T, m, bias)
		return
	}
	N := 0
	for i := range parts {
		N += parts[i].Rows
	}
	off := 0
	for i := range parts {
		p := &parts[i]
		if cap(*scratch) < T*p.Rows {
			*scratch = make([]float32, T*p.Rows)
		}
		tmp := (*scratch)[:T*p.Rows]
		var pb []float32
		if bias != nil {
			pb = bias[off : off+p.Rows]
		}
		b.pool.MatMul(tmp, x, T, p, pb)
		for t := range T {
			copy(out[t*N+off:t*N+off+p.Rows], tmp[t*p.Rows:(t+1)*p.Rows])
		}
		off += p.Rows
	}
}
