package gpu

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWarpgroupSplitOfIn walks wgSplitK's rule over the products of three
// model shapes at batched-decode row counts: the warpgroup MMA
// (matmul_wgs_W, the LM head included) from 2 to
// 64 rows where a split of in into about one block an SM keeps 1024 or
// more a block (wgMinSplitK, launch.go says why), the tc_split_x_W +
// matmul_tcx_W pair (0) elsewhere, and
// never without the sm_90a module, under 2 or over 64 rows, for in not a
// multiple of 8 or unaligned weights.
func TestWarpgroupSplitOfIn(t *testing.T) {
	b := &Backend{wg: true}
	const w = 256 // an aligned weight address
	for _, c := range []struct {
		name          string
		rows, in, out int
		ks            int
	}{
		// Llama-3.2-1B (hidden 2048, q|k|v 3072, intermediate 8192, vocab 128256)
		{"1B q|k|v", 64, 2048, 3072, 0},       // 24 groups: 5 parts of 448
		{"1B o", 64, 2048, 2048, 0},           // 16 groups: 8 parts of 256
		{"1B gate|up", 64, 2048, 16384, 2048}, // 128 groups: in whole
		{"1B down", 64, 8192, 2048, 1024},     // 16 groups: 8 parts of 1024
		{"1B LM head", 64, 2048, 128256, 2048},
		{"1B LM head, 33 rows", 33, 2048, 128256, 2048},
		{"1B LM head, 32 rows", 32, 2048, 128256, 2048},
		{"1B LM head, 17 rows", 17, 2048, 128256, 2048},
		{"1B LM head, 16 rows", 16, 2048, 128256, 2048},
		{"1B LM head, 3 rows", 3, 2048, 128256, 2048},
		{"1B LM head, 2 rows", 2, 2048, 128256, 2048},
		{"1B LM head, 1 row", 1, 2048, 128256, 0},
		{"1B gate|up, 32 rows", 32, 2048, 16384, 2048},
		{"1B down, 32 rows", 32, 8192, 2048, 1024},
		{"1B gate|up, 17 rows", 17, 2048, 16384, 2048},
		{"1B q|k|v, 32 rows", 32, 2048, 3072, 0},
		{"1B o, 32 rows", 32, 2048, 2048, 0},
		{"32768 outputs, 32 rows", 32, 2048, 32768, 2048},
		{"1B down, 16 rows", 16, 8192, 2048, 1024},
		{"1B down, 2 rows", 2, 8192, 2048, 1024},
		{"1B down, 1 row", 1, 8192, 2048, 0},
		{"1B down, 65 rows", 65, 8192, 2048, 0},
		// Llama-3-8B (hidden 4096, q|k|v 6144, intermediate 14336): not measured
		{"8B q|k|v", 64, 4096, 6144, 2048}, // 48 groups: 2 parts
		{"8B o", 64, 4096, 4096, 1024},     // 32 groups: 4 parts
		{"8B down", 64, 14336, 4096, 3584}, // 32 groups: 4 parts
		// SmolLM-135M (hidden 576): never
		{"SmolLM LM head", 64, 576, 49152, 0},
		{"SmolLM LM head, 32 rows", 32, 576, 49152, 0},
		{"SmolLM down", 64, 1536, 576, 0},
		{"in not a multiple of 8", 64, 2052, 128256, 0},
	} {
		require.Equal(t, c.ks, b.wgSplitK(c.rows, c.in, c.out, w), c.name)
		if c.ks > 0 {
			require.LessOrEqual(t, ceilDiv(c.out, wgOutTile)*ceilDiv(c.in, c.ks), max(wgBlocks, ceilDiv(c.out, wgOutTile)), c.name)
			require.Zero(t, c.ks%wgStage, c.name)
		}
	}
	require.Zero(t, b.wgSplitK(64, 2048, 128256, w+8), "weights not 16-byte aligned")
	require.Zero(t, (&Backend{}).wgSplitK(64, 2048, 128256, w), "no sm_90a module")
}

// TestFoldedSplitOfIn: wgFoldSplitK, the split of in for a residual
// product whose partials the next norm adds (residualProduct), is
// wgSplitK's rule with parts down to 256 wide: on the 1B shape at 2 to 64
// rows o in 8 parts of 256 (which wgSplitK leaves to the pair), down in 8
// of 1024 as wgSplitK; SmolLM-135M's o and down still on the pair (their
// parts would be 64 wide); never outside 2 to 64 rows.
func TestFoldedSplitOfIn(t *testing.T) {
	b := &Backend{wg: true}
	const w = 256
	for _, c := range []struct {
		name          string
		rows, in, out int
		ks            int
	}{
		{"1B o, 32 rows", 32, 2048, 2048, 256},
		{"1B o, 64 rows", 64, 2048, 2048, 256},
		{"1B o, 17 rows", 17, 2048, 2048, 256},
		{"1B o, 3 rows", 3, 2048, 2048, 256},
		{"1B o, 2 rows", 2, 2048, 2048, 256},
		{"1B o, 1 row", 1, 2048, 2048, 0},
		{"1B o, 65 rows", 65, 2048, 2048, 0},
		{"1B down, 32 rows", 32, 8192, 2048, 1024},
		{"foldSpec down", 32, 4096, 2048, 512},
		{"8B o", 32, 4096, 4096, 1024},
		{"SmolLM o", 32, 576, 576, 0},
		{"SmolLM down", 32, 1536, 576, 0},
	} {
		require.Equal(t, c.ks, b.wgFoldSplitK(c.rows, c.in, c.out, w), c.name)
		if c.ks > 0 {
			require.LessOrEqual(t, ceilDiv(c.out, wgOutTile)*ceilDiv(c.in, c.ks), wgBlocks, c.name+": the partials fit wgPartBytes")
		}
	}
}
