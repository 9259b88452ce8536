package runtime_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/runtime/driver"
)

// TestGPULaunchOverTheDefaultSharedMemoryRaisesTheLimit proves on the
// device that Launch raises a kernel's limit for a launch over 48 KiB of
// shared memory (static plus dynamic) and the kernel then has that memory,
// for several sizes in both orders and up to the device's opt-in maximum,
// and that a launch past the maximum is a *LaunchError after which the
// device still works.
func TestGPULaunchOverTheDefaultSharedMemoryRaisesTheLimit(t *testing.T) {
	env := openGPU(t)
	dev := env.Dev
	if dev.Backend() != driver.CUDA {
		t.Skipf("backend %s: the probe kernel is PTX, and only CUDA raises a kernel's shared memory limit", dev.Backend())
	}
	const static = 8192
	optin := dev.Info().MaxSharedOptin
	require.Greater(t, optin, driver.DefaultSharedMem, "sm_80 and later opt in past 48 KiB")
	mod, err := dev.LoadImage([]byte(testenv.SharedProbePTX), []runtime.KernelSpec{{
		Name: "shared_probe", StaticShared: static,
		Params: []runtime.ParamSpec{{Offset: 0, Size: 8, Pointer: true}, {Offset: 8, Size: 4}},
	}})
	require.NoError(t, err)
	k, err := mod.Kernel("shared_probe")
	require.NoError(t, err)
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	out, err := dev.Alloc(8)
	require.NoError(t, err)
	defer out.Free()
	cfg := runtime.LaunchConfig{Grid: runtime.Dim3{X: 1, Y: 1, Z: 1}, Block: runtime.Dim3{X: 1, Y: 1, Z: 1}}
	run := func(dyn int) {
		t.Helper()
		c := cfg
		c.SharedMem = dyn
		require.NoError(t, runtime.Upload(out, []uint32{0, 0}))
		require.NoError(t, s.Launch(k, c, out, uint32(dyn)))
		require.NoError(t, s.Synchronize(context.Background()))
		got := make([]uint32, 2)
		require.NoError(t, runtime.Download(out, got))
		require.Equal(t, []uint32{uint32(dyn), ^uint32(dyn)}, got, "%d bytes of dynamic shared memory", dyn)
	}
	for _, dyn := range []int{driver.DefaultSharedMem - static, 80 << 10, 64 << 10, 100 << 10, optin - static} {
		run(dyn)
	}

	over := cfg
	over.SharedMem = optin - static + 16
	err = s.Launch(k, over, out, uint32(over.SharedMem))
	var le *runtime.LaunchError
	require.ErrorAs(t, err, &le)
	require.Contains(t, le.Reason, fmt.Sprintf("over the device's maximum of %d", optin))
	t.Logf("opt-in maximum %d; past it: %v", optin, err)
	require.NoError(t, dev.Lost())
	run(100 << 10)
}
