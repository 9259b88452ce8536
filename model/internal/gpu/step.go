package gpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/sampling"
)

// Item is one sequence's part of a Step: the tokens to feed (its prompt when
// it just joined, else the token sampled last) and how to sample its next one.
type Item struct {
	Seq    *Sequence
	Tokens []uint32
	Params sampling.Params
	Key    sampling.Key
}

// CacheFullError: the pool could not hold the new tokens of the listed items
// (indices into the step's items). Nothing ran.
type CacheFullError struct {
	Items      []int
	Need, Free int // blocks
	PoolBlocks int
}

func (e *CacheFullError) Error() string {
	return fmt.Sprintf("gpu: KV cache full: items %v need %d more blocks of %d tokens, %d of %d free", e.Items, e.Need, BlockSize, e.Free, e.PoolBlocks)
}

func (e *CacheFullError) Unwrap() error { return ErrCacheFull }

// scratch is device memory reused by every call, grown on demand while the
// stream is idle.
type scratch struct {
	x, xb, qkv, att, gu, act *runtime.Buffer    // one chunk's activations
	part                     *runtime.Buffer    // one unfused projection part's output (Layer.QKVParts)
	deq                      *runtime.Buffer    // a quantized layer matrix decoded to float16 (dequantized), or a slice of the LM head's
	attPart                  *runtime.Buffer    // attention_split_f32's shares of the key ranges (launch.go attention)
	headPart                 *runtime.Buffer    // the logits of one such slice (headDequantized)
	xs                       *runtime.Buffer    // x split for matmul_tcx_W, or its image for matmul_wg_W (launch.go)
	silu                     *runtime.Buffer    // down's image, which gate|up writes itself (siluImage)
	wgPart, wgCount          *runtime.Buffer    // matmul_wg_W's partial sums and its zeroed group counts
	last, logits             *runtime.Buffer    // the rows that reach the LM head
	meta                     [2]*runtime.Buffer // the call's u32 metadata (plan.metaBuf picks one; lookahead.go)
	tokens                   *runtime.Buffer
	rowLogits, rowTokens     []*runtime.Buffer // per-row copies for rows sampled alone
}

// ensure makes *buf hold at least n bytes. Only called before a call's first
// launch, when no queued work reads the old buffer.
func (b *Backend) ensure(buf **runtime.Buffer, n int) error {
	n = max(n, 4)
	if *buf != nil && (*buf).Size() >= n {
		return nil
	}
	// Graphs captured so far bake in the old buffer's address.
	if err := b.graphs.drop(); err != nil {
		return err
	}
	if *buf != nil {
		old := *buf
		for i, o := range b.owned {
			if o == old {
				b.owned = append(b.owned[:i], b.owned[i+1:]...)
				break
			}
		}
		*buf = nil
		if err := old.Free(); err != nil {
			return err
		}
	}
	nb, err := b.alloc(n + n/4) // headroom: steps grow a little at a time
	if err != nil {
		return fmt.Errorf("gpu: scratch of %d bytes: %w", n, err)
	}
	*buf = nb
	return nil
}

// plan is one call's token layout on the device.
type plan struct {
	T, rows   int  // tokens fed; rows reaching the LM head
	maxBlocks int  // block-table stride: padded (tableStride) so it rarely changes
	decode    bool // one token per sequence, in one chunk: the graph-replayed shape
	seqs      int  // sequences in the call
	meta      []uint32
	metaBuf   int      // which of scratch.meta holds meta
	chained   bool     // a lookahead: the embedding reads the tokens the last step sampled (scratch.tokens), not meta
	arm       trialArm // how a decode step of a graph trial ran (graphTrial)
	replayed  bool     // the forward was a graph's replay
	// offsets into meta, in u32 elements
	tok, pos, seq, slot, tables, gather, ident int
	chunks                                     []chunk
}

type chunk struct {
	t0, t1 int // token range
	g0, g1 int // gather range (into meta[gather:]), also the output rows
	seqs   int // sequences with tokens in it (each one run of tokens)
}

// rowsInPlace: the LM head's rows are the call's only chunk's tokens, in
// order (a decode step, or every row of a one-chunk call), so the final
// norm reads them from x where they are, without a row gather.
func (p *plan) rowsInPlace() bool { return len(p.chunks) == 1 && p.rows == p.T }

// tiledAttention: the chunk's attention goes through attention_prefill_f32
// (launch.go attention): at least attpMinTokens tokens, averaging at least
// half a query tile (attpRows/2) per sequence. A batched decode step (one
// token per sequence) would leave every tile's rows to run one after
// another, and keeps attention_f32.
func (c chunk) tiledAttention() bool {
	n := c.t1 - c.t0
	return n >= attpMinTokens && 2*n >= c.seqs*attpRows
}

// usable: the backend is open and its device not lost.
func (b *Backend) usable() error {
	if b.closed {
		return fmt.Errorf("gpu: backend closed: %w", runtime.ErrClosed)
	}
	if err := b.dev.Lost(); err != nil {
		return &runtime.DeviceLostError{Device: b.dev.String(), Cause: asFault(err)}
	}
	return nil
}

func (b *Backend) prepare(ctx context.Context, seqs []*Sequence, toks [][]uint32, all bool) (*plan, error) {
	if err := b.usable(); err != nil {
		return nil, err
	}
	if b.ahead != nil {
		// This call is not the step the lookahead ran ahead of: its forward
		// may still be running, and is discarded once it has (lookahead.go).
		b.ahead = nil
		b.dirty = true
	}
	if b.dirty {
		// A call that returned early (ctx, an error) or a discarded lookahead
		// may have left work on the stream; nothing below may overwrite
		// memory it reads.
		if err := b.s.Synchronize(ctx); err != nil {
			return nil, err
		}
		b.dirty = false
	}
	p := &plan{}
	need := make([]int, len(seqs))
	total := 0
	for i, s := range seqs {
		switch {
		case s == nil || s.b != b:
			return nil, fmt.Errorf("gpu: item %d: sequence of another backend: %w", i, runtime.ErrInvalidArgument)
		case s.released:
			return nil, fmt.Errorf("gpu: item %d: sequence used after Release: %w", i, runtime.ErrClosed)
		case len(toks[i]) == 0:
			return nil, fmt.Errorf("gpu: item %d: no tokens: %w", i, runtime.ErrInvalidArgument)
		case s.n+len(toks[i]) > s.capacity:
			return nil, fmt.Errorf("gpu: item %d: %d tokens exceed the sequence's capacity %d: %w", i, s.n+len(toks[i]), s.capacity, runtime.ErrInvalidArgument)
		}
		for _, id := range toks[i] {
			if int(id) >= b.cfg.Vocab {
				return nil, fmt.Errorf("gpu: item %d: token %d with vocab %d: %w", i, id, b.cfg.Vocab, runtime.ErrInvalidArgument)
			}
		}
		need[i] = ceilDiv(s.n+len(toks[i]), BlockSize) - len(s.blocks)
		total += need[i]
	}
	if total > len(b.free) {
		e := &CacheFullError{Need: total, Free: len(b.free), PoolBlocks: b.numBlocks}
		for i, n := range need {
			if n > 0 {
				e.Items = append(e.Items, i)
			}
		}
		return nil, e
	}
	capBlocks := 0
	for i, s := range seqs {
		for range need[i] {
			s.blocks = append(s.blocks, b.free[len(b.free)-1])
			b.free = b.free[:len(b.free)-1]
		}
		p.maxBlocks = max(p.maxBlocks, len(s.blocks))
		capBlocks = max(capBlocks, ceilDiv(s.capacity, BlockSize))
	}
	p.maxBlocks = tableStride(p.maxBlocks, capBlocks)
	b.layout(p, seqs, toks, all, 0)
	return p, nil
}

// layout fills p's token count, metadata and chunks for feeding toks[i] to
// seqs[i] from position seqs[i].n + skip on (skip is 1 for a lookahead,
// whose sequences have not yet advanced past the tokens of the step before
// it). p is fresh but for maxBlocks, and every position has its block.
func (b *Backend) layout(p *plan, seqs []*Sequence, toks [][]uint32, all bool, skip int) {
	for i := range seqs {
		p.T += len(toks[i])
	}
	if all {
		p.rows = p.T
	} else {
		p.rows = len(seqs)
	}
	T, nseq := p.T, len(seqs)
	p.tok, p.pos, p.seq, p.slot = 0, T, 2*T, 3*T
	p.tables = 4 * T
	p.gather = p.tables + nseq*p.maxBlocks
	p.ident = p.gather + p.rows
	m := make([]uint32, p.ident+p.rows)
	t := 0
	for i, s := range seqs {
		copy(m[p.tables+i*p.maxBlocks:], s.blocks)
		for j, id := range toks[i] {
			pos := s.n + skip + j
			m[p.tok+t], m[p.pos+t], m[p.seq+t] = id, uint32(pos), uint32(i)
			m[p.slot+t] = s.blocks[pos/BlockSize]*BlockSize + uint32(pos%BlockSize)
			t++
		}
	}
	// Rows for the LM head: every token, or each sequence's last, in token
	// order; chunks gather them as local indices.
	var rows []int
	t = 0
	for i := range seqs {
		if all {
			for j := range toks[i] {
				rows = append(rows, t+j)
			}
		} else {
			rows = append(rows, t+len(toks[i])-1)
		}
		t += len(toks[i])
	}
	r := 0
	for t0 := 0; t0 < T; t0 += b.stepTokens {
		c := chunk{t0: t0, t1: min(T, t0+b.stepTokens), g0: r}
		for t := c.t0; t < c.t1; t++ {
			if t == c.t0 || m[p.seq+t] != m[p.seq+t-1] {
				c.seqs++
			}
		}
		for r < len(rows) && rows[r] < c.t1 {
			m[p.gather+r] = uint32(rows[r] - t0)
			r++
		}
		c.g1 = r
		p.chunks = append(p.chunks, c)
	}
	for i := range p.rows {
		m[p.ident+i] = uint32(i)
	}
	p.meta = m
	p.decode = p.T == nseq && len(p.chunks) == 1
	p.seqs = nseq
}

// f16Chunk and f16Head: the chunk's quantized layer products, and the LM
// head's, run over float16 copies of their matrices (Backend.f16Quant).
func (p *plan) f16Chunk(c chunk) bool { return c.t1-c.t0 >= quantDeqRows || c.seqs >= quantDeqSeqs }
func (p *plan) f16Head() bool         { return p.rows >= quantDeqRows || p.seqs >= quantDeqSeqs }

// f16Any: some product of the call runs over float16 copies.
func (p *plan) f16Any() bool {
	return p.f16Head() || slices.ContainsFunc(p.chunks, p.f16Chunk)
}

// tableStride pads the widest block table to a power of two (at most the
// widest capacity), so the metadata layout, which a decode graph bakes in,
// changes only when sequences double in length. The padding is zero: the
// attention kernel reads only the entries below each query's position.
func tableStride(widest, capBlocks int) int {
	n := 1
	for n < widest {
		n *= 2
	}
	return max(widest, min(n, capBlocks))
}

// asFault recovers the *FaultError behind Device.Lost.
func asFault(err error) *runtime.FaultError {
	var f *runtime.FaultError
	if errors.As(err, &f) {
		return f
	}
	return &runtime.FaultError{Err: err}
}

// run enqueues the forward pass of plan p; the LM head's rows land in
// b.sc.logits ([p.rows, vocab] f32). On error the caller marks the stream
// dirty.
func (b *Backend) run(ctx context.Context, p *plan) error {
	c := b.cfg
	D, I, V := c.Hidden, c.Intermediate, c.Vocab
	qD, qkvD := c.qDim(), c.qkvDim()
	C := min(p.T, b.stepTokens)
	for _, e := range []struct {
		buf **runtime.Buffer
		n   int
	}{
		{&b.sc.x, C * D}, {&b.sc.xb, C * D}, {&b.sc.qkv, C * qkvD}, {&b.sc.att, C * qD},
		{&b.sc.gu, C * 2 * I}, {&b.sc.act, C * I}, {&b.sc.last, p.rows * D}, {&b.sc.logits, p.rows * V},
		{&b.sc.meta[0], len(p.meta)}, {&b.sc.meta[1], len(p.meta)}, {&b.sc.tokens, p.rows},
	} {
		if err := b.ensure(e.buf, 4*e.n); err != nil {
			return err
		}
	}
	for _, ch := range p.chunks {
		n := ch.t1 - ch.t0
		if name, grid := b.attentionKernel(p.maxBlocks, n, ch.tiledAttention()); name == "attention_split_f32" {
			if err := b.ensure(&b.sc.attPart, splitScratchBytes(n, c.Heads, c.HeadDim, grid/(n*c.KVHeads))); err != nil {
				return err
			}
		}
	}
	if b.unfused() {
		if err := b.ensure(&b.sc.part, 4*C*max(qD, I)); err != nil {
			return err
		}
	}
	if n := b.w.quantLayerElems(c); p.f16Any() && b.tcCapable(F16) && n > 0 {
		if err := b.ensure(&b.sc.deq, 2*n); err != nil { // dequantized (launch.go)
			return err
		}
	}
	if n := b.headSliceRows(); p.f16Head() && b.tcCapable(F16) && n > 0 {
		if err := b.ensure(&b.sc.deq, 2*n*D); err != nil { // headDequantized (launch.go)
			return err
		}
		if err := b.ensure(&b.sc.headPart, 4*p.rows*n); err != nil {
			return err
		}
	}
	if R := max(C, p.rows); b.tc && R >= tcRows { // the most rows a matmul of this call can have
		in := max(D, qD, I)
		if err := b.ensure(&b.sc.xs, max(tcxSplitBytes(min(R, tcxMaxRows-1), in), wgImageBytes(min(R, wgMaxRows), in))); err != nil {
			return err
		}
		if b.wg && R >= wgMinRows {
			if err := b.ensureWG(min(R, wgMaxRows)); err != nil {
				return err
			}
			if err := b.ensure(&b.sc.silu, wgImageBytes(min(R, wgMaxRows), I)); err != nil {
				return err
			}
		}
	}
	return b.enqueue(ctx, p)
}

// enqueue uploads p's metadata and enqueues its forward (a graph replay
// for a decode step); the scratch is sized for p.
func (b *Backend) enqueue(ctx context.Context, p *plan) error {
	if err := runtime.Upload(b.sc.meta[p.metaBuf], p.meta); err != nil {
		return err
	}
	if p.decode {
		if replayed, err := b.replay(ctx, p); replayed {
			return err
		}
	}
	return b.forward(ctx, p)
}

// forward enqueues plan p's launches; b.sc holds what they use.
func (b *Backend) forward(ctx context.Context, p *plan) error {
	c := b.cfg
	D, I, V := c.Hidden, c.Intermediate, c.Vocab
	qD := c.qDim()
	meta := func(off int) runtime.DevicePtr { return b.sc.meta[p.metaBuf].At(4 * off) }
	x, xb, qkv, att, gu, act := b.sc.x.Ptr(), b.sc.xb.Ptr(), b.sc.qkv.Ptr(), b.sc.att.Ptr(), b.sc.gu.Ptr(), b.sc.act.Ptr()
	scale := float32(1 / math.Sqrt(float64(c.HeadDim)))
	var left partials // a product's partials that the next norm adds into x (residualProduct)
	for _, ch := range p.chunks {
		n := ch.t1 - ch.t0
		b.f16Quant = p.f16Chunk(ch)
		tok, pos, seq, slot := meta(p.tok+ch.t0), meta(p.pos+ch.t0), meta(p.seq+ch.t0), meta(p.slot+ch.t0)
		if p.chained {
			tok = b.sc.tokens.Ptr() // one chunk, one token a sequence, in the sampler's row order
		}
		if err := b.embed(x, tok, n); err != nil {
			return err
		}
		// A decode step's rope and kv store run in its attention, which
		// may also add q|k|v's partials (qkvLeaves).
		ropeIn := b.ropeInAttention(p, ch)
		for l := range b.w.layers {
			if err := ctx.Err(); err != nil {
				return err
			}
			w := &b.w.layers[l]
			// The last layer's down folds only where the final norm reads
			// x itself (copy_rows would read it first).
			foldDown := l+1 < len(b.w.layers) || p.rowsInPlace()
			qkvKS := b.qkvLeaves(n, w, ropeIn)
			var qkvSplit, guSplit uint32 // the images the norms write for the projections after them
			switch {
			case qkvKS > 0:
				qkvSplit = b.splitCode(routeWG, w.qkv.dtype)
			case w.qkvParts == nil:
				qkvSplit = b.normSplit(n, D, c.qkvDim(), w.qkv)
			}
			var qkvLeft partials // q|k|v's partials, for rope_attention_warps_f32
			if w.gateUpParts == nil {
				guSplit = b.normSplit(n, D, 2*I, w.gateUp)
			}
			var oImg runtime.DevicePtr // o's image, which the attention writes
			oSplit := b.oImage(n, w, ropeIn)
			if oSplit != 0 {
				oImg = b.sc.xs.Ptr()
			}
			var siluImg, siluFrom runtime.DevicePtr // down's image from gate|up, or down splits silu(gate) * up from gu
			switch {
			case b.siluImage(n, w, foldDown):
				siluImg = b.sc.silu.Ptr()
			case b.siluInSplit(n, w.down, foldDown):
				siluFrom = gu
			}
			// A batch-1 step's norms run in the products after them
			// (normMatvec), gate|up's with silu_mul_f32.
			normQKV := left.n == 0 && qkvSplit == 0 && qkvKS == 0 && w.qkvParts == nil && b.normMatvec(n, D, w.qkv, w.attnNorm)
			var normGU bool // decided once o has run (its partials)
			steps := []func() error{
				func() error {
					if normQKV {
						return nil
					}
					return b.rmsnorm(xb, x, w.attnNorm, n, left, qkvSplit)
				},
				func() (err error) {
					if normQKV {
						return b.normMatvecLaunch(qkv, x, w.qkv, ptrOf(w.qkvBias), w.attnNorm, D, c.qkvDim(), false)
					}
					if qkvKS > 0 {
						qkvLeft, err = b.leaveParts(xb, 0, w.qkv, ptrOf(w.qkvBias), n, D, c.qkvDim(), qkvKS, b.normImage(qkvSplit != 0))
						return err
					}
					return b.projection(qkv, xb, w.qkv, w.qkvParts, c.qkvRows(), w.qkvBias, n, D, qkvSplit != 0)
				},
				func() error {
					if ropeIn {
						return nil
					}
					return b.positions(l, qkv, pos, slot, n)
				},
				func() error {
					if ropeIn {
						return b.ropeAttention(l, att, qkv, seq, pos, slot, meta(p.tables), p.maxBlocks, n, scale, qkvLeft, oSplit)
					}
					return b.attention(l, att, qkv, seq, pos, meta(p.tables), p.maxBlocks, n, ch.tiledAttention(), scale)
				},
				func() (err error) {
					left, err = b.residualProduct(x, att, w.o, w.oBias, n, qD, D, true, 0, oImg)
					return err
				},
				func() error {
					normGU = left.n == 0 && guSplit == 0 && siluImg == 0 && siluFrom == 0 && w.gateUpParts == nil &&
						b.normMatvec(n, D, w.gateUp, w.mlpNorm)
					if normGU {
						return nil
					}
					return b.rmsnorm(xb, x, w.mlpNorm, n, left, guSplit)
				},
				func() error {
					if normGU {
						return b.normMatvecLaunch(act, x, w.gateUp, ptrOf(w.gateUpBias), w.mlpNorm, D, I, true)
					}
					if siluImg != 0 {
						return b.gateUpSilu(siluImg, xb, w, n, guSplit != 0)
					}
					return b.projection(gu, xb, w.gateUp, w.gateUpParts, c.gateUpRows(), w.gateUpBias, n, D, guSplit != 0)
				},
				func() error {
					if siluFrom != 0 || siluImg != 0 || normGU {
						return nil
					}
					return b.siluMul(act, gu, n)
				},
				func() (err error) {
					left, err = b.residualProduct(x, act, w.down, w.downBias, n, I, D, foldDown, siluFrom, siluImg)
					return err
				},
			}
			for _, f := range steps {
				if err := f(); err != nil {
					return err
				}
			}
			if inject := b.inject; inject != nil {
				b.inject = nil
				if err := inject(b.s); err != nil {
					return err
				}
			}
		}
		if ch.g1 > ch.g0 && !p.rowsInPlace() {
			if err := b.copyRows(b.sc.last.At(4*D*ch.g0), x, meta(p.gather+ch.g0), ch.g1-ch.g0, D); err != nil {
				return err
			}
		}
	}
	last := b.sc.last.Ptr()
	normIn := last
	if p.rowsInPlace() {
		normIn = x // the final norm reads x itself: what copy_rows would have copied
	}
	b.f16Quant = p.f16Head()
	split := b.normSplit(p.rows, D, V, b.w.lmHead)
	if err := b.rmsnorm(last, normIn, b.w.norm, p.rows, left, split); err != nil {
		return err
	}
	return b.matmul(b.sc.logits.Ptr(), last, b.w.lmHead, nil, p.rows, D, V, false, split != 0)
}

// unfused: some layer keeps q|k|v or gate|up as parts.
func (b *Backend) unfused() bool {
	for i := range b.w.layers {
		if b.w.layers[i].qkvParts != nil || b.w.layers[i].gateUpParts != nil {
			return true
		}
	}
	return false
}

// finish waits for the call's work.
func (b *Backend) finish(ctx context.Context) error {
	ev, err := b.s.Record()
	if err != nil {
		return err
	}
	return ev.Wait(ctx)
}

// advance records the fed tokens once the call has succeeded.
func advance(seqs []*Sequence, toks [][]uint32) {
	for i, s := range seqs {
		s.n += len(toks[i])
	}
}

// Forward feeds tokens to seq and copies logits back: every token's row
// (len(tokens)*vocab values) when all is set, else the last token's. It is
// for callers that need logits on the host (model.Session, tests); Step
// keeps them on the device.
func (b *Backend) Forward(ctx context.Context, seq *Sequence, tokens []uint32, all bool, logits []float32) (err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	seqs, toks := []*Sequence{seq}, [][]uint32{tokens}
	p, err := b.prepare(ctx, seqs, toks, all)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			b.dirty = true
		}
	}()
	if want := p.rows * b.cfg.Vocab; len(logits) < want {
		return fmt.Errorf("gpu: logits hold %d values, want %d: %w", len(logits), want, runtime.ErrInvalidArgument)
	}
	if err := b.run(ctx, p); err != nil {
		return err
	}
	if err := b.finish(ctx); err != nil {
		return err
	}
	if err := runtime.Download(b.sc.logits, logits[:p.rows*b.cfg.Vocab]); err != nil {
		return err
	}
	advance(seqs, toks)
	return nil
}

// Step feeds each item's tokens to its sequence, samples each sequence's
// next token on the device and writes it to out[i]. On an error no sequence
// advanced (every item of the step failed), except a *CacheFullError, which
// ran nothing. Rows that all decode greedily are sampled in one call; a
// sampled row is drawn alone with its own key, so its tokens do not depend
// on the rows beside it.
func (b *Backend) Step(ctx context.Context, items []Item, out []uint32) (err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(items) == 0 {
		return nil
	}
	if len(out) < len(items) {
		return fmt.Errorf("gpu: %d outputs for %d items: %w", len(out), len(items), runtime.ErrInvalidArgument)
	}
	seqs, toks := make([]*Sequence, len(items)), make([][]uint32, len(items))
	greedy := true
	for i, it := range items {
		seqs[i], toks[i] = it.Seq, it.Tokens
		if err := it.Params.Validate(); err != nil {
			return fmt.Errorf("gpu: item %d: %w", i, err)
		}
		greedy = greedy && it.Params.Greedy()
	}
	var p *plan
	if la := b.ahead; la != nil && la.continues(items) && b.usable() == nil {
		b.ahead = nil // its forward is enqueued: sample its logits
		b.aheadStats.Used++
		p = la.p
	} else if p, err = b.prepare(ctx, seqs, toks, false); err != nil { // discards b.ahead
		return err
	}
	defer func() {
		if err != nil {
			b.dirty = true
			b.ahead = nil
		}
	}()
	if !p.chained {
		if err := b.run(ctx, p); err != nil {
			return err
		}
	}
	N, V := len(items), b.cfg.Vocab
	// One call samples every row when the rows are greedy (the key does not
	// matter) or there is one row (its own key, row 0 either way).
	together := greedy || N == 1
	if together {
		params := make([]sampling.Params, N)
		for i := range params {
			params[i] = items[i].Params
		}
		logits := sampling.Logits{Buf: b.sc.logits, B: N, V: V}
		if _, err := b.sampler.Sample(ctx, b.s, logits, params, items[0].Key, b.sc.tokens); err != nil {
			return fmt.Errorf("gpu: sample: %w", err)
		}
	} else {
		for len(b.sc.rowLogits) < N {
			lb, err := b.alloc(4 * V)
			if err != nil {
				return err
			}
			tb, err := b.alloc(4)
			if err != nil {
				return err
			}
			b.sc.rowLogits, b.sc.rowTokens = append(b.sc.rowLogits, lb), append(b.sc.rowTokens, tb)
		}
		for i, it := range items {
			if err := b.copyRows(b.sc.rowLogits[i].Ptr(), b.sc.logits.Ptr(), b.sc.meta[p.metaBuf].At(4*(p.ident+i)), 1, V); err != nil {
				return err
			}
			logits := sampling.Logits{Buf: b.sc.rowLogits[i], B: 1, V: V}
			if _, err := b.sampler.Sample(ctx, b.s, logits, []sampling.Params{it.Params}, it.Key, b.sc.rowTokens[i]); err != nil {
				return fmt.Errorf("gpu: sample item %d: %w", i, err)
			}
		}
	}
	ev, err := b.s.Record()
	if err != nil {
		return err
	}
	if together {
		b.lookAhead(ctx, p, seqs)
	}
	if err := ev.Wait(ctx); err != nil {
		return err
	}
	if together {
		if err := runtime.Download(b.sc.tokens, out[:N]); err != nil {
			return err
		}
	} else {
		for i := range N {
			if err := runtime.Download(b.sc.rowTokens[i], out[i:i+1]); err != nil {
				return err
			}
		}
	}
	for i, id := range out[:N] {
		if int(id) >= V {
			return fmt.Errorf("gpu: sampler returned token %d for item %d with vocab %d", id, i, V)
		}
	}
	advance(seqs, toks)
	b.graphs.stepDone(p)
	if b.ahead != nil {
		b.ahead.tokens = slices.Clone(out[:N])
	}
	return nil
}
