package sampling

// Tests of the GPU entry points. The TestGPU* tests need a GPU with a port
// (the CUDA PTX on the H200): they skip without one and fail under
// HIPGO_REQUIRE_GPU=1. The refusal and fallback tests run everywhere on the
// simulated backend, whose kind ("sim") has no port.

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/hipgo/hipgo/runtime"
)

func simDevice(t *testing.T) *runtime.Device {
	t.Helper()
	dev, err := runtime.Open(context.Background(), runtime.WithDrivers(simgpu.New(simgpu.Config{Devices: 1})))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, dev.Close()) })
	return dev
}

func upload(t testing.TB, dev *runtime.Device, logits []float32) *runtime.Buffer {
	t.Helper()
	b, err := dev.Alloc(4 * len(logits))
	require.NoError(t, err)
	require.NoError(t, runtime.Upload(b, logits))
	return b
}

// spinKernel loads the test kernels' spin_ns (args: nanoseconds, a 4-byte
// flag buffer), to hold a stream busy.
func spinKernel(t testing.TB, dev *runtime.Device) (*runtime.Kernel, *runtime.Buffer) {
	t.Helper()
	mod := testKernels(t, dev)
	spin, err := mod.Kernel("spin_ns")
	require.NoError(t, err)
	flag, err := dev.Alloc(4)
	require.NoError(t, err)
	return spin, flag
}

// testKernels loads the test kernels, skipping on a backend they have no
// binary for: Metal, since MSL has no clock for spin_ns (docs/metal.md).
func testKernels(t testing.TB, dev *runtime.Device) *runtime.Module {
	t.Helper()
	mod, err := dev.LoadModule("testkernels")
	if errors.Is(err, runtime.ErrNoBinary) {
		t.Skipf("the test kernels have no %s binary (MSL has no clock for spin_ns): %v", dev.Info().Format, err)
	}
	require.NoError(t, err)
	return mod
}

func outputs(t testing.TB, dev *runtime.Device, B int) Outputs {
	t.Helper()
	var o Outputs
	for _, p := range []**runtime.Buffer{&o.Tokens, &o.Status, &o.Rounds} {
		b, err := dev.Alloc(4 * B)
		require.NoError(t, err)
		*p = b
	}
	return o
}

func download(t testing.TB, b *runtime.Buffer, n int) []uint32 {
	t.Helper()
	out := make([]uint32, n)
	require.NoError(t, runtime.Download(b, out))
	return out
}

// TestDirectEntryPointsRefuseABackendWithoutAPort asserts the refusal (not a
// skip): on a device whose backend has no port, both direct entry points
// return ErrNoKernelPort naming the entry point and the fallback, before
// touching the device.
func TestDirectEntryPointsRefuseABackendWithoutAPort(t *testing.T) {
	dev := simDevice(t)
	require.False(t, Supported(dev))
	sm := NewSampler(dev)
	s, err := dev.NewStream()
	require.NoError(t, err)
	logits := Logits{Buf: upload(t, dev, make([]float32, 8)), B: 2, V: 4}
	out := outputs(t, dev, 2)

	err = sm.GumbelMax(s, logits, 1, Key{1, 2}, out)
	var np *NoKernelPortError
	require.ErrorAs(t, err, &np)
	require.ErrorIs(t, err, ErrNoKernelPort)
	require.EqualError(t, err, "sampling.GumbelMax: no kernel port for backend sim; callers take the categorical fallback instead")

	err = sm.Rejection(s, logits, []Params{{Temperature: 1, TopP: 0.9}}, Key{1, 2}, MaxRounds, out)
	require.ErrorIs(t, err, ErrNoKernelPort)
	require.EqualError(t, err, "sampling.Rejection: no kernel port for backend sim; callers take the argpartition fallback instead")
}

// TestSampleFallsBackOnABackendWithoutAPort: the production path routes a
// backend without ports to the CPU fallbacks, which read the logits from the
// device and write the same tokens the CPU functions draw.
func TestSampleFallsBackOnABackendWithoutAPort(t *testing.T) {
	dev := simDevice(t)
	sm := NewSampler(dev)
	s, err := dev.NewStream()
	require.NoError(t, err)
	const B, V = 5, 300
	rng := rand.New(rand.NewPCG(1, 2))
	host := randomRows(rng, B, V, 0.1)
	logits := Logits{Buf: upload(t, dev, host), B: B, V: V}
	tokens, err := dev.Alloc(4 * B)
	require.NoError(t, err)
	key := Key{7, 9}

	d, err := sm.Sample(context.Background(), s, logits, []Params{DefaultParams()}, key, tokens)
	require.NoError(t, err)
	require.Equal(t, Decision{RouteCategorical, ReasonGumbelNoPort}, d)
	want := make([]uint32, B)
	require.NoError(t, Categorical(want, host, B, V, []float32{1}, key))
	require.Equal(t, want, download(t, tokens, B))

	p := []Params{{Temperature: 0.7, TopK: 20, TopP: 0.9, MinP: 0.01}}
	d, err = sm.Sample(context.Background(), s, logits, p, key, tokens)
	require.NoError(t, err)
	require.Equal(t, Decision{RouteArgpartition, ReasonRejectionNoPort}, d)
	require.NoError(t, Argpartition(want, host, B, V, p, key))
	require.Equal(t, want, download(t, tokens, B))
}

func openGPU(t testing.TB) (*runtime.Device, *runtime.Stream, *Sampler) {
	t.Helper()
	var opts []runtime.Option
	if os.Getenv(envPlumbing) == "1" {
		opts = append(opts, runtime.WithDrivers(plumbingDriver())) // see plumbing_test.go
	}
	dev, err := runtime.Open(context.Background(), opts...)
	if errors.Is(err, runtime.ErrNoDevice) {
		testenv.NeedGPU(t, err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, dev.Close()) })
	require.True(t, Supported(dev), "%s has sampler ports", dev)
	s, err := dev.NewStream()
	require.NoError(t, err)
	return dev, s, NewSampler(dev)
}

// gpuShapes are the shapes the CPU-equality tests run, with scales that give
// flat and peaked rows.
var gpuShapes = []struct {
	B, V  int
	scale float64
}{{1, 1000, 3}, {7, 32000, 3}, {64, 32000, 8}, {3, 128256, 3}, {16, 151936, 5}, {1, 262144, 2},
	{5, 50257, 4}} // odd V: rows past the first are not aligned for vector loads

func gaussian(rng *rand.Rand, n int, scale float64) []float32 {
	l := make([]float32, n)
	for i := range l {
		l[i] = float32(rng.NormFloat64() * scale)
	}
	return l
}

// TestGPUGumbelMaxMatchesTheCPUReference: with the same key and logits the
// kernel's tokens equal GumbelMaxCPU's on at least 99.9% of rows, and every
// mismatch is a near-tie of the two scores in float64.
func TestGPUGumbelMaxMatchesTheCPUReference(t *testing.T) {
	dev, s, sm := openGPU(t)
	rng := rand.New(rand.NewPCG(11, 12))
	rows, mismatches := 0, 0
	for _, sh := range gpuShapes {
		for _, temp := range []float32{1, 0.7, 0} {
			host := gaussian(rng, sh.B*sh.V, sh.scale)
			buf := upload(t, dev, host)
			out := outputs(t, dev, sh.B)
			key := Key{rng.Uint32(), rng.Uint32()}
			require.NoError(t, sm.GumbelMax(s, Logits{Buf: buf, B: sh.B, V: sh.V}, temp, key, out))
			require.NoError(t, s.Synchronize(context.Background()))
			got := download(t, out.Tokens, sh.B)
			status := download(t, out.Status, sh.B)
			want := make([]uint32, sh.B)
			require.NoError(t, GumbelMaxCPU(want, host, sh.B, sh.V, temp, key))
			for r := range want {
				rows++
				require.EqualValues(t, StatusOK, status[r])
				require.Less(t, got[r], uint32(sh.V))
				if got[r] != want[r] {
					mismatches++
					a := gumbelScore64(host[r*sh.V:(r+1)*sh.V], int(got[r]), temp, key, r)
					b := gumbelScore64(host[r*sh.V:(r+1)*sh.V], int(want[r]), temp, key, r)
					require.InDelta(t, a, b, 1e-4*math.Max(1, math.Abs(a)), "row %d: GPU %d, CPU %d is not a near-tie", r, got[r], want[r])
				}
			}
			require.NoError(t, buf.Free())
		}
	}
	t.Logf("Gumbel: %d rows, %d mismatches (%.4f%% equal)", rows, mismatches, 100*float64(rows-mismatches)/float64(rows))
	require.LessOrEqual(t, float64(mismatches), 0.001*float64(rows))
	// Each launch's last blocks put the per-row arrival counters back to 0,
	// which the next launch relies on.
	arrivals := download(t, sm.arrivals, sm.arrivals.Size()/4)
	require.Equal(t, make([]uint32, len(arrivals)), arrivals, "arrival counters left non-zero")
}

// gumbelScore64 is token i's Gumbel score in float64 from the same uniform.
func gumbelScore64(row []float32, i int, temp float32, key Key, r int) float64 {
	w := Philox4x32([4]uint32{uint32(i >> 2), 0, uint32(r), 0}, key)[i&3]
	u := float64(Uniform(w))
	g := -math.Log(-math.Log(u))
	if temp == 0 {
		return float64(row[i])
	}
	return float64(row[i])/float64(temp) + g
}

// TestGPURejectionMatchesTheCPUReference: tokens, status and rounds equal
// RejectionCPU's on at least 99.9% of rows for the filter settings.
func TestGPURejectionMatchesTheCPUReference(t *testing.T) {
	dev, s, sm := openGPU(t)
	rng := rand.New(rand.NewPCG(21, 22))
	settings := []Params{
		{Temperature: 1, TopP: 0.9},
		{Temperature: 0.7, TopK: 40, TopP: 0.9},
		{Temperature: 1, TopP: 1, MinP: 0.05},
		{Temperature: 1.3, TopK: 5, TopP: 0.5, MinP: 0.1},
	}
	rows, mismatches := 0, 0
	for _, sh := range gpuShapes {
		for _, p := range settings {
			host := gaussian(rng, sh.B*sh.V, sh.scale)
			buf := upload(t, dev, host)
			out := outputs(t, dev, sh.B)
			key := Key{rng.Uint32(), rng.Uint32()}
			require.NoError(t, sm.Rejection(s, Logits{Buf: buf, B: sh.B, V: sh.V}, []Params{p}, key, MaxRounds, out))
			require.NoError(t, s.Synchronize(context.Background()))
			want := RejectionResult{Tokens: make([]uint32, sh.B), OK: make([]uint32, sh.B), Rounds: make([]uint32, sh.B)}
			require.NoError(t, RejectionCPU(want, host, sh.B, sh.V, []Params{p}, key, MaxRounds))
			got := RejectionResult{Tokens: download(t, out.Tokens, sh.B), OK: download(t, out.Status, sh.B), Rounds: download(t, out.Rounds, sh.B)}
			for r := range want.Tokens {
				rows++
				require.Less(t, got.Tokens[r], uint32(sh.V))
				require.EqualValues(t, StatusOK, got.OK[r], "row %d converges within %d rounds", r, MaxRounds)
				if got.Tokens[r] != want.Tokens[r] || got.Rounds[r] != want.Rounds[r] {
					mismatches++
				}
			}
			require.NoError(t, buf.Free())
		}
	}
	t.Logf("rejection: %d rows, %d mismatches (%.4f%% equal)", rows, mismatches, 100*float64(rows-mismatches)/float64(rows))
	require.LessOrEqual(t, float64(mismatches), 0.001*float64(rows))
}

// drawGPU draws n tokens from one row by replicating it over n rows (each
// row has its own Philox counters, so the draws are independent).
func drawGPU(t *testing.T, dev *runtime.Device, s *runtime.Stream, sm *Sampler, row []float32, p Params, n int, key Key) []int {
	t.Helper()
	V := len(row)
	host := make([]float32, n*V)
	for r := 0; r < n; r++ {
		copy(host[r*V:], row)
	}
	buf := upload(t, dev, host)
	defer func() { require.NoError(t, buf.Free()) }()
	out := outputs(t, dev, n)
	if p.Filtered(V) {
		require.NoError(t, sm.Rejection(s, Logits{Buf: buf, B: n, V: V}, []Params{p}, key, MaxRounds, out))
	} else {
		require.NoError(t, sm.GumbelMax(s, Logits{Buf: buf, B: n, V: V}, p.Temperature, key, out))
	}
	require.NoError(t, s.Synchronize(context.Background()))
	counts := make([]int, V)
	for _, tok := range download(t, out.Tokens, n) {
		require.Less(t, tok, uint32(V))
		counts[tok]++
	}
	return counts
}

// TestGPUFrequenciesMatchTheExactDistribution: 10^6 GPU draws per case are
// chi-square consistent (p > 1e-6) with the one-distribution target in
// float64, and no draw falls outside the kept set.
func TestGPUFrequenciesMatchTheExactDistribution(t *testing.T) {
	dev, s, sm := openGPU(t)
	rng := rand.New(rand.NewPCG(31, 32))
	row := gaussian(rng, 200, 1.5)
	for _, p := range []Params{
		{Temperature: 1, TopP: 1},
		{Temperature: 0.6, TopP: 1},
		{Temperature: 1, TopP: 0.8},
		{Temperature: 0.8, TopK: 10, TopP: 0.95},
		{Temperature: 1.2, TopP: 1, MinP: 0.1},
	} {
		n := 1_000_000
		if os.Getenv(envPlumbing) == "1" {
			n = 20_000 // the simulation checks plumbing; the draws are the CPU mirror's
		}
		counts := drawGPU(t, dev, s, sm, row, p, n, Key{rng.Uint32(), rng.Uint32()})
		pv, stat, df := chiSquareP(t, counts, target(row, p))
		t.Logf("%+v: chi2 %.1f df %d p %.3g", p, stat, df, pv)
		require.Greater(t, pv, 1e-6)
	}
}

// TestGPUNaNAndInfRowsHaveDefinedResults: a NaN logit is never drawn, a row
// of -inf (or NaN) gets token 0 with the invalid status, and nothing is out
// of range.
func TestGPUNaNAndInfRowsHaveDefinedResults(t *testing.T) {
	dev, s, sm := openGPU(t)
	const V = 4096
	nan, inf := float32(math.NaN()), float32(math.Inf(-1))
	host := make([]float32, 4*V)
	for i := 0; i < V; i++ {
		host[i] = nan                  // row 0: all NaN
		host[V+i] = inf                // row 1: all -inf
		host[2*V+i] = nan              // row 2: NaN except one finite logit
		host[3*V+i] = float32(i%7) / 7 // row 3: finite, with NaNs sprinkled
		if i%5 == 0 {
			host[3*V+i] = nan
		}
	}
	host[2*V+1234] = 0.5
	buf := upload(t, dev, host)
	for _, filtered := range []bool{false, true} {
		out := outputs(t, dev, 4)
		if filtered {
			require.NoError(t, sm.Rejection(s, Logits{Buf: buf, B: 4, V: V}, []Params{{Temperature: 1, TopP: 0.9}}, Key{3, 4}, MaxRounds, out))
		} else {
			require.NoError(t, sm.GumbelMax(s, Logits{Buf: buf, B: 4, V: V}, 1, Key{3, 4}, out))
		}
		require.NoError(t, s.Synchronize(context.Background()))
		tok, st := download(t, out.Tokens, 4), download(t, out.Status, 4)
		require.Equal(t, []uint32{0, 0}, tok[:2])
		require.Equal(t, []uint32{uint32(StatusInvalidRow), uint32(StatusInvalidRow)}, st[:2])
		require.EqualValues(t, 1234, tok[2], "the only non-NaN logit")
		require.EqualValues(t, StatusOK, st[2])
		require.NotZero(t, tok[3]%5, "a NaN logit is never drawn (filtered=%v)", filtered)
		require.Less(t, tok[3], uint32(V))
	}
}

// TestGPURouterChoosesTheKernel: on a GPU with ports the production path
// routes a plain draw to the Gumbel kernel and a top-p draw to the rejection
// kernel, and their tokens equal the direct entry points'.
func TestGPURouterChoosesTheKernel(t *testing.T) {
	dev, s, sm := openGPU(t)
	rng := rand.New(rand.NewPCG(41, 42))
	const B, V = 8, 32000
	host := gaussian(rng, B*V, 4)
	logits := Logits{Buf: upload(t, dev, host), B: B, V: V}
	tokens, err := dev.Alloc(4 * B)
	require.NoError(t, err)
	key := Key{5, 6}
	d, err := sm.Sample(context.Background(), s, logits, []Params{DefaultParams()}, key, tokens)
	require.NoError(t, err)
	require.Equal(t, Decision{RouteGumbel, ReasonGumbelKernel}, d)
	require.NoError(t, s.Synchronize(context.Background()))
	want := make([]uint32, B)
	require.NoError(t, GumbelMaxCPU(want, host, B, V, 1, key))
	got := download(t, tokens, B)
	for r := range want {
		if got[r] != want[r] { // only a near-tie may differ (NVPTX uses the hardware log)
			a := gumbelScore64(host[r*V:(r+1)*V], int(got[r]), 1, key, r)
			b := gumbelScore64(host[r*V:(r+1)*V], int(want[r]), 1, key, r)
			require.InDelta(t, a, b, 1e-4*math.Max(1, math.Abs(a)), "row %d", r)
		}
	}

	p := []Params{{Temperature: 1, TopP: 0.9}}
	d, err = sm.Sample(context.Background(), s, logits, p, key, tokens)
	require.NoError(t, err)
	require.Equal(t, Decision{RouteRejection, ReasonRejectionKernel}, d)
	require.NoError(t, s.Synchronize(context.Background()))
	rr := RejectionResult{Tokens: make([]uint32, B), OK: make([]uint32, B), Rounds: make([]uint32, B)}
	require.NoError(t, RejectionCPU(rr, host, B, V, p, key, MaxRounds))
	require.Equal(t, rr.Tokens, download(t, tokens, B))
}

// TestGPUDeferredPathNeverSynchronizes: with a 300 ms kernel queued ahead on
// the stream, the production rejection call returns at once (it waits for
// nothing); its flags are verified by the next call after the launch lands.
func TestGPUDeferredPathNeverSynchronizes(t *testing.T) {
	dev, s, sm := openGPU(t)
	spin, flag := spinKernel(t, dev)
	const B, V = 4, 32000
	rng := rand.New(rand.NewPCG(51, 52))
	logits := Logits{Buf: upload(t, dev, gaussian(rng, B*V, 3)), B: B, V: V}
	tokens, err := dev.Alloc(4 * B)
	require.NoError(t, err)
	p := []Params{{Temperature: 1, TopP: 0.9}}
	// Warm the module and the slots, then queue the long kernel.
	_, err = sm.Sample(context.Background(), s, logits, p, Key{1, 1}, tokens)
	require.NoError(t, err)
	require.NoError(t, s.Synchronize(context.Background()))
	sm.Router().Drain()
	one := runtime.LaunchConfig{Grid: runtime.Dim3{X: 1, Y: 1, Z: 1}, Block: runtime.Dim3{X: 1, Y: 1, Z: 1}}
	require.NoError(t, s.Launch(spin, one, uint64(time.Second), flag))

	start := time.Now()
	d, err := sm.Sample(context.Background(), s, logits, p, Key{2, 2}, tokens)
	took := time.Since(start)
	require.NoError(t, err)
	require.Equal(t, RouteRejection, d.Route)
	// Far below the 1 s kernel: it did not wait (wide for a loaded machine
	// under -race, where the plumbing check runs this on the simulation).
	require.Less(t, took, 500*time.Millisecond, "the production call returned without waiting for the queued kernel")
	require.Equal(t, 1, sm.Router().Pending(), "the launch waits in the ring, unverified")
	require.NoError(t, s.Synchronize(context.Background()))
	sm.Router().Drain()
	require.Equal(t, 0, sm.Router().Pending(), "once landed, the next drain verifies it")
	require.Zero(t, sm.Router().OverflowRows())
	t.Logf("production rejection call with a 1 s kernel queued ahead returned in %v", took)
}

// TestGPUGumbelStartedEarlyReadsWhatTheKernelAheadWrote: the Gumbel launch
// may start before the kernel ahead of it ends (EarlyStart: programmatic
// dependent launch on sm_90), and its kernel waits for that kernel before
// reading. Here the kernel ahead overwrites random logits with a constant,
// right after a spin kernel held the stream, and the tokens must be the
// draw from the constant rows, not from the random ones.
func TestGPUGumbelStartedEarlyReadsWhatTheKernelAheadWrote(t *testing.T) {
	dev, s, sm := openGPU(t)
	spin, flag := spinKernel(t, dev)
	fill, err := testKernels(t, dev).Kernel("fill_u32")
	require.NoError(t, err)
	const B, V = 64, 32000
	rng := rand.New(rand.NewPCG(61, 62))
	out := outputs(t, dev, B)
	one := runtime.LaunchConfig{Grid: runtime.Dim3{X: 1, Y: 1, Z: 1}, Block: runtime.Dim3{X: 1, Y: 1, Z: 1}}
	wide := runtime.LaunchConfig{Grid: runtime.Dim3{X: 264, Y: 1, Z: 1}, Block: runtime.Dim3{X: 256, Y: 1, Z: 1}}
	for i := range 4 {
		random := gaussian(rng, B*V, 3)
		buf := upload(t, dev, random)
		require.NoError(t, s.Synchronize(context.Background()))
		c := float32(i) - 1.5
		key := Key{rng.Uint32(), rng.Uint32()}
		require.NoError(t, s.Launch(spin, one, uint64(20*time.Millisecond), flag))
		require.NoError(t, s.Launch(fill, wide, buf, math.Float32bits(c), uint32(B*V)))
		require.NoError(t, sm.GumbelMax(s, Logits{Buf: buf, B: B, V: V}, 1, key, out))
		require.NoError(t, s.Synchronize(context.Background()))
		constant := make([]float32, B*V)
		for j := range constant {
			constant[j] = c
		}
		want := make([]uint32, B)
		require.NoError(t, GumbelMaxCPU(want, constant, B, V, 1, key))
		stale := make([]uint32, B)
		require.NoError(t, GumbelMaxCPU(stale, random, B, V, 1, key))
		require.NotEqual(t, want, stale, "the two logit sets give different draws, so a stale read would show")
		require.Equal(t, want, download(t, out.Tokens, B), "round %d: tokens from the logits the kernel ahead wrote", i)
	}
}

// TestGPUWithPolicyDecidesTheRoute: a Sampler built WithPolicy routes by that
// policy, not the backend's default, and both routes of one call write
// in-range tokens: the kernel's when the policy admits the combination, the
// argpartition fallback's (equal to Argpartition on the host) when it does not.
func TestGPUWithPolicyDecidesTheRoute(t *testing.T) {
	dev, s, _ := openGPU(t)
	const B, V = 4, 32000
	host := gaussian(rand.New(rand.NewPCG(3, 4)), B*V, 3)
	logits := Logits{Buf: upload(t, dev, host), B: B, V: V}
	tokens, err := dev.Alloc(4 * B)
	require.NoError(t, err)
	p := []Params{withP(1, 40, 1, 0.05)} // top-k + min-p
	key := Key{5, 6}
	for _, c := range []struct {
		policy Policy
		want   Decision
	}{
		{KernelEverywhere(), Decision{RouteRejection, ReasonRejectionKernel}},
		{FallbackEverywhere(), Decision{RouteArgpartition, ReasonRejectionNotRouted}},
	} {
		sm := NewSampler(dev, WithPolicy(c.policy))
		d, err := sm.Sample(context.Background(), s, logits, p, key, tokens)
		require.NoError(t, err)
		require.Equal(t, c.want, d)
		require.NoError(t, s.Synchronize(context.Background()))
		got := download(t, tokens, B)
		for _, tok := range got {
			require.Less(t, tok, uint32(V))
		}
		if c.want.Route == RouteArgpartition {
			want := make([]uint32, B)
			require.NoError(t, Argpartition(want, host, B, V, p, key))
			require.Equal(t, want, got)
		}
	}
}
