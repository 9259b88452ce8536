package sampling

import (
	"math"
	"sync"
)

// Launch constants of the Gumbel kernel, gumbel_max_* (kernels/src/sampling.cu).
const (
	GumbelThreads = 512 // threads per block
	// gumbelMinGroupsPerBlock: a block gets at least this many groups of
	// four elements (8 elements per thread), so a split is never mostly
	// launch and reduction overhead.
	gumbelMinGroupsPerBlock = 2 * GumbelThreads
	// gumbelBlocksPerCU: resident 512-thread blocks per SM/CU, as the
	// kernel's launch bounds ask (SP_GUMBEL_MIN_BLOCKS).
	gumbelBlocksPerCU = 2
	maxGumbelSplits   = 1024
)

// GumbelSplits is the number of blocks per row for gumbel_max_* (grid =
// splits * B blocks). Small batches spread over the device, so B = 1 does not
// run on one block, without cutting a row into slices of fewer than 4096
// elements; larger ones get at most one wave of resident blocks, so no
// partial second wave runs on an idle device:
//
//	splits = clamp(min(ceil(ceil(V/4) / 1024), floor(2*CUs / B)), 1, 1024)
//
// On an H200 this one-wave rule beat every rule that aims for several waves
// (tools/gpubench/gumbel_variants.py, docs/sampling.md). computeUnits is the
// device's SM/CU count; <= 0 assumes 132 (an H100/H200).
func GumbelSplits(B, V, computeUnits int) int {
	if B <= 0 || V <= 0 {
		return 1
	}
	if computeUnits <= 0 {
		computeUnits = 132
	}
	groups := (V + 3) / 4
	byV := (groups + gumbelMinGroupsPerBlock - 1) / gumbelMinGroupsPerBlock
	byB := gumbelBlocksPerCU * computeUnits / B
	return max(1, min(byV, byB, maxGumbelSplits))
}

// GumbelMaxCPU draws one token per row from softmax(logits/T) as
// argmax_i(logit_i/T + g_i), g_i = -log(-log u_i), computing exactly what
// gumbel_max_f32 computes on AMDGPU and in the host emulation: the same
// uniforms, the same float32 operations (sp_log), the same lowest-index tie
// rule. On NVPTX the kernel ranks the same scores computed with the hardware
// log (sp_gumbel_score), so tokens may differ at near-ties. It is the
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

// gumbelSlice is one block of gumbel_max_*: the best (score, index)
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
			// Indices only grow here, so strictly greater keeps the lowest
			// index of a tie, as the kernel's per-thread scan does; an
			// all -inf slice stays (-inf, none).
			if sc > bv {
				bv, bi = sc, i
			}
		}
	}
	return bv, bi
}
