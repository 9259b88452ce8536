package model

// The GPU backend end to end on the simulated device (internal/simgpu posing
// as CUDA sm_90, kernels from model/internal/gpu/gpusim doing the math with
// the CPU backend's operations): uploads, block tables, batching, sampling
// on the device and the error paths, against the CPU backend. The numerics
// of the real kernels are the GPU tests' business (gpu_test.go).

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/model/demo"
	"github.com/hipgo/hipgo/model/internal/gpu/gpusim"
	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/model/safetensors"
	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/runtime/driver"
)

// simDevice opens a simulated GPU (CUDA sm_90: the backend loads the real
// forward and sampling PTX metadata).
func simDevice(t testing.TB, faults *gpusim.Faults) *runtime.Device {
	t.Helper()
	dev, err := runtime.Open(context.Background(), runtime.WithDrivers(gpusim.Driver(2<<30, faults)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = dev.Close() })
	return dev
}

// simSpecs are the layouts the GPU backend must reproduce: GQA with llama3
// rope scaling (f32), Qwen2 biases in f16, tied bf16.
func simSpecs() map[string]modeltest.Spec {
	qwenF16 := modeltest.Qwen2Tiny()
	qwenF16.DType = safetensors.F16
	return map[string]modeltest.Spec{
		"llama3-gqa-f32":   modeltest.Llama3Tiny(),
		"qwen2-bias-f16":   qwenF16,
		"smollm-tied-bf16": modeltest.SmolLMTiny(),
	}
}

// relDiff32 is max|a-b| / max|a|.
func relDiff32(a, b []float32) float64 {
	var d, m float64
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i])-float64(b[i])))
		m = math.Max(m, math.Abs(float64(a[i])))
	}
	return d / m
}

type modelPair struct {
	name     string
	cpu, gpu *Model
	vocab    int
}

func simPairs(t *testing.T, faults *gpusim.Faults) []modelPair {
	var out []modelPair
	for name, spec := range simSpecs() {
		dev := simDevice(t, faults)
		out = append(out, modelPair{name: name, cpu: loadSpec(t, spec), gpu: loadSpec(t, spec, WithDevice(dev)), vocab: spec.Vocab})
	}
	dev := simDevice(t, faults)
	c, err := LoadFS(demo.FS())
	require.NoError(t, err)
	g, err := LoadFS(demo.FS(), WithDevice(dev))
	require.NoError(t, err)
	return append(out, modelPair{name: "demo", cpu: c, gpu: g, vocab: c.cfg.VocabSize})
}

// TestSimGPULogitsAndGreedyTokensMatchTheCPU proves the GPU backend computes
// the CPU backend's logits (prefill of every position, then decode through
// the block-table cache across block boundaries) and that greedy decoding,
// sampled on the device, gives the CPU's tokens.
func TestSimGPULogitsAndGreedyTokensMatchTheCPU(t *testing.T) {
	ctx := context.Background()
	for _, p := range simPairs(t, nil) {
		t.Run(p.name, func(t *testing.T) {
			require.Contains(t, p.gpu.Backend(), "gpu cuda:0")
			prompt := testTokens(21, p.vocab)
			cs, gs := p.cpu.NewSession(), p.gpu.NewSession()
			defer gs.Close()
			want, err := cs.Forward(ctx, prompt, true)
			require.NoError(t, err)
			got, err := gs.Forward(ctx, prompt, true)
			require.NoError(t, err)
			d := relDiff32(want, got)
			t.Logf("prefill logits: max|d|/max|logit| = %.2g", d)
			require.Less(t, d, 1e-5)
			for i := range 20 { // positions 21..40: blocks 2 and 3
				tok := []uint32{uint32((i*37 + 3) % p.vocab)}
				want, err := cs.Forward(ctx, tok, false)
				require.NoError(t, err)
				got, err := gs.Forward(ctx, tok, false)
				require.NoError(t, err)
				require.Less(t, relDiff32(want, got), 1e-5, "decode step %d", i)
			}

			opts := GenerateOptions{MaxTokens: 24}
			wantRes, err := p.cpu.GenerateTokens(ctx, prompt[:5], opts, nil)
			require.NoError(t, err)
			gotRes, err := p.gpu.GenerateTokens(ctx, prompt[:5], opts, nil)
			require.NoError(t, err)
			require.Equal(t, wantRes.Tokens, gotRes.Tokens)
			require.Equal(t, wantRes.Reason, gotRes.Reason)
		})
	}
}

// TestSimGPUTensorCoreMatmulFromTwoRows proves which matmul the backend
// launches on CUDA (the simulated device poses as one): a pass of 2 to 511
// rows runs its bf16/f16 weights through tc_split_x_W + matmul_tcx_W, one
// pair per layer for each of q|k|v, o, gate|up and down (and one more for
// the LM head when every position's logits are asked for), a pass of 512
// rows or more through matmul_tc_W; a pass of one row, the LM head over
// one gathered row, and f32 weights stay on matmul_W; on a ROCm device
// every matmul stays on matmul_W.
func TestSimGPUTensorCoreMatmulFromTwoRows(t *testing.T) {
	ctx := context.Background()
	for name, spec := range simSpecs() {
		t.Run(name, func(t *testing.T) {
			faults := &gpusim.Faults{}
			m := loadSpec(t, spec, WithDevice(simDevice(t, faults)), WithKVCacheTokens(1024))
			sfx := strings.ToLower(string(spec.DType))
			tc, tcx, split := "matmul_tc_"+sfx, "matmul_tcx_"+sfx, "tc_split_x_"+sfx
			perPass := 0
			if spec.DType == safetensors.BF16 || spec.DType == safetensors.F16 {
				perPass = 4 * spec.Layers
			}
			// The third: tc_split_x_W's launches and the norms that write the
			// same fragments (rmsnorm_fused_W; here every launch of it).
			launched := func() [3]int64 {
				norms := faults.Launched("rmsnorm_fused_f32") + faults.Launched("rmsnorm_fused_f16") + faults.Launched("rmsnorm_fused_bf16")
				return [3]int64{faults.Launched(tc), faults.Launched(tcx), faults.Launched(split) + norms}
			}
			s := m.NewSession()
			defer s.Close()
			_, err := s.Forward(ctx, testTokens(1, spec.Vocab), false)
			require.NoError(t, err)
			require.Equal(t, [3]int64{}, launched(), "1 row: matmul_W")
			_, err = s.Forward(ctx, testTokens(2, spec.Vocab), false)
			require.NoError(t, err)
			n := int64(perPass)
			require.Equal(t, [3]int64{0, n, n}, launched(), "2 rows, the LM head over the last one")
			_, err = s.Forward(ctx, testTokens(1, spec.Vocab), false)
			require.NoError(t, err)
			require.Equal(t, [3]int64{0, n, n}, launched(), "decode of one row")
			_, err = s.Forward(ctx, testTokens(20, spec.Vocab), true)
			require.NoError(t, err)
			if perPass > 0 {
				n = 2*n + 1 // the LM head over all 20 rows
			}
			require.Equal(t, [3]int64{0, n, n}, launched(), "20 rows, every position's logits")
			// 511 and 512 rows in one pass: batches of prompts prefilled
			// together (the LM head then runs over one row per sequence).
			prefill := func(seqs, tokens int) {
				t.Helper()
				bt := m.NewBatch()
				defer bt.Close()
				for range seqs {
					_, err := bt.Add(testTokens(tokens, spec.Vocab), GenerateOptions{})
					require.NoError(t, err)
				}
				_, err := bt.Step(ctx)
				require.NoError(t, err)
			}
			head := int64(0) // the LM head over one row per sequence: the pair from 2
			if perPass > 0 {
				head = 1
			}
			prefill(7, 73)
			n += int64(perPass) + head
			require.Equal(t, [3]int64{0, n, n}, launched(), "511 rows")
			prefill(8, 64)
			n += head
			require.Equal(t, [3]int64{int64(perPass), n, n}, launched(), "512 rows: matmul_tc_W")
		})
	}
	// On ROCm the MMA would be emulated: matmul_W at every row count.
	t.Run("rocm", func(t *testing.T) {
		spec := modeltest.SmolLMTiny()
		faults := &gpusim.Faults{}
		dev, err := runtime.Open(ctx, runtime.WithDrivers(gpusim.DriverWith(2<<30, faults, func(c *simgpu.Config) {
			c.Kind, c.Format, c.Arch = driver.ROCm, driver.HSACO, "gfx90a"
		})))
		require.NoError(t, err)
		t.Cleanup(func() { _ = dev.Close() })
		m := loadSpec(t, spec, WithDevice(dev))
		require.Contains(t, m.Backend(), "rocm")
		s := m.NewSession()
		defer s.Close()
		_, err = s.Forward(ctx, testTokens(20, spec.Vocab), true)
		require.NoError(t, err)
		require.Zero(t, faults.Launched("matmul_tc_bf16"))
		require.Equal(t, int64(4*spec.Layers+1), faults.Launched("matmul_bf16"), "every matmul on matmul_W")
	})
}

// TestSimGPUWarpgroupProducts: on a device whose forward module is the
// sm_90a PTX (the simulated device poses as sm_90, which loads it), a pass
// of 2 to 64 rows runs the products that launch.go's wgSplitK finds a
// split of in for through wg_split_x_W and matmul_wgs_W (here gate|up,
// with in whole, and down, with in in 16 parts: the partial sums and the
// zeroed group counts, which the simulated twin checks, with its grid
// rule), the
// others through the tc_split_x_W + matmul_tcx_W pair, and the logits are
// the CPU forward's; HIPGO_GPU_WGMMA=0 keeps the pair everywhere. Gate|up
// writes down's image itself (FW_WG_SILU: neither silu_mul_f32 nor
// wg_silu_split_x_W).
func TestSimGPUWarpgroupProducts(t *testing.T) {
	ctx := context.Background()
	spec := warpgroupSpec()
	files := specFS(t, spec)
	cm := loadFiles(t, files)
	run := func(t *testing.T, n int) (wg, wgs, tcx int64) {
		prompt := testTokens(n, spec.Vocab)
		want, err := cm.NewSession().Forward(ctx, prompt, false)
		require.NoError(t, err)
		faults := &gpusim.Faults{}
		m := loadFiles(t, files, WithDevice(simDevice(t, faults)))
		s := m.NewSession()
		defer s.Close()
		got, err := s.Forward(ctx, prompt, false)
		require.NoError(t, err)
		require.Less(t, relDiff32(want, got), 1e-5)
		images := faults.Launched("tc_split_x_bf16") + faults.Launched("wg_split_x_bf16") + faults.Launched("wg_silu_split_x_bf16")
		if faults.Launched("matmul_wgs_bf16") > 0 {
			require.Zero(t, faults.Launched("silu_mul_f32")+faults.Launched("wg_silu_split_x_bf16"), "gate|up writes down's image")
			images++
		}
		require.Equal(t, productLaunches(faults.Launched, "bf16"), images+faults.Launched("rmsnorm_fused_bf16"), "one image of x for every product: the norms write q|k|v's and gate|up's")
		return faults.Launched("matmul_wg_bf16"), faults.Launched("matmul_wgs_bf16"), faults.Launched("matmul_tcx_bf16")
	}
	for _, n := range []int{64, 32, 2} {
		wg, wgs, tcx := run(t, n)
		require.Equal(t, [3]int64{0, 2, 2}, [3]int64{wg, wgs, tcx}, "%d rows: gate|up and down on matmul_wgs_bf16, none on matmul_wg_bf16, q|k|v and o on the pair", n)
	}
	t.Setenv(EnvGPUWarpgroupMMA, "0")
	wg, wgs, tcx := run(t, 64)
	require.Equal(t, [3]int64{0, 0, 4}, [3]int64{wg, wgs, tcx}, "HIPGO_GPU_WGMMA=0: every product on the pair")
}

// TestSimGPUFoldedAdds: at 2 to 64 rows on an sm_90a device the o and
// down products, split over in, leave their partial sums to the norm after
// them (rmsnorm_fused_W): o's to the MLP norm, down's to the next layer's
// attention norm or, when the final norm reads x itself (every row's
// logits), to the final norm; with one row's logits copy_rows reads x
// first, and the last down adds its own. The logits are the CPU forward's
// either way, and HIPGO_GPU_FOLD_ADDS=0 launches none (o and down then
// run on the pair: their parts of 256 and 512 are under wgSplitK's 1024).
// A down on the warpgroup MMA splits its x from gate|up itself
// (wg_silu_split_x_W: no silu_mul_f32 launch), and every norm writes the
// split image of its output that the product after it reads (no split
// launch), unless HIPGO_GPU_FUSED=0.
// Counted on the
// simulated device, whose twins check each launch's arguments (the
// kernels' bytes are model/internal/hostkern's tests).
func TestSimGPUFoldedAdds(t *testing.T) {
	ctx := context.Background()
	spec := foldSpec()
	prompt := testTokens(32, spec.Vocab)
	files := specFS(t, spec)
	cm := loadFiles(t, files)
	for _, c := range []struct {
		fold, fused string
		all         bool
		parts       int64
		siluSplits  int64 // of the 2 downs, those on the warpgroup MMA with the fused kernels on
	}{
		{"1", "1", true, 4, 2}, {"1", "1", false, 3, 1}, {"0", "1", true, 0, 0}, {"1", "0", true, 4, 0}, {"0", "0", true, 0, 0},
	} {
		t.Run(fmt.Sprintf("fold=%s/fused=%s/all=%v", c.fold, c.fused, c.all), func(t *testing.T) {
			t.Setenv(EnvGPUFoldAdds, c.fold)
			t.Setenv(EnvGPUFused, c.fused)
			want, err := cm.NewSession().Forward(ctx, prompt, c.all)
			require.NoError(t, err)
			faults := &gpusim.Faults{}
			m := loadFiles(t, files, WithDevice(simDevice(t, faults)))
			defer func() { require.NoError(t, m.Close()) }()
			s := m.NewSession()
			defer s.Close()
			got, err := s.Forward(ctx, prompt, c.all)
			require.NoError(t, err)
			require.Less(t, relDiff32(want, got), 1e-5)
			fused := faults.Launched("rmsnorm_fused_bf16")
			require.Zero(t, faults.Launched("rmsnorm_fused_f32")+faults.Launched("rmsnorm_fused_f16"), "the spec's norms are bf16")
			images := faults.Launched("tc_split_x_bf16") + faults.Launched("wg_split_x_bf16") + faults.Launched("wg_silu_split_x_bf16")
			if c.fused == "1" {
				norms := int64(4) // 2 a layer, and the final one where it has 32 rows
				if c.all {
					norms++
				}
				require.Equal(t, norms, fused, "every norm before a tensor-core product writes its image")
				images += fused
			} else {
				require.Equal(t, c.parts, fused, "only the folded products' norms")
			}
			require.Equal(t, productLaunches(faults.Launched, "bf16"), images, "one image of x for every product")
			require.Equal(t, 2+c.parts, faults.Launched("matmul_wgs_bf16"), "gate|up (in 2 parts) and each folded product on the warpgroup MMA; the others on the pair")
			require.Equal(t, c.siluSplits, faults.Launched("wg_silu_split_x_bf16"))
			require.Equal(t, 2-c.siluSplits, faults.Launched("silu_mul_f32"), "silu_mul_f32 wherever down splits its x otherwise")
		})
	}
}

// TestSimGPUDecodeAttentionRouting: which decode attention kernel a
// batched decode step launches on CUDA (launch.go's attentionKernel), by
// the step's block tables (what they can hold: the longest sequence's
// blocks, padded to a power of two, times 16 keys), its sequences and the
// model's heads:
//   - attention_split_f32 (then attention_merge_f32) for up to 8 query
//     heads a kv head where attention_warps_f32's blocks (tokens *
//     kv_heads) fill at most one an SM (132 on the simulated device) and
//     the tables hold 512 keys or more (two ranges of 256 or more);
//   - attention_gqa_f32, from there, for 128 of its blocks (tokens *
//     kv_heads) or more, 2 to 4 query heads a kv head, head_dim 65 to 128,
//     over tables of 512 keys or more;
//   - attention_warps_f32, from there, for up to 8 query heads a kv head;
//     in these decode steps as rope_attention_warps_f32 (rope_kv_store_f32
//     not launched), unless HIPGO_GPU_FUSED=0;
//   - attention_f32 otherwise, and on ROCm always.
//
// Counted on the simulated device, whose twin of each is the CPU attention
// after checking the launch against the kernel's grid rule and shapes (the
// kernels' own checks are in model/internal/hostkern); the other sim tests
// hold the logits to the CPU forward's.
func TestSimGPUDecodeAttentionRouting(t *testing.T) {
	ctx := context.Background()
	kernels := []string{"attention_f32", "attention_gqa_f32", "attention_warps_f32", "rope_attention_warps_f32", "attention_split_f32"}
	// decodeKernel: the one decode attention kernel of the second step of a
	// batch of seqs sequences, the first with a prompt of first tokens, the
	// others of one.
	decodeKernel := func(t *testing.T, dev *runtime.Device, faults *gpusim.Faults, spec modeltest.Spec, seqs, first int) string {
		t.Helper()
		m := loadSpec(t, spec, WithDevice(dev), WithKVCacheTokens(16384))
		b := m.NewBatch()
		defer b.Close()
		_, err := b.Add(testTokens(first, spec.Vocab), GenerateOptions{})
		require.NoError(t, err)
		for range seqs - 1 {
			_, err := b.Add(testTokens(1, spec.Vocab), GenerateOptions{})
			require.NoError(t, err)
		}
		_, err = b.Step(ctx)
		require.NoError(t, err)
		before := make([]int64, len(kernels))
		for i, k := range kernels {
			before[i] = faults.Launched(k)
		}
		_, err = b.Step(ctx)
		require.NoError(t, err)
		got := ""
		for i, k := range kernels {
			if n := faults.Launched(k) - before[i]; n > 0 {
				require.Empty(t, got, "both %s and %s launched", got, k)
				require.GreaterOrEqual(t, n, int64(spec.Layers), k)
				got = k
			}
		}
		return got
	}
	gqa := modeltest.Llama3Tiny() // 4 heads, 2 kv heads, head_dim 16
	gqa.MaxPos = 1024
	wide := gqa
	wide.Hidden = 4 * 80 // head_dim 80
	mha := gqa
	mha.KVHeads = mha.Heads
	nine := gqa // 9 query heads a kv head
	nine.Heads, nine.KVHeads, nine.Hidden = 18, 2, 18*8
	faults := &gpusim.Faults{}
	dev := simDevice(t, faults)
	cases := []struct {
		name        string
		spec        modeltest.Spec
		seqs, first int
		want        string
	}{
		{"1 sequence, tables of 128", gqa, 1, 100, "attention_warps_f32"},
		{"1 sequence, tables of 256", gqa, 1, 250, "attention_warps_f32"},
		{"1 sequence, tables of 512", gqa, 1, 350, "attention_split_f32"},
		{"32 sequences, tables of 128", gqa, 32, 100, "attention_warps_f32"},
		{"31 sequences, tables of 16", gqa, 31, 10, "attention_warps_f32"},
		{"3 sequences, tables of 16", gqa, 3, 10, "attention_warps_f32"},
		{"64 sequences, tables of 16", gqa, 64, 10, "attention_warps_f32"},
		{"31 sequences, tables of 512", gqa, 31, 300, "attention_split_f32"},
		{"66 sequences, tables of 512", gqa, 66, 300, "attention_split_f32"},
		{"67 sequences, tables of 512", gqa, 67, 300, "attention_warps_f32"},
		{"64 sequences, tables of 512, head_dim 80", wide, 64, 300, "attention_split_f32"},
		{"67 sequences, tables of 512, head_dim 80", wide, 67, 300, "attention_gqa_f32"},
		{"67 sequences, tables of 256, head_dim 80", wide, 67, 250, "attention_warps_f32"},
		{"MHA, 33 sequences, tables of 512", mha, 33, 300, "attention_split_f32"},
		{"MHA, 34 sequences, tables of 512", mha, 34, 300, "attention_warps_f32"},
		{"9 heads a kv head, 32 sequences, tables of 256", nine, 32, 250, "attention_f32"},
		{"9 heads a kv head, 1 sequence, tables of 512", nine, 1, 350, "attention_f32"},
		{"128 sequences, tables of 16", gqa, 128, 10, "attention_warps_f32"},
		{"128 sequences, tables of 512", gqa, 128, 300, "attention_warps_f32"},
		{"128 sequences, tables of 512, head_dim 80", wide, 128, 300, "attention_gqa_f32"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := c.want
			if want == "attention_warps_f32" {
				want = "rope_attention_warps_f32"
			}
			stores := faults.Launched("rope_kv_store_f32")
			require.Equal(t, want, decodeKernel(t, dev, faults, c.spec, c.seqs, c.first))
			if want == "rope_attention_warps_f32" {
				require.Equal(t, int64(c.spec.Layers), faults.Launched("rope_kv_store_f32")-stores, "only the first step's layers store k and v themselves")
			}
		})
	}
	// With the fused kernels off, the decode steps of attention_warps_f32's
	// cases launch it (the other cases do not depend on the switch).
	t.Run("HIPGO_GPU_FUSED=0", func(t *testing.T) {
		t.Setenv(EnvGPUFused, "0")
		for _, c := range cases {
			if c.want != "attention_warps_f32" {
				continue
			}
			t.Run(c.name, func(t *testing.T) {
				require.Equal(t, c.want, decodeKernel(t, dev, faults, c.spec, c.seqs, c.first))
			})
		}
	})
	// On ROCm (not measured there) every decode step keeps attention_f32.
	rf := &gpusim.Faults{}
	rdev, err := runtime.Open(ctx, runtime.WithDrivers(gpusim.DriverWith(2<<30, rf, func(c *simgpu.Config) {
		c.Kind, c.Format, c.Arch = driver.ROCm, driver.HSACO, "gfx90a"
	})))
	require.NoError(t, err)
	t.Cleanup(func() { _ = rdev.Close() })
	for _, c := range []struct{ seqs, first int }{{1, 350}, {1, 250}, {64, 300}} {
		require.Equal(t, "attention_f32", decodeKernel(t, rdev, rf, gqa, c.seqs, c.first), "rocm, %d sequences, the first of %d tokens", c.seqs, c.first)
	}
	require.Equal(t, "attention_f32", decodeKernel(t, rdev, rf, gqa, 128, 10), "rocm, 128 sequences (attention_warps_f32's case on CUDA)")
}

// TestSimGPULongDecodeSplitsTheKeys: decode steps over long tables with
// few sequences cut each sequence's keys into ranges (attention_split_f32,
// then attention_merge_f32 adds them up) and still give the CPU's logits
// and, in a batch of sequences 600, 300 and 40 tokens long (each cut by
// its own length), each sequence's greedy tokens alone. The twins compute
// each range's share and the merge from the launch's own buffers, so a
// launcher that placed the shares, their maxima and sums, or the ranges
// wrongly fails here.
func TestSimGPULongDecodeSplitsTheKeys(t *testing.T) {
	ctx := context.Background()
	spec := modeltest.Llama3Tiny()
	spec.MaxPos = 1024
	faults := &gpusim.Faults{}
	cpuM := loadSpec(t, spec)
	gpuM := loadSpec(t, spec, WithDevice(simDevice(t, faults)), WithKVCacheTokens(4096))
	prompt := testTokens(600, spec.Vocab)
	cs, gs := cpuM.NewSession(), gpuM.NewSession()
	defer gs.Close()
	_, err := cs.Forward(ctx, prompt, false)
	require.NoError(t, err)
	_, err = gs.Forward(ctx, prompt, false)
	require.NoError(t, err)
	splits, merges := faults.Launched("attention_split_f32"), faults.Launched("attention_merge_f32")
	for i := range 6 {
		tok := []uint32{uint32((i*37 + 3) % spec.Vocab)}
		want, err := cs.Forward(ctx, tok, false)
		require.NoError(t, err)
		got, err := gs.Forward(ctx, tok, false)
		require.NoError(t, err)
		require.Less(t, relDiff32(want, got), 1e-5, "decode step %d", i)
	}
	require.Equal(t, int64(6*spec.Layers), faults.Launched("attention_split_f32")-splits)
	require.Equal(t, int64(6*spec.Layers), faults.Launched("attention_merge_f32")-merges)

	prompts := [][]uint32{prompt, testTokens(300, spec.Vocab), testTokens(40, spec.Vocab)}
	b := gpuM.NewBatch()
	defer b.Close()
	ids := map[SeqID]int{}
	for i, p := range prompts {
		id, err := b.Add(p, GenerateOptions{})
		require.NoError(t, err)
		ids[id] = i
	}
	splits = faults.Launched("attention_split_f32")
	got := make([][]uint32, len(prompts))
	for range 6 {
		toks, err := b.Step(ctx)
		require.NoError(t, err)
		for _, tok := range toks {
			got[ids[tok.Seq]] = append(got[ids[tok.Seq]], tok.ID)
		}
	}
	require.Greater(t, faults.Launched("attention_split_f32"), splits, "the batch's decode steps split the keys")
	for i, p := range prompts {
		res, err := cpuM.GenerateTokens(ctx, p, GenerateOptions{MaxTokens: 6}, nil)
		require.NoError(t, err)
		require.Equal(t, res.Tokens, got[i][:len(res.Tokens)], "sequence %d", i)
	}
}

// TestSimGPUPrefillAttentionFromSixteenTokens: a chunk of 16 query tokens
// or more, averaging 8 or more per sequence, runs attention_prefill_f32
// (the simulated twin faults a launch off forward.cu's grid rule,
// ceil(tokens/16) * heads); one of fewer tokens, or a batched decode step,
// keeps a kernel of one query a token (attention_warps_f32, with rope
// inside in a decode step). The other sim tests compare the logits with
// the CPU forward's; here the launches are counted.
func TestSimGPUPrefillAttentionFromSixteenTokens(t *testing.T) {
	ctx := context.Background()
	spec := modeltest.Llama3Tiny()
	faults := &gpusim.Faults{}
	m := loadSpec(t, spec, WithDevice(simDevice(t, faults)))
	s := m.NewSession()
	defer s.Close()
	L := int64(spec.Layers)
	oneQuery := func() int64 {
		return faults.Launched("attention_f32") + faults.Launched("attention_warps_f32") + faults.Launched("rope_attention_warps_f32")
	}
	var prefill, decode int64
	for _, n := range []int{15, 16, 1, 37, 2} {
		_, err := s.Forward(ctx, testTokens(n, spec.Vocab), false)
		require.NoError(t, err)
		dp, dd := faults.Launched("attention_prefill_f32")-prefill, oneQuery()-decode
		prefill, decode = prefill+dp, decode+dd
		if n >= 16 {
			require.Equal(t, L, dp, "a %d-token step: attention_prefill_f32 once per layer", n)
			require.Zero(t, dd, "a %d-token step", n)
		} else {
			require.Zero(t, dp, "a %d-token step", n)
			require.GreaterOrEqual(t, dd, L, "a %d-token step: a one-query kernel in every layer", n) // a decode graph's capture launches too
		}
	}
	// Batched steps: 20 sequences of one token each (20 tokens, but one
	// per tile row) keep a one-query kernel; two 16-token prompts in one
	// step (two runs averaging a whole tile) take the tiled kernel.
	for _, c := range []struct {
		seqs, prompt int
		tiled        bool
	}{{20, 1, false}, {2, 16, true}} {
		b := m.NewBatch()
		for i := range c.seqs {
			_, err := b.Add(testTokens(c.prompt+i%2, spec.Vocab)[:c.prompt], GenerateOptions{})
			require.NoError(t, err)
		}
		_, err := b.Step(ctx)
		require.NoError(t, err)
		dp, dd := faults.Launched("attention_prefill_f32")-prefill, oneQuery()-decode
		prefill, decode = prefill+dp, decode+dd
		if c.tiled {
			require.Equal(t, L, dp, "%d sequences of %d tokens", c.seqs, c.prompt)
			require.Zero(t, dd, "%d sequences of %d tokens", c.seqs, c.prompt)
		} else {
			require.Zero(t, dp, "%d sequences of %d tokens", c.seqs, c.prompt)
			require.GreaterOrEqual(t, dd, L, "%d sequences of %d tokens", c.seqs, c.prompt) // and a decode graph's capture
		}
		b.Close()
	}
}

// TestSimGPUChunkedStepsMatch proves steps longer than one pass through the
// layers (the backend splits a step's token list into chunks) give the same
// logits and the same batches: prompts and sequences cross chunk boundaries
// and each chunk gathers its own last tokens.
func TestSimGPUChunkedStepsMatch(t *testing.T) {
	ctx := context.Background()
	spec := modeltest.Llama3Tiny()
	dev := simDevice(t, nil)
	chunked := loadSpec(t, spec, WithDevice(dev), func(o *options) { o.gpuStepTokens = 5 })
	prompt := testTokens(23, spec.Vocab)
	want, err := loadSpec(t, spec).NewSession().Forward(ctx, prompt, true)
	require.NoError(t, err)
	got, err := chunked.NewSession().Forward(ctx, prompt, true)
	require.NoError(t, err)
	require.Less(t, relDiff32(want, got), 1e-5)
	requireBatchMatchesAlone(t, chunked, spec.Vocab)
}

// batchRef is what a sequence generates alone.
type batchCase struct {
	prompt []uint32
	opts   GenerateOptions
	join   int // the step before which it is added
	steps  int // tokens it takes before it is removed
}

// TestBatchGivesEachSequenceItsAloneTokens proves, on both backends, that
// sequences of different lengths stepping together, joining and leaving
// between steps, each get exactly the tokens they get alone: greedy, sampled
// (the Gumbel kernel on the device) and filtered (the rejection kernel).
// Removing sequences frees their KV-cache blocks.
func TestBatchGivesEachSequenceItsAloneTokens(t *testing.T) {
	spec := modeltest.Llama3Tiny()
	dev := simDevice(t, nil)
	t.Run("cpu", func(t *testing.T) { requireBatchMatchesAlone(t, loadSpec(t, spec), spec.Vocab) })
	t.Run("gpu", func(t *testing.T) { requireBatchMatchesAlone(t, loadSpec(t, spec, WithDevice(dev)), spec.Vocab) })
	// Each row of a batched decode pass has its own q/k norms.
	qwen3 := modeltest.Qwen3Tiny()
	t.Run("cpu-qwen3", func(t *testing.T) { requireBatchMatchesAlone(t, loadSpec(t, qwen3), qwen3.Vocab) })
	// Each row of a batched decode pass has its own sliding window.
	gemma3 := modeltest.Gemma3Tiny()
	t.Run("cpu-gemma3", func(t *testing.T) { requireBatchMatchesAlone(t, loadSpec(t, gemma3), gemma3.Vocab) })
	gemma2 := modeltest.Gemma2Tiny()
	t.Run("cpu-gemma2", func(t *testing.T) { requireBatchMatchesAlone(t, loadSpec(t, gemma2), gemma2.Vocab) })
	// Each row of a batched decode pass takes LongRoPE's long factors when
	// its own position passes the original context (8 here), as alone.
	phi3 := modeltest.Phi3Tiny()
	phi3.LongRoPE.OriginalMaxPositionEmbeddings = 8
	t.Run("cpu-phi3", func(t *testing.T) { requireBatchMatchesAlone(t, loadSpec(t, phi3), phi3.Vocab) })
}

// requireBatchMatchesAlone runs sequences of different lengths and sampling
// options through one Batch, joining and leaving between steps, and checks
// each against what it generates alone.
func requireBatchMatchesAlone(t *testing.T, m *Model, vocab int) {
	ctx := context.Background()
	cases := []batchCase{
		{prompt: testTokens(3, vocab), opts: GenerateOptions{}, join: 0, steps: 12},
		{prompt: testTokens(17, vocab)[4:], opts: GenerateOptions{Temperature: 0.9, TopP: 1, Seed: 5}, join: 0, steps: 5},
		{prompt: testTokens(30, vocab), opts: GenerateOptions{Temperature: 1.1, TopK: 20, TopP: 0.9, Seed: 9}, join: 2, steps: 9},
		{prompt: testTokens(1, vocab), opts: GenerateOptions{}, join: 3, steps: 6},
		{prompt: testTokens(9, vocab)[2:], opts: GenerateOptions{Temperature: 0.7, TopP: 1, MinP: 0.05, Seed: 2}, join: 6, steps: 8},
	}
	alone := make([][]uint32, len(cases))
	for i, c := range cases {
		o := c.opts
		o.MaxTokens = c.steps
		res, err := m.GenerateTokens(ctx, c.prompt, o, nil)
		require.NoError(t, err)
		alone[i] = res.Tokens
	}
	var freeBefore int
	if g, ok := m.be.(*gpuBackend); ok {
		freeBefore = g.b.FreeBlocks()
	}
	b := m.NewBatch()
	ids := make([]SeqID, len(cases))
	got := make([][]uint32, len(cases))
	running := map[SeqID]int{}
	for step := 0; step < 20; step++ {
		for i, c := range cases {
			if c.join == step {
				id, err := b.Add(c.prompt, c.opts)
				require.NoError(t, err)
				ids[i], running[id] = id, i
			}
		}
		if b.Len() == 0 {
			break
		}
		toks, err := b.Step(ctx)
		require.NoError(t, err)
		require.Len(t, toks, b.Len())
		for _, tok := range toks {
			i := running[tok.Seq]
			got[i] = append(got[i], tok.ID)
			// Generate stops at EOS; the batch leaves that to its caller.
			if len(got[i]) == len(alone[i]) || len(got[i]) == cases[i].steps {
				require.NoError(t, b.Remove(tok.Seq))
				delete(running, tok.Seq)
			}
		}
	}
	require.Zero(t, b.Len())
	for i := range cases {
		require.Equal(t, alone[i], got[i][:len(alone[i])], "sequence %d (%+v)", i, cases[i].opts)
	}
	require.ErrorIs(t, b.Remove(ids[0]), ErrUnknownSequence)
	if g, ok := m.be.(*gpuBackend); ok {
		require.Equal(t, freeBefore, g.b.FreeBlocks(), "every block back in the pool")
	}
}

// TestSimGPUStepFailures proves a failure in the middle of a step fails
// every sequence of that step with the runtime's typed error: a launch
// rejection leaves the device usable and the next generation gives the
// usual tokens; ctx cancelled mid-step returns ctx.Err() and the next
// generation succeeds; a sticky fault loses the device and every later
// generation fails at once with *runtime.DeviceLostError.
func TestSimGPUStepFailures(t *testing.T) {
	ctx := context.Background()
	spec := modeltest.Qwen2Tiny()
	faults := &gpusim.Faults{}
	dev := simDevice(t, faults)
	m := loadSpec(t, spec, WithDevice(dev))
	prompt := testTokens(6, spec.Vocab)
	opts := GenerateOptions{MaxTokens: 6}
	want, err := m.GenerateTokens(ctx, prompt, opts, nil)
	require.NoError(t, err)
	perStep := faults.Launches() / int64(opts.MaxTokens)
	require.Positive(t, perStep)

	batchOf := func(n int) (*Batch, []SeqID) {
		b := m.NewBatch()
		var ids []SeqID
		for i := range n {
			id, err := b.Add(testTokens(3+i, spec.Vocab), GenerateOptions{})
			require.NoError(t, err)
			ids = append(ids, id)
		}
		return b, ids
	}

	t.Run("rejected launch", func(t *testing.T) {
		// Halfway through the step, after some layers wrote their KV
		// entries: no sequence advanced, so the step is retryable, and the
		// retry gives the tokens a step with no failure gives.
		var alone [][]uint32
		for i := range 3 {
			res, err := m.GenerateTokens(ctx, testTokens(3+i, spec.Vocab), GenerateOptions{MaxTokens: 3}, nil)
			require.NoError(t, err)
			alone = append(alone, res.Tokens)
		}
		b, ids := batchOf(3)
		got3 := make([][]uint32, 3)
		record := func(toks []BatchToken) {
			require.Len(t, toks, 3)
			for i, tok := range toks {
				require.Equal(t, ids[i], tok.Seq)
				got3[i] = append(got3[i], tok.ID)
			}
		}
		toks, err := b.Step(ctx)
		require.NoError(t, err)
		record(toks)
		faults.Arm(perStep/2, simgpu.CodeInvalidValue)
		_, err = b.Step(ctx)
		var be *BatchError
		require.ErrorAs(t, err, &be)
		require.True(t, be.Retryable)
		require.Empty(t, be.Seqs)
		var le *runtime.LaunchError
		require.ErrorAs(t, err, &le)
		require.Equal(t, 3, b.Len(), "a retryable failure removes nothing")
		require.NoError(t, dev.Lost())
		for range 2 {
			toks, err := b.Step(ctx)
			require.NoError(t, err)
			record(toks)
		}
		require.Equal(t, alone, got3)
		for _, id := range ids {
			require.NoError(t, b.Remove(id))
		}

		got, err := m.GenerateTokens(ctx, prompt, opts, nil)
		require.NoError(t, err)
		require.Equal(t, want.Tokens, got.Tokens)
		// A batch keeps working for sequences added after the failure.
		id, err := b.Add(prompt, opts)
		require.NoError(t, err)
		toks, err = b.Step(ctx)
		require.NoError(t, err)
		require.Equal(t, []BatchToken{{Seq: id, ID: want.Tokens[0]}}, toks)
	})

	t.Run("ctx cancelled mid-step", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		start := faults.Launches()
		faults.OnLaunch(func(n int64) {
			if n == start+perStep/3 {
				cancel()
			}
		})
		res, err := m.GenerateTokens(cctx, prompt, GenerateOptions{MaxTokens: 40}, nil)
		faults.OnLaunch(nil)
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, StopCancelled, res.Reason)
		got, err := m.GenerateTokens(ctx, prompt, opts, nil)
		require.NoError(t, err)
		require.Equal(t, want.Tokens, got.Tokens)
	})

	t.Run("sticky fault", func(t *testing.T) {
		b, ids := batchOf(2)
		faults.Arm(perStep/2, simgpu.CodeIllegalAddr)
		_, err := b.Step(ctx)
		var be *BatchError
		require.ErrorAs(t, err, &be)
		require.ElementsMatch(t, ids, be.Seqs)
		require.True(t, errors.Is(err, runtime.ErrDeviceFault) || errors.Is(err, runtime.ErrDeviceLost), "%v", err)
		var fe *runtime.FaultError
		require.ErrorAs(t, err, &fe, "the runtime's typed fault: %v", err)
		require.Error(t, dev.Lost())

		res, err := m.GenerateTokens(ctx, prompt, opts, nil)
		var lost *runtime.DeviceLostError
		require.ErrorAs(t, err, &lost, "%v", err)
		require.Equal(t, StopError, res.Reason)
		require.Empty(t, res.Tokens)
	})
}

// TestSimGPUCacheFullFailsOnlyTheSequencesThatNeedBlocks proves a step that
// the KV-cache pool cannot hold runs nothing, fails the sequences that
// needed new blocks and leaves the others to step on.
func TestSimGPUCacheFullFailsOnlyTheSequencesThatNeedBlocks(t *testing.T) {
	ctx := context.Background()
	spec := modeltest.Llama3Tiny()
	dev := simDevice(t, nil)
	m := loadSpec(t, spec, WithDevice(dev), WithContextLength(64), WithKVCacheTokens(64)) // 4 blocks
	b := m.NewBatch()
	small, err := b.Add(testTokens(4, spec.Vocab), GenerateOptions{}) // 1 block
	require.NoError(t, err)
	_, err = b.Step(ctx)
	require.NoError(t, err)
	big, err := b.Add(testTokens(60, spec.Vocab), GenerateOptions{}) // 4 blocks
	require.NoError(t, err)
	_, err = b.Step(ctx)
	var be *BatchError
	require.ErrorAs(t, err, &be)
	require.Equal(t, []SeqID{big}, be.Seqs, "only the sequence that needed blocks")
	require.ErrorContains(t, err, "KV cache full")
	toks, err := b.Step(ctx)
	require.NoError(t, err)
	require.Len(t, toks, 1)
	require.Equal(t, small, toks[0].Seq)
}

// TestDeviceModes proves the string forms: cpu needs no GPU, auto without
// one runs on the CPU and says why, gpu without one is an error naming why,
// and an unknown mode is an option error.
func TestDeviceModes(t *testing.T) {
	spec := modeltest.SmolLMTiny()
	t.Setenv(runtime.EnvBackend, "") // the machine's own backends; CI has none
	for _, tc := range []struct {
		mode string
		ok   bool
	}{{DeviceCPU, true}, {DeviceAuto, true}, {DeviceGPU, false}, {"tpu", false}} {
		t.Run(tc.mode, func(t *testing.T) {
			m, err := LoadFS(specFS(t, spec), WithoutTokenizer(), WithDeviceMode(tc.mode))
			if tc.mode == "tpu" {
				require.ErrorIs(t, err, ErrOptions)
				return
			}
			if _, oerr := runtime.Open(context.Background()); oerr == nil {
				t.Skip("this machine has a GPU: the no-GPU paths cannot be shown here")
			}
			if !tc.ok {
				require.ErrorIs(t, err, ErrNoGPU)
				require.ErrorIs(t, err, runtime.ErrNoDevice, "the reason is runtime.Open's")
				return
			}
			require.NoError(t, err)
			require.Equal(t, "cpu", m.Backend())
			if tc.mode == DeviceAuto {
				require.ErrorIs(t, m.CPUReason(), runtime.ErrNoDevice)
				t.Log(m.CPUReason())
			} else {
				require.NoError(t, m.CPUReason())
			}
		})
	}
}

// TestSimGPUConcurrentGenerations proves generations sharing one GPU model
// (their steps serialized on the backend's stream) give exactly the tokens
// of sequential runs.
func TestSimGPUConcurrentGenerations(t *testing.T) {
	spec := modeltest.SmolLMTiny()
	dev := simDevice(t, nil)
	m := loadSpec(t, spec, WithDevice(dev))
	prompt := testTokens(7, spec.Vocab)
	opts := func(seed uint64) GenerateOptions {
		return GenerateOptions{MaxTokens: 10, Temperature: 1.2, TopK: 50, TopP: 0.95, Seed: seed}
	}
	const n = 4
	seq := make([][]uint32, n)
	for i := range n {
		r, err := m.GenerateTokens(context.Background(), prompt, opts(uint64(i)), nil)
		require.NoError(t, err)
		seq[i] = r.Tokens
	}
	par := make([][]uint32, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r, err := m.GenerateTokens(context.Background(), prompt, opts(uint64(i)), nil)
			require.NoError(t, err)
			par[i] = r.Tokens
		})
	}
	wg.Wait()
	require.Equal(t, seq, par)
	require.NotEqual(t, seq[0], seq[1], "different seeds sample differently")
}

// TestDeviceModesWhenTheGPUCannotHoldTheModel proves auto falls back to the
// CPU when a GPU is found but the model does not fit (the reason is the
// runtime's out-of-memory error, and the model still generates), that gpu
// mode returns that error, and that both close the device they opened.
func TestDeviceModesWhenTheGPUCannotHoldTheModel(t *testing.T) {
	spec := modeltest.SmolLMTiny()
	var opened []*runtime.Device
	tiny := func(o *options) {
		o.openDevice = func(ctx context.Context) (*runtime.Device, error) {
			dev, err := runtime.Open(ctx, runtime.WithDrivers(gpusim.Driver(64<<10, nil)))
			opened = append(opened, dev)
			return dev, err
		}
	}
	m, err := LoadFS(specFS(t, spec), WithoutTokenizer(), WithDeviceMode(DeviceAuto), tiny)
	require.NoError(t, err)
	require.Equal(t, "cpu", m.Backend())
	require.ErrorIs(t, m.CPUReason(), runtime.ErrOutOfMemory)
	_, err = m.GenerateTokens(context.Background(), testTokens(3, spec.Vocab), GenerateOptions{MaxTokens: 2}, nil)
	require.NoError(t, err)

	_, err = LoadFS(specFS(t, spec), WithoutTokenizer(), WithDeviceMode(DeviceGPU), tiny)
	require.ErrorIs(t, err, runtime.ErrOutOfMemory)
	require.Len(t, opened, 2)
	for _, d := range opened {
		_, err := d.Alloc(16)
		require.ErrorIs(t, err, runtime.ErrClosed, "the model closed the device it opened")
	}
}

// productLaunches counts the products that read an image of x (the
// tc_split_x_W pair's and the warpgroup MMA's) of weight type sfx.
func productLaunches(launched func(string) int64, sfx string) int64 {
	return launched("matmul_tcx_"+sfx) + launched("matmul_wg_"+sfx) + launched("matmul_wgs_"+sfx)
}
