package model

import (
	"errors"
	"fmt"

	"github.com/hipgo/hipgo/sampling"
)

// samplingParams maps opts onto the sampling package's parameters and
// validates them there, so generation follows the product's one sampling
// contract (docs/sampling.md): greedy at temperature 0, else filters decided
// on the untempered row and a draw weighted by the tempered row. Each draw
// is keyed by KeyFromSeed(seed, step), so a seed fixes the whole sequence.
// The CPU backend draws with Argpartition (exactly Categorical when no filter
// is active); the GPU backend hands the logits on the device to
// sampling.Sampler.
func samplingParams(opts GenerateOptions) (sampling.Params, error) {
	p := sampling.Params{Temperature: opts.Temperature, TopK: opts.TopK, TopP: opts.TopP, MinP: opts.MinP}
	if p.Temperature == 0 && p.TopP == 0 {
		p.TopP = 1 // the zero GenerateOptions: greedy, where no filter applies
	}
	if err := p.Validate(); err != nil {
		var pe *sampling.ParameterError
		if opts.TopP == 0 && errors.As(err, &pe) && pe.Name == "top_p" {
			return p, fmt.Errorf("model: %w: %w (TopP 0 is not off: off is 1; DefaultGenerateOptions has 0.95)", ErrOptions, err)
		}
		return p, fmt.Errorf("model: %w: %w", ErrOptions, err)
	}
	return p, nil
}
