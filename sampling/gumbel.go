package sampling

import (
	"math"
	"sync"
)

// Launch constants of the Gumbel kernels (kernels/src/sampling.cu).
const (
	GumbelThreads      = 256 // threads per block of gumbel_max_partial_*
	GumbelMergeThreads = 256 // threads per block of gumbel_max_merge
	// gumbelMinGroupsPerBlock: a block gets at least this many groups of
	// four elements (8 elements per thread), so a split is never mostly
	// launch and reduction overhead.
	gumbelMinGroupsPerBlock = 2 * GumbelThreads
	// gumbelBlocksPerCU: 256-thread blocks that fill one SM/CU (2048
	// threads). Measured on an H200: at 2 blocks per CU, B = 64, V = 128256
	// took 59.5 us; the kernel needs full occupancy to hide its latency.
	gumbelBlocksPerCU = 8
	maxGumbelSplits   = 1024
)

// GumbelSplits is the number of blocks per row for gumbel_max_partial_*
// (grid = splits * B blocks). It aims for a full device over the whole
// batch, so B = 1 still spreads over many SMs, without cutting a row into
// slices of fewer than 2048 elements:
//
//	splits = clamp(min(ceil(ceil(V/4) / 512), ceil(8*CUs / B)), 1, 1024)
//
// computeUnits is the device's SM/CU count; <= 0 assumes 132 (an H100/H200).
func GumbelSplits(B, V, computeUnits int) int {
	if B <= 0 || V <= 0 {
		return 1
	}
	if computeUnits <= 0 {
		computeUnits = 132
	}
	groups := (V + 3) / 4
	byV := (groups + gumbelMinGroupsPerBlock - 1) / gumbelMinGroupsPerBlock
	byB := (gumbelBlocksPerCU*computeUnits + B - 1) / B
	return max(1, min(byV, byB, maxGumbelSplits))
}

// GumbelMaxCPU draws one token per row from softmax(logits/T) as
// argmax_i(logit_i/T + g_i), g_i = -log(-log u_i), computing exactly what
// gumbel_max_partial_f32 + gumbel_max_merge compute: the same uniforms, the
// same float32 operations (sp_log), the same lowest-index tie rule. It is the
// reference the GPU check compares against.
//
// temperature 0 (or one whose reciprocal overflows float32) is greedy. A row
// whose best score is -inf (no finite or +inf logit) gets token 0 and is
// named in the returned *InvalidLogitsError; every other row is still
// written. Scores saturate in float32: |logit/T| beyond 3.4e38 becomes ±inf.
func GumbelMaxCPU(tokens []uint32, logits []float32, B, V int, temperature float32, key Key) error {
	const entry = "sampling.GumbelMaxCPU"
	if err := checkShape(entry, logits, B, V, len(tokens)); err != nil {
		return err
	}
	if err := (Params{Temperature: temperature, TopP: 1}).validate(-1); err != nil {
		return err
	}
	invT := GumbelInvTemp(temperature)
	var bad badRows
	forRows(B, V, &noScratch, func(r int, _ *struct{}) {
		tok, st := gumbelRow(logits[r*V:(r+1)*V], uint32(r), invT, key)
		tokens[r] = tok
		if st != StatusOK {
			bad.add(r)
		}
	})
	return bad.err(entry)
}

var noScratch = sync.Pool{New: func() any { return new(struct{}) }}

// gumbelRow is one row of the Gumbel kernels: per-element score, then
// (max, lowest index). invT <= 0, NaN or +inf means greedy.
func gumbelRow(row []float32, r uint32, invT float32, key Key) (uint32, Status) {
	V := uint32(len(row))
	bv, bi := gumbelSlice(row, r, invT, key, 0, (V+3)/4)
	if !(bv > float32(math.Inf(-1))) || bi >= V {
		return 0, StatusInvalidRow
	}
	return bi, StatusOK
}

// gumbelSlice is one block of gumbel_max_partial_*: the best (score, index)
// over groups [g0, g1) of the row, (-inf, none) if the slice is empty.
func gumbelSlice(row []float32, r uint32, invT float32, key Key, g0, g1 uint32) (float32, uint32) {
	greedy := !(invT > 0 && invT <= math.MaxFloat32)
	V := uint32(len(row))
	bv, bi := float32(math.Inf(-1)), uint32(none)
	var w [4]uint32
	for g := g0; g < g1; g++ {
		if !greedy {
			w = Philox4x32([4]uint32{g, counterGumbel, r, 0}, key)
		}
		for q := uint32(0); q < 4; q++ {
			i := g*4 + q
			if i >= V {
				break
			}
			sc := clean(row[i])
			if !greedy {
				sc = float32(sc*invT) + spGumbel(w[q])
			}
			if better(sc, i, bv, bi) {
				bv, bi = sc, i
			}
		}
	}
	return bv, bi
}
