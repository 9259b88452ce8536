package model

import (
	"context"
	"errors"

	"github.com/hipgo/hipgo/model/internal/gpu"
	"github.com/hipgo/hipgo/sampling"
)

// gpuBackend adapts model/internal/gpu to the seam.
type gpuBackend struct {
	b     *gpu.Backend
	label string
	// closeDev closes a device the model opened itself (WithDeviceMode);
	// nil when the caller owns it (WithDevice).
	closeDev func() error
}

func (g *gpuBackend) name() string { return g.label }

func (g *gpuBackend) newSequence(capacity int) sequence {
	return &gpuSequence{g: g, s: g.b.NewSequence(capacity)}
}

// partialStepError: a step that ran nothing and failed only some items.
type partialStepError struct {
	items []int
	err   error
}

func (e *partialStepError) Error() string      { return e.err.Error() }
func (e *partialStepError) Unwrap() error      { return e.err }
func (e *partialStepError) failedItems() []int { return e.items }

// The GPU backend samples on the device, which has no penalty or logprob
// kernels, and its logits never leave it: Model.CheckOptions refuses
// penalties and logprobs before a sequence joins.
func (g *gpuBackend) samplesOnHost() bool { return false }

func (g *gpuBackend) step(ctx context.Context, items []stepItem, out []uint32) error {
	gi := make([]gpu.Item, len(items))
	for i, it := range items {
		if it.hist != nil { // CheckOptions let it through: never sample without them
			return &UnsupportedOptionError{Option: it.pen.Active()[0], Backend: g.label}
		}
		if it.lp != nil {
			return &UnsupportedOptionError{Option: "logprobs", Backend: g.label}
		}
		if it.gram != nil {
			return &UnsupportedOptionError{Option: "response_format", Backend: g.label}
		}
		gi[i] = gpu.Item{Seq: it.seq.(*gpuSequence).s, Tokens: it.tokens, Params: it.params, Key: it.key}
	}
	err := g.b.Step(ctx, gi, out)
	var cf *gpu.CacheFullError
	if errors.As(err, &cf) {
		return &partialStepError{items: cf.Items, err: err}
	}
	return err
}

func (g *gpuBackend) close() error {
	err := g.b.Close()
	if g.closeDev != nil {
		err = errors.Join(err, g.closeDev())
	}
	return err
}

// Sampler is the GPU backend's device sampler.
func (g *gpuBackend) sampler() *sampling.Sampler { return g.b.Sampler() }

type gpuSequence struct {
	g *gpuBackend
	s *gpu.Sequence
}

func (s *gpuSequence) forward(ctx context.Context, tokens []uint32, all bool, logits []float32) error {
	return s.g.b.Forward(ctx, s.s, tokens, all, logits)
}

func (s *gpuSequence) len() int { return s.s.Len() }
func (s *gpuSequence) release() { s.s.Release() }
