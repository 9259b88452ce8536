package hsa

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/stretchr/testify/require"
)

// TestNoDeviceInit proves that without an AMD GPU hsa_init's failure comes
// back as an *Error (HSA_STATUS_ERROR_OUT_OF_RESOURCES on ROCm 5.2, whose
// runtime cannot open /dev/kfd) in well under a second, and that the
// calls needing an initialised runtime then say so rather than crash.
func TestNoDeviceInit(t *testing.T) {
	needLibrary(t)
	require.True(t, filepath.IsAbs(LibraryPath()))
	start := time.Now()
	err := Init()
	elapsed := time.Since(start)
	if err == nil {
		require.NoError(t, ShutDown())
		t.Skip("hsa_init succeeded: this machine has an HSA agent, the no-device path cannot be observed")
	}
	require.Less(t, elapsed, time.Second)
	var he *Error
	require.ErrorAs(t, err, &he)
	require.Equal(t, "hsa_init", he.Call)
	require.ErrorIs(t, err, ErrOutOfResources)
	t.Logf("real %s: Init() = %q in %v", LibraryPath(), err, elapsed)

	err = ShutDown()
	require.ErrorIs(t, err, ErrNotInitialized)
	_, err = Agents()
	require.ErrorIs(t, err, ErrNotInitialized)
	t.Logf("ShutDown() and Agents() without a runtime: %v", err)
}

// TestGPUAgents proves the agent list and its attributes on a real GPU.
func TestGPUAgents(t *testing.T) {
	needLibrary(t)
	testenv.NeedGPU(t, Init())
	defer func() { require.NoError(t, ShutDown()) }()
	agents, err := Agents()
	require.NoError(t, err)
	gpus := 0
	for _, a := range agents {
		require.NotZero(t, a.Handle())
		if a.DeviceType() != DeviceGPU {
			continue
		}
		gpus++
		require.Regexp(t, `^gfx[0-9a-z]+$`, a.Name())
		require.Contains(t, []uint32{32, 64}, a.WavefrontSize())
		require.Positive(t, a.ComputeUnits())
		t.Logf("GPU agent %#x: %s, wave%d, %d CUs", a.Handle(), a.Name(), a.WavefrontSize(), a.ComputeUnits())
	}
	if gpus == 0 {
		testenv.NeedGPU(t, errNoGPUAgent)
	}
}
