package model

import (
	"fmt"

	"github.com/hipgo/hipgo/sampling"
)

// tokenSampler draws the next token from one row of logits. step numbers the
// draws of a generation, so a seed fixes the whole sequence.
type tokenSampler interface {
	sample(logits []float32, step uint64) (uint32, error)
}

// newSampler maps opts onto the sampling package's parameters and validates
// them there, so generation follows the product's one sampling contract
// (docs/sampling.md): greedy at temperature 0, else filters decided on the
// untempered row and a draw weighted by the tempered row.
func newSampler(opts GenerateOptions, _ int) (tokenSampler, error) {
	p := sampling.Params{Temperature: opts.Temperature, TopK: opts.TopK, TopP: opts.TopP, MinP: opts.MinP}
	if p.TopP == 0 {
		p.TopP = 1 // GenerateOptions' zero value means off; sampling spells off as 1
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("model: %w: %w", ErrOptions, err)
	}
	return &cpuSampler{params: []sampling.Params{p}, seed: opts.Seed}, nil
}

// cpuSampler is sampling's CPU path: Argpartition applies the filters (and
// with none active draws exactly as Categorical), keyed per step by
// KeyFromSeed. Logits stay on the CPU, so there is no kernel to route to.
type cpuSampler struct {
	params []sampling.Params
	seed   uint64
	out    [1]uint32
}

func (s *cpuSampler) sample(logits []float32, step uint64) (uint32, error) {
	key := sampling.KeyFromSeed(s.seed, step)
	if err := sampling.Argpartition(s.out[:], logits, 1, len(logits), s.params, key); err != nil {
		return 0, fmt.Errorf("model: sampling step %d: %w", step, err)
	}
	return s.out[0], nil
}
