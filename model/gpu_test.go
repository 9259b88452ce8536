package model

// GPU tests: the GPU backend with the real forward kernels on whatever GPU
// runtime.Open finds (the H200 in the GPU suite's tests section), against
// the CPU backend. They skip without a GPU and fail instead under
// HIPGO_REQUIRE_GPU=1.
//
// The plumbing check re-runs them in CI on the simulated CUDA device
// (gpusim), which loads the real forward PTX's metadata and checks every
// launch against it while the kernels run as Go: it proves the tests and
// the backend's launches are well formed, nothing about the kernels'
// numerics (those equalities are near-tautological there).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/hipgo/hipgo/model/demo"
	"github.com/hipgo/hipgo/model/internal/gpu/gpusim"
	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/model/safetensors"
	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/runtime/driver"
)

const envPlumbing = "HIPGO_MODEL_PLUMBING"

func TestPlumbingOfTheGPUTestsOnASimulatedCUDADevice(t *testing.T) {
	if os.Getenv(envPlumbing) == "1" {
		return
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^TestGPU", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), envPlumbing+"=1", "HIPGO_REQUIRE_GPU=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NotContains(t, string(out), "--- SKIP", "every GPU test ran against the simulation")
	require.Contains(t, string(out), "--- PASS: TestGPUForwardMatchesTheCPU")
	require.Contains(t, string(out), "--- PASS: TestGPUFusedKernelsGiveTheUnfusedLogits")
	require.Contains(t, string(out), "--- PASS: TestGPUBatchGivesEachSequenceItsAloneTokens")
	require.Contains(t, string(out), "--- PASS: TestGPUQuantizedGGUFMatchesTheCPU")
	require.Contains(t, string(out), "--- PASS: TestGPUDecodeGraphsGiveThePlainTokens")
	require.Contains(t, string(out), "--- PASS: TestGPUFaultMidGenerationInADecodeGraph")
	require.Contains(t, string(out), "--- PASS: TestGPUDecodeAttentionKernelsMatchTheCPU")
	require.Contains(t, string(out), "--- PASS: TestGPUHalfKVCacheMatchesTheCPU")
	require.Contains(t, string(out), "--- PASS: TestGPUWarpgroupProductsMatchTheCPU")
	require.Contains(t, string(out), "--- PASS: TestGPUFoldedAddsMatchTheCPU")
	require.Contains(t, string(out), "--- PASS: TestGPURoPEInAttentionMatchesTheCPU")
}

func openGPU(t testing.TB) *runtime.Device {
	t.Helper()
	var opts []runtime.Option
	if os.Getenv(envPlumbing) == "1" {
		opts = append(opts, runtime.WithDrivers(gpusim.Driver(4<<30, nil)))
	}
	dev, err := runtime.Open(context.Background(), opts...)
	if errors.Is(err, runtime.ErrNoDevice) {
		testenv.NeedGPU(t, err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, dev.Close()) })
	t.Logf("device: %s arch %s", dev, dev.Info().Arch)
	return dev
}

// Tolerances for GPU logits against the CPU forward, max|d| / max|logit|:
// the kernels accumulate in float32 in another order than the CPU, and every
// layer rounds its activations, so half-precision weights (whose products
// the CPU also rounds differently) get 1e-3 and float32 ones 1e-5.
const (
	tolHalf = 1e-3
	tolF32  = 1e-5
)

type gpuCase struct {
	name  string
	load  func(opts ...Option) (*Model, error)
	vocab int
	tol   float64
}

func gpuCases(t *testing.T) []gpuCase {
	spec := func(s modeltest.Spec) func(opts ...Option) (*Model, error) {
		fsys := specFS(t, s)
		return func(opts ...Option) (*Model, error) {
			return LoadFS(fsys, append([]Option{WithoutTokenizer()}, opts...)...)
		}
	}
	llama := modeltest.Llama3Tiny()
	llama.DType = safetensors.BF16
	qwen := modeltest.Qwen2Tiny()
	qwen.DType = safetensors.F16
	smol := modeltest.SmolLMTiny()
	smol.DType = safetensors.F32
	// 64 prompt and 64 decode tokens must fit.
	qwen.MaxPos, smol.MaxPos = 256, 256
	return []gpuCase{
		{"demo-bf16", func(opts ...Option) (*Model, error) { return LoadFS(demo.FS(), opts...) }, 4096, tolHalf},
		{"llama3-gqa-scaling-bf16", spec(llama), llama.Vocab, tolHalf},
		{"qwen2-bias-f16", spec(qwen), qwen.Vocab, tolHalf},
		{"smollm-tied-f32", spec(smol), smol.Vocab, tolF32},
	}
}

// TestGPUForwardMatchesTheCPU proves the GPU backend's logits agree with the
// CPU backend's within the tolerances above over a 64-token prompt (every
// position) and 64 decode steps, and that greedy decoding on the device
// gives the CPU's 64 tokens exactly.
func TestGPUForwardMatchesTheCPU(t *testing.T) {
	dev := openGPU(t)
	ctx := context.Background()
	for _, c := range gpuCases(t) {
		t.Run(c.name, func(t *testing.T) {
			cm, err := c.load()
			require.NoError(t, err)
			gm, err := c.load(WithDevice(dev))
			require.NoError(t, err)
			defer func() { require.NoError(t, gm.Close()) }()
			prompt := testTokens(64, c.vocab)
			cs, gs := cm.NewSession(), gm.NewSession()
			defer gs.Close()
			worst := 0.0
			forwardBoth(t, cs, gs, prompt, 64, c.vocab, func(_ int, want, got []float32) {
				worst = max(worst, relDiff32(want, got))
			})
			t.Logf("%s: max|d|/max|logit| = %.3g over the prompt and 64 decode steps (tolerance %g)", c.name, worst, c.tol)
			require.LessOrEqual(t, worst, c.tol)

			opts := GenerateOptions{MaxTokens: 64}
			wantRes, err := cm.GenerateTokens(ctx, prompt[:8], opts, nil)
			require.NoError(t, err)
			gotRes, err := gm.GenerateTokens(ctx, prompt[:8], opts, nil)
			require.NoError(t, err)
			require.Equal(t, wantRes.Tokens, gotRes.Tokens, "greedy tokens")
			t.Logf("%s: %d greedy tokens identical; GPU decode %.0f tokens/s", c.name, len(gotRes.Tokens), gotRes.DecodeTokensPerSecond())
		})
	}
}

// TestGPUDecodeAttentionKernelsMatchTheCPU proves on the device that the
// decode steps routed to each decode attention kernel (on CUDA,
// launch.go: rope_attention_warps_f32 over tables of 128 and 256 keys for
// one sequence, attention_split_f32 then attention_merge_f32 over 512;
// and rope_attention_warps_f32 for 32 and 128 sequences of a model with 2
// kv heads) give the CPU forward's logits within the float32 tolerance
// (one sequence of a float32 SmolLM, prompts of 100, 250 and 350 tokens,
// 8 decode steps each), and that 32 and then 128 sequences decoded in one
// batch each get greedily the tokens the CPU gives it alone (a float32
// Llama-3, prompts of 100 to 131 tokens, 6 tokens each); on CUDA each of
// those kernels was launched.
func TestGPUDecodeAttentionKernelsMatchTheCPU(t *testing.T) {
	dev := openGPU(t)
	n := testGPUDecodeAttention(t, dev)
	t.Logf("launches: %v", n)
	for _, k := range []string{"rope_attention_warps_f32", "attention_split_f32", "attention_merge_f32"} {
		if dev.Backend() == driver.CUDA {
			require.Positive(t, n[k], k)
		} else {
			require.Zero(t, n[k], k)
		}
	}
}

// testGPUDecodeAttention runs TestGPUDecodeAttentionKernelsMatchTheCPU's
// checks on dev and returns the models' launches of the kernels that run
// attention_warps_f32's body (its own, rope_attention_warps_f32 with
// rope_kv_store_f32's in front, attention_split_f32 over key ranges) and of
// attention_merge_f32.
func testGPUDecodeAttention(t *testing.T, dev *runtime.Device) map[string]int64 {
	ctx := context.Background()
	load := func(s modeltest.Spec, opts ...Option) *Model {
		t.Helper()
		m, err := LoadFS(specFS(t, s), append([]Option{WithoutTokenizer()}, opts...)...)
		require.NoError(t, err)
		return m
	}
	smol := modeltest.SmolLMTiny()
	smol.DType, smol.MaxPos = safetensors.F32, 512
	cm, gm := load(smol), load(smol, WithDevice(dev))
	defer func() { require.NoError(t, gm.Close()) }()
	for _, n := range []int{100, 250, 350} {
		cs, gs := cm.NewSession(), gm.NewSession()
		worst := 0.0
		forwardBoth(t, cs, gs, testTokens(n, smol.Vocab), 8, smol.Vocab, func(step int, want, got []float32) {
			if step >= 0 {
				worst = max(worst, relDiff32(want, got))
			}
		})
		gs.Close()
		t.Logf("one sequence after %d tokens: 8 decode steps, max|d|/max|logit| = %.3g (tolerance %g)", n, worst, tolF32)
		require.LessOrEqual(t, worst, tolF32, "after %d tokens", n)
	}

	llama := modeltest.Llama3Tiny()
	llama.MaxPos = 512
	cl, gl := load(llama), load(llama, WithDevice(dev), WithKVCacheTokens(32768))
	defer func() { require.NoError(t, gl.Close()) }()
	const prompts, steps = 32, 6
	prompt := make([][]uint32, prompts)
	want := make([][]uint32, prompts)
	for i := range prompt {
		prompt[i] = testTokens(100+2*i, llama.Vocab)[i:]
		res, err := cl.GenerateTokens(ctx, prompt[i], GenerateOptions{MaxTokens: steps}, nil)
		require.NoError(t, err)
		want[i] = res.Tokens
	}
	// 32 sequences (64 blocks of 2 kv heads over tables of 128 keys), then
	// 128 (256 blocks): attention_warps_f32, sequence i on prompt i % 32.
	for _, seqs := range []int{32, 128} {
		b := gl.NewBatch()
		index := addSeqs(t, b, prompt, seqs)
		got := make([][]uint32, seqs)
		for range steps {
			toks, err := b.Step(ctx)
			require.NoError(t, err)
			for _, tok := range toks {
				got[index[tok.Seq]] = append(got[index[tok.Seq]], tok.ID)
			}
		}
		b.Close()
		for i := range seqs {
			require.Equal(t, want[i%prompts], got[i][:len(want[i%prompts])], "%d sequences: sequence %d", seqs, i)
		}
		t.Logf("%d sequences in one batch: %d greedy tokens each, the CPU's", seqs, steps)
	}
	n := map[string]int64{}
	for _, k := range []string{"attention_warps_f32", "rope_attention_warps_f32", "attention_split_f32", "attention_merge_f32"} {
		n[k] = gm.be.(*gpuBackend).b.Launched(k) + gl.be.(*gpuBackend).b.Launched(k)
	}
	return n
}

// forwardBoth feeds prompt (every position's logits) and then steps single
// tokens to sessions a and b alike, and hands each call's logits from both
// to check (step -1 is the prompt).
func forwardBoth(t *testing.T, a, b *Session, prompt []uint32, steps, vocab int, check func(step int, aLogits, bLogits []float32)) {
	t.Helper()
	ctx := context.Background()
	feed := func(step int, toks []uint32, all bool) {
		al, err := a.Forward(ctx, toks, all)
		require.NoError(t, err)
		bl, err := b.Forward(ctx, toks, all)
		require.NoError(t, err)
		check(step, al, bl)
	}
	feed(-1, prompt, true)
	for i := range steps {
		feed(i, []uint32{uint32((i*37 + 3) % vocab)}, false)
	}
}

// TestGPUWarpgroupProductsMatchTheCPU: a 64-row and a 32-row prefill of a bf16 model
// whose gate|up (in whole) and down (in in 16 parts) products are the ones
// launch.go gives the warpgroup MMA (both matmul_wgs_bf16; matmul_wg_bf16
// is launched for none) gives the CPU's logits within tolHalf: on a
// compute capability 9.0 GPU, whose forward module is the sm_90a PTX,
// through the warpgroup MMA (the launches counted),
// elsewhere through the tc_split_x + matmul_tcx pair; and with
// HIPGO_GPU_WGMMA=0 through the pair everywhere.
func TestGPUWarpgroupProductsMatchTheCPU(t *testing.T) {
	dev := openGPU(t)
	spec := warpgroupSpec()
	fsys := specFS(t, spec)
	cm, err := LoadFS(fsys, WithoutTokenizer())
	require.NoError(t, err)
	hopper := dev.Info().Arch == "sm_90"
	for _, rows := range []int{64, 32} {
		t.Run(fmt.Sprintf("rows%d", rows), func(t *testing.T) { testGPUWarpgroupProducts(t, dev, fsys, cm, rows, hopper) })
	}
}

func testGPUWarpgroupProducts(t *testing.T, dev *runtime.Device, fsys fstest.MapFS, cm *Model, rows int, hopper bool) {
	ctx := context.Background()
	prompt := testTokens(rows, 512)
	want, err := cm.NewSession().Forward(ctx, prompt, true)
	require.NoError(t, err)
	for _, wg := range []string{"1", "0"} {
		t.Setenv(EnvGPUWarpgroupMMA, wg)
		got, launched := forwardOnGPU(t, fsys, dev, prompt)
		d := relDiff32(want, got)
		n := [2]int64{launched("matmul_wg_bf16"), launched("matmul_wgs_bf16")}
		t.Logf("HIPGO_GPU_WGMMA=%s: %d matmul_wg_bf16 and %d matmul_wgs_bf16 launches, max|d|/max|logit| = %.3g (tolerance %g)", wg, n[0], n[1], d, tolHalf)
		require.LessOrEqual(t, d, tolHalf)
		if wg == "1" && hopper {
			require.Equal(t, [2]int64{0, 2}, n, "gate|up and down on the warpgroup MMA, both matmul_wgs_bf16")
		} else {
			require.Zero(t, n)
		}
	}
}

// forwardOnGPU loads fsys on dev, returns the logits of every row of
// prompt and the backend's launch counts, and closes the model.
func forwardOnGPU(t *testing.T, fsys fstest.MapFS, dev *runtime.Device, prompt []uint32) ([]float32, func(string) int64) {
	t.Helper()
	gm, err := LoadFS(fsys, WithoutTokenizer(), WithDevice(dev))
	require.NoError(t, err)
	s := gm.NewSession()
	got, err := s.Forward(context.Background(), prompt, true)
	require.NoError(t, err)
	s.Close()
	b := gm.be.(*gpuBackend).b
	require.NoError(t, gm.Close())
	return got, b.Launched
}

// TestGPUFoldedAddsMatchTheCPU: foldSpec's 32-row forward (every row's
// logits) gives the CPU's logits within tolHalf with the folded adds (on
// a compute capability 9.0 GPU: o and down in both layers run on
// matmul_wgs_W and leave their partials to rmsnorm_fused_W) and without
// them (HIPGO_GPU_FOLD_ADDS=0: o and down on the pair). That the fold
// writes the bytes of the product's own adds is model/internal/hostkern's
// TestMatMulWGLeavesItsParts.
func TestGPUFoldedAddsMatchTheCPU(t *testing.T) {
	dev := openGPU(t)
	ctx := context.Background()
	spec := foldSpec()
	fsys := specFS(t, spec)
	cm, err := LoadFS(fsys, WithoutTokenizer())
	require.NoError(t, err)
	prompt := testTokens(32, spec.Vocab)
	want, err := cm.NewSession().Forward(ctx, prompt, true)
	require.NoError(t, err)
	hopper := dev.Info().Arch == "sm_90"
	for _, fold := range []string{"1", "0"} {
		t.Setenv(EnvGPUFoldAdds, fold)
		got, launched := forwardOnGPU(t, fsys, dev, prompt)
		d := relDiff32(want, got)
		n := launched("matmul_wgs_bf16")
		t.Logf("HIPGO_GPU_FOLD_ADDS=%s: %d matmul_wgs_bf16 launches, max|d|/max|logit| = %.3g (tolerance %g)", fold, n, d, tolHalf)
		require.LessOrEqual(t, d, tolHalf)
		switch {
		case !hopper:
			require.Zero(t, n)
		case fold == "1":
			require.Equal(t, int64(6), n, "gate|up, and o and down with their partials left, in both layers")
		default:
			require.Equal(t, int64(2), n, "gate|up in both layers; o and down on the pair")
		}
	}
}

// TestGPURoPEInAttentionMatchesTheCPU: 64 and 32 sequences of foldSpec
// with the Llama-3.2-1B heads (32 of 64 dims, 8 kv heads: 512 and 256
// blocks of attention_warps_f32) decoded greedily in one batch each get
// the tokens the CPU gives them alone, with the fused kernels (each decode
// step's rope and kv store run in rope_attention_warps_f32) and without
// them (HIPGO_GPU_FUSED=0: rope_kv_store_f32 and attention_warps_f32). On
// a compute capability 9.0 GPU, with them, at 64 rows q|k|v also runs on
// matmul_wgs_W and leaves its partials to that kernel; at 32 and 64 the
// attention writes o's image and gate|up (intermediate 4224: in whole)
// down's, so a decode layer launches no wg_split_x_W, silu_mul_f32 or
// wg_silu_split_x_W (three splits and silu_mul_f32 without them). That
// the fused kernels write the unfused launches' bytes is
// model/internal/hostkern's TestRoPEAttentionWarps,
// TestRoPEAttentionWarpsImage and TestMatMulWGSilu. The fused kernels run
// again with decode graphs and the lookahead (64 sequences, the tokens
// only).
func TestGPURoPEInAttentionMatchesTheCPU(t *testing.T) {
	dev := openGPU(t)
	ctx := context.Background()
	const steps = 3
	fsys, prompt, want := batchDecodeCase(t, 64, 13, steps)
	hopper := dev.Info().Arch == "sm_90"
	// The launch counts are of plain launches, one step at a time; the
	// last run replays decode graphs with the lookahead, tokens only.
	for _, c := range []struct {
		seqs          int
		fused, graphs string
	}{{64, "1", "0"}, {64, "0", "0"}, {32, "1", "0"}, {32, "0", "0"}, {64, "1", "1"}} {
		fused, seqs := c.fused, c.seqs
		t.Setenv(EnvGPUFused, fused)
		t.Setenv(EnvGPUGraphs, c.graphs)
		t.Setenv(EnvGPULookahead, c.graphs)
		gm, err := LoadFS(fsys, WithoutTokenizer(), WithDevice(dev), WithKVCacheTokens(4096))
		require.NoError(t, err)
		b := gm.NewBatch()
		index := addSeqs(t, b, prompt, seqs)
		got := make([][]uint32, seqs)
		launched := gm.be.(*gpuBackend).b.Launched
		var ropeIn, wgs, splits, silus int64
		silu := func() int64 { return launched("silu_mul_f32") + launched("wg_silu_split_x_bf16") }
		for step := range steps {
			r0, w0, s0, u0 := launched("rope_attention_warps_f32"), launched("matmul_wgs_bf16"), launched("wg_split_x_bf16"), silu()
			toks, err := b.Step(ctx)
			require.NoError(t, err)
			for _, tok := range toks {
				got[index[tok.Seq]] = append(got[index[tok.Seq]], tok.ID)
			}
			if step > 0 { // the decode steps (the first feeds the prompts)
				ropeIn, wgs = ropeIn+launched("rope_attention_warps_f32")-r0, wgs+launched("matmul_wgs_bf16")-w0
				splits += launched("wg_split_x_bf16") - s0
				silus += silu() - u0
			}
		}
		b.Close()
		require.NoError(t, gm.Close())
		for i := range seqs {
			require.Equal(t, want[i], got[i], "%d sequences, HIPGO_GPU_FUSED=%s, graphs %s: sequence %d", seqs, fused, c.graphs, i)
		}
		if c.graphs == "1" {
			t.Logf("HIPGO_GPU_FUSED=1 with decode graphs and the lookahead: %d sequences, %d greedy tokens each, the CPU's", seqs, steps)
			continue
		}
		decodeLayers := int64(steps - 1) // one layer (batchDecodeCase)
		t.Logf("HIPGO_GPU_FUSED=%s: %d sequences, %d greedy tokens each, the CPU's; in %d decode layers %d rope_attention_warps_f32, %d matmul_wgs_bf16, %d wg_split_x_bf16 and %d silu launches",
			fused, seqs, steps, decodeLayers, ropeIn, wgs, splits, silus)
		switch {
		case fused == "0":
			require.Zero(t, ropeIn)
		case dev.Backend() == driver.CUDA:
			require.Equal(t, decodeLayers, ropeIn, "one a decode layer")
		default:
			require.Zero(t, ropeIn, "attention_warps_f32 is CUDA's")
		}
		switch {
		case !hopper:
			require.Zero(t, wgs)
		case fused == "0":
			require.Equal(t, 3*decodeLayers, wgs, "o, gate|up and down; q|k|v on the pair")
			require.Equal(t, 3*decodeLayers, splits, "o's, gate|up's and down's images")
			require.Equal(t, decodeLayers, silus, "silu_mul_f32")
		default:
			if seqs == 64 {
				require.Equal(t, 4*decodeLayers, wgs, "q|k|v, o, gate|up and down")
			} else {
				require.Equal(t, 3*decodeLayers, wgs, "o, gate|up and down; q|k|v on the pair")
			}
			require.Zero(t, splits, "the norms write q|k|v's and gate|up's images, the attention o's, gate|up down's")
			require.Zero(t, silus, "gate|up writes down's image: no silu_mul_f32 or wg_silu_split_x_bf16")
		}
	}
}

// TestGPUFusedKernelsGiveTheUnfusedLogits proves on the device that the
// fused kernels (the default) give the same bytes as the launches they
// replace (HIPGO_GPU_FUSED=0): rope_kv_store_f32 for rope_f32 and
// kv_store_f32, and in the batch-1 steps norm_matvec_W for each layer's
// norms and the products after them (gate|up's with silu_mul_f32). Every
// logit of a 64-token prompt and of 16 batch-1 decode steps is equal, bit
// for bit, and in those steps the fused model launched rmsnorm_W for the
// final norm only, and no silu_mul_f32.
func TestGPUFusedKernelsGiveTheUnfusedLogits(t *testing.T) {
	dev := openGPU(t)
	t.Setenv(EnvGPUGraphs, "0") // count plain launches
	for _, c := range gpuCases(t) {
		t.Run(c.name, func(t *testing.T) {
			fm, err := c.load(WithDevice(dev))
			require.NoError(t, err)
			defer func() { require.NoError(t, fm.Close()) }()
			t.Setenv(EnvGPUFused, "0")
			um, err := c.load(WithDevice(dev))
			require.NoError(t, err)
			defer func() { require.NoError(t, um.Close()) }()
			fs, us := fm.NewSession(), um.NewSession()
			defer fs.Close()
			defer us.Close()
			fused, unfused := fm.be.(*gpuBackend).b.Launched, um.be.(*gpuBackend).b.Launched
			count := func(launched func(string) int64, kernel string) (n int64) {
				for _, dt := range []string{"f32", "f16", "bf16"} {
					n += launched(kernel + "_" + dt)
				}
				return n
			}
			const steps = 16
			var norms, unfusedNorms, silus int64
			forwardBoth(t, us, fs, testTokens(64, c.vocab), steps, c.vocab, func(step int, want, got []float32) {
				require.Equalf(t, want, got, "logits of step %d (-1: the prompt)", step)
				if step == -1 {
					norms, unfusedNorms, silus = count(fused, "rmsnorm"), count(unfused, "rmsnorm"), fused("silu_mul_f32")
				}
			})
			layers := int64(fm.Config().NumLayers)
			require.Equal(t, steps*(2*layers+1), count(unfused, "rmsnorm")-unfusedNorms, "the unfused steps' norms")
			require.Equal(t, int64(steps), count(fused, "rmsnorm")-norms, "the fused steps' norms: the final one only")
			require.Equal(t, silus, fused("silu_mul_f32"), "a batch-1 step of the fused model launched silu_mul_f32")
			require.Equal(t, steps*2*layers, count(fused, "norm_matvec"))
			require.Zero(t, count(unfused, "norm_matvec"))
		})
	}
}

// TestGPUBatchGivesEachSequenceItsAloneTokens is the batch test on the GPU:
// sequences of different lengths joining and leaving between steps each get
// the tokens they get alone (greedy, Gumbel and rejection sampling).
func TestGPUBatchGivesEachSequenceItsAloneTokens(t *testing.T) {
	dev := openGPU(t)
	spec := modeltest.Llama3Tiny()
	spec.DType = safetensors.BF16
	m := loadSpec(t, spec, WithDevice(dev))
	defer func() { require.NoError(t, m.Close()) }()
	requireBatchMatchesAlone(t, m, spec.Vocab)
}

// TestGPUDecodeGraphsGiveThePlainTokens is the graph test on the GPU: decode
// steps replayed from captured graphs give exactly the tokens of plain
// launches while sequences join and leave, and graphs were replayed.
func TestGPUDecodeGraphsGiveThePlainTokens(t *testing.T) {
	dev := openGPU(t)
	spec := modeltest.Llama3Tiny()
	spec.DType = safetensors.BF16
	requireGraphsGiveThePlainTokens(t, dev, spec)
}

// envFaultChild marks the child process of the real-fault test.
// TestGPULookaheadGivesTheTokensWithout: lookahead_sim_test.go's batch
// schedules and generations, on the GPU, where the lookahead's forward runs
// while the host waits for and copies back the step before it.
func TestGPULookaheadGivesTheTokensWithout(t *testing.T) {
	dev := openGPU(t)
	requireLookaheadGivesTheTokensWithout(t, func() *runtime.Device { return dev })
}

// TestGPULookaheadIsDiscardedByOtherCalls: lookahead_sim_test.go's calls
// that discard a lookahead (another token, another order, a Forward, a
// released sequence's blocks taken by a new one), on the GPU.
func TestGPULookaheadIsDiscardedByOtherCalls(t *testing.T) {
	dev := openGPU(t)
	requireLookaheadIsDiscardedByOtherCalls(t, dev, dev)
}

const envFaultChild = "HIPGO_MODEL_FAULT_CHILD"

// TestGPUFaultMidGenerationInADecodeGraph is a real device fault in the
// middle of a batch's decode, from inside a replayed graph: the backend's
// fault hook launches the runtime's out-of-bounds test kernel in the next
// forward pass, which is captured into that step's decode graph, so the
// kernel faults when the graph is replayed. The step fails with the
// runtime's *FaultError, the model reports the lost device and refuses
// new work at once. It runs in a child process: the fault loses the
// device for the rest of the process.
func TestGPUFaultMidGenerationInADecodeGraph(t *testing.T) {
	if os.Getenv(envFaultChild) != "1" {
		openGPU(t) // a GPU is here (or the plumbing's simulation) before spending a child
		exe, err := os.Executable()
		require.NoError(t, err)
		cmd := exec.Command(exe, "-test.run=^TestGPUFaultMidGenerationInADecodeGraph$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), envFaultChild+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("child:\n%s", out)
		require.NoError(t, err)
		require.Contains(t, string(out), "--- PASS: TestGPUFaultMidGenerationInADecodeGraph")
		return
	}
	var opts []runtime.Option
	if os.Getenv(envPlumbing) == "1" {
		opts = append(opts, runtime.WithDrivers(gpusim.Driver(4<<30, nil)))
	}
	dev, err := runtime.Open(context.Background(), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { t.Logf("close of the lost device: %v", dev.Close()) })
	ctx := context.Background()
	spec := modeltest.Llama3Tiny()
	spec.DType = safetensors.BF16
	t.Setenv(EnvGPUGraphs, "1") // every decode step a graph, not by timing: the fault is in a replay
	m := loadSpec(t, spec, WithDevice(dev))
	mod, err := dev.LoadModule("testkernels")
	require.NoError(t, err)
	oob, err := mod.Kernel("oob_write_u32")
	require.NoError(t, err)
	buf, err := dev.Alloc(4)
	require.NoError(t, err)

	b := m.NewBatch()
	for i := range 2 {
		_, err := b.Add(testTokens(5+i, spec.Vocab), GenerateOptions{})
		require.NoError(t, err)
	}
	var made int
	for range 4 { // prefill, a capture, replays
		toks, err := b.Step(ctx)
		require.NoError(t, err)
		made += len(toks)
	}
	before := graphStats(m)
	require.Positive(t, before.Replays)
	aheadBefore := lookaheadStats(m).Enqueued
	one := runtime.Dim3{X: 1, Y: 1, Z: 1}
	require.NoError(t, m.gpu().b.InjectFault(func(s *runtime.Stream) error {
		return s.Launch(oob, runtime.LaunchConfig{Grid: one, Block: one}, buf, uint32(1), uint64(1)<<40)
	}))
	start := time.Now()
	_, err = b.Step(ctx)
	t.Logf("the step failed after %v: %v", time.Since(start), err)
	var be *BatchError
	require.ErrorAs(t, err, &be)
	require.Len(t, be.Seqs, 2)
	var fe *runtime.FaultError
	require.ErrorAs(t, err, &fe, "the runtime's typed fault")
	after := graphStats(m)
	// InjectFault dropped the graphs (once the lookahead enqueued before it
	// had run): the step captured the faulting kernel into its graph and
	// replayed it; then, unless the fault had already surfaced (at the
	// sampler's launch, say), it enqueued its lookahead, one more graph
	// (lookahead.go).
	ahead := lookaheadStats(m).Enqueued - aheadBefore
	require.LessOrEqual(t, ahead, 1)
	require.Equal(t, before.Captures+1+ahead, after.Captures, "the faulting kernel was captured into the step's graph")
	require.Equal(t, before.Replays+1+ahead, after.Replays, "and the step replayed it")
	require.Error(t, m.DeviceLost())
	start = time.Now()
	res, err := m.GenerateTokens(ctx, testTokens(4, spec.Vocab), GenerateOptions{MaxTokens: 4}, nil)
	var lost *runtime.DeviceLostError
	require.ErrorAs(t, err, &lost)
	require.Empty(t, res.Tokens)
	require.Less(t, time.Since(start), time.Second, "refused at once")
	t.Logf("%d tokens made before the fault; then: %v", made, err)
}

// BenchmarkGPUDecode measures greedy batched decode on the GPU backend:
// tokens/s over every sequence of the batch, after a 16-token prompt each
// (prefill outside the timer), on random weights of SmolLM-135M's and the
// demo model's shapes (bf16), with decode graphs (graphs=on) and with
// every kernel launched by the host (graphs=off, HIPGO_GPU_GRAPHS=0).
func BenchmarkGPUDecode(b *testing.B) {
	dev := openGPU(b)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		spec modeltest.Spec
	}{{"smollm135m", modeltest.SmolLM135M()}, {"demo", modeltest.DemoShaped()}} {
		spec := c.spec
		spec.NoTokenizer = true
		for _, graphs := range []string{"on", "off"} {
			b.Setenv(EnvGPUGraphs, map[string]string{"on": "1", "off": "0"}[graphs])
			// A KV pool for 32 whole contexts: the default (four contexts)
			// holds 32 sequences of the demo's 512-token context only for
			// 64 tokens each, and the batch=32 run outgrew it (CacheFullError).
			m := loadSpec(b, spec, WithDevice(dev), WithKVCacheTokens(32*spec.MaxPos))
			for _, n := range []int{1, 32} {
				b.Run(fmt.Sprintf("%s/graphs=%s/batch=%d", c.name, graphs, n), func(b *testing.B) {
					var batch *Batch
					steps := 0
					start := func() {
						b.StopTimer()
						if batch != nil {
							batch.Close()
						}
						batch = m.NewBatch()
						for i := range n {
							_, err := batch.Add(testTokens(16+i, spec.Vocab)[i:], GenerateOptions{})
							require.NoError(b, err)
						}
						_, err := batch.Step(ctx) // prefill
						require.NoError(b, err)
						steps = 1
						b.StartTimer()
					}
					start()
					before := graphStats(m)
					b.ResetTimer()
					for b.Loop() {
						if 16+steps+1 >= m.ContextLength() {
							start()
						}
						_, err := batch.Step(ctx)
						require.NoError(b, err)
						steps++
					}
					b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
					st := graphStats(m)
					replays := st.Replays - before.Replays
					b.ReportMetric(float64(replays)/float64(b.N), "replays/op")
					if graphs == "on" && (st.Err != nil || replays == 0) {
						b.Fatalf("graphs on but none replayed: %+v", st)
					}
					batch.Close()
				})
			}
			require.NoError(b, m.Close())
		}
	}
}

// TestGPUSmallBatchesMatchTheCPU: batched decode of 2 to 16 sequences
// (1B heads, one layer) gives each sequence the CPU's greedy tokens. On
// CUDA from tcRows (2) rows every product runs on the tensor cores (the
// pair, or from wgMinRows the warpgroup MMA on a compute capability 9.0
// GPU), so no decode step launches matmul_W's matvec path for bf16
// weights.
func TestGPUSmallBatchesMatchTheCPU(t *testing.T) {
	dev := openGPU(t)
	ctx := context.Background()
	const steps = 3
	fsys, prompt, want := batchDecodeCase(t, 16, 5, steps)
	t.Setenv(EnvGPUGraphs, "0") // count plain launches
	t.Setenv(EnvGPULookahead, "0")
	gm, err := LoadFS(fsys, WithoutTokenizer(), WithDevice(dev), WithKVCacheTokens(1024))
	require.NoError(t, err)
	defer func() { require.NoError(t, gm.Close()) }()
	launched := gm.be.(*gpuBackend).b.Launched
	for _, seqs := range []int{2, 3, 8, 16} {
		b := gm.NewBatch()
		index := addSeqs(t, b, prompt, seqs)
		got := make([][]uint32, seqs)
		var matvecs int64
		for step := range steps {
			m0 := launched("matmul_bf16")
			toks, err := b.Step(ctx)
			require.NoError(t, err)
			for _, tok := range toks {
				got[index[tok.Seq]] = append(got[index[tok.Seq]], tok.ID)
			}
			if step > 0 {
				matvecs += launched("matmul_bf16") - m0
			}
		}
		b.Close()
		for i := range seqs {
			require.Equal(t, want[i], got[i], "%d sequences: sequence %d", seqs, i)
		}
		if dev.Backend() == driver.CUDA {
			require.Zero(t, matvecs, "%d sequences: a decode step launched matmul_bf16", seqs)
		}
	}
}

// batchDecodeCase is the batched-decode tests' model and prompts: a
// one-layer bf16 Llama with the 1B shape's heads (32 query, 8 kv) whose
// gate|up has 66 tiles of 128 outputs (in whole, so that it can write
// down's image itself), n prompts of 1 to lens + 2 tokens, and each
// prompt's greedy tokens over steps steps from the CPU forward.
func batchDecodeCase(t *testing.T, n, lens, steps int) (fstest.MapFS, [][]uint32, [][]uint32) {
	spec := foldSpec()
	spec.Layers = 1 // cheaper on the sim (and under -race)
	spec.Heads, spec.KVHeads = 32, 8
	spec.Intermediate = 4224
	fsys := specFS(t, spec)
	cm, err := LoadFS(fsys, WithoutTokenizer())
	require.NoError(t, err)
	prompt := make([][]uint32, n)
	want := make([][]uint32, n)
	for i := range prompt {
		prompt[i] = testTokens(3+i%lens, spec.Vocab)[i%3:]
		res, err := cm.GenerateTokens(context.Background(), prompt[i], GenerateOptions{MaxTokens: steps}, nil)
		require.NoError(t, err)
		want[i] = res.Tokens
	}
	return fsys, prompt, want
}

// addSeqs adds n sequences to b, sequence i on prompts[i % len(prompts)]
// with the default options, and returns each one's i by its ID.
func addSeqs(t *testing.T, b *Batch, prompts [][]uint32, n int) map[SeqID]int {
	index := map[SeqID]int{}
	for i := range n {
		id, err := b.Add(prompts[i%len(prompts)], GenerateOptions{})
		require.NoError(t, err)
		index[id] = i
	}
	return index
}
