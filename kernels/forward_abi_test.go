package kernels

import (
	"errors"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// forwardABI is the forward module's contract with the GPU backend that
// launches it (kernels/src/forward.cu; the backend's launcher relies on the
// same list): each kernel's explicit argument sizes in order (8: a device
// pointer; 4: a u32 count or an f32) and its block size.
var forwardABI = func() map[string]struct {
	sizes   []int
	threads int
} {
	type k = struct {
		sizes   []int
		threads int
	}
	m := map[string]k{
		"rope_f32":              {[]int{8, 8, 8, 4, 4, 4, 4}, 256},
		"kv_store_f32":          {[]int{8, 8, 8, 8, 4, 4, 4, 4, 4, 4}, 256},
		"attention_f32":         {[]int{8, 8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4, 4, 4}, 256},
		"attention_gqa_f32":     {[]int{8, 8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4, 4, 4}, 1024},
		"attention_warps_f32":   {[]int{8, 8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4, 4, 4}, 256},
		"attention_prefill_f32": {[]int{8, 8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4, 4, 4}, 256},
		// attention_warps_f32's over key ranges (part for out, then ml,
		// ranges), then the ranges' merge: out, part, ml, tokens, heads,
		// headdim, ranges.
		"attention_split_f32": {[]int{8, 8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4, 4, 4, 8, 4}, 256},
		"attention_merge_f32": {[]int{8, 8, 8, 4, 4, 4, 4}, 128},
		"silu_mul_f32":        {[]int{8, 8, 4, 4}, 256},
		"add_f32":             {[]int{8, 8, 4}, 256},
		"copy_rows_f32":       {[]int{8, 8, 8, 4, 4}, 256},
		// The kernels over a half-precision KV cache: their f32-cache twins'
		// arguments (set below).
		// The fused rope + kv store.
		"rope_kv_store_f32": {[]int{8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4}, 256},
		// It and attention_warps_f32 in one launch: attention's arguments,
		// then inv_freq, slots, num_slots, the q|k|v partials ws, bias, parts, and o's image xs, split.
		"rope_attention_warps_f32": {[]int{8, 8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4, 4, 4, 8, 8, 4, 8, 8, 4, 8, 4}, 256},
	}
	for _, n := range []string{"kv_store_f32", "rope_kv_store_f32", "attention_f32", "attention_warps_f32", "rope_attention_warps_f32", "attention_split_f32", "attention_prefill_f32"} {
		m[n+"_kv16"] = m[n]
	}
	for _, w := range []string{"f32", "f16", "bf16"} {
		m["embed_"+w] = k{[]int{8, 8, 8, 4, 4, 4}, 256}
		m["rmsnorm_"+w] = k{[]int{8, 8, 8, 4, 4, 4}, 256}
		m["rmsnorm_fused_"+w] = k{[]int{8, 8, 8, 8, 8, 4, 4, 4, 4, 8, 4}, 256}
		m["matmul_"+w] = k{[]int{8, 8, 8, 8, 4, 4, 4, 4}, 256}
		// rmsnorm_W and matmul_W's one row in one launch: y, x, w, bias,
		// nw, in, n, eps, silu.
		m["norm_matvec_"+w] = k{[]int{8, 8, 8, 8, 8, 4, 4, 4, 4}, 256}
	}
	for _, w := range []string{"f16", "bf16"} { // the tensor-core matmul: 16-bit weights only
		m["matmul_tc_"+w] = k{[]int{8, 8, 8, 8, 4, 4, 4, 4}, 256}
		m["tc_split_x_"+w] = k{[]int{8, 8, 4, 4}, 256}
		m["matmul_tcx_"+w] = k{[]int{8, 8, 8, 8, 4, 4, 4, 4}, 256}
		// The warpgroup-MMA pair: the split image, then y, xs, w, bias, ws,
		// cnt, rows, in, out, accumulate, ks.
		m["wg_split_x_"+w] = k{[]int{8, 8, 4, 4}, 256}
		m["wg_silu_split_x_"+w] = k{[]int{8, 8, 4, 4}, 256}
		m["matmul_wg_"+w] = k{[]int{8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4}, 256}
		m["matmul_wgs_"+w] = k{[]int{8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4}, 384} // matmul_wg_W's, 3 warpgroups
	}
	return m
}()

// TestForwardModuleABI: every shipped forward artifact (each gfx code
// object, each PTX and cubin, and the MSL source: Metal is a shipped port) holds
// exactly the ABI's kernels, with its argument sizes and block size (the
// MSL's [[max_total_threads_per_threadgroup]]), and no hidden arguments for
// a launcher to fill. A kernel missing from forward.metal, or declared
// there with another argument size or block, fails it.
func TestForwardModuleABI(t *testing.T) {
	m, err := Manifest()
	require.NoError(t, err)
	want := make([]string, 0, len(forwardABI))
	for name := range forwardABI {
		want = append(want, name)
	}
	sort.Strings(want)
	n := 0
	for _, a := range m.Artifacts {
		if a.Module != "forward" {
			continue
		}
		n++
		var got []string
		for _, k := range a.Kernels {
			got = append(got, k.Name)
			abi := forwardABI[k.Name]
			var sizes []int
			for _, p := range k.ExplicitParams() {
				sizes = append(sizes, p.Size)
			}
			require.Equalf(t, abi.sizes, sizes, "%s %s: argument sizes", a.Path, k.Name)
			require.Equalf(t, len(k.Params), len(k.ExplicitParams()), "%s %s: hidden arguments", a.Path, k.Name)
			require.Equalf(t, abi.threads, k.MaxThreadsPerBlock, "%s %s: block size", a.Path, k.Name)
		}
		sort.Strings(got)
		require.Equal(t, want, got, a.Path)
	}
	require.Equal(t, len(wantAMD)+len(wantPTX)+len(wantCubin)+1, n, "one forward artifact per shipped target, its cubins, and the MSL source")
	_, infos, err := Load("forward", FormatMSL, "")
	require.NoError(t, err, "the forward module ships its Metal port")
	require.Len(t, infos, len(forwardABI))
}

// TestMSLPortsAreComplete: a module that ships an MSL source ports every
// kernel of its .cu (the same names as its PTX), with the same argument
// sizes, and where an MSL kernel declares its block
// ([[max_total_threads_per_threadgroup]]) it is the .cu kernel's KBOUNDS.
// A kernel added to a .cu without its MSL twin fails it.
func TestMSLPortsAreComplete(t *testing.T) {
	mods, err := Modules()
	require.NoError(t, err)
	ported := 0
	for _, mod := range mods {
		_, mslInfos, err := Load(mod, FormatMSL, "")
		if errors.Is(err, ErrNoBinary) {
			continue
		}
		require.NoError(t, err, mod)
		ported++
		_, ptxInfos, err := Load(mod, FormatPTX, "sm_90")
		require.NoError(t, err, mod)
		want := map[string]KernelInfo{}
		for _, ki := range ptxInfos {
			want[ki.Name] = ki
		}
		require.Len(t, mslInfos, len(want), "%s: the MSL source has %d kernels, the .cu %d", mod, len(mslInfos), len(want))
		for _, ki := range mslInfos {
			w, ok := want[ki.Name]
			require.True(t, ok, "%s: %s is not a kernel of the .cu", mod, ki.Name)
			var got, exp []int
			for _, p := range ki.Params {
				got = append(got, p.Size)
			}
			for _, p := range w.ExplicitParams() {
				exp = append(exp, p.Size)
			}
			require.Equal(t, exp, got, "%s %s: argument sizes", mod, ki.Name)
			if ki.MaxThreadsPerBlock != 0 {
				require.Equal(t, w.MaxThreadsPerBlock, ki.MaxThreadsPerBlock, "%s %s: block size", mod, ki.Name)
			}
		}
	}
	require.GreaterOrEqual(t, ported, 3, "sampling, forward and qforward ship MSL sources")
}
