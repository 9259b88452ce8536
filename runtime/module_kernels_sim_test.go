package runtime_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/kernels"
	"github.com/hipgo/hipgo/kernels/cubin"
	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/runtime/driver"
)

// TestLoadModuleFallsBackToGenericPTXWhereTheDriverRefusesSM90a: an sm_90
// device gets the arch-specific sm_90a PTX (Module.Target says so); when
// the driver refuses that image (a driver older than CUDA 12.0 knows no
// PTX ISA 8.0), LoadModule loads the generic sm_90 PTX instead; when the
// driver refuses both, the error carries both refusals. An sm_80 device
// never tries sm_90a. (HIPGO_CUDA_JIT=1 leaves the cubin out: the cubin's
// own fallback is TestLoadModuleLoadsTheCubinOnItsSM's.)
func TestLoadModuleFallsBackToGenericPTXWhereTheDriverRefusesSM90a(t *testing.T) {
	t.Setenv(runtime.EnvCUDAJIT, "1")
	open := func(t *testing.T, arch string, refuse int64) (*runtime.Device, *atomic.Int64) {
		t.Helper()
		var loads atomic.Int64
		return openSimCUDA(t, arch, func([]byte) error {
			if loads.Add(1) <= refuse {
				return simgpu.CodeInvalidValue
			}
			return nil
		}), &loads
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

// TestLoadModuleLoadsTheCubinOnItsSM: an sm_90 device is handed the shipped
// sm_90a cubin (machine code, so the driver compiles nothing) and
// Module.Format says so; where the driver refuses the cubin it gets the
// sm_90a PTX; where it refuses both, the error carries both refusals;
// HIPGO_CUDA_JIT=1 hands it the PTX at once. An sm_89 device gets the sm_80
// cubin (machine code runs on its major revision at or above its minor),
// and the sm_80 PTX where the driver refuses it; an sm_100 device, for
// which no machine code is shipped, never sees a cubin. Any other value of
// HIPGO_CUDA_JIT is an error from Open.
func TestLoadModuleLoadsTheCubinOnItsSM(t *testing.T) {
	// image names what the driver was handed: "cubin sm_XX" (an ELF, with
	// the SM its machine code is for), else the PTX's .target.
	image := func(b []byte) string {
		if bytes.HasPrefix(b, []byte("\x7fELF")) {
			f, err := cubin.Parse(b)
			require.NoError(t, err)
			return "cubin " + f.Arch()
		}
		_, rest, ok := strings.Cut(string(b), "\n.target ")
		require.True(t, ok, "PTX text")
		target, _, _ := strings.Cut(rest, "\n")
		return target
	}
	open := func(t *testing.T, arch string, refuse ...string) (*runtime.Device, *[]string) {
		t.Helper()
		var loads []string
		return openSimCUDA(t, arch, func(b []byte) error {
			what := image(b)
			loads = append(loads, what)
			if slices.Contains(refuse, what) {
				return simgpu.CodeInvalidValue
			}
			return nil
		}), &loads
	}

	dev, loads := open(t, "sm_90")
	m, err := dev.LoadModule("testkernels")
	require.NoError(t, err)
	require.Equal(t, kernels.FormatCubin, m.Format())
	require.Equal(t, "sm_90a", m.Target())
	require.Equal(t, []string{"cubin sm_90a"}, *loads)
	_, err = m.Kernel("fill_u32")
	require.NoError(t, err, "the cubin's kernels are described by its PTX's launch facts")

	dev, loads = open(t, "sm_90", "cubin sm_90a")
	m, err = dev.LoadModule("testkernels")
	require.NoError(t, err)
	require.Equal(t, kernels.FormatPTX, m.Format(), "the PTX after the cubin's refusal")
	require.Equal(t, "sm_90a", m.Target())
	require.Equal(t, []string{"cubin sm_90a", "sm_90a"}, *loads)

	dev, loads = open(t, "sm_90", "cubin sm_90a", "sm_90a", "sm_90")
	_, err = dev.LoadModule("testkernels")
	require.ErrorIs(t, err, simgpu.CodeInvalidValue)
	require.Equal(t, []string{"cubin sm_90a", "sm_90a", "sm_90"}, *loads)
	require.Equal(t, 3, strings.Count(err.Error(), simgpu.CodeInvalidValue.Error()), "every refusal in the error: %v", err)

	dev, loads = open(t, "sm_89")
	m, err = dev.LoadModule("testkernels")
	require.NoError(t, err)
	require.Equal(t, kernels.FormatCubin, m.Format())
	require.Equal(t, "sm_80", m.Target())
	require.Equal(t, []string{"cubin sm_80"}, *loads, "sm_80's machine code runs on sm_89")

	dev, loads = open(t, "sm_86", "cubin sm_80")
	m, err = dev.LoadModule("testkernels")
	require.NoError(t, err)
	require.Equal(t, kernels.FormatPTX, m.Format(), "the PTX after the cubin's refusal")
	require.Equal(t, "sm_80", m.Target())
	require.Equal(t, []string{"cubin sm_80", "sm_80"}, *loads)

	dev, loads = open(t, "sm_100")
	m, err = dev.LoadModule("testkernels")
	require.NoError(t, err)
	require.Equal(t, kernels.FormatPTX, m.Format())
	require.Equal(t, []string{"sm_90"}, *loads, "no machine code runs across major revisions")

	t.Setenv(runtime.EnvCUDAJIT, "1")
	dev, loads = open(t, "sm_90")
	m, err = dev.LoadModule("testkernels")
	require.NoError(t, err)
	require.Equal(t, kernels.FormatPTX, m.Format())
	require.Equal(t, []string{"sm_90a"}, *loads)

	t.Setenv(runtime.EnvCUDAJIT, "yes")
	_, err = runtime.Open(context.Background(), runtime.WithDrivers(simgpu.New(simgpu.Config{Devices: 1})))
	require.ErrorIs(t, err, runtime.ErrInvalidArgument)
	require.ErrorContains(t, err, `HIPGO_CUDA_JIT="yes"`)
}

// openSimCUDA opens a simulated CUDA device of arch whose driver passes
// every image LoadModule is given to onLoad (an error refuses it).
func openSimCUDA(t *testing.T, arch string, onLoad func(image []byte) error) *runtime.Device {
	t.Helper()
	drv := simgpu.New(simgpu.Config{Devices: 1, Kind: driver.CUDA, Format: driver.PTX, Arch: arch,
		Kernels: []simgpu.KernelDef{simgpu.FillU32}, OnLoadModule: onLoad})
	dev, err := runtime.Open(context.Background(), runtime.WithDrivers(drv))
	require.NoError(t, err)
	t.Cleanup(func() { _ = dev.Close() })
	return dev
}
