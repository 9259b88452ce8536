package metal

// GPU tests: they run on a Mac with a Metal GPU, skip without one, and fail
// instead under HIPGO_REQUIRE_GPU=1. They have never run (docs/metal.md says
// how to run them); on Linux they do not build.

import (
	"errors"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/testenv"
)

const testMSL = `
#include <metal_stdlib>
using namespace metal;
kernel void add_u32(device uint* out [[buffer(0)]], constant uint& add [[buffer(1)]],
                    constant uint& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  if (i < n) out[i] += add;
}
`

func openDevice(t *testing.T) *Device {
	t.Helper()
	err := Load()
	testenv.NeedGPU(t, err)
	d, err := SystemDefaultDevice()
	if errors.Is(err, ErrNoDevice) {
		testenv.NeedGPU(t, err)
	}
	require.NoError(t, err)
	t.Cleanup(d.Release)
	lim := d.Limits()
	t.Logf("device %q family %s limits %+v allocated %d", d.Name(), d.Family(), lim, d.CurrentAllocatedSize())
	require.NotEmpty(t, d.Name())
	require.NotZero(t, lim.MaxThreadsPerThreadgroup.Width)
	require.NotZero(t, lim.RecommendedMaxWorkingSetSize)
	return d
}

func TestGPUMetalDispatchRunsAndTheHandlerSeesCompleted(t *testing.T) {
	d := openDevice(t)
	lib, err := d.NewLibraryWithSource([]byte(testMSL))
	require.NoError(t, err)
	defer lib.Release()
	fn, err := lib.Function("add_u32")
	require.NoError(t, err)
	defer fn.Release()
	p, err := d.NewComputePipelineState(fn)
	require.NoError(t, err)
	defer p.Release()
	t.Logf("pipeline: max threads %d, width %d, static threadgroup %d", p.MaxTotalThreadsPerThreadgroup, p.ThreadExecutionWidth, p.StaticThreadgroupMemoryLength)
	require.NotZero(t, p.MaxTotalThreadsPerThreadgroup)
	require.NotZero(t, p.ThreadExecutionWidth)

	const n = 1000
	buf, err := d.NewBuffer(4 * n)
	require.NoError(t, err)
	defer buf.Release()
	host := unsafe.Slice((*uint32)(buf.Contents()), n)
	for i := range host {
		host[i] = uint32(i)
	}
	q, err := d.NewCommandQueue()
	require.NoError(t, err)
	defer q.Release()
	cb, err := q.CommandBuffer()
	require.NoError(t, err)
	defer cb.Release()
	enc, err := cb.ComputeEncoder()
	require.NoError(t, err)
	enc.SetPipeline(p)
	enc.SetBuffer(buf, 0, 0)
	add, count := uint32(7), uint32(n)
	require.NoError(t, enc.SetBytes(unsafe.Pointer(&add), 4, 1))
	require.NoError(t, enc.SetBytes(unsafe.Pointer(&count), 4, 2))
	threads := Size{256, 1, 1}
	require.NoError(t, CheckDispatch(threads, 0, p.MaxTotalThreadsPerThreadgroup, p.StaticThreadgroupMemoryLength, d.Limits()))
	enc.Dispatch(Size{(n + 255) / 256, 1, 1}, threads)
	enc.EndEncoding()
	enc.Release()
	done := make(chan error, 1)
	cb.OnCompleted(func(st Status, err error) {
		if err == nil && st != StatusCompleted {
			err = errors.New(st.String())
		}
		done <- err
	})
	cb.Commit()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("completion handler did not run in 10s")
	}
	require.Equal(t, StatusCompleted, cb.Status())
	require.NoError(t, cb.Err())
	for i, v := range host {
		require.Equal(t, uint32(i)+7, v, "element %d", i)
	}
	start, end := cb.GPUTimes()
	t.Logf("GPU time %.1f us", (end-start)*1e6)
	require.GreaterOrEqual(t, end, start)
}

func TestGPUMetalCompileErrorCarriesTheCompilersLog(t *testing.T) {
	d := openDevice(t)
	_, err := d.NewLibraryWithSource([]byte("kernel void broken(device uint* o [[buffer(0)]]) { o[0] = undeclared_name; }"))
	var ce *CompileError
	require.ErrorAs(t, err, &ce)
	require.ErrorIs(t, err, ErrCompile)
	require.Contains(t, ce.Log, "undeclared_name")
	t.Logf("compile error: %v", err)
}

func TestGPUMetalMissingFunctionIsAnError(t *testing.T) {
	d := openDevice(t)
	lib, err := d.NewLibraryWithSource([]byte(testMSL))
	require.NoError(t, err)
	defer lib.Release()
	_, err = lib.Function("no_such_kernel")
	require.ErrorIs(t, err, ErrNilResult)
	require.ErrorContains(t, err, "no_such_kernel")
}
