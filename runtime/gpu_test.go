package runtime_test

// GPU tests: they run on whatever GPU runtime.Open finds (the CUDA adapter on
// the H200), skip without one, and fail instead under HIPGO_REQUIRE_GPU=1.
// The fault classes come from internal/faultprobe, which tools/faultprobe
// also prints; the fatal ones run in a child process (this test binary,
// re-executed through TestMain).

import (
	"context"
	"errors"
	"os"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/faultprobe"
	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/hipgo/hipgo/kernels"
	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/runtime/driver"
)

func TestMain(m *testing.M) {
	if faultprobe.ChildMain() {
		return
	}
	os.Exit(m.Run())
}

func openGPU(tb testing.TB) *faultprobe.Env {
	tb.Helper()
	env, err := faultprobe.Open(context.Background())
	if errors.Is(err, runtime.ErrNoDevice) {
		testenv.NeedGPU(tb, err)
	}
	if errors.Is(err, runtime.ErrNoBinary) {
		// Metal: the test kernels have no MSL twin (MSL has no clock for
		// spin_ns); metal_gpu_darwin_test.go covers the classes there.
		tb.Skipf("the probe kernels have no binary for this backend: %v", err)
	}
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, env.Close()) })
	tb.Logf("device: %s arch %s", env.Dev, env.Dev.Info().Arch)
	return env
}

func requireProbe(t *testing.T, r faultprobe.Result) {
	t.Helper()
	t.Logf("%s: time to error %v; got: %s; usable after: %s; metrics %v; %s", r.Class, r.TimeToError, r.Got, r.UsableAfter, r.Metrics, r.Detail)
	require.True(t, r.OK, "%s misbehaved: expected %s", r.Class, r.Expected)
}

func TestGPUOversizedBlockIsRejectedAndTheDeviceStaysUsable(t *testing.T) {
	env := openGPU(t)
	requireProbe(t, faultprobe.Run(context.Background(), env, faultprobe.OversizedBlock))
}

func TestGPUDriverRejectionLeavesTheDeviceUsable(t *testing.T) {
	env := openGPU(t)
	requireProbe(t, faultprobe.Run(context.Background(), env, faultprobe.DriverRejection))
}

func TestGPUOutOfMemoryLeavesTheDeviceUsable(t *testing.T) {
	env := openGPU(t)
	requireProbe(t, faultprobe.Run(context.Background(), env, faultprobe.OutOfMemory))
}

func TestGPUWatchdogNamesTheSpinningKernel(t *testing.T) {
	env := openGPU(t)
	requireProbe(t, faultprobe.Run(context.Background(), env, faultprobe.Watchdog))
}

func TestGPUSpinLandsWithoutAWatchdog(t *testing.T) {
	env := openGPU(t)
	requireProbe(t, faultprobe.Run(context.Background(), env, faultprobe.SpinLands))
}

func TestGPUOutOfBoundsWriteFailsTheWaitAndLosesTheDevice(t *testing.T) {
	env := openGPU(t) // proves a GPU is here before spending child processes
	backend := env.Dev.Backend()
	r := faultprobe.RunChild(context.Background(), faultprobe.OOBWrite, "-test.run=^$")
	requireProbe(t, r)
	if backend == driver.CUDA {
		for _, c := range []faultprobe.Class{faultprobe.OOBWriteDriverEvent, faultprobe.OOBWriteDriverSync} {
			base := faultprobe.RunChild(context.Background(), c, "-test.run=^$")
			requireProbe(t, base)
			t.Logf("out-of-bounds write, launch to error: runtime Wait %.2f ms, %s %.2f ms, ratio %.2f",
				r.Metrics["launch_to_error_ms"], c, base.Metrics["launch_to_error_ms"], r.Metrics["launch_to_error_ms"]/base.Metrics["launch_to_error_ms"])
		}
	}
}

// TestGPUOutOfBoundsWriteInAGraphFailsTheWaitAndLosesTheDevice is the same
// fault from inside a replayed graph (CUDA: the ROCm shim has no hipGraph).
func TestGPUOutOfBoundsWriteInAGraphFailsTheWaitAndLosesTheDevice(t *testing.T) {
	env := openGPU(t)
	if env.Dev.Backend() != driver.CUDA {
		t.Skipf("backend %s: graphs are checked on CUDA", env.Dev.Backend())
	}
	requireProbe(t, faultprobe.RunChild(context.Background(), faultprobe.OOBWriteGraph, "-test.run=^$"))
}

// TestGPUGraphReplayMatchesPlainLaunches proves a captured graph replays
// on the device: fills captured with their values, replayed many times in
// order with plain launches, each replay's result seen after an event.
func TestGPUGraphReplayMatchesPlainLaunches(t *testing.T) {
	env := openGPU(t)
	if env.Dev.Backend() != driver.CUDA {
		t.Skipf("backend %s: graphs are checked on CUDA", env.Dev.Backend())
	}
	ctx := context.Background()
	s, err := env.Dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	const n = 1024
	a, err := env.Dev.Alloc(4 * n)
	require.NoError(t, err)
	defer a.Free()
	cfg := runtime.LaunchConfig{Grid: runtime.Dim3{X: 4, Y: 1, Z: 1}, Block: runtime.Dim3{X: 256, Y: 1, Z: 1}}
	g, err := s.Capture(func() error {
		for v := range uint32(8) {
			if err := s.Launch(env.Fill, cfg, a, 100+v, uint32(n)); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 8, g.Kernels())
	got := make([]uint32, n)
	for i := range 100 {
		require.NoError(t, s.Launch(env.Fill, cfg, a, uint32(i), uint32(n)))
		require.NoError(t, s.Synchronize(ctx))
		require.NoError(t, runtime.Download(a, got))
		require.EqualValues(t, i, got[n-1], "the plain fill ran")
		require.NoError(t, s.LaunchGraph(g))
		require.NoError(t, s.Synchronize(ctx))
		require.NoError(t, runtime.Download(a, got))
		for j, v := range got {
			require.EqualValues(t, 107, v, "replay %d element %d: the graph's last fill wins", i, j)
		}
	}
	require.NoError(t, g.Close())
}

func TestGPUTenThousandLaunchesWithEventsAllLand(t *testing.T) {
	env := openGPU(t)
	s, err := env.Dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	buf, err := env.Dev.Alloc(4 * 1024)
	require.NoError(t, err)
	defer buf.Free()
	one := runtime.LaunchConfig{Grid: runtime.Dim3{X: 4, Y: 1, Z: 1}, Block: runtime.Dim3{X: 256, Y: 1, Z: 1}}
	// Warm up first: the driver's callback threads attach to the Go runtime
	// the first time they call back (each counts as a goroutine while it
	// stays attached); growth is measured after that.
	for i := 0; i < 100; i++ {
		require.NoError(t, s.Launch(env.Fill, one, buf, uint32(i), uint32(1024)))
		_, err := s.Record()
		require.NoError(t, err)
	}
	require.NoError(t, s.Synchronize(context.Background()))
	time.Sleep(20 * time.Millisecond) // let the monitor see nothing pending and exit
	before := goruntime.NumGoroutine()
	const n = 10000
	evs := make([]*runtime.Event, n)
	start := time.Now()
	for i := range evs {
		require.NoError(t, s.Launch(env.Fill, one, buf, uint32(i), uint32(1024)))
		evs[i], err = s.Record()
		require.NoError(t, err)
	}
	enqueued := time.Since(start)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i, ev := range evs {
		require.NoError(t, ev.Wait(ctx), "event %d", i)
	}
	got := make([]uint32, 1024)
	require.NoError(t, runtime.Download(buf, got))
	for _, v := range got {
		require.EqualValues(t, n-1, v, "the last fill wins")
	}
	after := 0
	// One more is tolerated (a driver thread attaching late); a leak per
	// event or per launch would show thousands.
	settled := assert.Eventually(t, func() bool { after = goruntime.NumGoroutine(); return after <= before+1 }, 5*time.Second, 10*time.Millisecond,
		"no goroutine growth after 10000 launches with events")
	if !settled {
		stacks := make([]byte, 1<<20)
		t.Fatalf("goroutines: %d before, %d after:\n%s", before, after, stacks[:goruntime.Stack(stacks, true)])
	}
	t.Logf("10000 launch+record pairs enqueued in %v (%.2f µs per pair), all landed in %v; goroutines %d before, %d after",
		enqueued, float64(enqueued.Nanoseconds())/n/1000, time.Since(start), before, after)
}

// BenchmarkGPULaunch is the runtime's launch overhead: checks, argument
// packing, the thread lock and cuLaunchKernel, for an empty 1x1 kernel. The
// GPU suite runs the C program tools/gpubench/launch_overhead.c in the same
// call for the ratio.
func BenchmarkGPULaunch(b *testing.B) {
	env := openGPU(b)
	s, err := env.Dev.NewStream()
	require.NoError(b, err)
	defer s.Close()
	one := runtime.LaunchConfig{Grid: runtime.Dim3{X: 1, Y: 1, Z: 1}, Block: runtime.Dim3{X: 1, Y: 1, Z: 1}}
	for i := 0; i < 1000; i++ {
		require.NoError(b, s.Launch(env.EmptyKernel, one))
	}
	require.NoError(b, s.Synchronize(context.Background()))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Launch(env.EmptyKernel, one); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	require.NoError(b, s.Synchronize(context.Background()))
}

// BenchmarkGPULaunchBatched times launches in batches of 256 with the queue
// drained between batches (untimed): the host cost of a launch call alone,
// never waiting for a full launch queue. The C program measures the same.
func BenchmarkGPULaunchBatched(b *testing.B) {
	env := openGPU(b)
	s, err := env.Dev.NewStream()
	require.NoError(b, err)
	defer s.Close()
	one := runtime.LaunchConfig{Grid: runtime.Dim3{X: 1, Y: 1, Z: 1}, Block: runtime.Dim3{X: 1, Y: 1, Z: 1}}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%256 == 0 {
			b.StopTimer()
			if err := s.Synchronize(ctx); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		if err := s.Launch(env.EmptyKernel, one); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	require.NoError(b, s.Synchronize(ctx))
}

// BenchmarkGPULaunchRecord adds an event (and its host callback) per launch.
func BenchmarkGPULaunchRecord(b *testing.B) {
	env := openGPU(b)
	s, err := env.Dev.NewStream()
	require.NoError(b, err)
	defer s.Close()
	one := runtime.LaunchConfig{Grid: runtime.Dim3{X: 1, Y: 1, Z: 1}, Block: runtime.Dim3{X: 1, Y: 1, Z: 1}}
	b.ResetTimer()
	var last *runtime.Event
	for i := 0; i < b.N; i++ {
		if err := s.Launch(env.EmptyKernel, one); err != nil {
			b.Fatal(err)
		}
		if last, err = s.Record(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	require.NoError(b, last.Wait(context.Background()))
}

// TestGPUTimeGPUMeasuresTheWorkOnTheDevice: a 2 ms spin kernel measures at
// least 2 ms of GPU time (and not wildly more), and an empty enqueue almost
// none, so the timer brackets exactly the work enqueued between its marks.
func TestGPUTimeGPUMeasuresTheWorkOnTheDevice(t *testing.T) {
	env := openGPU(t)
	s, err := env.Dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	flag, err := env.Dev.Alloc(4)
	require.NoError(t, err)
	defer flag.Free()
	one := runtime.LaunchConfig{Grid: runtime.Dim3{X: 1, Y: 1, Z: 1}, Block: runtime.Dim3{X: 1, Y: 1, Z: 1}}
	const spin = 2 * time.Millisecond
	got, err := s.TimeGPU(context.Background(), func() error {
		return s.Launch(env.Spin, one, uint64(spin), flag)
	})
	require.NoError(t, err)
	require.GreaterOrEqual(t, got, spin)
	require.Less(t, got, 20*spin)
	empty, err := s.TimeGPU(context.Background(), func() error { return nil })
	require.NoError(t, err)
	require.Less(t, empty, spin/4)
	t.Logf("2 ms spin timed at %v on the GPU; nothing timed at %v", got, empty)
}

// TestGPUModulesLoadTheCubinShippedForTheirSM: on a GPU for which the
// modules ship a cubin (sm_90: the H100 and H200), LoadModule hands the
// driver machine code for every module, and HIPGO_CUDA_JIT=1 the PTX; the
// test kernels fill a buffer the same either way. The load times are logged
// (the driver's compile cache may hold the PTX's from an earlier run).
func TestGPUModulesLoadTheCubinShippedForTheirSM(t *testing.T) {
	mods, err := kernels.Modules()
	require.NoError(t, err)
	fill := func(jit string) []uint32 {
		t.Setenv(runtime.EnvCUDAJIT, jit)
		dev, err := runtime.Open(context.Background())
		if errors.Is(err, runtime.ErrNoDevice) {
			testenv.NeedGPU(t, err)
		}
		require.NoError(t, err)
		defer func() { require.NoError(t, dev.Close()) }()
		if dev.Backend() != driver.CUDA {
			t.Skipf("backend %s: cubins are for CUDA", dev.Backend())
		}
		arch := dev.Info().Target
		if arch == "" {
			arch = dev.Info().Arch
		}
		var tk *runtime.Module
		for _, name := range mods {
			want := kernels.FormatPTX
			if _, err := kernels.Resolve(name, kernels.FormatCubin, arch); err == nil && jit != "1" {
				want = kernels.FormatCubin
			}
			start := time.Now()
			m, err := dev.LoadModule(name)
			require.NoError(t, err, name)
			t.Logf("HIPGO_CUDA_JIT=%s: %s loaded as %s (%s) in %v", jit, name, m.Format(), m.Target(), time.Since(start))
			require.Equal(t, want, m.Format(), name)
			if name == "testkernels" {
				tk = m
			}
		}
		require.NotNil(t, tk)
		k, err := tk.Kernel("fill_u32")
		require.NoError(t, err)
		s, err := dev.NewStream()
		require.NoError(t, err)
		defer s.Close()
		const n = 4096
		a, err := dev.Alloc(4 * n)
		require.NoError(t, err)
		defer a.Free()
		cfg := runtime.LaunchConfig{Grid: runtime.Dim3{X: 4, Y: 1, Z: 1}, Block: runtime.Dim3{X: 256, Y: 1, Z: 1}}
		require.NoError(t, s.Launch(k, cfg, a, uint32(0xC0B1), uint32(n)))
		require.NoError(t, s.Synchronize(context.Background()))
		got := make([]uint32, n)
		require.NoError(t, runtime.Download(a, got))
		return got
	}
	machine, jit := fill("0"), fill("1")
	require.Equal(t, jit, machine)
	require.EqualValues(t, 0xC0B1, machine[4095])
}
