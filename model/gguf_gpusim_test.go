package model

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/hipgo/hipgo/model/gguf"
	"github.com/hipgo/hipgo/model/internal/cpu"
	"github.com/hipgo/hipgo/model/internal/gpu"
	"github.com/hipgo/hipgo/model/internal/quant"
	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/model/safetensors"
	"github.com/hipgo/hipgo/runtime"
)

// randQuantBlocks makes rows x cols weights of type t as random blocks whose
// factors keep the decoded weights near zero with a spread of about 0.2
// (random quants; the float16 factors set, since random bits would give
// infinities).
func randQuantBlocks(t *testing.T, rng *rand.Rand, typ quant.Type, rows, cols int) []byte {
	rb, err := quant.RowBytes(typ, cols)
	require.NoError(t, err)
	data := make([]byte, rows*rb)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	f16 := func(b []byte, v float64) {
		binary.LittleEndian.PutUint16(b, safetensors.Float32ToF16(float32(v*(0.5+rng.Float64()))))
	}
	_, bs := quant.BlockSize(typ)
	for off := 0; off < len(data); off += bs {
		b := data[off : off+bs]
		switch typ {
		case quant.Q4_0:
			f16(b, 0.04)
		case quant.Q8_0:
			f16(b, 0.003)
		case quant.Q4_1:
			d := 0.04 * (0.5 + rng.Float64())
			binary.LittleEndian.PutUint16(b, safetensors.Float32ToF16(float32(d)))
			binary.LittleEndian.PutUint16(b[2:], safetensors.Float32ToF16(float32(-7.5*d)))
		case quant.Q5_0:
			f16(b, 0.02)
		case quant.Q5_1:
			d := 0.02 * (0.5 + rng.Float64())
			binary.LittleEndian.PutUint16(b, safetensors.Float32ToF16(float32(d)))
			binary.LittleEndian.PutUint16(b[2:], safetensors.Float32ToF16(float32(-15.5*d)))
		case quant.Q4_K:
			f16(b, 0.0005)
			f16(b[2:], 0.0005*7.5)
		case quant.Q5_K:
			f16(b, 0.00025)
			f16(b[2:], 0.00025*15.5)
		case quant.Q6_K:
			f16(b[208:], 0.00005)
		}
	}
	return data
}

// quantizeGGUF replaces every 2-D tensor of a GGUF's tensor list with random
// blocks of the type typeOf gives its name.
func quantizeGGUF(t *testing.T, seed uint64, typeOf func(name string) quant.Type) func([]gguf.Tensor) []gguf.Tensor {
	return func(ts []gguf.Tensor) []gguf.Tensor {
		rng := rand.New(rand.NewPCG(seed, 1))
		for i, tt := range ts {
			if len(tt.Dims) != 2 {
				continue
			}
			typ := typeOf(tt.Name)
			ts[i].Type, ts[i].Data = gguf.Type(typ), randQuantBlocks(t, rng, typ, int(tt.Dims[1]), int(tt.Dims[0]))
		}
		return ts
	}
}

// quantGGUFCase is a tiny GGUF model with quantized matrices.
type quantGGUFCase struct {
	name   string
	spec   modeltest.Spec
	types  func(string) quant.Type
	layers bool // q|k|v and gate|up come unfused
}

// quantGGUFCases cover every block format: 32-element ones on a llama with
// GQA and llama3 rope scaling and on a qwen2 with q/k/v biases, K-quants in
// a tied llama laid out as llama.cpp's Q4_K_M recipe (q|k|v and gate|up of
// mixed types, unfused), Q5_0 and Q5_1 on the llama (q|k|v unfused).
func quantGGUFCases() []quantGGUFCase {
	llama := modeltest.Llama3Tiny() // hidden 64, intermediate 96: 32-element blocks
	qwen := modeltest.Qwen2Tiny()   // q/k/v biases, untied
	qwen.Hidden, qwen.Intermediate, qwen.Heads = 64, 128, 4
	kq := modeltest.SmolLMTiny() // tied; K-quants need rows of 256
	kq.Hidden, kq.Intermediate, kq.Heads, kq.KVHeads, kq.DType = 256, 512, 4, 2, safetensors.F32
	for _, s := range []*modeltest.Spec{&llama, &qwen, &kq} {
		s.NoTokenizer = true
		s.MaxPos = 256
	}
	byName := func(def quant.Type, m map[string]quant.Type) func(string) quant.Type {
		return func(name string) quant.Type {
			for k, v := range m {
				if strings.Contains(name, k) {
					return v
				}
			}
			return def
		}
	}
	return []quantGGUFCase{
		{"llama-q4_0-q8_0-q4_1", llama, byName(quant.Q4_0, map[string]quant.Type{"token_embd": quant.Q8_0, "output.": quant.Q4_1, "ffn_down": quant.Q8_0}), false},
		{"qwen2-q8_0-q4_1", qwen, byName(quant.Q8_0, map[string]quant.Type{"ffn": quant.Q4_1, "token_embd": quant.Q4_0}), false},
		// llama.cpp's Q4_K_M recipe: attn_v and ffn_down in Q6_K, the rest Q4_K;
		// up in Q5_K here so gate|up differ too; the tied table Q6_K.
		{"tied-q4_k_m-mixed", kq, byName(quant.Q4_K, map[string]quant.Type{"attn_v": quant.Q6_K, "ffn_down": quant.Q6_K, "ffn_up": quant.Q5_K, "token_embd": quant.Q6_K}), true},
		// llama.cpp's K recipes store rows that are not a multiple of 256
		// wide in Q5_0 (Q5_1, Q8_0): SmolLM2-135M's Q4_K_M is mostly Q5_0.
		{"llama-q5_0-q5_1", llama, byName(quant.Q5_0, map[string]quant.Type{"ffn_down": quant.Q5_1, "attn_v": quant.Q5_1, "token_embd": quant.Q5_0, "output.": quant.Q5_1}), true},
	}
}

// TestSimGPUQuantizedGGUFMatchesTheCPU runs GGUF models whose matrices are
// every supported block format on the simulated GPU against the CPU
// backend: the device holds the blocks themselves (its weight bytes equal
// the CPU backend's, well under 1.5 bytes a weight), the quantized embed and
// matmul launches (and the unfused q/k/v and gate/up of a Q4_K_M-style
// layer, through scatter_cols_f32 in prefill) give the CPU's logits, and
// greedy decoding gives its tokens.
func TestSimGPUQuantizedGGUFMatchesTheCPU(t *testing.T) {
	cases := quantGGUFCases()
	ctx := context.Background()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := ggufFromSpec(t, c.spec, nil, quantizeGGUF(t, uint64(i+1), c.types))
			dev := simDevice(t, nil)
			cm, err := Load(path, WithoutTokenizer())
			require.NoError(t, err)
			gm, err := Load(path, WithoutTokenizer(), WithDevice(dev))
			require.NoError(t, err)
			defer gm.Close()
			require.Contains(t, gm.Backend(), "gpu cuda:0")
			require.Equal(t, c.layers, gm.be.(*gpuBackend).b.Unfused(), "q|k|v and gate|up unfused")
			cw := cm.be.(*cpuBackend).w
			elems := int64(cw.embed.Rows * cw.embed.Cols)
			if !cw.tied {
				elems += int64(cw.lmHead.Rows * cw.lmHead.Cols)
			}
			for _, l := range cw.layers {
				for _, m := range slices.Concat([]cpu.Matrix{l.qkv, l.o, l.gateUp, l.down}, l.qkvParts, l.gateUpParts) {
					elems += int64(m.Rows * m.Cols)
				}
			}
			require.Equal(t, cm.bytes, gm.bytes, "the device holds the blocks, as the CPU does")
			// Blocks take at most 8.5 bits a weight (Q8_0), float32 32: under
			// 1.5 bytes a weight (with the float32 norms) means no widened copy.
			require.Less(t, gm.bytes, elems*3/2, "%d bytes for %d weights", gm.bytes, elems)
			t.Logf("weights: %d bytes on both backends for %d weights", gm.bytes, elems)

			prompt := testTokens(21, c.spec.Vocab)
			cs, gs := cm.NewSession(), gm.NewSession()
			defer gs.Close()
			want, err := cs.Forward(ctx, prompt, true)
			require.NoError(t, err)
			got, err := gs.Forward(ctx, prompt, true)
			require.NoError(t, err)
			require.False(t, math.IsNaN(float64(want[0])))
			d := relDiff32(want, got)
			t.Logf("prefill logits: max|d|/max|logit| = %.2g", d)
			require.Less(t, d, 1e-5)
			for j := range 12 {
				tok := []uint32{uint32((j*37 + 3) % c.spec.Vocab)}
				want, err := cs.Forward(ctx, tok, false)
				require.NoError(t, err)
				got, err := gs.Forward(ctx, tok, false)
				require.NoError(t, err)
				require.Less(t, relDiff32(want, got), 1e-5, "decode step %d", j)
			}
			opts := GenerateOptions{MaxTokens: 24}
			wantRes, err := cm.GenerateTokens(ctx, prompt[:5], opts, nil)
			require.NoError(t, err)
			gotRes, err := gm.GenerateTokens(ctx, prompt[:5], opts, nil)
			require.NoError(t, err)
			require.Equal(t, wantRes.Tokens, gotRes.Tokens)
		})
	}
}

// TestSimGPURealSmolLM2ChatMatchesTransformers runs the real SmolLM2-135M
// Q4_1 GGUF (Q4_1 layers, a Q8_0 tied table) on the simulated GPU: its
// blocks go to the device as they are, and the chat reply is transformers'
// (testdata/smollm2-135m-instruct-q4_1.json), as on the CPU.
func TestSimGPURealSmolLM2ChatMatchesTransformers(t *testing.T) {
	path := testenv.CacheFile(t, "HIPGO_TEST_SMOLLM2_GGUF", "models/smollm2-135m-instruct-q4_1.gguf")
	g := loadSmolLM2Golden(t)
	m, err := Load(path, WithDevice(simDevice(t, nil)))
	require.NoError(t, err)
	defer m.Close()
	require.Contains(t, m.Backend(), "gpu cuda:0")
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Less(t, m.bytes, fi.Size(), "the device holds the file's blocks, not a widened copy")
	res, err := m.Chat(context.Background(), g.Chat.Messages, GenerateOptions{MaxTokens: 32, Temperature: 0}, func(Token) error { return nil })
	require.NoError(t, err)
	require.Equal(t, g.Chat.ReplyIDs[:len(g.Chat.ReplyIDs)-1], res.Tokens)
	require.Equal(t, g.Chat.Reply, res.Text)
	t.Logf("chat reply on the simulated GPU: %q (%d weight bytes on the device)", res.Text, m.bytes)
}

// TestSimGPUQuantizedPrefillDequantizes: from 64 rows, every quantized
// layer matrix is decoded once to float16 (dequant_Q) and multiplied on the
// tensor cores' f16 route, while one-row steps keep the quantized
// products (matvec_Q): an 80-token prefill gives, to float32
// accumulation, the logits of the same model with its layer matrices
// stored as float16 of their decoded weights (on the CPU), and the decode
// steps after it run matvec_Q (whose products TestSimGPUQuantizedGGUFMatchesTheCPU
// checks).
func TestSimGPUQuantizedPrefillDequantizes(t *testing.T) {
	checkPrefillDequantizes(t, func() *runtime.Device { return simDevice(t, nil) }, 1e-5)
}

// checkPrefillDequantizes is TestSimGPUQuantizedPrefillDequantizes on the
// devices dev opens (TestGPUQuantizedPrefillDequantizes runs it on a GPU),
// with the prefill's logits within tol of the float16-layer model's.
func checkPrefillDequantizes(t *testing.T, dev func() *runtime.Device, tol float64) {
	ctx := context.Background()
	for i, c := range quantGGUFCases() {
		t.Run(c.name, func(t *testing.T) {
			hm, gm := loadWithTwin(t, c, uint64(i+11), dev())
			b := gm.be.(*gpuBackend).b
			prompt := testTokens(80, c.spec.Vocab)
			hs, gs := hm.NewSession(), gm.NewSession()
			defer gs.Close()
			want, err := hs.Forward(ctx, prompt, true)
			require.NoError(t, err)
			got, err := gs.Forward(ctx, prompt, true)
			require.NoError(t, err)
			d := relDiff32(want, got)
			t.Logf("prefill of %d tokens against the float16 layers: max|d|/max|logit| = %.2g", len(prompt), d)
			require.Less(t, d, tol)
			launched := func(prefix string) int64 { return quantLaunches(b, prefix) }
			require.Positive(t, launched("dequant_"), "the prefill's quantized matrices went through dequant_Q")
			require.Positive(t, b.Launched("matmul_tcx_f16")+b.Launched("matmul_tc_f16")+b.Launched("matmul_wgs_f16"), "and the f16 tensor-core products")
			before := launched("matvec1_")
			for j := range 4 {
				got, err := gs.Forward(ctx, []uint32{uint32((j*37 + 3) % c.spec.Vocab)}, false)
				require.NoError(t, err)
				require.False(t, slices.ContainsFunc(got, func(v float32) bool { return math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) }), "decode step %d", j)
			}
			require.Greater(t, launched("matvec1_"), before, "one-row steps keep the quantized products (matvec1_Q)")
		})
	}
}

// TestSimGPUQuantizedBatchDequantizes: a batch of 8 sequences (a step of
// quantDeqSeqs sequences or more) runs a quantized model's products over
// float16 copies of its matrices, so each sequence gets the greedy tokens
// its float16 twin gives alone on the CPU, while one sequence alone (below
// 64 rows) keeps the exact products (TestSimGPUQuantizedGGUFMatchesTheCPU).
func TestSimGPUQuantizedBatchDequantizes(t *testing.T) {
	checkBatchDequantizes(t, func() *runtime.Device { return simDevice(t, nil) })
}

// checkBatchDequantizes is TestSimGPUQuantizedBatchDequantizes on the
// devices dev opens (TestGPUQuantizedBatchDequantizes runs it on a GPU).
func checkBatchDequantizes(t *testing.T, dev func() *runtime.Device) {
	ctx := context.Background()
	for i, c := range quantGGUFCases() {
		t.Run(c.name, func(t *testing.T) {
			hm, gm := loadWithTwin(t, c, uint64(i+31), dev())
			g := gm.be.(*gpuBackend).b
			const seqs, steps = 8, 10
			prompts := make([][]uint32, seqs)
			want := make([][]uint32, seqs)
			for j := range prompts {
				prompts[j] = testTokens(40+j, c.spec.Vocab)[40-3-j:]
				res, err := hm.GenerateTokens(ctx, prompts[j], GenerateOptions{MaxTokens: steps}, nil)
				require.NoError(t, err)
				want[j] = res.Tokens
			}
			b := gm.NewBatch()
			order := map[SeqID]int{}
			for j, p := range prompts {
				id, err := b.Add(p, GenerateOptions{})
				require.NoError(t, err)
				order[id] = j
			}
			got := make([][]uint32, seqs)
			var afterPrefill int64
			for step := range steps {
				toks, err := b.Step(ctx)
				require.NoError(t, err)
				require.Len(t, toks, seqs, "step %d", step)
				for _, tok := range toks {
					got[order[tok.Seq]] = append(got[order[tok.Seq]], tok.ID)
				}
				if step == 0 {
					afterPrefill = quantLaunches(g, "dequant_")
				}
			}
			// Later steps may replay a captured graph, which launches nothing
			// one by one: the decode steps before it show the route.
			deq := quantLaunches(g, "dequant_") - afterPrefill
			require.Positive(t, deq, "the decode steps of %d sequences decoded the matrices to float16", seqs)
			for j := range prompts {
				// Generate stops at EOS; the batch leaves that to its caller.
				n := min(len(want[j]), len(got[j]))
				require.Equal(t, want[j][:n], got[j][:n], "sequence %d", j)
			}
			t.Logf("%d sequences, %d steps: the float16 twin's tokens; %d dequant_Q launches in decode steps", seqs, steps, deq)
		})
	}
}

// loadWithTwin loads case c's model quantized with seed on dev and its
// float16 twin (dequantizedTwin) on the CPU; the device model closes with
// the test.
func loadWithTwin(t *testing.T, c quantGGUFCase, seed uint64, dev *runtime.Device) (twin, gm *Model) {
	quantized := quantizeGGUF(t, seed, c.types)
	path := ggufFromSpec(t, c.spec, nil, quantized)
	halves := ggufFromSpec(t, c.spec, nil, func(ts []gguf.Tensor) []gguf.Tensor { return dequantizedTwin(t, quantized(ts)) })
	twin, err := Load(halves, WithoutTokenizer())
	require.NoError(t, err)
	gm, err = Load(path, WithoutTokenizer(), WithDevice(dev))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, gm.Close()) })
	return twin, gm
}

// quantLaunches counts the launches of the qforward kernel prefix+type
// over every block type.
func quantLaunches(b *gpu.Backend, prefix string) (n int64) {
	for _, s := range []string{"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q4_k", "q5_k", "q6_k"} {
		n += b.Launched(prefix + s)
	}
	return n
}

// dequantizedTwin stores every quantized blk.* matrix and the LM head of a
// GGUF's tensor list as float16 of its decoded weights
// (quant.DequantizeRow, rounded to nearest even): the model dequant_Q gives
// the tensor cores. A tied quantized table stays as it is for the
// embedding, and its float16 copy becomes output.weight.
func dequantizedTwin(t *testing.T, ts []gguf.Tensor) []gguf.Tensor {
	asF16 := func(tt gguf.Tensor) ([]byte, bool) {
		typ := quant.Type(tt.Type)
		if len(tt.Dims) != 2 || typ == quant.F32 || typ == quant.F16 || typ == quant.BF16 {
			return nil, false
		}
		cols, rows := int(tt.Dims[0]), int(tt.Dims[1])
		rb, err := quant.RowBytes(typ, cols)
		require.NoError(t, err)
		row := make([]float32, cols)
		out := make([]byte, 2*rows*cols)
		for r := range rows {
			require.NoError(t, quant.DequantizeRow(typ, tt.Data[r*rb:(r+1)*rb], row))
			for k, v := range row {
				binary.LittleEndian.PutUint16(out[2*(r*cols+k):], safetensors.Float32ToF16(v))
			}
		}
		return out, true
	}
	tied := !slices.ContainsFunc(ts, func(tt gguf.Tensor) bool { return tt.Name == "output.weight" })
	for i, tt := range ts {
		switch {
		case strings.HasPrefix(tt.Name, "blk.") || tt.Name == "output.weight":
			if out, ok := asF16(tt); ok {
				ts[i].Type, ts[i].Data = gguf.Type(quant.F16), out
			}
		case tt.Name == "token_embd.weight" && tied:
			if out, ok := asF16(tt); ok {
				ts = append(ts, gguf.Tensor{Name: "output.weight", Type: gguf.Type(quant.F16), Dims: tt.Dims, Data: out})
			}
		}
	}
	return ts
}
