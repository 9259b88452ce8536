package kernels

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDecodeProductsStreamTheirWeightsEvictFirst: a decode step reads
// every weight once and more weights than the L2 holds, so the products'
// weight copies carry an L2 evict-first policy (stream_copy16 and
// fw_stream8 in kernels/src); with the default policy they swept the
// step's activations, KV cache and code out of the L2, and batch-1 decode
// on the H200 ran 4-6% slower. The sm_90 and
// sm_90a PTX must keep the hint in every product decode runs; the sm_80
// PTX (ISA 7.0) cannot have it (TestShippedPTXUsesOnlyItsISA).
func TestDecodeProductsStreamTheirWeightsEvictFirst(t *testing.T) {
	products := []string{"matmul_bf16", "matmul_f16", "matmul_f32", "matmul_tcx_bf16", "matmul_tcx_f16",
		"matmul_tc_bf16", "matmul_tc_f16", "matmul_wg_bf16", "matmul_wg_f16", "matmul_wgs_bf16", "matmul_wgs_f16"}
	for _, arch := range []string{"sm_90", "sm_90a"} {
		entries := ptxEntriesFor(t, "forward", arch)
		for _, name := range products {
			body, ok := entries[name]
			require.True(t, ok, "%s: no %s", arch, name)
			require.True(t, strings.Contains(body, "createpolicy.fractional.L2::evict_first"), "%s: %s makes no evict-first policy", arch, name)
			require.True(t, strings.Contains(body, "L2::cache_hint"), "%s: %s's weight copies carry no L2 hint", arch, name)
		}
		// The hint is for data read once: the norms and the attention read
		// what the step reads again (activations, the KV cache).
		for name, body := range entries {
			if strings.HasPrefix(name, "rmsnorm") || strings.HasPrefix(name, "attention") || strings.Contains(name, "attention_") {
				require.False(t, strings.Contains(body, "evict_first"), "%s: %s streams data evict-first", arch, name)
			}
		}
	}
}
