package sampling

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// sampler is one of the package's samplers behind a common shape.
type sampler struct {
	name string
	run  func(tokens []uint32, logits []float32, B, V int, p Params, key Key) error
}

var (
	samplerGumbel = sampler{"GumbelMaxCPU", func(tok []uint32, l []float32, B, V int, p Params, key Key) error {
		return GumbelMaxCPU(tok, l, B, V, p.Temperature, key)
	}}
	samplerCategorical = sampler{"Categorical", func(tok []uint32, l []float32, B, V int, p Params, key Key) error {
		return Categorical(tok, l, B, V, []float32{p.Temperature}, key)
	}}
	samplerRejection = sampler{"RejectionCPU", func(tok []uint32, l []float32, B, V int, p Params, key Key) error {
		return RejectionCPU(RejectionResult{tok, make([]uint32, B), make([]uint32, B)}, l, B, V, []Params{p}, key, MaxRounds)
	}}
	samplerArgpartition = sampler{"Argpartition", func(tok []uint32, l []float32, B, V int, p Params, key Key) error {
		return Argpartition(tok, l, B, V, []Params{p}, key)
	}}
)

// drawCounts draws n tokens from row with params p: batches of identical
// rows (the row index is part of the Philox counter) under a fresh key per
// batch, so every draw uses independent random words.
func drawCounts(t *testing.T, s sampler, row []float32, p Params, n int, seed uint64) []int {
	t.Helper()
	V := len(row)
	B := max(4096, (1<<16+V-1)/V)
	logits := make([]float32, B*V)
	for r := 0; r < B; r++ {
		copy(logits[r*V:], row)
	}
	tokens := make([]uint32, B)
	counts := make([]int, V)
	for done, step := 0, uint64(0); done < n; step++ {
		b := min(B, n-done)
		require.NoError(t, s.run(tokens[:b], logits[:b*V], b, V, p, KeyFromSeed(seed, step)))
		for _, tok := range tokens[:b] {
			if int(tok) >= V { // require per draw (a stack walk each) was half the test's time
				require.Less(t, int(tok), V)
			}
			counts[tok]++
		}
		done += b
	}
	return counts
}

type distCase struct {
	name string
	row  []float32
	p    Params
}

func ramp(V int, scale float32) []float32 {
	r := make([]float32, V)
	for i := range r {
		x := (float32(i) - float32(V)/2) / float32(V) * 8
		r[i] = scale * (3 - x*x/4)
	}
	return r
}

func withP(t float32, k int, tp, mp float32) Params {
	return Params{Temperature: t, TopK: k, TopP: tp, MinP: mp}
}

// Shapes without filters: every sampler applies.
var unfilteredCases = []distCase{
	{"sharp", []float32{4, 0, -1, 1, 0.5, -2, 2.5, -3}, withP(1, 0, 1, 0)},
	{"flat-32", ramp(32, 0.1), withP(1, 0, 1, 0)},
	{"temp-0.6", ramp(16, 1), withP(0.6, 0, 1, 0)},
	{"temp-2.5", ramp(16, 1), withP(2.5, 0, 1, 0)},
	{"with-neg-inf-and-nan", []float32{1, float32(math.Inf(-1)), 0.5, float32(math.NaN()), -0.5, 2}, withP(1.3, 0, 1, 0)},
}

// Shapes with filters, including ties exactly at the top-k and top-p
// boundaries (tie-inclusive membership keeps the whole tied group) and a
// temperature that would change the kept set if filters saw the tempered row.
var filteredCases = []distCase{
	// Two tokens tie for 2nd place: top-2 keeps 0, 1 and 2.
	{"top-k-tie", []float32{2, 1, 1, 0, -1, 0.5, -3, 1.5}, withP(1, 3, 1, 0)},
	// P ~ [.534 .197 .197 .072]: the mass strictly above token 2 is .534 <
	// .6, so both tied tokens stay; a cumulative-sum cut would drop token 2.
	{"top-p-tie", []float32{1, 0, 0, -1}, withP(1, 0, 0.6, 0)},
	{"min-p", ramp(16, 1), withP(1, 0, 1, 0.3)},
	// On the untempered row top-p 0.8 keeps 7 tokens and top-p 0.7 keeps 5;
	// on the row tempered at T = 0.4 the first would keep 5, at T = 1.8 the
	// second would keep 7.
	{"top-p-cold", ramp(12, 1), withP(0.4, 0, 0.8, 0)},
	{"top-p-hot", ramp(12, 1), withP(1.8, 0, 0.7, 0)},
	{"all-three", ramp(32, 1), withP(0.7, 9, 0.85, 0.05)},
	{"top-k-top-p-flat", ramp(48, 0.2), withP(1.2, 30, 0.7, 0)},
}

// chiSquareThreshold: a correct sampler fails a case with probability 1e-6.
const chiSquareThreshold = 1e-6

// Each sampler's draws match the exact target distribution (float64,
// computed from the definitions in docs/sampling.md) by a chi-square test at
// p > 1e-6, and no token outside the kept set is ever drawn.
func TestDistributionsMatchExactTarget(t *testing.T) {
	type job struct {
		s sampler
		c distCase
	}
	var jobs []job
	for _, c := range unfilteredCases {
		for _, s := range []sampler{samplerGumbel, samplerCategorical} {
			jobs = append(jobs, job{s, c})
		}
	}
	// The filtered samplers without a filter: Argpartition is token-identical
	// to Categorical then (TestArgpartitionWithoutFiltersIsCategorical); the
	// rejection kernel's no-filter path is a different code path.
	for _, c := range unfilteredCases[3:] {
		jobs = append(jobs, job{samplerRejection, c})
	}
	for _, c := range filteredCases {
		for _, s := range []sampler{samplerRejection, samplerArgpartition} {
			jobs = append(jobs, job{s, c})
		}
	}
	for i, j := range jobs {
		t.Run(j.s.name+"/"+j.c.name, func(t *testing.T) {
			want := target(j.c.row, j.c.p)
			counts := drawCounts(t, j.s, j.c.row, j.c.p, drawsPerCase, uint64(1000+i))
			p, stat, df := chiSquareP(t, counts, want)
			t.Logf("chi2 = %.2f, df = %d, p = %.4g (%d draws)", stat, df, p, drawsPerCase)
			require.Greaterf(t, p, chiSquareThreshold, "counts %v, want %v", counts, want)
		})
	}
}

// keepOnly renormalises q over the listed tokens.
func keepOnly(q []float64, toks ...int) []float64 {
	out := make([]float64, len(q))
	sum := 0.0
	for _, i := range toks {
		out[i] = q[i]
		sum += q[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

// temperedMembership is the common mistake: filters applied to the tempered
// row.
func temperedMembership(row []float32, p Params) []float64 {
	scaled := make([]float32, len(row))
	for i, l := range row {
		scaled[i] = l / p.Temperature
	}
	q := p
	q.Temperature = 1
	return target(scaled, q)
}

// The test has power at the draw count it uses: the same test rejects the
// distributions of the mistakes the suite guards against (p < 1e-6, or a
// draw the mistaken rule forbids).
func TestChiSquarePower(t *testing.T) {
	tie := []float32{2, 1, 1, 0, -1, 0.5, -3, 1.5}
	cases := []struct {
		name  string
		s     sampler
		row   []float32
		p     Params
		wrong func(row []float32, p Params) []float64
	}{
		{"temperature ignored", samplerGumbel, ramp(16, 1), withP(0.8, 0, 1, 0),
			func(r []float32, p Params) []float64 { return target(r, withP(1, 0, 1, 0)) }},
		{"temperature ignored (rejection)", samplerRejection, ramp(16, 1), withP(0.8, 0, 0.95, 0),
			func(r []float32, p Params) []float64 { return target(r, withP(1, 0, 0.95, 0)) }},
		{"filters on the tempered row", samplerArgpartition, ramp(12, 1), withP(1.8, 0, 0.7, 0), temperedMembership},
		{"filters on the tempered row (rejection)", samplerRejection, ramp(12, 1), withP(0.4, 0, 0.8, 0), temperedMembership},
		{"top-p cut by cumulative sum drops the tie", samplerRejection, []float32{1, 0, 0, -1}, withP(1, 0, 0.6, 0),
			func(r []float32, p Params) []float64 { return keepOnly(target(r, withP(1, 0, 1, 0)), 0, 1) }},
		{"top-k tie excluded", samplerArgpartition, tie, withP(1, 3, 1, 0),
			func(r []float32, p Params) []float64 { return keepOnly(target(r, withP(1, 0, 1, 0)), 0, 7, 1) }},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			counts := drawCounts(t, c.s, c.row, c.p, drawsPerCase, uint64(5000+i))
			wrong := c.wrong(c.row, c.p)
			for tok, q := range wrong {
				if q == 0 && counts[tok] > 0 {
					t.Logf("token %d, forbidden by the mistaken rule, drawn %d times", tok, counts[tok])
					return
				}
			}
			p, stat, df := chiSquareP(t, counts, wrong)
			t.Logf("against the mistaken target: chi2 = %.1f, df = %d, p = %.3g", stat, df, p)
			require.Less(t, p, chiSquareThreshold)
		})
	}
}
