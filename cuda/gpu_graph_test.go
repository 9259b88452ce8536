package cuda

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGPUGraphCaptureAndReplay proves a capture records launches without
// running them, that the instantiated graph replays them with the argument
// values of the capture (the driver copies them at capture), and that a
// relaxed capture leaves another stream's queries usable meanwhile.
func TestGPUGraphCaptureAndReplay(t *testing.T) {
	_, _, unlock := lockGPU(t)
	defer unlock()
	require.True(t, GraphSupported(), "a CUDA 13 driver exports the graph API")
	m, unload := testKernels(t)
	defer unload()
	f, err := m.Function("fill")
	require.NoError(t, err)
	s, destroy := newStream(t)
	defer destroy()
	other, destroyOther := newStream(t)
	defer destroyOther()

	const n, count, guard = 4096, 4096 + 64, 0xDEADBEEF
	p, err := MemAlloc(4 * count)
	require.NoError(t, err)
	defer func() { require.NoError(t, MemFree(p)) }()
	require.NoError(t, MemsetD32(p, guard, count))

	require.NoError(t, s.BeginCapture(CaptureModeRelaxed))
	require.NoError(t, launchFill(f, s, Dim3{256, 1, 1}, p, 10, n/2))
	require.NoError(t, launchFill(f, s, Dim3{256, 1, 1}, p, 10, n))
	done, err := other.Query()
	require.NoError(t, err, "relaxed capture: another stream's query is allowed")
	require.True(t, done)
	g, err := s.EndCapture()
	require.NoError(t, err)
	require.NotZero(t, g)
	require.NoError(t, s.Synchronize())
	checkFill(t, p, 0, 0, count, guard) // nothing ran

	exec, err := g.Instantiate()
	require.NoError(t, err)
	require.NoError(t, g.Destroy(), "the executable outlives its graph")
	for range 3 {
		require.NoError(t, exec.Launch(s))
	}
	require.NoError(t, s.Synchronize())
	checkFill(t, p, 10, n, count, guard)
	require.NoError(t, exec.Destroy())
}
