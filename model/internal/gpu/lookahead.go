package gpu

import (
	"context"
	"slices"
)

// A lookahead is the next decode step's forward, enqueued by Step before it
// waits for its own tokens. Step's host work (waiting, copying the tokens
// back, the caller's loop, laying out and uploading the next step's
// metadata, launching its graph) otherwise leaves the GPU idle between
// steps, a share of each step that matters most where the steps are short.
//
// The next step is guessed: the same sequences in the same order, each fed
// the token this step samples for it, which is what a decode loop
// (Generate, Batch.Step, the scheduler) does until a sequence stops or
// joins. Its embedding reads those tokens where the sampler wrote them
// (scratch.tokens), so nothing waits for the host. When the next Step is
// that step (continues), it samples the lookahead's logits at once and
// looks ahead again; any other call discards it (prepare): the call waits
// for the lookahead's forward to finish and then runs its own. A discarded
// lookahead wrote nothing a sequence reads: its KV entries lie past each
// sequence's length (and are written again when that position is fed), and
// its logits and activations are scratch.
//
// A lookahead runs only where it needs nothing the host must decide: a
// decode step whose tokens the sampler wrote in item order (sampled
// together), every sequence with room for one more token in its capacity
// and in the blocks it holds (no block is taken for a guess), and the
// metadata laid out in the other of scratch.meta, so that the step in
// flight keeps reading its own. A fault in a lookahead's forward fails the
// call after it: the next Step when it continues, else the wait of the
// discarding call.
type lookahead struct {
	p      *plan
	seqs   []*Sequence
	n      []int    // each sequence's length when the lookahead's token is fed
	tokens []uint32 // the tokens it feeds: those the step before it returned
}

// LookaheadStats counts the lookaheads a backend enqueued, and how many of
// them the next call used.
type LookaheadStats struct {
	Enqueued, Used int
}

// LookaheadStats reports the lookaheads so far.
func (b *Backend) LookaheadStats() LookaheadStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.aheadStats
}

// continues: items are the step the lookahead guessed.
func (la *lookahead) continues(items []Item) bool {
	if la.tokens == nil || len(items) != len(la.seqs) {
		return false
	}
	for i, it := range items {
		s := it.Seq
		if s != la.seqs[i] || s.released || s.n != la.n[i] || len(it.Tokens) != 1 || it.Tokens[0] != la.tokens[i] {
			return false
		}
	}
	return true
}

// lookAhead enqueues the forward of the step after p (a decode step of
// seqs, sampled together into scratch.tokens, not yet advanced) as
// b.ahead, where it can (see lookahead). A failure to enqueue it leaves no
// lookahead and the stream dirty; p's own work, already enqueued, stands.
func (b *Backend) lookAhead(ctx context.Context, p *plan, seqs []*Sequence) {
	if !b.lookahead || !p.decode || p.rows != len(seqs) {
		return
	}
	toks := make([][]uint32, len(seqs))
	n := make([]int, len(seqs))
	for i, s := range seqs {
		n[i] = s.n + 1 // where the lookahead's token goes
		if n[i]+1 > s.capacity || n[i]/BlockSize >= len(s.blocks) {
			return
		}
		toks[i] = []uint32{0} // read from scratch.tokens instead
	}
	q := &plan{maxBlocks: p.maxBlocks, metaBuf: 1 - p.metaBuf, chained: true}
	b.layout(q, seqs, toks, false, 1)
	if m := b.sc.meta[q.metaBuf]; m == nil || m.Size() < 4*len(q.meta) {
		return // run sized both buffers for p's layout, which q's equals
	}
	if err := b.enqueue(ctx, q); err != nil {
		b.dirty = true
		return
	}
	b.ahead = &lookahead{p: q, seqs: slices.Clone(seqs), n: n}
	b.aheadStats.Enqueued++
}
