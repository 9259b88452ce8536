package runtime_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/runtime/driver"
)

// TestLoadModuleFallsBackToGenericPTXWhereTheDriverRefusesSM90a: an sm_90
// device gets the arch-specific sm_90a PTX (Module.Target says so); when
// the driver refuses that image (a driver older than CUDA 12.0 knows no
// PTX ISA 8.0), LoadModule loads the generic sm_90 PTX instead; when the
// driver refuses both, the error carries both refusals. An sm_80 device
// never tries sm_90a.
func TestLoadModuleFallsBackToGenericPTXWhereTheDriverRefusesSM90a(t *testing.T) {
	open := func(t *testing.T, arch string, refuse int64) (*runtime.Device, *atomic.Int64) {
		t.Helper()
		var loads atomic.Int64
		drv := simgpu.New(simgpu.Config{Devices: 1, Kind: driver.CUDA, Format: driver.PTX, Arch: arch,
			Kernels: []simgpu.KernelDef{simgpu.FillU32}, OnCall: func(call string) error {
				if call == "LoadModule" && loads.Add(1) <= refuse {
					return simgpu.CodeInvalidValue
				}
				return nil
			}})
		dev, err := runtime.Open(context.Background(), runtime.WithDrivers(drv))
		require.NoError(t, err)
		t.Cleanup(func() { _ = dev.Close() })
		return dev, &loads
	}

	dev, loads := open(t, "sm_90", 0)
	m, err := dev.LoadModule("testkernels")
	require.NoError(t, err)
	require.Equal(t, "sm_90a", m.Target())
	require.EqualValues(t, 1, loads.Load())

	dev, loads = open(t, "sm_90", 1)
	m, err = dev.LoadModule("testkernels")
	require.NoError(t, err)
	require.Equal(t, "sm_90", m.Target(), "the generic PTX after the refusal")
	require.EqualValues(t, 2, loads.Load())
	_, err = m.Kernel("fill_u32")
	require.NoError(t, err)

	dev, loads = open(t, "sm_90", 2)
	_, err = dev.LoadModule("testkernels")
	require.ErrorIs(t, err, simgpu.CodeInvalidValue)
	require.EqualValues(t, 2, loads.Load(), "one try each")

	dev, loads = open(t, "sm_80", 1)
	_, err = dev.LoadModule("testkernels")
	require.ErrorIs(t, err, simgpu.CodeInvalidValue, "sm_80 PTX is generic: nothing to fall back to")
	require.EqualValues(t, 1, loads.Load())
}
