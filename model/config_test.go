package model

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Real published configs (shapes and rope settings as released).
const (
	llama31Config = `{
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "hidden_act": "silu",
  "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
  "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
  "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
  "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.43.0.dev0", "use_cache": true, "vocab_size": 128256}`
	// Qwen3-0.6B: head_dim 128 beside hidden_size/heads = 64.
	qwen3Config = `{
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
  "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
  "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
  "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null,
  "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.51.0",
  "use_cache": true, "use_sliding_window": false, "vocab_size": 151936}`
	// Gemma 3 1B (google/gemma-3-1b-it): transformers 4's layout, a window
	// of 512 on five layers in six, head_dim 256 beside hidden/heads 288.
	gemma3Config = `{
  "architectures": ["Gemma3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "attn_logit_softcapping": null, "bos_token_id": 2, "cache_implementation": "hybrid",
  "eos_token_id": [1, 106], "final_logit_softcapping": null, "head_dim": 256,
  "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152, "initializer_range": 0.02,
  "intermediate_size": 6912, "max_position_embeddings": 32768, "model_type": "gemma3_text",
  "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1, "pad_token_id": 0,
  "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
  "rope_scaling": null, "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6,
  "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0", "use_cache": true,
  "vocab_size": 262144}`
	// Gemma 2 2B (google/gemma-2-2b-it): soft-capping, every other layer
	// sliding, one RoPE base.
	gemma2Config = `{
  "architectures": ["Gemma2ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "attn_logit_softcapping": 50.0, "bos_token_id": 2, "cache_implementation": "hybrid",
  "eos_token_id": [1, 107], "final_logit_softcapping": 30.0, "head_dim": 256,
  "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 2304,
  "initializer_range": 0.02, "intermediate_size": 9216, "max_position_embeddings": 8192,
  "model_type": "gemma2", "num_attention_heads": 8, "num_hidden_layers": 26, "num_key_value_heads": 4,
  "pad_token_id": 0, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
  "sliding_window": 4096, "torch_dtype": "float32", "transformers_version": "4.42.4", "use_cache": true,
  "vocab_size": 256000}`
	// Gemma 3 4B (google/gemma-3-4b-it): an image-and-text model whose
	// text_config leaves most values to Gemma3TextConfig's defaults.
	gemma3VisionConfig = `{
  "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999,
  "eoi_token_index": 256000, "eos_token_id": [1, 106], "image_token_index": 262144,
  "initializer_range": 0.02, "mm_tokens_per_image": 256, "model_type": "gemma3",
  "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
    "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024},
  "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
  "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
    "model_type": "siglip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 27,
    "patch_size": 14, "vision_use_head": false}}`
	qwen25Config = `{
  "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
  "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
  "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 24,
  "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24,
  "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
  "sliding_window": 32768, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "transformers_version": "4.40.1", "use_cache": true, "use_sliding_window": false,
  "vocab_size": 151936}`
	smollmConfig = `{
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 0, "eos_token_id": 0, "hidden_act": "silu", "hidden_size": 576,
  "initializer_range": 0.02, "intermediate_size": 1536, "max_position_embeddings": 2048,
  "model_type": "llama", "num_attention_heads": 9, "num_hidden_layers": 30,
  "num_key_value_heads": 3, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null,
  "rope_theta": 10000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "transformers_version": "4.40.1", "use_cache": true, "vocab_size": 49152}`
	// transformers 5 writes rope settings under rope_parameters and "dtype".
	v5Config = `{
  "architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
  "vocab_size": 300, "max_position_embeddings": 256, "rms_norm_eps": 1e-05, "dtype": "float32",
  "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
    "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
  "tie_word_embeddings": false, "bos_token_id": null, "eos_token_id": 299}`
)

// TestParseRealConfigs proves the published Llama 3.1, Qwen2.5, Qwen3 and
// SmolLM configs (and a transformers 5 layout) parse into the values they
// state.
func TestParseRealConfigs(t *testing.T) {
	c, err := ParseConfig("", []byte(llama31Config))
	require.NoError(t, err)
	require.Equal(t, Llama, c.Architecture)
	require.Equal(t, 128, c.HeadDim)
	require.Equal(t, 8, c.NumKVHeads)
	require.Equal(t, []int{128001, 128008, 128009}, c.EOSTokenIDs)
	require.Equal(t, 128000, c.BOSTokenID)
	require.Equal(t, &RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}, c.RopeScaling)
	require.Equal(t, 500000.0, c.RopeTheta)
	require.False(t, c.QKVBias || c.OBias || c.MLPBias || c.TieWordEmbeddings)
	require.Equal(t, "bfloat16", c.DType)

	c, err = ParseConfig("", []byte(qwen25Config))
	require.NoError(t, err)
	require.Equal(t, Qwen2, c.Architecture)
	require.True(t, c.QKVBias)
	require.False(t, c.OBias)
	require.True(t, c.TieWordEmbeddings)
	require.Equal(t, 64, c.HeadDim)
	require.Equal(t, 1e-6, c.RMSNormEps)
	require.Nil(t, c.RopeScaling)

	c, err = ParseConfig("", []byte(qwen3Config))
	require.NoError(t, err)
	require.Equal(t, Qwen3, c.Architecture)
	require.True(t, c.QKNorm)
	require.Equal(t, 128, c.HeadDim)
	require.Equal(t, 8, c.NumKVHeads)
	require.False(t, c.QKVBias || c.OBias || c.MLPBias)
	require.True(t, c.TieWordEmbeddings)
	require.Equal(t, 40960, c.MaxPositionEmbeddings)
	require.Equal(t, 1e6, c.RopeTheta)
	require.Equal(t, []int{151645}, c.EOSTokenIDs)

	c, err = ParseConfig("", []byte(gemma3Config))
	require.NoError(t, err)
	require.Equal(t, Gemma3, c.Architecture)
	require.True(t, c.Gemma && c.QKNorm)
	require.Equal(t, "gelu_pytorch_tanh", c.HiddenAct)
	require.Equal(t, 256, c.HeadDim)
	require.Equal(t, 256.0, c.QueryPreAttnScalar)
	require.Equal(t, 512, c.SlidingWindow)
	global := []int{}
	for l, s := range c.SlidingLayers {
		if !s {
			global = append(global, l)
		}
	}
	require.Equal(t, []int{5, 11, 17, 23}, global)
	require.Equal(t, 1e6, c.RopeTheta)
	require.Equal(t, 1e4, c.RopeLocalTheta)
	require.Nil(t, c.RopeScaling)
	require.Zero(t, c.FinalLogitSoftcap)
	require.True(t, c.TieWordEmbeddings, "Gemma3TextConfig's default")
	require.Equal(t, []int{1, 106}, c.EOSTokenIDs)
	require.Equal(t, 2, c.BOSTokenID)
	require.Equal(t, 1e-6, c.RMSNormEps)

	c, err = ParseConfig("", []byte(gemma3VisionConfig))
	require.NoError(t, err)
	require.Equal(t, Gemma3, c.Architecture)
	require.True(t, c.VisionSkipped && c.Gemma)
	require.Equal(t, []int{2560, 10240, 34, 8, 4, 256, 262208, 1024, 131072},
		[]int{c.HiddenSize, c.IntermediateSize, c.NumLayers, c.NumHeads, c.NumKVHeads, c.HeadDim, c.VocabSize, c.SlidingWindow, c.MaxPositionEmbeddings})
	require.Equal(t, &RopeScaling{Type: "linear", Factor: 8}, c.RopeScaling)
	require.Equal(t, 1e4, c.RopeLocalTheta)
	require.Equal(t, 256.0, c.QueryPreAttnScalar)
	require.Equal(t, []int{1, 106}, c.EOSTokenIDs, "the top level's")
	require.Equal(t, 2, c.BOSTokenID)
	require.True(t, c.TieWordEmbeddings)
	require.Equal(t, "bfloat16", c.DType)
	require.False(t, c.SlidingLayers[29])
	require.True(t, c.SlidingLayers[33])

	c, err = ParseConfig("", []byte(gemma2Config))
	require.NoError(t, err)
	require.Equal(t, Gemma2, c.Architecture)
	require.True(t, c.Gemma)
	require.False(t, c.QKNorm)
	require.Equal(t, 50.0, c.AttnLogitSoftcap)
	require.Equal(t, 30.0, c.FinalLogitSoftcap)
	require.Equal(t, 4096, c.SlidingWindow)
	require.Equal(t, []bool{true, false, true, false}, c.SlidingLayers[:4])
	require.Zero(t, c.RopeLocalTheta, "the global layers' RoPE")
	require.Equal(t, c.ropeInvFreq(), c.ropeLocalInvFreq())
	require.Equal(t, []int{1, 107}, c.EOSTokenIDs)

	c, err = ParseConfig("", []byte(smollmConfig))
	require.NoError(t, err)
	require.Equal(t, 64, c.HeadDim)
	require.Equal(t, []int{0}, c.EOSTokenIDs)
	require.True(t, c.TieWordEmbeddings)

	c, err = ParseConfig("", []byte(v5Config))
	require.NoError(t, err)
	require.Equal(t, 32, c.HeadDim)
	require.Equal(t, 500000.0, c.RopeTheta)
	require.Equal(t, "llama3", c.RopeScaling.Type)
	require.Equal(t, -1, c.BOSTokenID)
	require.Equal(t, "float32", c.DType)
}

// TestConfigErrors proves each bad or unsupported value is an error that
// wraps ErrConfig and names config.json and the field.
func TestConfigErrors(t *testing.T) {
	base := `"architectures":["LlamaForCausalLM"],"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":300`
	gemma := `"architectures":["Gemma3ForCausalLM"],"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":300`
	cases := []struct{ name, json, field string }{
		{"not JSON", `{`, ""},
		{"null", `null`, ""},
		{"unsupported arch", `{"architectures":["GPT2LMHeadModel"],"hidden_size":64}`, "architectures"},
		{"no arch", `{"hidden_size":64}`, "architectures"},
		{"bad model_type", `{"model_type":"gpt2"}`, "model_type"},
		{"missing hidden", `{"architectures":["LlamaForCausalLM"]}`, "hidden_size"},
		{"string hidden", `{` + base + `,"hidden_size":"64"}`, "hidden_size"},
		{"fractional layers", `{` + base + `,"num_hidden_layers":2.5}`, "num_hidden_layers"},
		{"zero heads", `{` + base + `,"num_attention_heads":0}`, "num_attention_heads"},
		{"kv not dividing", `{` + base + `,"num_key_value_heads":3}`, "num_key_value_heads"},
		{"head dim not derivable", `{` + base + `,"num_attention_heads":5,"num_key_value_heads":5}`, "head_dim"},
		{"odd head dim", `{` + base + `,"head_dim":15}`, "head_dim"},
		{"eps", `{` + base + `,"rms_norm_eps":0}`, "rms_norm_eps"},
		{"act", `{` + base + `,"hidden_act":"gelu"}`, "hidden_act"},
		{"theta", `{` + base + `,"rope_theta":-1}`, "rope_theta"},
		{"dynamic rope", `{` + base + `,"rope_scaling":{"rope_type":"dynamic","factor":2}}`, "rope_scaling.rope_type"},
		{"yarn v5", `{` + base + `,"rope_parameters":{"rope_type":"yarn","factor":2,"rope_theta":10000}}`, "rope_parameters.rope_type"},
		{"llama3 missing", `{` + base + `,"rope_scaling":{"rope_type":"llama3","factor":8}}`, "rope_scaling.low_freq_factor"},
		{"llama3 factors", `{` + base + `,"rope_scaling":{"rope_type":"llama3","factor":8,"low_freq_factor":4,"high_freq_factor":1,"original_max_position_embeddings":64}}`, "rope_scaling.high_freq_factor"},
		{"factor < 1", `{` + base + `,"rope_scaling":{"type":"linear","factor":0.5}}`, "rope_scaling.factor"},
		{"partial rotary", `{` + base + `,"rope_parameters":{"rope_type":"default","rope_theta":10000,"partial_rotary_factor":0.5}}`, "rope_parameters.partial_rotary_factor"},
		{"rope not object", `{` + base + `,"rope_scaling":3}`, "rope_scaling"},
		{"eos out of vocab", `{` + base + `,"eos_token_id":300}`, "eos_token_id"},
		{"eos list bad", `{` + base + `,"eos_token_id":[1,"x"]}`, "eos_token_id"},
		{"tie not bool", `{` + base + `,"tie_word_embeddings":"yes"}`, "tie_word_embeddings"},
		{"sliding window", `{"architectures":["Qwen2ForCausalLM"],"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":300,"use_sliding_window":true}`, "use_sliding_window"},
		{"huge layers", `{` + base + `,"num_hidden_layers":1e12}`, "num_hidden_layers"},
		{"qwen3 sliding window", `{"architectures":["Qwen3ForCausalLM"],"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":300,"use_sliding_window":true}`, "use_sliding_window"},
		{"qwen3 mlp bias", `{"model_type":"qwen3","hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":300,"mlp_bias":true}`, "mlp_bias"},
		{"qwen3 moe", `{"architectures":["Qwen3MoeForCausalLM"],"model_type":"qwen3_moe","hidden_size":64}`, "architectures"},
		{"gemma3 vision text_config", `{"architectures":["Gemma3ForConditionalGeneration"],"model_type":"gemma3","text_config":[]}`, "text_config"},
		{"gemma3 vision no text_config", `{"model_type":"gemma3"}`, "text_config"},
		{"gemma3 vision text model_type", `{"model_type":"gemma3","text_config":{"model_type":"llama"}}`, "text_config.model_type"},
		{"gemma3 vision text field", `{"model_type":"gemma3","text_config":{"sliding_window":0}}`, "text_config.sliding_window"},
		{"gemma3 attn softcap", `{` + gemma + `,"attn_logit_softcapping":50.0}`, "attn_logit_softcapping"},
		{"gemma3 final softcap", `{` + gemma + `,"final_logit_softcapping":0}`, "final_logit_softcapping"},
		{"gemma3 act", `{` + gemma + `,"hidden_activation":"gelu"}`, "hidden_activation"},
		{"gemma3 scalar", `{` + gemma + `,"query_pre_attn_scalar":0}`, "query_pre_attn_scalar"},
		{"gemma3 bidirectional", `{` + gemma + `,"use_bidirectional_attention":true}`, "use_bidirectional_attention"},
		{"gemma3 window null", `{` + gemma + `,"sliding_window":null}`, "sliding_window"},
		{"gemma3 layer types count", `{` + gemma + `,"layer_types":["full_attention"]}`, "layer_types"},
		{"gemma3 layer type", `{` + gemma + `,"layer_types":["full_attention","chunked_attention"]}`, "layer_types"},
		{"gemma3 pattern", `{` + gemma + `,"sliding_window_pattern":0}`, "sliding_window_pattern"},
		{"gemma3 flat rope_parameters", `{` + gemma + `,"rope_parameters":{"rope_type":"default","rope_theta":10000}}`, "rope_parameters"},
		{"gemma3 local scaling", `{` + gemma + `,"rope_parameters":{"full_attention":{"rope_theta":1e6},"sliding_attention":{"rope_type":"linear","factor":2}}}`, "rope_parameters.sliding_attention.rope_type"},
		{"gemma3 local theta", `{` + gemma + `,"rope_local_base_freq":1}`, "rope_local_base_freq"},
		{"gemma3 mlp bias", `{` + gemma + `,"mlp_bias":true}`, "mlp_bias"},
		{"gemma2 attn softcap", `{"model_type":"gemma2","attn_logit_softcapping":-1}`, "attn_logit_softcapping"},
		{"gemma2 window", `{"model_type":"gemma2","sliding_window":null}`, "sliding_window"},
		{"gemma2 act", `{"model_type":"gemma2","hidden_activation":"silu"}`, "hidden_activation"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig("dir/config.json", []byte(tc.json))
			require.ErrorIs(t, err, ErrConfig)
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, "dir/config.json", ce.File)
			require.Equal(t, tc.field, ce.Field)
			require.Contains(t, err.Error(), "dir/config.json")
			require.Contains(t, err.Error(), tc.field)
		})
	}
}

// TestLlama3InvFreqHandComputed checks Llama 3.1's scaling (theta 500000,
// head_dim 128, factor 8, low 1, high 4, original context 8192) at one
// frequency in each band, with the expected values worked out here:
//   - i=0: wavelength 2π < 8192/4, kept: 1.
//   - i=32: inv = 500000^-0.5; wavelength 2π·√500000 ≈ 4442.88 lies between
//     2048 and 8192, so smooth = (8192/4442.88 - 1)/3 and the result is
//     inv·((1-smooth)/8 + smooth).
//   - i=63: wavelength ≫ 8192, slowed: inv/8.
func TestLlama3InvFreqHandComputed(t *testing.T) {
	c, err := ParseConfig("", []byte(llama31Config))
	require.NoError(t, err)
	inv := c.ropeInvFreq()
	require.Len(t, inv, 64)
	require.Equal(t, float32(1), inv[0])

	base := 1 / math.Sqrt(500000)
	wavelen := 2 * math.Pi * math.Sqrt(500000)
	require.InDelta(t, 4442.88, wavelen, 0.01)
	smooth := (8192/wavelen - 1) / 3
	require.InDelta(t, float32(base*((1-smooth)/8+smooth)), inv[32], 1e-10)

	slow := math.Pow(500000, -126.0/128) / 8
	require.InDelta(t, slow, float64(inv[63]), slow*1e-6)

	// Without scaling the same config gives the plain theta^(-2i/d).
	c.RopeScaling = nil
	plain := c.ropeInvFreq()
	require.InDelta(t, base, float64(plain[32]), base*1e-6)
	c.RopeScaling = &RopeScaling{Type: "linear", Factor: 4}
	require.InDelta(t, base/4, float64(c.ropeInvFreq()[32]), base*1e-6)
}

// FuzzParseConfig proves any input either parses into a config whose
// invariants hold or fails with a *ConfigError, never a panic.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{llama31Config, qwen25Config, gemma3Config, gemma3VisionConfig, gemma2Config, smollmConfig, v5Config, `{}`, `null`, `{"architectures":["LlamaForCausalLM"],"hidden_size":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig("config.json", data)
		if err != nil {
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			return
		}
		require.Positive(t, c.HeadDim)
		require.Zero(t, c.HeadDim%2)
		require.Zero(t, c.NumHeads%c.NumKVHeads)
		require.Len(t, c.ropeInvFreq(), c.HeadDim/2)
		for _, id := range c.EOSTokenIDs {
			require.Less(t, id, c.VocabSize)
		}
		require.Less(t, c.BOSTokenID, c.VocabSize)
		if c.SlidingWindow > 0 {
			require.Len(t, c.SlidingLayers, c.NumLayers)
			require.Contains(t, c.SlidingLayers, true)
			require.Len(t, c.ropeLocalInvFreq(), c.HeadDim/2)
		}
		require.Positive(t, c.attnScale())
	})
}

// TestQwen3ConfigDefaults proves a Qwen3 config without head_dim,
// attention_bias or max_position_embeddings takes transformers'
// Qwen3Config defaults (128, none, 32768), not Llama's derived head size,
// and that attention_bias gives q, k, v and o biases as in Qwen3Attention.
func TestQwen3ConfigDefaults(t *testing.T) {
	base := `"model_type":"qwen3","hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":300`
	c, err := ParseConfig("", []byte(`{`+base+`}`))
	require.NoError(t, err)
	require.Equal(t, Qwen3, c.Architecture)
	require.Equal(t, 128, c.HeadDim)
	require.Equal(t, 32768, c.MaxPositionEmbeddings)
	require.True(t, c.QKNorm)
	require.False(t, c.QKVBias || c.OBias)

	c, err = ParseConfig("", []byte(`{`+base+`,"attention_bias":true,"head_dim":32}`))
	require.NoError(t, err)
	require.Equal(t, 32, c.HeadDim)
	require.True(t, c.QKVBias && c.OBias)
}

// TestMistralConfigWindow proves how a Mistral's sliding_window is read:
// null (v0.3) and a window holding the whole context are no window (the
// model is Llama's and runs on every backend), a shorter one (7B v0.1's
// 4096 of 32768) makes every layer slide with the one RoPE, and an absent
// one is MistralConfig's 4096.
func TestMistralConfigWindow(t *testing.T) {
	const v03 = `{"architectures": ["MistralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
  "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
  "max_position_embeddings": 32768, "model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 32,
  "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "sliding_window": null,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.42.0.dev0", "use_cache": true,
  "vocab_size": 32768}`
	c, err := ParseConfig("", []byte(v03))
	require.NoError(t, err)
	require.Equal(t, Mistral, c.Architecture)
	require.Equal(t, []int{4096, 14336, 32, 32, 8, 128, 32768, 32768},
		[]int{c.HiddenSize, c.IntermediateSize, c.NumLayers, c.NumHeads, c.NumKVHeads, c.HeadDim, c.VocabSize, c.MaxPositionEmbeddings})
	require.Equal(t, 1e6, c.RopeTheta)
	require.Zero(t, c.SlidingWindow)
	require.Empty(t, c.cpuOnly(), "v0.3 runs wherever Llama runs")

	for _, tc := range []struct {
		name   string
		edit   string
		window int
	}{
		{"v0.1's window", `"sliding_window": 4096`, 4096},
		{"absent: MistralConfig's 4096", ``, 4096},
		{"the whole context", `"sliding_window": 32768`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := strings.Replace(v03, `"sliding_window": null`, tc.edit, 1)
			if tc.edit == "" {
				cfg = strings.Replace(v03, `"sliding_window": null,`, "", 1)
			}
			c, err := ParseConfig("", []byte(cfg))
			require.NoError(t, err)
			require.Equal(t, tc.window, c.SlidingWindow)
			if tc.window == 0 {
				require.Empty(t, c.cpuOnly())
				return
			}
			require.Equal(t, []string{"sliding-window attention layers"}, c.cpuOnly())
			for l := range c.NumLayers {
				require.Equal(t, tc.window, c.window(l), "layer %d", l)
			}
			require.Equal(t, c.ropeInvFreq(), c.ropeLocalInvFreq(), "one RoPE for every layer")
		})
	}
}

// TestPhi3Config proves how a Phi3ForCausalLM config is read: the
// partial rotary dimension (Phi-4-mini's 0.75 of 128), LongRoPE's factors
// with transformers' defaults for factor and attention_factor (and early
// Phi-3's "su" for longrope), Phi-3-mini-4k's window of 2047 on every
// layer, and refusals naming the field.
func TestPhi3Config(t *testing.T) {
	factors := func(n int, v string) string { return "[" + strings.TrimSuffix(strings.Repeat(v+",", n), ",") + "]" }
	phi4mini := `{"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192,
  "num_hidden_layers": 32, "num_attention_heads": 24, "num_key_value_heads": 8, "vocab_size": 200064,
  "max_position_embeddings": 131072, "original_max_position_embeddings": 4096, "partial_rotary_factor": 0.75,
  "rope_theta": 10000.0, "sliding_window": 262144, "tie_word_embeddings": true, "hidden_act": "silu",
  "rope_scaling": {"type": "longrope", "short_factor": ` + factors(48, "1.0") + `, "long_factor": ` + factors(48, "2.5") + `}}`
	c, err := ParseConfig("", []byte(phi4mini))
	require.NoError(t, err)
	require.Equal(t, Phi3, c.Architecture)
	require.Equal(t, 128, c.HeadDim)
	require.Equal(t, 96, c.RotaryDim)
	require.Zero(t, c.SlidingWindow, "a window holding the whole context is none")
	rs := c.RopeScaling
	require.Equal(t, "longrope", rs.Type)
	require.Equal(t, 4096, rs.OriginalMaxPositionEmbeddings)
	require.Equal(t, 32.0, rs.Factor)
	require.InDelta(t, math.Sqrt(1+math.Log(32)/math.Log(4096)), rs.AttentionFactor, 1e-15)
	require.Len(t, c.ropeInvFreq(), 48)
	require.InDelta(t, 2.5, float64(c.ropeInvFreq()[7]/c.ropeLongInvFreq()[7]), 1e-6)
	require.False(t, c.longRoPE(4096))
	require.True(t, c.longRoPE(4097))

	su := strings.Replace(phi4mini, `"type": "longrope"`, `"type": "su"`, 1)
	c, err = ParseConfig("", []byte(su))
	require.NoError(t, err)
	require.Equal(t, "longrope", c.RopeScaling.Type)

	mini4k := `{"architectures": ["Phi3ForCausalLM"], "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 32,
  "num_attention_heads": 32, "vocab_size": 32064, "max_position_embeddings": 4096, "original_max_position_embeddings": 4096,
  "rope_scaling": null, "sliding_window": 2047}`
	c, err = ParseConfig("", []byte(mini4k))
	require.NoError(t, err)
	require.Equal(t, 2047, c.SlidingWindow)
	require.Zero(t, c.RotaryDim)
	require.Nil(t, c.RopeScaling)
	require.Contains(t, c.cpuOnly(), "sliding-window attention layers")

	for _, tc := range []struct{ name, cfg, field string }{
		{"short factors", strings.Replace(phi4mini, factors(48, "1.0"), factors(47, "1.0"), 1), "rope_scaling.short_factor"},
		{"a zero factor", strings.Replace(phi4mini, factors(48, "2.5"), factors(47, "2.5")[:len(factors(47, "2.5"))-1]+",0]", 1), "rope_scaling.long_factor"},
		{"partial rotary", strings.Replace(phi4mini, `"partial_rotary_factor": 0.75`, `"partial_rotary_factor": 1.5`, 1), "partial_rotary_factor"},
		{"longrope outside Phi-3", `{"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 1,
  "num_attention_heads": 4, "vocab_size": 300, "rope_scaling": {"rope_type": "longrope", "short_factor": [1], "long_factor": [1]}}`, "rope_scaling.rope_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig("", []byte(tc.cfg))
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tc.field, ce.Field)
		})
	}
}
