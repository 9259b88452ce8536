package kernels

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestForwardKernelsWaitAndNeverTriggerEarly: the GPU backend launches
// every forward kernel with early start (programmatic dependent launch), so
// on sm_90 each one must wait (griddepcontrol.wait) before it touches what
// the kernel ahead writes, or it reads unfinished data; and none triggers
// its dependents (griddepcontrol.launch_dependents), which was measured
// slower on the H200 (kernels/src/forward.cu, fw_early_start).
func TestForwardKernelsWaitAndNeverTriggerEarly(t *testing.T) {
	ptx, _, err := Load("forward", FormatPTX, "sm_90")
	require.NoError(t, err)
	entries := strings.Split(string(ptx), ".entry ")[1:]
	require.Len(t, entries, len(forwardABI))
	for _, body := range entries {
		name := strings.TrimSpace(body[:strings.IndexByte(body, '(')])
		require.True(t, strings.Contains(body, "griddepcontrol.wait"), "%s never waits for the kernel ahead", name)
		require.False(t, strings.Contains(body, "griddepcontrol.launch_dependents"), "%s triggers its dependents early", name)
	}
}
