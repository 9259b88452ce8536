package runtime

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/simgpu"
)

// Stream.Close on a lost device frees the stream's kernel-argument memory
// (host memory outside the Go heap) without calling the driver. Before the
// fix it only marked the stream closed, and nothing freed it.
func TestStreamCloseOnALostDeviceFreesKernelArgumentMemory(t *testing.T) {
	base := hostLive.Load()
	drv := simgpu.New(simgpu.Config{Devices: 1, Kernels: []simgpu.KernelDef{simgpu.OOBWriteU32}})
	dev, err := Open(context.Background(), WithDrivers(drv))
	require.NoError(t, err)
	mod, err := dev.LoadImage([]byte("m"), []KernelSpec{{Name: "oob_write_u32", Params: []ParamSpec{{0, 8, false}, {8, 4, false}, {16, 8, false}}}})
	require.NoError(t, err)
	oob, err := mod.Kernel("oob_write_u32")
	require.NoError(t, err)
	s, err := dev.NewStream()
	require.NoError(t, err)
	other, err := dev.NewStream()
	require.NoError(t, err)
	require.Greater(t, hostLive.Load(), base)
	buf, err := dev.Alloc(4)
	require.NoError(t, err)
	one := LaunchConfig{Grid: Dim3{X: 1, Y: 1, Z: 1}, Block: Dim3{X: 1, Y: 1, Z: 1}}
	require.NoError(t, s.Launch(oob, one, buf, uint32(1), uint64(1)<<40))
	require.ErrorIs(t, s.Synchronize(context.Background()), ErrDeviceFault)
	require.ErrorIs(t, other.Close(), ErrDeviceLost)
	require.ErrorIs(t, s.Close(), ErrDeviceLost)
	require.Equal(t, base, hostLive.Load(), "kernel-argument memory left mapped")
	require.NoError(t, dev.Close())
}
