package kernels

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// ptxEntries splits a PTX module's sm_90 text into its kernels' texts by
// name; ptxEntriesFor, that of arch.
func ptxEntries(t *testing.T, module string) map[string]string {
	return ptxEntriesFor(t, module, "sm_90")
}

func ptxEntriesFor(t *testing.T, module, arch string) map[string]string {
	ptx, _, err := Load(module, FormatPTX, arch)
	require.NoError(t, err)
	out := map[string]string{}
	for _, body := range strings.Split(string(ptx), ".entry ")[1:] {
		out[strings.TrimSpace(body[:strings.IndexByte(body, '(')])] = body
	}
	return out
}

// TestForwardKernelsWaitAndTriggerOnlyBeforeTheirProduct: the GPU backend
// launches every forward and quantized-forward kernel with early start
// (programmatic dependent launch), so on sm_90 each one must wait
// (griddepcontrol.wait) before it touches what the kernel ahead writes, or
// it reads unfinished data. Only tc_split_x_W, which the backend always
// follows with matmul_tcx_W, and rmsnorm_fused_W, which is followed by a
// product when it writes a split image, and matmul_wgs_W, whose gate|up
// can write down's image, trigger their dependents
// (griddepcontrol.launch_dependents), and only after their own wait: the
// product then copies its first weights while the kernel ahead runs
// (matmul_wgs_W's copier before its own wait, on sm_90a: the PTX loaded
// here for sm_90). Triggering
// everywhere left kernels resident and waiting, which was measured slower
// on the H200 (kernels/src/forward.cu, fw_early_start). The quantized
// kernels still trigger first: that was not measured.
func TestForwardKernelsWaitAndTriggerOnlyBeforeTheirProduct(t *testing.T) {
	forward := ptxEntries(t, "forward")
	require.Len(t, forward, len(forwardABI))
	triggers := 0
	for name, body := range forward {
		wait := strings.Index(body, "griddepcontrol.wait")
		require.GreaterOrEqual(t, wait, 0, "%s never waits for the kernel ahead", name)
		trigger := strings.Index(body, "griddepcontrol.launch_dependents")
		if !strings.HasPrefix(name, "tc_split_x_") && !strings.HasPrefix(name, "rmsnorm_fused_") && !strings.HasPrefix(name, "matmul_wgs_") {
			require.Equal(t, -1, trigger, "%s triggers its dependents early", name)
			continue
		}
		triggers++
		require.Greater(t, trigger, wait, "%s triggers before its own wait", name)
		if strings.HasPrefix(name, "matmul_wgs_") {
			continue // a wait on each of its paths: the copier's, the MMAs', the early return's
		}
		require.Equal(t, wait, strings.LastIndex(body, "griddepcontrol.wait"), "%s waits twice", name)
	}
	require.Equal(t, 7, triggers, "tc_split_x_W, rmsnorm_fused_W (with a split for the product after it) and matmul_wgs_W (gate|up before down) trigger")
	quant := ptxEntries(t, "qforward")
	require.NotEmpty(t, quant)
	for name, body := range quant {
		require.True(t, strings.Contains(body, "griddepcontrol.wait"), "%s never waits for the kernel ahead", name)
	}
}
