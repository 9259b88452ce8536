package sampling

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/kernels"
)

var allBackends = []Backend{BackendROCm, BackendCUDA, BackendMetal, "sim", "vulkan", ""}

// Every backend value, known or not: Supported comes from the table, and
// selectPort returns the table's port or a *NoKernelPortError (errors.Is
// ErrNoKernelPort) whose message names the entry point, the backend and the
// fallback.
func TestSelectPortForEveryBackend(t *testing.T) {
	for _, ports := range []Ports{GumbelMaxPorts(), RejectionPorts()} {
		for _, b := range allBackends {
			port, err := selectPort(ports.Entry, b)
			if ports.For(b) != nil {
				require.True(t, ports.Supported(b))
				require.NoError(t, err)
				require.Equal(t, ports.For(b), port)
				require.NotEmpty(t, port.Module)
				require.NotEmpty(t, port.Kernels)
				continue
			}
			require.False(t, ports.Supported(b))
			require.Nil(t, port)
			require.ErrorIs(t, err, ErrNoKernelPort)
			var np *NoKernelPortError
			require.True(t, errors.As(err, &np))
			require.Equal(t, ports.Entry, np.Entry)
			require.Equal(t, b, np.Backend)
			require.Equal(t, ports.Fallback, np.Fallback)
			require.Contains(t, err.Error(), ports.Entry)
			require.Contains(t, err.Error(), ports.Fallback)
		}
	}
	_, err := selectPort(EntryGumbelMax, "sim")
	require.EqualError(t, err, "sampling.GumbelMax: no kernel port for backend sim; callers take the categorical fallback instead")
	_, err = selectPort(EntryRejection, "sim")
	require.EqualError(t, err, "sampling.Rejection: no kernel port for backend sim; callers take the argpartition fallback instead")
	_, err = selectPort("sampling.Nope", BackendCUDA)
	require.ErrorIs(t, err, ErrNoKernelPort)
}

// Both samplers have a port on each of ROCm, CUDA and Metal, and the Ports
// struct has exactly one field per backend plus Entry and Fallback: a new
// backend field makes this test fail until every table is revisited.
func TestPortTablesCoverEveryBackend(t *testing.T) {
	require.Equal(t, 5, reflect.TypeOf(Ports{}).NumField())
	for _, p := range []Ports{GumbelMaxPorts(), RejectionPorts()} {
		for _, b := range []Backend{BackendROCm, BackendCUDA, BackendMetal} {
			require.True(t, p.Supported(b), "%s on %s", p.Entry, b)
		}
		for _, b := range []Backend{"sim", "", "ROCM"} {
			require.False(t, p.Supported(b), "%s on %q", p.Entry, b)
		}
	}
	// Each Metal kernel declares its threadgroup buffers.
	for _, p := range []Ports{GumbelMaxPorts(), RejectionPorts()} {
		for _, k := range p.Metal.Kernels {
			require.NotEmpty(t, p.Metal.Threadgroup[k], k)
		}
	}
}

// TestPortsNameKernelsTheArtifactsShip holds each port table to the
// embedded artifacts: a backend is listed only where its artifact has every
// kernel the entry point launches (each dtype's variant), and a Metal port's
// threadgroup sizes are the ones its MSL source declares (the manifest's,
// which the Metal adapter sets at dispatch).
func TestPortsNameKernelsTheArtifactsShip(t *testing.T) {
	formats := map[Backend]struct {
		format kernels.Format
		arch   string
	}{
		BackendROCm:  {kernels.FormatHSACO, "gfx1100"},
		BackendCUDA:  {kernels.FormatPTX, "sm_90"},
		BackendMetal: {kernels.FormatMSL, ""},
	}
	for _, p := range []Ports{GumbelMaxPorts(), RejectionPorts()} {
		for b, f := range formats {
			port := p.For(b)
			if port == nil {
				continue
			}
			_, infos, err := kernels.Load(port.Module, f.format, f.arch)
			require.NoError(t, err, "%s on %s", p.Entry, b)
			byName := map[string]kernels.KernelInfo{}
			for _, ki := range infos {
				byName[ki.Name] = ki
			}
			for _, k := range port.Kernels {
				base := strings.TrimSuffix(k, "_f32")
				for _, dt := range []DType{F32, BF16, F16} {
					name := base + "_" + dt.suffix()
					ki, ok := byName[name]
					require.True(t, ok, "%s on %s: %s is not in %s's %s artifact", p.Entry, b, name, port.Module, f.format)
					if b == BackendMetal {
						require.Equal(t, port.Threadgroup[k], ki.Threadgroup, "%s: threadgroup sizes", name)
					}
				}
			}
		}
	}
}
