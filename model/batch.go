package model

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hipgo/hipgo/sampling"
)

// SeqID names a sequence in a Batch.
type SeqID int

// Batch steps many sequences together, for continuous batching: each Step
// feeds every sequence its pending tokens (the whole prompt for a sequence
// added since the last step, else its last sampled token) and samples one
// new token for each. On the GPU that is one pass through the layers with
// [N, hidden] matrix products and a block-table KV cache; on the CPU the
// sequences run in turn. Sequences join (Add) and leave (Remove) between
// steps. A sequence's tokens are the same whatever runs beside it: the
// tokens Generate would give it alone with the same options.
//
// The Batch decides token ids only: end of sequence, MaxTokens and stop
// strings are the caller's to apply (IsEOS, Remove); Generate does that for
// one sequence. A Batch is used by one goroutine at a time; several batches
// (and Generate calls) may share a Model.
type Batch struct {
	m      *Model
	next   SeqID
	seqs   []*batchSeq // in join order
	closed bool
}

type batchSeq struct {
	id      SeqID
	seq     sequence
	pending []uint32
	params  sampling.Params
	seed    uint64
	step    uint64 // draws so far; keys the next draw with the seed
}

// BatchToken is one sequence's token from a Step.
type BatchToken struct {
	Seq SeqID
	ID  uint32
	// Full: with this token the sequence fills the context, so it cannot
	// step again; Remove it.
	Full bool
}

// BatchError is a Step that failed for some sequences: they are removed
// from the batch (their error is Err, e.g. the runtime's *FaultError,
// *DeviceLostError or ctx.Err()). The batch's other sequences did not run
// in that step and are as they were; on the GPU a device failure fails every
// sequence of the step.
type BatchError struct {
	Seqs []SeqID
	Err  error
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("model: batch step failed for sequences %v: %v", e.Seqs, e.Err)
}

func (e *BatchError) Unwrap() error { return e.Err }

// ErrUnknownSequence: Remove of an id that is not in the batch.
var ErrUnknownSequence = errors.New("model: no such sequence in the batch")

// NewBatch returns an empty batch over the model.
func (m *Model) NewBatch() *Batch { return &Batch{m: m} }

// Add queues a sequence with prompt, to be prefilled by the next Step, and
// samples it with opts' Temperature, TopK, TopP, MinP and Seed (its
// MaxTokens and Stop are the caller's to apply). The prompt and options are
// validated as Generate validates them.
func (b *Batch) Add(prompt []uint32, opts GenerateOptions) (SeqID, error) {
	if b.closed {
		return 0, fmt.Errorf("model: batch closed: %w", ErrOptions)
	}
	params, err := b.m.validate(prompt, opts)
	if err != nil {
		return 0, err
	}
	b.next++
	s := &batchSeq{id: b.next, seq: b.m.be.newSequence(b.m.ctxLen), pending: slices.Clone(prompt), params: params, seed: opts.Seed}
	b.seqs = append(b.seqs, s)
	return s.id, nil
}

// Remove drops a sequence and frees its KV cache.
func (b *Batch) Remove(id SeqID) error {
	for i, s := range b.seqs {
		if s.id == id {
			s.seq.release()
			b.seqs = slices.Delete(b.seqs, i, i+1)
			return nil
		}
	}
	return fmt.Errorf("%w: %d", ErrUnknownSequence, id)
}

// Len is the number of sequences in the batch.
func (b *Batch) Len() int { return len(b.seqs) }

// Close removes every sequence.
func (b *Batch) Close() {
	for _, s := range b.seqs {
		s.seq.release()
	}
	b.seqs, b.closed = nil, true
}

// Step advances every sequence by one sampled token and returns them in the
// order the sequences were added. With no sequence it returns nothing. An
// error is a *BatchError naming the sequences it failed (removed from the
// batch); ctx ends a step with an error wrapping ctx.Err().
func (b *Batch) Step(ctx context.Context) ([]BatchToken, error) {
	if len(b.seqs) == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, b.fail(b.seqs, err)
	}
	items := make([]stepItem, len(b.seqs))
	for i, s := range b.seqs {
		items[i] = stepItem{seq: s.seq, tokens: s.pending, params: s.params, key: sampling.KeyFromSeed(s.seed, s.step)}
	}
	out := make([]uint32, len(items))
	if err := b.m.be.step(ctx, items, out); err != nil {
		var cf interface{ failedItems() []int }
		if errors.As(err, &cf) {
			failed := make([]*batchSeq, 0, len(cf.failedItems()))
			for _, i := range cf.failedItems() {
				failed = append(failed, b.seqs[i])
			}
			return nil, b.fail(failed, err)
		}
		return nil, b.fail(b.seqs, err)
	}
	res := make([]BatchToken, len(out))
	for i, s := range b.seqs {
		s.pending = append(s.pending[:0], out[i])
		s.step++
		res[i] = BatchToken{Seq: s.id, ID: out[i], Full: s.seq.len()+1 >= b.m.ctxLen}
	}
	return res, nil
}

// fail removes the failed sequences and reports them.
func (b *Batch) fail(failed []*batchSeq, err error) error {
	e := &BatchError{Err: err}
	for _, s := range failed {
		e.Seqs = append(e.Seqs, s.id)
	}
	for _, id := range e.Seqs { // failed may alias b.seqs, which Remove edits
		_ = b.Remove(id)
	}
	return e
}
