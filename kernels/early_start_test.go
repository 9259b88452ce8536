package kernels

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// ptxEntries splits a PTX module into its kernels' texts by name.
func ptxEntries(t *testing.T, module string) map[string]string {
	ptx, _, err := Load(module, FormatPTX, "sm_90")
	require.NoError(t, err)
	out := map[string]string{}
	for _, body := range strings.Split(string(ptx), ".entry ")[1:] {
		out[strings.TrimSpace(body[:strings.IndexByte(body, '(')])] = body
	}
	return out
}

// TestForwardKernelsWaitAndNeverTriggerEarly: the GPU backend launches
// every forward and quantized-forward kernel with early start (programmatic
// dependent launch), so on sm_90 each one must wait (griddepcontrol.wait)
// before it touches what the kernel ahead writes, or it reads unfinished
// data; and no forward kernel triggers its dependents
// (griddepcontrol.launch_dependents), which was measured slower on the
// H200 (kernels/src/forward.cu, fw_early_start). The quantized kernels
// still trigger first: that was not measured.
func TestForwardKernelsWaitAndNeverTriggerEarly(t *testing.T) {
	forward := ptxEntries(t, "forward")
	require.Len(t, forward, len(forwardABI))
	for name, body := range forward {
		require.True(t, strings.Contains(body, "griddepcontrol.wait"), "%s never waits for the kernel ahead", name)
		require.False(t, strings.Contains(body, "griddepcontrol.launch_dependents"), "%s triggers its dependents early", name)
	}
	quant := ptxEntries(t, "qforward")
	require.NotEmpty(t, quant)
	for name, body := range quant {
		require.True(t, strings.Contains(body, "griddepcontrol.wait"), "%s never waits for the kernel ahead", name)
	}
}
