package model

import (
	"context"
	"fmt"
	"slices"

	"github.com/hipgo/hipgo/sampling"
)

// backend is the compute seam: the forward pass and sampling over one kind of
// memory. It owns the weights and creates sequences. Implementations: the CPU
// backend (forward.go, pure Go), the GPU backend (gpuBackend over
// model/internal/gpu) and the MLX backend (backend_mlx.go, over package mlx).
type backend interface {
	// newSequence returns an empty sequence that can hold capacity tokens.
	newSequence(capacity int) sequence
	// step feeds each item's tokens to its sequence (a prompt, or the last
	// sampled token) and samples the next token of each into out[i]. On an
	// error every item of the step failed; the sequences must not be
	// stepped again.
	step(ctx context.Context, items []stepItem, out []uint32) error
	// samplesOnHost reports whether step samples from logits on the host,
	// where it applies its items' penalties (a sampling.Penalties with the
	// sequence's history) and reports their logprobs.
	samplesOnHost() bool
	// name identifies the backend in reports ("cpu", "gpu cuda:0 NVIDIA H200").
	name() string
	// close frees what the backend holds.
	close() error
}

// cpuOnly lists what cfg needs that only the CPU backend computes; the GPU
// and MLX backends refuse such a model (supportedOn) rather than compute
// another model's answer.
func (c *Config) cpuOnly() []string {
	var out []string
	if c.QKNorm {
		out = append(out, "the per-head RMSNorm of q and k before RoPE (q_norm, k_norm)")
	}
	if c.Gemma {
		out = append(out, "Gemma's scaled embeddings, (1+w) RMSNorms and post-attention and post-feedforward norms")
	}
	if c.HiddenAct != "" && c.HiddenAct != "silu" {
		out = append(out, "the GeGLU MLP ("+c.HiddenAct+")")
	}
	if c.QueryPreAttnScalar > 0 && c.QueryPreAttnScalar != float64(c.HeadDim) {
		out = append(out, "an attention scale of query_pre_attn_scalar^-1/2")
	}
	if c.SlidingWindow > 0 && slices.Contains(c.SlidingLayers, true) {
		out = append(out, "sliding-window attention layers")
	}
	if c.AttnLogitSoftcap > 0 {
		out = append(out, "attention logit soft-capping")
	}
	if c.FinalLogitSoftcap > 0 {
		out = append(out, "final logit soft-capping")
	}
	if c.Architecture == Phi3 {
		out = append(out, "Phi-3's fused qkv_proj and gate_up_proj weights")
	}
	if c.rotaryDim() < c.HeadDim {
		out = append(out, "partial rotary embeddings (partial_rotary_factor)")
	}
	if c.RopeScaling != nil && c.RopeScaling.Type == "longrope" {
		out = append(out, "LongRoPE scaling (short and long factors, attention factor)")
	}
	return out
}

// supportedOn is nil when backend ("gpu" or "mlx") can run cfg, else a
// *BackendError naming what it lacks.
func supportedOn(backend string, cfg *Config) error {
	if missing := cfg.cpuOnly(); len(missing) > 0 {
		return &BackendError{Backend: backend, Architecture: cfg.Architecture, Missing: missing}
	}
	return nil
}

// stepItem is one sequence's part of a step.
type stepItem struct {
	seq    sequence
	tokens []uint32
	params sampling.Params
	key    sampling.Key
	// pen and hist change the logits before they are sampled; hist is nil
	// when no penalty is active.
	pen  sampling.Penalties
	hist *sampling.History
	// lp, when set, receives the sampled token's logprob and the top
	// logprobs of the untouched logits.
	lp *TokenLogprobs
	// gram, when set, masks the logits to the tokens that continue the
	// sequence's constrained value and follows the sampled token; it is
	// nil for a draw that will be dropped (a prompt slice).
	gram *seqGrammar
}

// sample draws the item's token from row, its logits: the penalties and
// then the grammar's mask change row in place first; the logprobs are
// those of row as the forward gave it.
func (it *stepItem) sample(out []uint32, row []float32) error {
	raw := row
	if it.lp != nil && (it.hist != nil || it.gram != nil) {
		raw = slices.Clone(row)
	}
	if it.hist != nil {
		it.pen.Apply(row, it.hist)
	}
	if it.gram != nil {
		if err := it.gram.apply(row); err != nil {
			return err
		}
	}
	if err := sampling.Argpartition(out, row, 1, len(row), []sampling.Params{it.params}, it.key); err != nil {
		return fmt.Errorf("model: sampling: %w", err)
	}
	if it.gram != nil {
		if err := it.gram.accept(out[0]); err != nil {
			return fmt.Errorf("model: constrained decoding: %w", err)
		}
	}
	if it.lp != nil {
		it.lp.Logprob, it.lp.Top = sampling.Logprobs(raw, out[0], it.lp.k)
	}
	return nil
}

// sequence is one generation's state on a backend: its KV cache and scratch.
// It is used by one goroutine at a time.
type sequence interface {
	// forward runs tokens at positions len() .. len()+len(tokens)-1 and
	// writes logits to the host: for every token (len(tokens)*vocab values)
	// when all is set, else for the last token only (vocab values). It
	// checks ctx between layers and returns ctx.Err() (the cache then holds
	// no partial tokens).
	forward(ctx context.Context, tokens []uint32, all bool, logits []float32) error
	// len is the number of tokens in the cache.
	len() int
	// release frees the sequence's cache; it is not used afterwards.
	release()
}

// step on the CPU runs the items with a prompt (more than one token) each
// in turn, then the one-token items together (decodeRows: each weight is
// read once for all of them), and samples on the CPU: sampling's
// Argpartition keyed by the item's key (with no filter active it draws
// exactly as Categorical).
func (b *cpuBackend) step(ctx context.Context, items []stepItem, out []uint32) error {
	var one, rest []int
	for i, it := range items {
		if _, ok := it.seq.(*cpuSequence); ok && len(it.tokens) == 1 {
			one = append(one, i)
		} else {
			rest = append(rest, i)
		}
	}
	if len(one) < 2 {
		return hostStep(ctx, b.cfg.VocabSize, items, out)
	}
	for _, i := range rest {
		if err := hostStep(ctx, b.cfg.VocabSize, items[i:i+1], out[i:i+1]); err != nil {
			return err
		}
	}
	for start := 0; start < len(one); start += decodeRows {
		if err := b.decode(ctx, items, one[start:min(len(one), start+decodeRows)], out); err != nil {
			return err
		}
	}
	return nil
}

// decodeRows bounds the sequences one batched decode pass takes, and so its
// scratch memory.
const decodeRows = 64

// decode advances the one-token items idx together: one forward pass with
// a row for each, every sequence's cache reserved first, so that a
// sequence out of context fails the step before any of them moves.
func (b *cpuBackend) decode(ctx context.Context, items []stepItem, idx []int, out []uint32) error {
	V := b.cfg.VocabSize
	rows := make([]cpuRow, len(idx))
	tokens := make([]uint32, len(idx))
	for j, i := range idx {
		s := items[i].seq.(*cpuSequence)
		if err := s.reserve(1); err != nil {
			return err
		}
		rows[j], tokens[j] = cpuRow{s, s.n, b.cfg.longRoPE(s.n + 1)}, items[i].tokens[0]
	}
	sc, _ := b.decodeScratch.Get().(*cpuScratch)
	if sc == nil {
		sc = new(cpuScratch)
	}
	defer b.decodeScratch.Put(sc)
	sc.ensure(b, len(rows))
	if cap(sc.logits) < len(rows)*V {
		sc.logits = make([]float32, len(rows)*V)
	}
	logits := sc.logits[:len(rows)*V]
	if err := guardWeights(func() error { return b.pass(ctx, sc, rows, tokens, true, logits) }); err != nil {
		return err
	}
	for j, i := range idx {
		if err := items[i].sample(out[i:i+1], logits[j*V:(j+1)*V]); err != nil {
			return err
		}
	}
	return nil
}

// hostStep is step for sequences whose logits are on the host.
func hostStep(ctx context.Context, V int, items []stepItem, out []uint32) error {
	logits := make([]float32, V)
	for i, it := range items {
		if err := it.seq.forward(ctx, it.tokens, false, logits); err != nil {
			return err
		}
		if err := it.sample(out[i:i+1], logits); err != nil {
			return err
		}
	}
	return nil
}

func (b *cpuBackend) close() error { return nil }

// The CPU backend samples on the host.
func (b *cpuBackend) samplesOnHost() bool { return true }

func (s *cpuSequence) release() { s.kv = nil }
