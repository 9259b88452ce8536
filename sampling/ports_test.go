package sampling

import (
	"errors"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
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
