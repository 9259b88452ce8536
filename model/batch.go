package model

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hipgo/hipgo/runtime"
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
// A prefill budget (SetPrefillBudget) feeds long prompts in slices, so
// that the sequences already decoding, and a short prompt that joins behind
// long ones, are not held up by a step that prefills them whole.
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
	budget int // prompt tokens a step feeds; 0: no bound
	last   StepStats
}

type batchSeq struct {
	id        SeqID
	seq       sequence
	pending   []uint32 // the prompt tokens not yet fed, or the last sampled token
	prefilled bool     // its whole prompt was fed: it decodes
	params    sampling.Params
	pen       sampling.Penalties
	hist      *sampling.History // nil when no penalty is active
	gram      *seqGrammar       // nil without a grammar
	logprobs  int               // -1: none; else the top logprobs to list
	seed      uint64
	step      uint64 // draws so far; keys the next draw with the seed
}

// StepStats is what a Step fed.
type StepStats struct {
	Seqs   int // sequences that ran
	Prompt int // prompt tokens fed
	Tokens int // tokens returned
}

// BatchToken is one sequence's token from a Step.
type BatchToken struct {
	Seq SeqID
	ID  uint32
	// Logprobs are the token's when the sequence asked for them
	// (GenerateOptions.Logprobs), else nil.
	Logprobs *TokenLogprobs
	// Full: with this token the sequence fills the context, so it cannot
	// step again; Remove it.
	Full bool
}

// BatchError is a Step that failed for some sequences: they are removed
// from the batch (their error is Err, e.g. the runtime's *FaultError,
// *DeviceLostError or ctx.Err()). The batch's other sequences did not run
// in that step and are as they were; on the GPU a device failure fails every
// sequence of the step.
//
// Retryable is a step that failed without touching any sequence, on a
// device that is still usable: the runtime rejected a launch (a
// runtime.ErrLaunchRejected that is no device fault) and no sequence's
// cache advanced. Then nothing is removed (Seqs is empty) and the next Step
// feeds every sequence the same tokens and draws with the same keys: its
// tokens are those the failed step would have given. A sticky device fault
// is never retryable.
type BatchError struct {
	Seqs      []SeqID
	Err       error
	Retryable bool
}

func (e *BatchError) Error() string {
	if e.Retryable {
		return fmt.Sprintf("model: batch step failed before any sequence advanced (retryable): %v", e.Err)
	}
	return fmt.Sprintf("model: batch step failed for sequences %v: %v", e.Seqs, e.Err)
}

func (e *BatchError) Unwrap() error { return e.Err }

// ErrUnknownSequence: Remove of an id that is not in the batch.
var ErrUnknownSequence = errors.New("model: no such sequence in the batch")

// NewBatch returns an empty batch over the model.
func (m *Model) NewBatch() *Batch { return &Batch{m: m} }

// Add queues a sequence with prompt, to be prefilled by the next Step (the
// next Steps with a prefill budget), and samples it with opts' Temperature,
// TopK, TopP, MinP, Seed and penalties, and reports the logprobs it asks
// for (its MaxTokens and Stop are the
// caller's to apply). The prompt and options are validated as Generate
// validates them.
func (b *Batch) Add(prompt []uint32, opts GenerateOptions) (SeqID, error) {
	if b.closed {
		return 0, fmt.Errorf("model: batch closed: %w", ErrOptions)
	}
	params, err := b.m.validate(prompt, opts)
	if err != nil {
		return 0, err
	}
	b.next++
	s := &batchSeq{id: b.next, seq: b.m.be.newSequence(b.m.ctxLen), pending: slices.Clone(prompt), params: params, seed: opts.Seed, logprobs: -1}
	if opts.Logprobs {
		s.logprobs = opts.TopLogprobs
	}
	if pen := opts.penalties(); len(pen.Active()) > 0 {
		s.pen, s.hist = pen, sampling.NewHistory(prompt)
	}
	if opts.Grammar != nil {
		s.gram = b.m.newSeqGrammar(opts.Grammar)
	}
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

// SetPrefillBudget bounds the prompt tokens one Step feeds, over every
// sequence still prefilling (tokens <= 0: no bound, the default; every new
// prompt is fed whole by the step after its Add). A step then feeds every
// decoding sequence its token and prompt slices up to the budget: the
// sequences with the fewest prompt tokens left first (join order among
// equals), so a short prompt that joins behind long ones gets its first
// token in the next step instead of after all of them. A sequence whose
// prompt is not yet all fed returns no token from the step; its tokens are
// the same as with no budget.
func (b *Batch) SetPrefillBudget(tokens int) { b.budget = max(tokens, 0) }

// LastStep reports what the last Step fed.
func (b *Batch) LastStep() StepStats { return b.last }

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
// order the sequences were added; with a prefill budget, a sequence whose
// prompt is not yet all fed runs a slice of it and returns no token. With no
// sequence it returns nothing. An error is a *BatchError naming the
// sequences it failed (removed from the batch), or a retryable one that
// removed nothing; ctx ends a step with an error wrapping ctx.Err().
func (b *Batch) Step(ctx context.Context) ([]BatchToken, error) {
	b.last = StepStats{}
	if len(b.seqs) == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, b.fail(b.seqs, err)
	}
	run, feed := b.plan()
	items := make([]stepItem, len(run))
	lens := make([]int, len(run))
	for i, s := range run {
		items[i] = stepItem{seq: s.seq, tokens: s.pending[:feed[i]], params: s.params, key: sampling.KeyFromSeed(s.seed, s.step), pen: s.pen, hist: s.hist}
		if s.logprobs >= 0 {
			items[i].lp = &TokenLogprobs{k: s.logprobs}
		}
		if s.prefilled || feed[i] == len(s.pending) { // a draw that is kept
			items[i].gram = s.gram
		}
		lens[i] = s.seq.len()
	}
	out := make([]uint32, len(items))
	if err := b.m.be.step(ctx, items, out); err != nil {
		if b.retryable(err, run, lens) {
			return nil, &BatchError{Err: err, Retryable: true}
		}
		var cf interface{ failedItems() []int }
		if errors.As(err, &cf) {
			failed := make([]*batchSeq, 0, len(cf.failedItems()))
			for _, i := range cf.failedItems() {
				failed = append(failed, run[i])
			}
			return nil, b.fail(failed, err)
		}
		return nil, b.fail(run, err)
	}
	res := make([]BatchToken, 0, len(out))
	b.last.Seqs = len(run)
	for i, s := range run {
		if !s.prefilled {
			b.last.Prompt += feed[i]
			if feed[i] < len(s.pending) {
				s.pending = s.pending[feed[i]:] // the draw of a slice is not the prompt's: dropped
				continue
			}
			s.prefilled = true
		}
		s.pending = append(s.pending[:0], out[i])
		s.step++
		if s.hist != nil {
			s.hist.Add(out[i])
		}
		res = append(res, BatchToken{Seq: s.id, ID: out[i], Logprobs: items[i].lp, Full: s.seq.len()+1 >= b.m.ctxLen})
	}
	b.last.Tokens = len(res)
	return res, nil
}

// plan picks the sequences a step runs (in join order) and how many of
// each one's pending tokens it feeds.
func (b *Batch) plan() ([]*batchSeq, []int) {
	feed := map[*batchSeq]int{}
	var prefill []*batchSeq
	for _, s := range b.seqs {
		if b.budget > 0 && !s.prefilled {
			prefill = append(prefill, s)
		} else {
			feed[s] = len(s.pending)
		}
	}
	slices.SortStableFunc(prefill, func(x, y *batchSeq) int { return len(x.pending) - len(y.pending) })
	left := b.budget
	for _, s := range prefill {
		if left == 0 {
			break
		}
		feed[s] = min(len(s.pending), left)
		left -= feed[s]
	}
	run := make([]*batchSeq, 0, len(feed))
	n := make([]int, 0, len(feed))
	for _, s := range b.seqs {
		if k, ok := feed[s]; ok {
			run, n = append(run, s), append(n, k)
		}
	}
	return run, n
}

// retryable: the step failed on a launch the runtime rejected, the device
// is usable, and no sequence that ran advanced (its cache holds what it
// held: entries written past its length are written again before they are
// read). The draws are keyed by (seed, draws so far), which only a
// successful step advances.
func (b *Batch) retryable(err error, run []*batchSeq, lens []int) bool {
	if !errors.Is(err, runtime.ErrLaunchRejected) || errors.Is(err, runtime.ErrDeviceFault) || errors.Is(err, runtime.ErrDeviceLost) || b.m.DeviceLost() != nil {
		return false
	}
	for i, s := range run {
		if s.seq.len() != lens[i] {
			return false
		}
	}
	return true
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
