package runtime_test

// Metal GPU tests: they run on a Mac, skip without a Metal device, and fail
// instead under HIPGO_REQUIRE_GPU=1. They have never run (docs/metal.md is
// the runbook). The kernels are MSL written here and loaded with LoadImage:
// the shared test kernels (kernels/src/testkernels.cu) have no MSL twin,
// because MSL has no clock to spin on.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/hipgo/hipgo/metal"
	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/runtime/driver"
)

const metalTestMSL = `
#include <metal_stdlib>
using namespace metal;

kernel void fill_u32(device uint* p [[buffer(0)]], constant uint& value [[buffer(1)]],
                     constant uint& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  if (i < n) p[i] = value;
}

[[max_total_threads_per_threadgroup(64)]]
kernel void bounded_fill_u32(device uint* p [[buffer(0)]], constant uint& value [[buffer(1)]],
                             constant uint& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  if (i < n) p[i] = value;
}

kernel void oob_write_u32(device uint* p [[buffer(0)]], constant uint& value [[buffer(1)]],
                          constant ulong& byte_offset [[buffer(2)]]) {
  *(device uint*)((device char*)p + byte_offset) = value;
}

// Spins until the host writes 1 to *stop (shared memory), at most ~2^31
// rounds so a lost flag cannot hang the GPU for ever.
kernel void spin_until(device atomic_uint* stop [[buffer(0)]], device uint* out [[buffer(1)]]) {
  uint rounds = 0;
  while (atomic_load_explicit(stop, memory_order_relaxed) == 0u && rounds < 0x7fffffffu) rounds++;
  *out = rounds;
}
`

func metalSpecs() []runtime.KernelSpec {
	fill := []runtime.ParamSpec{{Offset: 0, Size: 8, Pointer: true}, {Offset: 8, Size: 4}, {Offset: 12, Size: 4}}
	return []runtime.KernelSpec{
		{Name: "fill_u32", Params: fill},
		{Name: "bounded_fill_u32", Params: fill},
		{Name: "oob_write_u32", Params: []runtime.ParamSpec{{Offset: 0, Size: 8, Pointer: true}, {Offset: 8, Size: 4}, {Offset: 16, Size: 8}}},
		{Name: "spin_until", Params: []runtime.ParamSpec{{Offset: 0, Size: 8, Pointer: true}, {Offset: 8, Size: 8, Pointer: true}}},
	}
}

func openMetal(t *testing.T, opts ...runtime.Option) (*runtime.Device, *runtime.Module) {
	t.Helper()
	dev, err := runtime.Open(context.Background(), append([]runtime.Option{runtime.WithBackend(driver.Metal)}, opts...)...)
	if errors.Is(err, runtime.ErrNoDevice) {
		testenv.NeedGPU(t, err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = dev.Close() }) // the fault test loses the device; its Close error is expected there
	info := dev.Info()
	t.Logf("device: %s arch %s, %d MiB working set, max block %d, %s, %s", dev, info.Arch, info.TotalMemory>>20, info.MaxBlock, info.DriverVersion, info.Library)
	require.Equal(t, driver.MSL, info.Format)
	mod, err := dev.LoadImage([]byte(metalTestMSL), metalSpecs())
	require.NoError(t, err)
	return dev, mod
}

func kernel(t *testing.T, m *runtime.Module, name string) *runtime.Kernel {
	t.Helper()
	k, err := m.Kernel(name)
	require.NoError(t, err)
	return k
}

func TestGPUMetalFillLandsAndReadsBack(t *testing.T) {
	dev, mod := openMetal(t)
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	const n = 100000
	buf, err := dev.Alloc(4 * n)
	require.NoError(t, err)
	defer buf.Free()
	fill := kernel(t, mod, "fill_u32")
	cfg := runtime.LaunchConfig{Grid: runtime.Dim3{X: (n + 255) / 256, Y: 1, Z: 1}, Block: runtime.Dim3{X: 256, Y: 1, Z: 1}}
	for v := uint32(1); v <= 200; v++ { // crosses the 64-dispatch commit
		require.NoError(t, s.Launch(fill, cfg, buf, v, uint32(n)))
	}
	ev, err := s.Record()
	require.NoError(t, err)
	require.NoError(t, ev.Wait(context.Background()))
	got := make([]uint32, n)
	require.NoError(t, runtime.Download(buf, got))
	for i, v := range got {
		require.Equal(t, uint32(200), v, "element %d", i)
	}
	// Half the buffer, through an offset pointer.
	require.NoError(t, s.Launch(fill, cfg, buf.At(4*n/2), uint32(7), uint32(n/2)))
	require.NoError(t, s.Synchronize(context.Background()))
	require.NoError(t, runtime.Download(buf, got))
	require.Equal(t, uint32(200), got[n/2-1])
	require.Equal(t, uint32(7), got[n/2])

	d, err := s.TimeGPU(context.Background(), func() error { return s.Launch(fill, cfg, buf, uint32(9), uint32(n)) })
	require.NoError(t, err)
	t.Logf("one fill of %d words: %v on the GPU", n, d)
	require.Greater(t, d, time.Duration(0))
}

func TestGPUMetalOversizedThreadgroupIsRejectedAndTheDeviceStaysUsable(t *testing.T) {
	dev, mod := openMetal(t)
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	buf, err := dev.Alloc(4096)
	require.NoError(t, err)
	defer buf.Free()
	cfg := runtime.LaunchConfig{Grid: runtime.Dim3{X: 1, Y: 1, Z: 1}, Block: runtime.Dim3{X: 128, Y: 1, Z: 1}}
	err = s.Launch(kernel(t, mod, "bounded_fill_u32"), cfg, buf, uint32(1), uint32(1024))
	var le *runtime.LaunchError
	require.ErrorAs(t, err, &le, "%v", err)
	require.ErrorIs(t, err, metal.ErrInvalidLaunch)
	require.ErrorContains(t, err, "maxTotalThreadsPerThreadgroup 64")
	cfg.SharedMem = 1 << 30
	err = s.Launch(kernel(t, mod, "fill_u32"), cfg, buf, uint32(1), uint32(1024))
	require.ErrorAs(t, err, &le, "dynamic shared memory is refused: %v", err)
	cfg.SharedMem = 0
	require.NoError(t, s.Launch(kernel(t, mod, "fill_u32"), cfg, buf, uint32(5), uint32(1024)))
	require.NoError(t, s.Synchronize(context.Background()))
	require.Nil(t, dev.Lost())
}

func TestGPUMetalWatchdogNamesTheSpinningKernelAndTheSpinLands(t *testing.T) {
	dev, mod := openMetal(t, runtime.WithWatchdog(300*time.Millisecond))
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	stop, err := dev.Alloc(4)
	require.NoError(t, err)
	defer stop.Free()
	out, err := dev.Alloc(4)
	require.NoError(t, err)
	defer out.Free()
	require.NoError(t, runtime.Upload(stop, []uint32{0}))
	one := runtime.LaunchConfig{Grid: runtime.Dim3{X: 1, Y: 1, Z: 1}, Block: runtime.Dim3{X: 1, Y: 1, Z: 1}}
	require.NoError(t, s.Launch(kernel(t, mod, "spin_until"), one, stop, out))
	ev, err := s.Record()
	require.NoError(t, err)
	t0 := time.Now()
	err = ev.Wait(context.Background())
	took := time.Since(t0)
	var wde *runtime.WatchdogError
	require.ErrorAs(t, err, &wde, "%v", err)
	require.Equal(t, "spin_until", wde.Kernel)
	t.Logf("watchdog after %v: %v", took, err)
	require.Less(t, took, 2*time.Second)

	require.NoError(t, runtime.Upload(stop, []uint32{1}))
	deadline := time.Now().Add(10 * time.Second)
	for ev.State() == runtime.Pending && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	require.Equal(t, runtime.Landed, ev.State(), "the spin sees the host's flag and ends: %v", ev.Err())
	rounds := make([]uint32, 1)
	require.NoError(t, runtime.Download(out, rounds))
	t.Logf("spun %d rounds", rounds[0])
	require.Less(t, rounds[0], uint32(0x7fffffff), "stopped by the flag, not by the bound")
}

// An out-of-bounds write 1 TiB past a buffer: Metal should report
// MTLCommandBufferErrorPageFault, which fails the wait with a *FaultError
// and loses the device. Apple GPUs might instead drop the write silently;
// if so this test fails, and that is what it is here to find out.
func TestGPUMetalOutOfBoundsWriteFailsTheWaitAndLosesTheDevice(t *testing.T) {
	dev, mod := openMetal(t)
	s, err := dev.NewStream()
	require.NoError(t, err)
	buf, err := dev.Alloc(4096)
	require.NoError(t, err)
	one := runtime.LaunchConfig{Grid: runtime.Dim3{X: 1, Y: 1, Z: 1}, Block: runtime.Dim3{X: 1, Y: 1, Z: 1}}
	require.NoError(t, s.Launch(kernel(t, mod, "oob_write_u32"), one, buf, uint32(0xBAD), uint64(1)<<40))
	ev, err := s.Record()
	require.NoError(t, err)
	t0 := time.Now()
	err = ev.Wait(context.Background())
	t.Logf("after %v: %v", time.Since(t0), err)
	var fe *runtime.FaultError
	require.ErrorAs(t, err, &fe)
	code, ok := metal.CommandBufferCode(err)
	require.True(t, ok, "the fault carries Metal's command-buffer code")
	require.Equal(t, metal.OwnFault, code.Kind(), "%s", code)
	require.ErrorIs(t, dev.Lost(), runtime.ErrDeviceFault)
	_, err = dev.Alloc(16)
	require.ErrorIs(t, err, runtime.ErrDeviceLost)
	done := make(chan error, 1)
	go func() { done <- dev.Close() }()
	select {
	case err := <-done:
		t.Logf("close after the fault: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("Close on the lost device did not return in 5s")
	}
}
