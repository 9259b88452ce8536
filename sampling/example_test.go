package sampling_test

import (
	"errors"
	"fmt"
	"math"

	"github.com/hipgo/hipgo/sampling"
)

// A generation loop draws one token per step with the production CPU
// sampler, one key per step. With top_k = 1 and distinct logits the kept set
// is the argmax alone, so the draw is certain.
func ExampleArgpartition() {
	logits := []float32{0.1, 2.5, -1, 0.7} // B = 1, V = 4
	p := sampling.DefaultParams()
	p.TopK = 1
	tokens := make([]uint32, 1)
	for step := uint64(0); step < 3; step++ {
		key := sampling.KeyFromSeed(42, step)
		if err := sampling.Argpartition(tokens, logits, 1, 4, []sampling.Params{p}, key); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(tokens[0])
	}
	// Output:
	// 1
	// 1
	// 1
}

// Two rows: the first has a single finite logit, so every sampler returns
// it; the second has none, so it is invalid: token 0, and an error naming
// the row, with every output still written.
func ExampleGumbelMaxCPU() {
	inf := float32(math.Inf(-1))
	logits := []float32{
		inf, inf, 3, inf, // row 0
		inf, float32(math.NaN()), inf, inf, // row 1
	}
	tokens := make([]uint32, 2)
	err := sampling.GumbelMaxCPU(tokens, logits, 2, 4, 0.8, sampling.Key{1, 2})
	fmt.Println(tokens, errors.Is(err, sampling.ErrInvalidLogits))
	fmt.Println(err)
	// Output:
	// [2 0] true
	// sampling.GumbelMaxCPU: row 1 has no finite or +inf logit (all -inf or NaN); token 0 was written
}

// The rejection sampler with min_p = 0.5: only tokens at least half as
// probable as the best are kept; here only the first token qualifies (the
// second is e^-1 ≈ 0.37 as probable).
func ExampleRejectionCPU() {
	logits := []float32{3, 2, 0, -1}
	p := sampling.DefaultParams()
	p.MinP = 0.5
	out := sampling.RejectionResult{Tokens: make([]uint32, 1), OK: make([]uint32, 1), Rounds: make([]uint32, 1)}
	if err := sampling.RejectionCPU(out, logits, 1, 4, []sampling.Params{p}, sampling.Key{7, 7}, sampling.MaxRounds); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Tokens[0], sampling.Status(out.OK[0]))
	// Output:
	// 0 ok
}

// On a backend with no kernel port the router sends every call to a CPU
// fallback, and says why.
func ExampleRouter_Decide() {
	r := sampling.NewRouter("sim", sampling.DefaultPolicy("sim"))
	d, _ := r.Decide([]sampling.Params{sampling.DefaultParams()}, 1, 32000)
	fmt.Println(d.Route, d.Reason)
	p := sampling.DefaultParams()
	p.TopP = 0.9
	d, _ = r.Decide([]sampling.Params{p}, 1, 32000)
	fmt.Println(d.Route, d.Reason)
	fmt.Println(sampling.GumbelMaxPorts().Supported("sim"), sampling.RejectionPorts().Supported(sampling.BackendCUDA))
	// Output:
	// categorical-fallback gumbel-no-port
	// argpartition-fallback rejection-no-port
	// false true
}
