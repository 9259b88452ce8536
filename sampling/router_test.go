package sampling

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Decide routes by filters, temperature, backend and Policy (kill switches
// are on in this process; TestKillSwitches covers them in child processes),
// and counts every outcome under its reason.
func TestRouterDecide(t *testing.T) {
	if !GumbelRouting() || !RejectionRouting() {
		t.Skip("a kill switch is set in this process's environment; TestKillSwitches covers that case")
	}
	const V = 50000
	plain := withP(0.8, 0, 1, 0)
	cases := []struct {
		name    string
		backend Backend
		params  []Params
		V       int
		want    Decision
	}{
		{"no filter", BackendCUDA, []Params{plain}, V, Decision{RouteGumbel, ReasonGumbelKernel}},
		{"greedy", BackendROCm, []Params{withP(0, 0, 1, 0)}, V, Decision{RouteGumbel, ReasonGumbelKernel}},
		{"greedy with filters", BackendCUDA, []Params{withP(0, 40, 0.95, 0)}, 128256, Decision{RouteGumbel, ReasonGumbelKernel}},
		{"greedy with filters, ROCm", BackendROCm, []Params{withP(0, 40, 1, 0.05), withP(0, 0, 0.9, 0)}, V, Decision{RouteGumbel, ReasonGumbelKernel}},
		{"greedy filtered beside sampled filtered", BackendCUDA, []Params{withP(0, 40, 0.95, 0), withP(1, 0, 0.9, 0)}, V, Decision{RouteRejection, ReasonRejectionKernel}},
		{"greedy filtered beside a sampled row", BackendCUDA, []Params{withP(0, 40, 0.95, 0), plain}, V, Decision{RouteRejection, ReasonRejectionKernel}},
		{"greedy with filters, no Gumbel port", "sim", []Params{withP(0, 0, 0.9, 0)}, V, Decision{RouteArgpartition, ReasonRejectionNoPort}},
		{"k >= V is no filter", BackendMetal, []Params{withP(1, V, 1, 0)}, V, Decision{RouteGumbel, ReasonGumbelKernel}},
		{"mixed temperatures", BackendCUDA, []Params{plain, withP(1, 0, 1, 0)}, V, Decision{RouteCategorical, ReasonGumbelMixedTemperature}},
		{"no port", "sim", []Params{plain}, V, Decision{RouteCategorical, ReasonGumbelNoPort}},
		{"top-p", BackendCUDA, []Params{withP(1, 0, 0.9, 0)}, V, Decision{RouteRejection, ReasonRejectionKernel}},
		{"top-p + min-p, mixed rows", BackendCUDA, []Params{withP(1, 0, 0.9, 0.1), plain}, V, Decision{RouteRejection, ReasonRejectionKernel}},
		{"top-k alone, CUDA", BackendCUDA, []Params{withP(1, 40, 1, 0)}, V, Decision{RouteRejection, ReasonRejectionKernel}},
		{"min-p alone, CUDA", BackendCUDA, []Params{withP(1, 0, 1, 0.05)}, V, Decision{RouteRejection, ReasonRejectionKernel}},
		{"top-k + top-p, large V, CUDA", BackendCUDA, []Params{withP(1, 40, 0.95, 0)}, 128256, Decision{RouteRejection, ReasonRejectionKernel}},
		{"top-k alone, ROCm", BackendROCm, []Params{withP(1, 40, 1, 0)}, V, Decision{RouteArgpartition, ReasonRejectionNotRouted}},
		{"min-p alone, ROCm", BackendROCm, []Params{withP(1, 0, 1, 0.05)}, V, Decision{RouteArgpartition, ReasonRejectionNotRouted}},
		{"top-k + min-p, ROCm", BackendROCm, []Params{withP(1, 40, 1, 0.05)}, V, Decision{RouteArgpartition, ReasonRejectionNotRouted}},
		{"top-k + top-p, ROCm, V = 152064", BackendROCm, []Params{withP(1, 40, 0.9, 0)}, 152064, Decision{RouteRejection, ReasonRejectionKernel}},
		{"top-k + top-p, ROCm, V = 262144", BackendROCm, []Params{withP(1, 40, 0.9, 0)}, 262144, Decision{RouteArgpartition, ReasonRejectionNotRouted}},
		{"top-k + top-p, Metal, small V", BackendMetal, []Params{withP(1, 40, 0.9, 0)}, 32768, Decision{RouteRejection, ReasonRejectionKernel}},
		{"top-k + top-p, Metal, large V", BackendMetal, []Params{withP(1, 40, 0.9, 0)}, 128256, Decision{RouteArgpartition, ReasonRejectionNotRouted}},
		{"one row not admitted", BackendROCm, []Params{withP(1, 0, 0.9, 0), withP(1, 5, 1, 0)}, V, Decision{RouteArgpartition, ReasonRejectionNotRouted}},
		{"filtered, no port", "sim", []Params{withP(1, 0, 0.9, 0)}, V, Decision{RouteArgpartition, ReasonRejectionNoPort}},
	}
	for _, c := range cases {
		r := NewRouter(c.backend, DefaultPolicy(c.backend))
		r.Logger = slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
		d, err := r.Decide(c.params, len(c.params), c.V)
		require.NoError(t, err, c.name)
		require.Equal(t, c.want, d, c.name)
		require.Equal(t, uint64(1), r.Count(c.want.Reason), c.name)
	}
	// A policy decides per combination and vocabulary: exactly the
	// combination it names, up to the size it names.
	var p Policy
	p.MaxVocab[FilterTopK] = V
	r := NewRouter(BackendCUDA, p)
	for _, c := range []struct {
		params Params
		V      int
		want   Route
	}{
		{withP(1, 40, 1, 0), V, RouteRejection},
		{withP(1, 40, 1, 0), V + 1, RouteArgpartition},
		{withP(1, 40, 0.9, 0), V, RouteArgpartition},
		{withP(1, 0, 0.9, 0), V, RouteArgpartition},
	} {
		d, err := r.Decide([]Params{c.params}, 1, c.V)
		require.NoError(t, err)
		require.Equal(t, c.want, d.Route, "%+v V=%d", c.params, c.V)
	}
	require.Equal(t, "top-k+min-p", (FilterTopK | FilterMinP).String())
	require.Equal(t, FilterTopK|FilterTopP, withP(1, 40, 0.9, 0).ActiveFilters(V))
	require.Equal(t, FilterTopP, withP(1, V, 0.9, 0).ActiveFilters(V), "k >= V is off")
	for _, f := range FilterSets {
		require.Equal(t, AnyVocab, KernelEverywhere().MaxVocab[f], f.String())
		require.Zero(t, FallbackEverywhere().MaxVocab[f], f.String())
	}
	// Invalid parameters and shapes are errors, not routes.
	_, err := r.Decide([]Params{withP(1, 0, 2, 0)}, 1, V)
	require.ErrorIs(t, err, ErrInvalidParameter)
	_, err = r.Decide([]Params{plain, plain}, 3, V)
	require.ErrorIs(t, err, ErrShape)
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Each reason is logged exactly once per Router however many goroutines hit
// it, while the counter counts every occurrence.
func TestRouterLogsEachReasonOnce(t *testing.T) {
	var buf syncBuffer
	r := NewRouter("sim", DefaultPolicy("sim"))
	r.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				_, _ = r.Decide([]Params{DefaultParams()}, 1, 10)
				_, _ = r.Decide([]Params{withP(1, 0, 0.5, 0)}, 1, 10)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, uint64(800), r.Count(ReasonGumbelNoPort))
	require.Equal(t, uint64(800), r.Count(ReasonRejectionNoPort))
	out := buf.String()
	require.Equal(t, 1, strings.Count(out, "reason=gumbel-no-port"), out)
	require.Equal(t, 1, strings.Count(out, "reason=rejection-no-port"), out)
	require.Equal(t, 2, strings.Count(out, "\n"))
	require.Contains(t, out, "categorical fallback")
	require.Equal(t, uint64(0), r.Count(numReasons))
	require.Equal(t, "Reason(200)", Reason(200).String())
}
