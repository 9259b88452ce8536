package model

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hipgo/hipgo/model/gguf"
	"github.com/hipgo/hipgo/model/internal/gpu/gpusim"
	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/model/safetensors"
	"github.com/hipgo/hipgo/runtime"
	"github.com/stretchr/testify/require"
)

// hfToGGUF maps a Hugging Face tensor name to llama.cpp's
// (convert_hf_to_gguf.py's tensor map for llama, qwen2 and qwen3).
func hfToGGUF(name string) string {
	r := strings.NewReplacer(
		"model.embed_tokens.", "token_embd.", "model.norm.", "output_norm.", "lm_head.", "output.",
		"model.layers.", "blk.", ".input_layernorm.", ".attn_norm.", ".post_attention_layernorm.", ".ffn_norm.",
		".self_attn.q_proj.", ".attn_q.", ".self_attn.k_proj.", ".attn_k.", ".self_attn.v_proj.", ".attn_v.",
		".self_attn.o_proj.", ".attn_output.", ".mlp.gate_proj.", ".ffn_gate.", ".mlp.up_proj.", ".ffn_up.",
		".mlp.down_proj.", ".ffn_down.", ".self_attn.q_norm.", ".attn_q_norm.", ".self_attn.k_norm.", ".attn_k_norm.")
	return r.Replace(name)
}

// gemmaToGGUF is hfToGGUF for Gemma, whose post_attention_layernorm
// follows attention (llama.cpp's post_attention_norm) and whose pre-MLP
// norm is pre_feedforward_layernorm.
func gemmaToGGUF(name string) string {
	r := strings.NewReplacer(".post_attention_layernorm.", ".post_attention_norm.",
		".pre_feedforward_layernorm.", ".ffn_norm.", ".post_feedforward_layernorm.", ".post_ffw_norm.")
	return hfToGGUF(r.Replace(name))
}

// permuteHF is convert_hf_to_gguf.py's LlamaModel.permute written out on
// rows: weights.reshape(heads, 2, rows/heads/2, cols).swapaxes(1, 2).
func permuteHF(v []float32, rows, cols, heads int) []float32 {
	hd := rows / heads
	out := make([]float32, len(v))
	for h := range heads {
		for a := range 2 {
			for i := range hd / 2 {
				src := h*hd + a*hd/2 + i // [h, a, i] before swapaxes
				dst := h*hd + 2*i + a    // [h, i, a] after
				copy(out[dst*cols:(dst+1)*cols], v[src*cols:(src+1)*cols])
			}
		}
	}
	return out
}

// ropeFreqsTensor is rope_freqs.weight as convert_hf_to_gguf.py's
// LlamaModel writes it for llama3 rope scaling: a factor per rotary pair.
func ropeFreqsTensor(theta float64, dim int, l3 *modeltest.Llama3Scaling) gguf.Tensor {
	old := float64(l3.OriginalMaxPositionEmbeddings)
	lowWavelen, highWavelen := old/l3.LowFreqFactor, old/l3.HighFreqFactor
	data := make([]byte, 4*dim/2)
	for i := range dim / 2 {
		freq := float64(float32(1 / math.Pow(theta, float64(2*i)/float64(dim)))) // torch float32
		wavelen := 2 * math.Pi / freq
		factor := 1.0
		switch {
		case wavelen < highWavelen:
		case wavelen > lowWavelen:
			factor = l3.Factor
		default:
			smooth := (old/wavelen - l3.LowFreqFactor) / (l3.HighFreqFactor - l3.LowFreqFactor)
			factor = 1 / ((1-smooth)/l3.Factor + smooth)
		}
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(factor)))
	}
	return gguf.Tensor{Name: "rope_freqs.weight", Dims: []int64{int64(dim / 2)}, Type: gguf.F32, Data: data}
}

// ggufFromSpec converts spec's weights the way convert_hf_to_gguf.py does
// (llama.cpp names, reversed dims, q/k permuted for llama) and writes them
// with metadata as a GGUF file; meta can add or override keys.
func ggufFromSpec(t *testing.T, spec modeltest.Spec, meta map[string]any, mutate func([]gguf.Tensor) []gguf.Tensor) string {
	t.Helper()
	arch := spec.Arch
	hd := spec.HeadDim
	if hd == 0 {
		hd = spec.Hidden / spec.Heads
	}
	kvs := map[string]any{
		"general.architecture":                     arch,
		arch + ".block_count":                      uint32(spec.Layers),
		arch + ".context_length":                   uint32(spec.MaxPos),
		arch + ".embedding_length":                 uint32(spec.Hidden),
		arch + ".feed_forward_length":              uint32(spec.Intermediate),
		arch + ".attention.head_count":             uint32(spec.Heads),
		arch + ".attention.head_count_kv":          uint32(spec.KVHeads),
		arch + ".rope.freq_base":                   float32(spec.RopeTheta),
		arch + ".attention.layer_norm_rms_epsilon": float32(spec.RMSNormEps),
		arch + ".rope.dimension_count":             uint32(hd),
		"tokenizer.ggml.bos_token_id":              uint32(spec.Vocab - 1),
		"tokenizer.ggml.eos_token_id":              uint32(spec.Vocab - 1),
	}
	if spec.HeadDim > 0 {
		kvs[arch+".attention.key_length"] = uint32(spec.HeadDim)
	}
	gemma := arch == "gemma3" || arch == "gemma2"
	if arch == "gemma2" { // as convert_hf_to_gguf.py's Gemma2Model writes them
		kvs[arch+".attention.sliding_window"] = uint32(spec.SlidingWindow)
		kvs[arch+".attn_logit_softcapping"] = float32(spec.AttnSoftcap)
		kvs[arch+".final_logit_softcapping"] = float32(spec.FinalSoftcap)
	}
	if arch == "gemma3" { // as convert_hf_to_gguf.py's Gemma3Model writes them
		kvs[arch+".attention.sliding_window"] = uint32(spec.SlidingWindow)
		kvs[arch+".rope.freq_base_swa"] = float32(spec.RopeLocalTheta)
		if spec.LinearRope > 0 {
			kvs[arch+".rope.scaling.type"] = "linear"
			kvs[arch+".rope.scaling.factor"] = float32(spec.LinearRope)
		}
		if spec.FinalSoftcap > 0 {
			kvs[arch+".final_logit_softcapping"] = float32(spec.FinalSoftcap)
		}
		if spec.SlidingPattern != 6 { // llama.cpp's default for gemma3
			kvs[arch+".attention.sliding_window_pattern"] = uint32(spec.SlidingPattern)
		}
	}
	for k, v := range meta {
		if v == nil {
			delete(kvs, k)
		} else {
			kvs[k] = v
		}
	}
	var kv []gguf.KV
	for k, v := range kvs {
		val, err := gguf.ValueOf(v)
		require.NoError(t, err)
		kv = append(kv, gguf.KV{Key: k, Value: val})
	}
	var ts []gguf.Tensor
	for _, tt := range modeltest.Tensors(spec) {
		if spec.Tie && tt.Name == "lm_head.weight" {
			continue
		}
		v := tt.Values
		if arch == "llama" && len(tt.Shape) == 2 {
			switch {
			case strings.HasSuffix(tt.Name, "q_proj.weight"):
				v = permuteHF(v, tt.Shape[0], tt.Shape[1], spec.Heads)
			case strings.HasSuffix(tt.Name, "k_proj.weight"):
				v = permuteHF(v, tt.Shape[0], tt.Shape[1], spec.KVHeads)
			}
		}
		if arch == "llama" && len(tt.Shape) == 1 {
			switch {
			case strings.HasSuffix(tt.Name, "q_proj.bias"):
				v = permuteHF(v, tt.Shape[0], 1, spec.Heads)
			case strings.HasSuffix(tt.Name, "k_proj.bias"):
				v = permuteHF(v, tt.Shape[0], 1, spec.KVHeads)
			}
		}
		name := hfToGGUF(tt.Name)
		if gemma {
			name = gemmaToGGUF(tt.Name)
			if strings.HasSuffix(tt.Name, "norm.weight") { // the converter stores Gemma's 1+w
				v = slices.Clone(v)
				for i := range v {
					v[i]++
				}
			}
		}
		dims := make([]int64, len(tt.Shape))
		for i, d := range tt.Shape {
			dims[len(tt.Shape)-1-i] = int64(d)
		}
		typ, data := gguf.F32, make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(x))
		}
		if spec.DType == safetensors.BF16 && len(tt.Shape) == 2 {
			typ, data = gguf.BF16, make([]byte, 2*len(v))
			for i, x := range v {
				binary.LittleEndian.PutUint16(data[2*i:], uint16(math.Float32bits(x)>>16)) // exact: values are bf16-rounded
			}
		}
		ts = append(ts, gguf.Tensor{Name: name, Dims: dims, Type: typ, Data: data})
	}
	if l3 := spec.Llama3; l3 != nil {
		ts = append(ts, ropeFreqsTensor(spec.RopeTheta, hd, l3))
	}
	if mutate != nil {
		ts = mutate(ts)
	}
	var buf bytes.Buffer
	require.NoError(t, gguf.Write(&buf, kv, ts))
	path := filepath.Join(t.TempDir(), "model.gguf")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	return path
}

// TestGGUFMatchesSafetensors proves a GGUF converted as llama.cpp converts
// a Hugging Face checkpoint (renamed tensors, reversed dims, llama q/k rows
// permuted, config in metadata) loads into the same model: logits are
// bit-identical to the safetensors checkpoint's, for llama with GQA and
// attention biases, qwen2 with q/k/v biases, a tied bf16 llama, and qwen3
// with q/k norms (attn_q_norm, attn_k_norm; untied f32, tied bf16 with
// attention biases, and without key_length, where the head size is
// hidden/heads as llama.cpp takes it, not config.json's default of 128); and
// within 1e-4 for Llama 3.1 rope scaling, which GGUF stores as per-pair
// factors (rope_freqs.weight) that round differently.
func TestGGUFMatchesSafetensors(t *testing.T) {
	llama := modeltest.Llama3Tiny()
	llama.Llama3, llama.AttnBias = nil, true
	qwen3Tied := modeltest.Qwen3Tiny()
	qwen3Tied.Tie, qwen3Tied.AttnBias, qwen3Tied.DType = true, true, safetensors.BF16
	// No qwen3.attention.key_length: llama.cpp's head size, hidden/heads.
	qwen3Derived := modeltest.Qwen3Tiny()
	qwen3Derived.HeadDim = 0
	for name, spec := range map[string]modeltest.Spec{"llama-gqa-bias": llama, "qwen2": modeltest.Qwen2Tiny(),
		"smollm-tied-bf16": modeltest.SmolLMTiny(), "llama3-rope-scaling": modeltest.Llama3Tiny(),
		"qwen3-qk-norm": modeltest.Qwen3Tiny(), "qwen3-tied-bf16-bias": qwen3Tied, "qwen3-no-key-length": qwen3Derived} {
		t.Run(name, func(t *testing.T) {
			spec.NoTokenizer = true
			dir := t.TempDir()
			require.NoError(t, modeltest.Write(dir, spec))
			want, err := Load(dir, WithoutTokenizer())
			require.NoError(t, err)
			got, err := Load(ggufFromSpec(t, spec, nil, nil), WithoutTokenizer())
			require.NoError(t, err)
			wc, gc := want.Config(), got.Config()
			wc.DType, gc.DType = "", ""
			scaled := spec.Llama3 != nil
			if scaled {
				// GGUF stores llama3 scaling as per-pair factors, not parameters.
				require.Len(t, gc.RopeFreqFactors, wc.HeadDim/2)
				require.InDeltaSlice(t, wc.ropeInvFreq(), gc.ropeInvFreq(), 1e-6)
				wc.RopeScaling, gc.RopeFreqFactors = nil, nil
			}
			require.Equal(t, wc, gc)
			require.Equal(t, want.WeightBytes(), got.WeightBytes())
			prompt := []uint32{1, 7, 42, 99, 3, 250, 17, 5}
			wl, err := want.NewSession().Forward(context.Background(), prompt, true)
			require.NoError(t, err)
			gl, err := got.NewSession().Forward(context.Background(), prompt, true)
			require.NoError(t, err)
			if scaled {
				require.InDeltaSlice(t, wl, gl, 1e-4)
				return
			}
			require.Equal(t, wl, gl)
		})
	}
}

// TestGGUFWithoutUnpermutingDiffers is the control for the test above: the
// same file read as if llama's q/k rows were not permuted gives other
// logits, so the comparison would catch a wrong or missing reversal.
func TestGGUFWithoutUnpermutingDiffers(t *testing.T) {
	spec := modeltest.SmolLMTiny()
	spec.NoTokenizer = true
	dir := t.TempDir()
	require.NoError(t, modeltest.Write(dir, spec))
	want, err := Load(dir, WithoutTokenizer())
	require.NoError(t, err)
	// Undo the permutation in the file, so the loader's reversal scrambles it.
	unpermuted := ggufFromSpec(t, spec, nil, func(ts []gguf.Tensor) []gguf.Tensor {
		for i, tt := range ts {
			if strings.HasSuffix(tt.Name, "attn_q.weight") || strings.HasSuffix(tt.Name, "attn_k.weight") {
				heads := spec.Heads
				if strings.HasSuffix(tt.Name, "attn_k.weight") {
					heads = spec.KVHeads
				}
				rb := int(tt.Dims[0]) * 2
				back, err := unpermuteRows(tt.Data, int(tt.Dims[1]), rb, heads)
				require.NoError(t, err)
				ts[i].Data = back
			}
		}
		return ts
	})
	got, err := Load(unpermuted, WithoutTokenizer())
	require.NoError(t, err)
	prompt := []uint32{1, 7, 42, 99}
	wl, _ := want.NewSession().Forward(context.Background(), prompt, false)
	gl, _ := got.NewSession().Forward(context.Background(), prompt, false)
	require.NotEqual(t, wl, gl)
}

// TestGGUFBadFilesNameTheKeyOrTensor proves a GGUF that does not describe
// a supported model fails with an error naming the GGUF key or tensor.
func TestGGUFBadFilesNameTheKeyOrTensor(t *testing.T) {
	spec := modeltest.Qwen2Tiny()
	rename := func(from, to string) func([]gguf.Tensor) []gguf.Tensor {
		return func(ts []gguf.Tensor) []gguf.Tensor {
			for i := range ts {
				if ts[i].Name == from {
					ts[i].Name = to
				}
			}
			return ts
		}
	}
	retype := func(name string) func([]gguf.Tensor) []gguf.Tensor {
		return func(ts []gguf.Tensor) []gguf.Tensor {
			for i := range ts {
				if ts[i].Name == name {
					ts[i].Type = gguf.F64 // a real ggml type the model does not decode
					ts[i].Data = make([]byte, 8*ts[i].Dims[0]*ts[i].Dims[1])
				}
			}
			return ts
		}
	}
	cases := []struct {
		name   string
		meta   map[string]any
		mutate func([]gguf.Tensor) []gguf.Tensor
		kind   error
		msg    string
	}{
		{"unsupported architecture", map[string]any{"general.architecture": "gpt2"}, nil, ErrConfig, `general.architecture: "gpt2" is not supported`},
		{"missing block count", map[string]any{"qwen2.block_count": nil}, nil, ErrConfig, "qwen2.block_count: missing (required)"},
		{"kv heads do not divide heads", map[string]any{"qwen2.attention.head_count_kv": uint32(4)}, nil, ErrConfig, "qwen2.attention.head_count_kv: 4 does not divide"},
		{"head count is a string", map[string]any{"qwen2.attention.head_count": "six"}, nil, ErrConfig, `qwen2.attention.head_count: want an integer, got "six"`},
		{"NaN epsilon", map[string]any{"qwen2.attention.layer_norm_rms_epsilon": float32(math.NaN())}, nil, ErrConfig, "qwen2.attention.layer_norm_rms_epsilon: NaN is not a finite number"},
		{"partial rotary", map[string]any{"qwen2.rope.dimension_count": uint32(4)}, nil, ErrConfig, "qwen2.rope.dimension_count: 4 is not the head dimension 8"},
		{"missing tensor", nil, rename("blk.1.ffn_up.weight", "blk.1.ffn_upp.weight"), ErrWeights, `tensor "blk.1.ffn_up.weight": missing from the GGUF file`},
		{"unsupported quant type", nil, retype("blk.0.attn_output.weight"), ErrWeights, `tensor "blk.0.attn_output.weight": type F64 is not supported`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(ggufFromSpec(t, spec, c.meta, c.mutate), WithoutTokenizer())
			require.ErrorIs(t, err, c.kind)
			require.ErrorContains(t, err, "model.gguf")
			require.ErrorContains(t, err, c.msg)
		})
	}
	_, err := Load(filepath.Join(t.TempDir(), "absent.gguf"))
	require.Error(t, err)
	notGGUF := filepath.Join(t.TempDir(), "x.gguf")
	require.NoError(t, os.WriteFile(notGGUF, []byte("not a gguf file at all"), 0o644))
	_, err = Load(notGGUF)
	require.ErrorIs(t, err, gguf.ErrFormat)
	require.ErrorIs(t, err, ErrWeights)
}

// TestGGUFMixedTypesStayUnfused proves a layer whose q/k/v or gate/up are
// stored in different formats (as llama.cpp's Q4_K_M recipe stores attn_v)
// loads with those projections unfused and computes what the fused model
// computes: here v and up are F32 copies of the bf16 values, q/k/gate BF16.
func TestGGUFMixedTypesStayUnfused(t *testing.T) {
	spec := modeltest.SmolLMTiny()
	spec.NoTokenizer = true
	dir := t.TempDir()
	require.NoError(t, modeltest.Write(dir, spec))
	want, err := Load(dir, WithoutTokenizer())
	require.NoError(t, err)
	widen := func(ts []gguf.Tensor) []gguf.Tensor {
		for i, tt := range ts {
			if strings.HasSuffix(tt.Name, "attn_v.weight") || strings.HasSuffix(tt.Name, "ffn_up.weight") {
				data := make([]byte, 2*len(tt.Data))
				for j := 0; j < len(tt.Data); j += 2 {
					binary.LittleEndian.PutUint32(data[2*j:], uint32(binary.LittleEndian.Uint16(tt.Data[j:]))<<16)
				}
				ts[i].Type, ts[i].Data = gguf.F32, data
			}
		}
		return ts
	}
	got, err := Load(ggufFromSpec(t, spec, nil, widen), WithoutTokenizer())
	require.NoError(t, err)
	lw := got.be.(*cpuBackend).w.layers[0]
	require.Len(t, lw.qkvParts, 3)
	require.Len(t, lw.gateUpParts, 2)
	require.Nil(t, lw.qkv.BF16)
	require.NotNil(t, lw.qkvParts[2].F32)
	prompt := []uint32{1, 7, 42, 99, 3, 250, 17, 5}
	wl, err := want.NewSession().Forward(context.Background(), prompt, true)
	require.NoError(t, err)
	gl, err := got.NewSession().Forward(context.Background(), prompt, true)
	require.NoError(t, err)
	require.InDeltaSlice(t, wl, gl, 1e-4)
	// One token at a time (decode) goes through the same unfused path.
	s := got.NewSession()
	var last []float32
	for _, id := range prompt {
		last, err = s.Forward(context.Background(), []uint32{id}, false)
		require.NoError(t, err)
	}
	V := spec.Vocab
	require.InDeltaSlice(t, wl[(len(prompt)-1)*V:], last, 1e-4)
}

// TestGGUFDeviceModes proves a GGUF model runs on the GPU under DeviceAuto
// and DeviceGPU (here the simulated one: no CPU reason, the GPU backend),
// and that Close closes the device the model opened.
func TestGGUFDeviceModes(t *testing.T) {
	spec := modeltest.SmolLMTiny()
	path := ggufFromSpec(t, spec, nil, nil)
	var opened []*runtime.Device
	sim := func(o *options) {
		o.openDevice = func(ctx context.Context) (*runtime.Device, error) {
			dev, err := runtime.Open(ctx, runtime.WithDrivers(gpusim.Driver(2<<30, nil)))
			opened = append(opened, dev)
			return dev, err
		}
	}
	for _, mode := range []string{DeviceAuto, DeviceGPU} {
		m, err := Load(path, WithoutTokenizer(), WithDeviceMode(mode), sim)
		require.NoError(t, err)
		require.Contains(t, m.Backend(), "gpu cuda:0", mode)
		require.NoError(t, m.CPUReason())
		_, err = m.GenerateTokens(context.Background(), []uint32{1, 2, 3}, GenerateOptions{MaxTokens: 2}, nil)
		require.NoError(t, err)
		require.NoError(t, m.Close())
	}
	require.Len(t, opened, 2)
	for _, d := range opened {
		_, err := d.Alloc(16)
		require.ErrorIs(t, err, runtime.ErrClosed, "the model closed the device it opened")
	}
}
