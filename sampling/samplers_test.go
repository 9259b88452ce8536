package sampling

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	negInf = float32(math.Inf(-1))
	posInf = float32(math.Inf(1))
	nan    = float32(math.NaN())
)

// runAll runs every sampler on logits [B, V] with broadcast params and
// returns the tokens and error of each.
func runAll(t *testing.T, logits []float32, B, V int, p Params, key Key) map[string]struct {
	tok []uint32
	err error
} {
	t.Helper()
	out := map[string]struct {
		tok []uint32
		err error
	}{}
	for _, s := range []sampler{samplerGumbel, samplerCategorical, samplerRejection, samplerArgpartition} {
		if (s.name == "GumbelMaxCPU" || s.name == "Categorical") && p.Filtered(V) {
			continue
		}
		tok := make([]uint32, B)
		err := s.run(tok, logits, B, V, p, key)
		out[s.name] = struct {
			tok []uint32
			err error
		}{tok, err}
	}
	return out
}

// Rows with no finite or +inf logit: every sampler writes token 0 there,
// still writes every other row, and returns an *InvalidLogitsError naming
// exactly those rows (errors.Is ErrInvalidLogits). The rejection sampler
// marks them StatusInvalidRow.
func TestInvalidRowsAreReportedAndStillWritten(t *testing.T) {
	const V = 5
	rows := [][]float32{
		{negInf, negInf, negInf, negInf, negInf},
		{negInf, negInf, 0.5, negInf, negInf}, // one finite token: always token 2
		{nan, nan, nan, nan, nan},
		{nan, negInf, nan, negInf, nan},
		{negInf, negInf, negInf, negInf, -1e30}, // finite: always token 4
	}
	logits := make([]float32, 0, len(rows)*V)
	for _, r := range rows {
		logits = append(logits, r...)
	}
	for _, p := range []Params{withP(1, 0, 1, 0), withP(0.7, 2, 0.9, 0.1), withP(0, 0, 1, 0)} {
		for name, res := range runAll(t, logits, len(rows), V, p, Key{3, 4}) {
			require.ErrorIsf(t, res.err, ErrInvalidLogits, "%s %+v", name, p)
			var ie *InvalidLogitsError
			require.True(t, errors.As(res.err, &ie))
			require.Equal(t, []int{0, 2, 3}, ie.Rows, name)
			require.Contains(t, res.err.Error(), "rows 0, 2, 3")
			require.Equal(t, []uint32{0, 2, 0, 0, 4}, res.tok, "%s %+v", name, p)
		}
	}
	ok, rounds := make([]uint32, len(rows)), make([]uint32, len(rows))
	tok := make([]uint32, len(rows))
	err := RejectionCPU(RejectionResult{tok, ok, rounds}, logits, len(rows), V, []Params{DefaultParams()}, Key{}, MaxRounds)
	require.ErrorIs(t, err, ErrInvalidLogits)
	require.Equal(t, []uint32{2, 1, 2, 2, 1}, ok)
	require.Equal(t, uint32(StatusInvalidRow), ok[0])
	require.Contains(t, (&InvalidLogitsError{Entry: "x", Rows: []int{7}}).Error(), "row 7 has")
}

// A row with +inf logits samples its lowest +inf index, whatever the
// temperature and filters, in every sampler.
func TestPlusInfPicksLowestInfIndex(t *testing.T) {
	row := []float32{1, 5, nan, posInf, 2, posInf, negInf}
	for _, p := range []Params{withP(1, 0, 1, 0), withP(3, 0, 1, 0), withP(0, 0, 1, 0), withP(0.5, 2, 0.5, 0.5)} {
		for seed := uint64(0); seed < 20; seed++ {
			for name, res := range runAll(t, row, 1, len(row), p, KeyFromSeed(seed, 0)) {
				require.NoError(t, res.err, name)
				require.Equalf(t, uint32(3), res.tok[0], "%s %+v", name, p)
			}
		}
	}
}

// Temperature 0 is argmax with the lowest index on ties, in every sampler,
// with or without filters; so is a temperature whose reciprocal overflows.
func TestTemperatureZeroIsArgmaxLowestIndex(t *testing.T) {
	row := []float32{1, 3, nan, 3, -2, 3}
	for _, temp := range []float32{0, 1e-45} {
		for _, p := range []Params{withP(temp, 0, 1, 0), withP(temp, 2, 0.3, 0.2)} {
			for name, res := range runAll(t, row, 1, len(row), p, Key{9, 9}) {
				require.NoError(t, res.err, name)
				require.Equalf(t, uint32(1), res.tok[0], "%s %+v", name, p)
			}
		}
	}
	require.True(t, withP(1e-45, 0, 1, 0).Greedy())
	require.False(t, withP(1e-30, 0, 1, 0).Greedy())
}

// top_k >= V has no effect: the same tokens as top_k = 0, for the same key.
func TestTopKAtLeastVIsNoFilter(t *testing.T) {
	const B, V = 64, 10
	logits := randomRows(rand.New(rand.NewPCG(5, 6)), B, V, 0)
	for _, s := range []sampler{samplerRejection, samplerArgpartition} {
		base := make([]uint32, B)
		require.NoError(t, s.run(base, logits, B, V, withP(0.9, 0, 1, 0), Key{1, 1}))
		for _, k := range []int{V, V + 7} {
			got := make([]uint32, B)
			require.NoError(t, s.run(got, logits, B, V, withP(0.9, k, 1, 0), Key{1, 1}))
			require.Equal(t, base, got, "%s k=%d", s.name, k)
		}
	}
}

// With every filter off, Argpartition draws exactly Categorical's token
// (same uniform, same weights, same order).
func TestArgpartitionWithoutFiltersIsCategorical(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, V := range []int{1, 2, 7, 100, 1000} {
		const B = 50
		logits := randomRows(rng, B, V, 0.1)
		for _, temp := range []float32{0.3, 1, 2.2} {
			a, c := make([]uint32, B), make([]uint32, B)
			key := Key{rng.Uint32(), rng.Uint32()}
			require.NoError(t, Argpartition(a, logits, B, V, []Params{withP(temp, 0, 1, 0)}, key))
			require.NoError(t, Categorical(c, logits, B, V, []float32{temp}, key))
			require.Equal(t, c, a, "V=%d T=%v", V, temp)
		}
	}
}

// Same key, same tokens; a row's token depends on its own logits, its row
// index and the key, not on the rest of the batch or on B.
func TestDrawsDependOnKeyAndRowOnly(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const V = 300
	big := randomRows(rng, 8, V, 0)
	for _, s := range []sampler{samplerGumbel, samplerCategorical, samplerRejection, samplerArgpartition} {
		p := withP(1.1, 0, 0.9, 0)
		if s.name == "GumbelMaxCPU" || s.name == "Categorical" {
			p = withP(1.1, 0, 1, 0)
		}
		a, b, c := make([]uint32, 8), make([]uint32, 8), make([]uint32, 5)
		require.NoError(t, s.run(a, big, 8, V, p, Key{1, 2}))
		require.NoError(t, s.run(b, big, 8, V, p, Key{1, 2}))
		require.NoError(t, s.run(c, big[:5*V], 5, V, p, Key{1, 2}))
		require.Equal(t, a, b, s.name)
		require.Equal(t, a[:5], c, s.name)
		diff := 0
		for seed := uint64(0); seed < 20; seed++ {
			d := make([]uint32, 8)
			require.NoError(t, s.run(d, big, 8, V, p, KeyFromSeed(seed, 1)))
			for i := range d {
				if d[i] != a[i] {
					diff++
				}
			}
		}
		require.Greater(t, diff, 20, "%s: other keys should give other tokens", s.name)
	}
}

// At the largest uniform (u = 1 - 2^-24, the word whose w>>9 is 0x7fffff),
// the Gumbel noise is finite, so a token 100 logits below another cannot
// win. A uniform that rounds to 1.0 there (the 24-bit mapping does) makes
// that token's score +inf and fails this test.
func TestLogits100ApartAtTheLargestUniform(t *testing.T) {
	// Found by searching k = 0, 1, ... for a word with w>>9 == 0x7fffff in
	// philox(Key{k, 0x5eed}, {0, 0, 0, 0}); re-checked here.
	key := Key{0x23f5c9, 0x5eed}
	w := Philox4x32([4]uint32{0, counterGumbel, 0, 0}, key)
	q := 3
	require.Equal(t, uint32(0x7fffff), w[q]>>9)
	require.Equal(t, float32(1-0x1p-24), Uniform(w[q]))
	row := []float32{0, 0, 0, 0}
	row[(q+1)%4] = 100
	tok := make([]uint32, 1)
	require.NoError(t, GumbelMaxCPU(tok, row, 1, 4, 1, key))
	require.Equal(t, uint32((q+1)%4), tok[0])
	// And over many draws of a wide row, the +100 token always wins.
	const B, V = 256, 2048
	logits := make([]float32, B*V)
	for r := 0; r < B; r++ {
		logits[r*V+r%V] = 100
	}
	toks := make([]uint32, B)
	for step := uint64(0); step < 4; step++ {
		require.NoError(t, GumbelMaxCPU(toks, logits, B, V, 1, KeyFromSeed(11, step)))
		for r, tk := range toks {
			require.Equal(t, uint32(r%V), tk)
		}
	}
}

// randomRows: logits on a 1/64 grid in [-12, 12] (so max - logit is exact in
// float32 and ties are common), with a fraction of -inf.
func randomRows(rng *rand.Rand, B, V int, negInfFrac float64) []float32 {
	l := make([]float32, B*V)
	for i := range l {
		if rng.Float64() < negInfFrac {
			l[i] = negInf
			continue
		}
		l[i] = float32(math.Round(rng.NormFloat64()*3*64)) / 64
	}
	for r := 0; r < B; r++ { // at least one finite logit per row
		l[r*V+rng.IntN(V)] = float32(rng.IntN(64)) / 64
	}
	return l
}

// kept returns, per token, 1 if the one-distribution rule keeps it, 0 if it
// drops it, and -1 if float32 rounding could decide either way (mass or
// probability within 1e-5 relative of the threshold). Computed from the
// definitions in float64.
func kept(row []float32, p Params) []int {
	V := len(row)
	M := math.Inf(-1)
	for _, x := range row {
		M = math.Max(M, float64(clean(x)))
	}
	S := 0.0
	for _, x := range row {
		S += math.Exp(float64(clean(x)) - M)
	}
	out := make([]int, V)
	for i, xi := range row {
		li := float64(clean(xi))
		if math.IsInf(li, -1) {
			continue
		}
		more, above := 0, 0.0
		for _, xj := range row {
			if lj := float64(clean(xj)); lj > li {
				more++
				above += math.Exp(lj - M)
			}
		}
		pi := math.Exp(li - M)
		v := 1
		if p.TopKActive(V) && more >= p.TopK {
			v = 0
		}
		if p.TopPActive() {
			lim := float64(p.TopP) * S
			if math.Abs(above-lim) <= 1e-5*S {
				v = min(v, -1)
			} else if above >= lim {
				v = 0
			}
		}
		if p.MinPActive() {
			if math.Abs(pi-float64(p.MinP)) <= 1e-5 {
				v = min(v, -1)
			} else if pi < float64(p.MinP) {
				v = 0
			}
		}
		if v == -1 && out[i] == 0 {
			out[i] = -1
		} else {
			out[i] = v
		}
	}
	return out
}

// Membership: over thousands of random rows and parameter sets (ties
// included), the filtered samplers never draw a token the rule drops; only
// tokens within float32 rounding of a threshold may go either way, and the
// test counts them.
func TestFilteredSamplersNeverDrawOutsideTheKeptSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	rows := 3000
	if raceEnabled {
		rows = 800
	}
	ambiguous := 0
	for n := 0; n < rows; n++ {
		V := 1 + rng.IntN(200)
		row := randomRows(rng, 1, V, 0.2*rng.Float64())
		p := DefaultParams()
		p.Temperature = []float32{0.3, 0.8, 1, 1.7}[rng.IntN(4)]
		if rng.IntN(2) == 0 {
			p.TopK = 1 + rng.IntN(V+2)
		}
		if rng.IntN(2) == 0 {
			p.TopP = 0.05 + 0.9*rng.Float32()
		}
		if rng.IntN(2) == 0 {
			p.MinP = 0.5 * rng.Float32() * rng.Float32()
		}
		want := kept(row, p)
		key := Key{rng.Uint32(), rng.Uint32()}
		for _, s := range []sampler{samplerRejection, samplerArgpartition} {
			tok := make([]uint32, 1)
			require.NoError(t, s.run(tok, row, 1, V, p, key))
			switch want[tok[0]] {
			case 0:
				t.Fatalf("%s drew token %d outside the kept set: row %v params %+v kept %v", s.name, tok[0], row, p, want)
			case -1:
				ambiguous++
			}
		}
	}
	t.Logf("%d rows x 2 samplers: %d draws within float32 rounding of a threshold", rows, ambiguous)
}

// The rejection sampler converges within 31 rounds with the cap at 32 (the
// bound in docs/sampling.md), and a row that runs out of rounds returns its
// argmax with StatusUnconverged and rounds == cap.
func TestRejectionRoundsAndCap(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	const B, V = 400, 700
	logits := randomRows(rng, B, V, 0.05)
	params := make([]Params, B)
	for r := range params {
		params[r] = withP(0.5+rng.Float32(), rng.IntN(50), 0.3+0.6*rng.Float32(), 0)
	}
	res := RejectionResult{make([]uint32, B), make([]uint32, B), make([]uint32, B)}
	require.NoError(t, RejectionCPU(res, logits, B, V, params, Key{5, 5}, MaxRounds))
	maxSeen := uint32(0)
	for r := 0; r < B; r++ {
		require.Equal(t, uint32(StatusOK), res.OK[r])
		require.GreaterOrEqual(t, res.Rounds[r], uint32(1))
		require.LessOrEqual(t, res.Rounds[r], uint32(31))
		maxSeen = max(maxSeen, res.Rounds[r])
	}
	t.Logf("max rounds over %d rows: %d", B, maxSeen)
	require.Greater(t, maxSeen, uint32(1), "the test rows should need more than one round")

	capped := RejectionResult{make([]uint32, B), make([]uint32, B), make([]uint32, B)}
	require.NoError(t, RejectionCPU(capped, logits, B, V, params, Key{5, 5}, 1))
	unconverged := 0
	for r := 0; r < B; r++ {
		_, amax := rowMax(logits[r*V : (r+1)*V])
		switch Status(capped.OK[r]) {
		case StatusUnconverged:
			unconverged++
			require.Equal(t, amax, capped.Tokens[r])
			require.Equal(t, uint32(1), capped.Rounds[r])
		case StatusOK:
			require.Equal(t, uint32(1), capped.Rounds[r])
			require.Equal(t, res.Tokens[r], capped.Tokens[r], "round 1 is the same draw")
		default:
			t.Fatalf("row %d: status %v", r, Status(capped.OK[r]))
		}
	}
	require.Greater(t, unconverged, 0)
}

// The rejection mirror with a few threads per block (each thread owning
// several groups, and the candidate search running over several chunks)
// still draws the exact target: the code path the host emulation test runs.
func TestRejectionSmallBlockDistribution(t *testing.T) {
	for _, c := range []distCase{filteredCases[1], filteredCases[5], unfilteredCases[3]} {
		for _, nt := range []int{2, 4} {
			s := sampler{"rejection-nt", func(tok []uint32, l []float32, B, V int, p Params, key Key) error {
				return rejectionCPU("test", RejectionResult{tok, make([]uint32, B), make([]uint32, B)}, l, B, V, []Params{p}, key, MaxRounds, nt)
			}}
			counts := drawCounts(t, s, c.row, c.p, drawsPerCase/4, uint64(nt*100))
			p, stat, df := chiSquareP(t, counts, target(c.row, c.p))
			t.Logf("%s nt=%d: chi2 = %.2f, df = %d, p = %.4g", c.name, nt, stat, df, p)
			require.Greater(t, p, chiSquareThreshold)
		}
	}
}

// The split rule: at most one wave of two 512-thread blocks per compute unit
// over the batch, at least 4096 elements per block, at most 1024 splits.
func TestGumbelSplits(t *testing.T) {
	cases := []struct{ B, V, cu, want int }{
		{1, 131072, 132, 32},     // V-bound: 32768 groups / 1024
		{1, 262144, 132, 64},     // V-bound
		{1, 1 << 24, 132, 264},   // CU-bound: 2*132
		{1, 1 << 30, 1024, 1024}, // capped (CU bound 2048, V bound 2^18)
		{64, 262144, 132, 4},     // floor(264/64)
		{8, 128256, 132, 32},     // V-bound: ceil(32064/1024)
		{512, 32000, 132, 1},     // floor(264/512) = 0, at least 1
		{200, 131072, 132, 1},
		{1, 1000, 132, 1},
		{1, 131072, 0, 32}, // default CU count
		{0, 10, 1, 1},
	}
	for _, c := range cases {
		require.Equalf(t, c.want, GumbelSplits(c.B, c.V, c.cu), "%+v", c)
	}
}

// A greedy row's filters never change its token: at temperature 0 the
// rejection and argpartition samplers under top-k, top-p and min-p give the
// unfiltered Gumbel-max argmax (the lowest index on ties), which is what
// lets Router.Decide send greedy filtered batches to the Gumbel kernel.
func TestGreedyRowsIgnoreTheirFilters(t *testing.T) {
	const B, V = 64, 1000
	rng := rand.New(rand.NewPCG(41, 42))
	logits := randomRows(rng, B, V, 0.1)
	for r := 0; r < B; r += 3 { // a tie at the maximum in every third row
		row := logits[r*V : (r+1)*V]
		m := float32(math.Inf(-1))
		for _, v := range row {
			m = max(m, v)
		}
		row[rng.IntN(V)] = m
	}
	want := make([]uint32, B)
	require.NoError(t, samplerGumbel.run(want, logits, B, V, withP(0, 0, 1, 0), Key{3, 4}))
	for _, p := range []Params{withP(0, 40, 0.95, 0), withP(0, 1, 1, 0), withP(0, 0, 0.01, 0), withP(0, 0, 1, 0.9), withP(0, 5, 0.5, 0.5)} {
		for _, s := range []sampler{samplerRejection, samplerArgpartition} {
			got := make([]uint32, B)
			require.NoError(t, s.run(got, logits, B, V, p, Key{3, 4}))
			require.Equal(t, want, got, "%s %+v", s.name, p)
		}
	}
}
