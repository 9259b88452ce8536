package model

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/hipgo/hipgo/model/internal/cpu"
	"github.com/hipgo/hipgo/model/safetensors"
)

// cpuBackend runs the llama forward pass in pure Go on the shared worker pool.
type cpuBackend struct {
	cfg     *Config
	w       *weights
	pool    *cpu.Pool
	chunks  int       // parallel ranges per loop
	invFreq []float32 // RoPE inverse frequencies, a rotary pair each
	// invFreqLong is LongRoPE's with its long factors (nil without), for
	// rows whose forward call reaches past the original context, and
	// ropeScale multiplies every cos and sin (LongRoPE's attention factor;
	// else 1).
	invFreqLong []float32
	ropeScale   float32
	// invFreqLocal is sliding-window layers' (Config.RopeLocalTheta), nil
	// without them.
	invFreqLocal []float32
	// roundKV stores each cached key and value rounded to f16 (nearest
	// even) in its f32 slot: the values an f16 GPU cache holds, for tests
	// to hold KVCacheF16 to (options.cpuRoundKV).
	roundKV bool
	// decodeScratch holds *cpuScratch for batched decode passes.
	decodeScratch sync.Pool
	// passes counts forward passes (tests check that a batched decode step
	// is one).
	passes atomic.Int64
}

func newCPUBackend(cfg *Config, w *weights, pool *cpu.Pool, threads int) *cpuBackend {
	b := &cpuBackend{cfg: cfg, w: w, pool: pool.WithLimit(threads), chunks: 4 * threads,
		invFreq: cfg.ropeInvFreq(), invFreqLong: cfg.ropeLongInvFreq(), invFreqLocal: cfg.ropeLocalInvFreq(), ropeScale: 1}
	if rs := cfg.RopeScaling; rs != nil && rs.Type == "longrope" {
		b.ropeScale = float32(rs.AttentionFactor)
	}
	return b
}

func (b *cpuBackend) name() string { return "cpu" }

// roundF16 rounds v's values to f16, nearest even (roundKV).
func roundF16(v []float32) {
	for i, x := range v {
		v[i] = safetensors.F16ToFloat32(safetensors.Float32ToF16(x))
	}
}

// prefillChunk bounds the tokens processed per forward step: it bounds scratch
// memory and lets cancellation interrupt a long prompt.
const prefillChunk = 64

func (b *cpuBackend) newSequence(capacity int) sequence {
	c := b.cfg
	s := &cpuSequence{b: b, capacity: capacity}
	s.kv = make([]kvCache, c.NumLayers)
	for l := range s.kv {
		// A window that holds the whole context needs no sliding.
		if w := c.window(l); w > 0 && w+prefillChunk < capacity {
			s.kv[l].window = w
		}
	}
	return s
}

// kvCache holds one layer's keys and values, [tokens, kvHeads*headDim] each,
// grown geometrically up to the sequence's capacity so short generations on
// long-context models do not reserve the whole context. A sliding-window
// layer's cache (window > 0) keeps only the positions a query can still
// see: row 0 is position base, and the rows older than the window are
// dropped (the rest moved to the front) when a step needs their room, so
// it holds at most 2*window+prefillChunk rows however long the sequence.
type kvCache struct {
	k, v   []float32
	base   int // the position of row 0
	window int // > 0: a sliding-window layer's
}

type cpuSequence struct {
	b        *cpuBackend
	capacity int
	n        int // tokens in the cache
	kv       []kvCache
	scratch  cpuScratch // its prompt's and its own steps' activations
}

func (s *cpuSequence) len() int { return s.n }

// cpuRow is one row of a forward pass: a token of seq at position pos. A
// sequence's prompt is rows of one sequence at consecutive positions; a
// batched decode step is one row of each sequence. long: the row's forward
// call reaches past LongRoPE's original context (Config.longRoPE).
type cpuRow struct {
	seq  *cpuSequence
	pos  int
	long bool
}

// cpuScratch is one forward pass's activations, sized for the most rows it
// has run (prefillChunk for a sequence's own passes).
type cpuScratch struct {
	size                        int
	x, xb, qkv, att, gu, act, q []float32
	cos, sin                    []float32
	cosL, sinL                  []float32   // sliding-window layers' (cpuBackend.invFreqLocal)
	scores                      [][]float32 // per parallel range
	parts                       []float32   // one unfused projection's output
	rows                        []cpuRow
	logits                      []float32 // a batched decode step's, a row each
}

func (p *cpuScratch) ensure(b *cpuBackend, T int) {
	if p.size >= T {
		return
	}
	c := b.cfg
	qD, kvD := c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	p.size = T
	p.x = make([]float32, T*c.HiddenSize)
	p.xb = make([]float32, T*max(c.HiddenSize, qD))
	p.qkv = make([]float32, T*(qD+2*kvD))
	p.q = make([]float32, T*qD)
	p.att = make([]float32, T*qD)
	p.gu = make([]float32, T*2*c.IntermediateSize)
	p.act = make([]float32, T*c.IntermediateSize)
	p.cos = make([]float32, T*c.HeadDim/2)
	p.sin = make([]float32, T*c.HeadDim/2)
	if b.invFreqLocal != nil {
		p.cosL = make([]float32, T*c.HeadDim/2)
		p.sinL = make([]float32, T*c.HeadDim/2)
	}
	if p.scores == nil {
		p.scores = make([][]float32, b.chunks)
	}
}

// grow makes room in every layer's cache for positions up to n (the
// sequence's next step writes s.n to n-1).
func (s *cpuSequence) grow(n int) {
	kvD := s.b.cfg.NumKVHeads * s.b.cfg.HeadDim
	for i := range s.kv {
		kv := &s.kv[i]
		rows := len(kv.k) / kvD
		if n-kv.base <= rows {
			continue
		}
		limit := s.capacity
		if kv.window > 0 {
			// Queries from s.n on see positions from s.n-window+1 on.
			if keep := max(kv.base, s.n-kv.window+1); keep > kv.base {
				copy(kv.k, kv.k[(keep-kv.base)*kvD:(s.n-kv.base)*kvD])
				copy(kv.v, kv.v[(keep-kv.base)*kvD:(s.n-kv.base)*kvD])
				kv.base = keep
				if n-kv.base <= rows {
					continue
				}
			}
			limit = min(s.capacity, 2*kv.window+prefillChunk)
		}
		size := max(n-kv.base, min(limit, max(256, 2*rows)))
		k := make([]float32, size*kvD)
		v := make([]float32, size*kvD)
		copy(k, kv.k[:(s.n-kv.base)*kvD])
		copy(v, kv.v[:(s.n-kv.base)*kvD])
		kv.k, kv.v = k, v
	}
}

// guardWeights runs fn, turning a fault while it reads weights in place
// from a mapped file (truncated under the model) into an error, not the
// end of the process.
func guardWeights(fn func() error) (err error) {
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
	return fn()
}

// reserve checks that n more tokens fit the sequence and makes room for them.
func (s *cpuSequence) reserve(n int) error {
	if s.n+n > s.capacity {
		return &ContextError{Tokens: s.n + n, Context: s.capacity, What: "sequence"}
	}
	s.grow(s.n + n)
	return nil
}

func (s *cpuSequence) forward(ctx context.Context, tokens []uint32, all bool, logits []float32) error {
	return guardWeights(func() error { return s.forwardChunks(ctx, tokens, all, logits) })
}

func (s *cpuSequence) forwardChunks(ctx context.Context, tokens []uint32, all bool, logits []float32) error {
	if s.n+len(tokens) > s.capacity {
		return &ContextError{Tokens: s.n + len(tokens), Context: s.capacity, What: "sequence"}
	}
	s.scratch.ensure(s.b, prefillChunk)
	V := s.b.cfg.VocabSize
	long := s.b.cfg.longRoPE(s.n + len(tokens)) // the whole call's, as transformers chooses
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
		if err := s.step(ctx, chunk, all, out, long); err != nil {
			return err
		}
	}
	return nil
}

// step runs up to prefillChunk tokens of the sequence through every layer.
func (s *cpuSequence) step(ctx context.Context, tokens []uint32, all bool, logits []float32, long bool) error {
	if err := s.reserve(len(tokens)); err != nil {
		return err
	}
	rows := s.scratch.rows[:0]
	for t := range tokens {
		rows = append(rows, cpuRow{s, s.n + t, long})
	}
	s.scratch.rows = rows
	return s.b.pass(ctx, &s.scratch, rows, tokens, all, logits)
}

// pass runs one token a row through every layer, in the rows' sequences'
// caches (reserved for them), and writes the logits of every row when all
// is set, else of the last. Each sequence's length becomes its last row's
// position plus one; on cancellation the lengths are left unchanged, so
// the keys written so far are unused.
func (b *cpuBackend) pass(ctx context.Context, sc *cpuScratch, rows []cpuRow, tokens []uint32, all bool, logits []float32) error {
	b.passes.Add(1)
	c, w := b.cfg, b.w
	T, D := len(tokens), c.HiddenSize
	H, KV, hd := c.NumHeads, c.NumKVHeads, c.HeadDim
	qD, kvD := H*hd, KV*hd
	qkvD := qD + 2*kvD
	I := c.IntermediateSize
	eps := float32(c.RMSNormEps)

	x := sc.x[:T*D]
	for t, id := range tokens {
		if err := w.embed.Row(x[t*D:(t+1)*D], int(id)); err != nil {
			return err // ids were checked against the vocabulary; unreachable
		}
	}
	if c.Gemma {
		scale := float32(math.Sqrt(float64(D)))
		for i := range x {
			x[i] *= scale
		}
	}
	// Angles are inv_freq*position rounded to float32, as transformers
	// computes them, then cos and sin of that angle.
	half, rd := len(b.invFreq), c.rotaryDim()
	angles(sc.cos, sc.sin, rows, b.invFreq, b.invFreqLong, b.ropeScale)
	angles(sc.cosL, sc.sinL, rows, b.invFreqLocal, nil, 1)

	xb, qkv, q, att := sc.xb[:T*D], sc.qkv[:T*qkvD], sc.q[:T*qD], sc.att[:T*qD]
	gu, act := sc.gu[:T*2*I], sc.act[:T*I]
	for l := range w.layers {
		if err := ctx.Err(); err != nil {
			return err
		}
		lw := &w.layers[l]
		for t := range T {
			cpu.RMSNorm(xb[t*D:(t+1)*D], x[t*D:(t+1)*D], lw.attnNorm, eps)
		}
		b.project(qkv, xb, T, &lw.qkv, lw.qkvParts, lw.qkvBias, &sc.parts)
		cosAll, sinAll := sc.cos, sc.sin
		if c.window(l) > 0 {
			cosAll, sinAll = sc.cosL, sc.sinL
		}
		for t, r := range rows {
			row := qkv[t*qkvD : (t+1)*qkvD]
			qt := q[t*qD : (t+1)*qD]
			copy(qt, row[:qD])
			cos, sin := cosAll[t*half:(t+1)*half], sinAll[t*half:(t+1)*half]
			headNorm(qt, hd, lw.qNorm, eps)
			rope(qt, H, hd, rd, cos, sin)
			kv := &r.seq.kv[l]
			at := (r.pos - kv.base) * kvD
			k := kv.k[at : at+kvD]
			copy(k, row[qD:qD+kvD])
			headNorm(k, hd, lw.kNorm, eps)
			rope(k, KV, hd, rd, cos, sin)
			copy(kv.v[at:at+kvD], row[qD+kvD:])
			if b.roundKV {
				roundF16(k)
				roundF16(kv.v[at : at+kvD])
			}
		}
		b.attention(sc, rows, l, q, att)
		b.pool.MatMul(xb, att, T, &lw.o, lw.oBias)
		rowNorm(xb, lw.postAttnNorm, D, eps)
		add(x, xb)
		for t := range T {
			cpu.RMSNorm(xb[t*D:(t+1)*D], x[t*D:(t+1)*D], lw.mlpNorm, eps)
		}
		b.project(gu, xb, T, &lw.gateUp, lw.gateUpParts, lw.gateUpBias, &sc.parts)
		glu := cpu.SwiGLU
		if c.HiddenAct == "gelu_pytorch_tanh" {
			glu = cpu.GeGLU
		}
		for t := range T {
			glu(act[t*I:(t+1)*I], gu[t*2*I:t*2*I+I], gu[t*2*I+I:(t+1)*2*I])
		}
		b.pool.MatMul(xb, act, T, &lw.down, lw.downBias)
		rowNorm(xb, lw.postMLPNorm, D, eps)
		add(x, xb)
	}
	for _, r := range rows {
		r.seq.n = r.pos + 1
	}
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
	out := logits[:(T-first)*c.VocabSize]
	b.pool.MatMul(out, xb[first*D:T*D], T-first, &w.lmHead, nil)
	if cap := float32(c.FinalLogitSoftcap); cap > 0 {
		for i, v := range out {
			out[i] = float32(math.Tanh(float64(v/cap))) * cap
		}
	}
	return nil
}

// angles writes each row's RoPE cosines and sines for inverse
// frequencies inv, or long for a long row when long is not nil (nothing
// when inv is nil): the angle inv*position rounded to float32, as
// transformers computes it, and its cos and sin times scale in float32.
func angles(cos, sin []float32, rows []cpuRow, inv, long []float32, scale float32) {
	half := len(inv)
	for t, r := range rows {
		p := float32(r.pos)
		fs := inv
		if r.long && long != nil {
			fs = long
		}
		for i, f := range fs {
			a := float64(f * p)
			cos[t*half+i] = float32(math.Cos(a)) * scale
			sin[t*half+i] = float32(math.Sin(a)) * scale
		}
	}
}

// rope turns the first rd values of each of the heads of x (hd values
// each) by cos and sin (rd/2 each); the rest pass through (Phi-3's
// partial rotary).
func rope(x []float32, heads, hd, rd int, cos, sin []float32) {
	if rd == hd {
		cpu.RoPE(x, heads, hd, cos, sin)
		return
	}
	for h := range heads {
		cpu.RoPE(x[h*hd:h*hd+rd], 1, rd, cos, sin)
	}
}

// rowNorm RMS-normalises each row of x (n values) in place with w; nil
// w: none.
func rowNorm(x, w []float32, n int, eps float32) {
	if w == nil {
		return
	}
	for t := 0; t < len(x); t += n {
		cpu.RMSNorm(x[t:t+n], x[t:t+n], w, eps)
	}
}

// attention computes causal grouped-query attention for each row's query
// against layer l of its sequence's cache (keys 0 to its position), one
// (row, head) pair per work item.
func (b *cpuBackend) attention(scr *cpuScratch, rows []cpuRow, l int, q, out []float32) {
	c := b.cfg
	H, hd := c.NumHeads, c.HeadDim
	kvD := c.NumKVHeads * hd
	group := H / c.NumKVHeads
	scale := c.attnScale()
	window := c.window(l)
	softcap := float32(c.AttnLogitSoftcap)
	b.pool.ForChunks(len(rows)*H, b.chunks, 1, func(chunk, lo, hi int) {
		for item := lo; item < hi; item++ {
			t, h := item/H, item%H
			pos := rows[t].pos
			first := 0 // causal: keys first..pos
			if window > 0 {
				first = max(0, pos-window+1)
			}
			n := pos - first + 1
			kv := &rows[t].seq.kv[l]
			scores := scr.scores[chunk]
			if cap(scores) < n {
				scores = make([]float32, 0, max(n, 2*cap(scores)))
				scr.scores[chunk] = scores
			}
			qh := q[t*H*hd+h*hd : t*H*hd+(h+1)*hd]
			off := (first-kv.base)*kvD + (h/group)*hd
			sc := scores[:n]
			cpu.Scores(sc, qh, kv.k[off:], kvD, scale)
			if softcap > 0 {
				for j, v := range sc {
					sc[j] = float32(math.Tanh(float64(v/softcap))) * softcap
				}
			}
			cpu.Softmax(sc)
			cpu.WeightedRows(out[t*H*hd+h*hd:t*H*hd+(h+1)*hd], sc, kv.v[off:], kvD)
		}
	})
}

// headNorm RMS-normalises each head of x (hd values) in place with the
// weight w the heads share (Qwen3's q_norm and k_norm); nil w: none.
func headNorm(x []float32, hd int, w []float32, eps float32) {
	if w == nil {
		return
	}
	for h := 0; h < len(x); h += hd {
		cpu.RMSNorm(x[h:h+hd], x[h:h+hd], w, eps)
	}
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
