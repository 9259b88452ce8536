package modeltest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"

	"github.com/hipgo/hipgo/model/safetensors"
)

// Tensor is one named weight with its values as stored (already rounded to
// the Spec's dtype, so a reference computed from them is exact).
type Tensor struct {
	Name   string
	Shape  []int
	Values []float32
}

// Tensors draws the model's weights in the Hugging Face naming.
func Tensors(s Spec) []Tensor {
	r := rand.New(rand.NewPCG(s.Seed, 0x5eed))
	hd := s.headDim()
	qD, kvD := s.Heads*hd, s.KVHeads*hd
	var out []Tensor
	add := func(name string, mean float32, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = roundTo(s.DType, mean+s.Std*float32(r.NormFloat64()))
		}
		out = append(out, Tensor{Name: name, Shape: shape, Values: v})
	}
	add("model.embed_tokens.weight", 0, s.Vocab, s.Hidden)
	qkvBias := s.Arch == "qwen2" || s.AttnBias
	gemma := s.Arch == "gemma3" || s.Arch == "gemma2"
	normMean := float32(1)
	if gemma {
		normMean = 0 // Gemma's RMSNorm multiplies by 1+w
	}
	for l := range s.Layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		add(p+"input_layernorm.weight", normMean, s.Hidden)
		if s.Arch == "phi3" {
			add(p+"self_attn.qkv_proj.weight", 0, qD+2*kvD, s.Hidden)
		} else {
			add(p+"self_attn.q_proj.weight", 0, qD, s.Hidden)
			add(p+"self_attn.k_proj.weight", 0, kvD, s.Hidden)
			add(p+"self_attn.v_proj.weight", 0, kvD, s.Hidden)
		}
		if qkvBias {
			add(p+"self_attn.q_proj.bias", 0, qD)
			add(p+"self_attn.k_proj.bias", 0, kvD)
			add(p+"self_attn.v_proj.bias", 0, kvD)
		}
		if s.Arch == "qwen3" || s.Arch == "gemma3" {
			add(p+"self_attn.q_norm.weight", normMean, hd)
			add(p+"self_attn.k_norm.weight", normMean, hd)
		}
		add(p+"self_attn.o_proj.weight", 0, s.Hidden, qD)
		if s.AttnBias {
			add(p+"self_attn.o_proj.bias", 0, s.Hidden)
		}
		add(p+"post_attention_layernorm.weight", normMean, s.Hidden)
		if gemma {
			add(p+"pre_feedforward_layernorm.weight", normMean, s.Hidden)
			add(p+"post_feedforward_layernorm.weight", normMean, s.Hidden)
		}
		if s.Arch == "phi3" {
			add(p+"mlp.gate_up_proj.weight", 0, 2*s.Intermediate, s.Hidden)
		} else {
			add(p+"mlp.gate_proj.weight", 0, s.Intermediate, s.Hidden)
			add(p+"mlp.up_proj.weight", 0, s.Intermediate, s.Hidden)
		}
		add(p+"mlp.down_proj.weight", 0, s.Hidden, s.Intermediate)
		if s.MLPBias {
			add(p+"mlp.gate_proj.bias", 0, s.Intermediate)
			add(p+"mlp.up_proj.bias", 0, s.Intermediate)
			add(p+"mlp.down_proj.bias", 0, s.Hidden)
		}
	}
	add("model.norm.weight", normMean, s.Hidden)
	if !s.Tie {
		add("lm_head.weight", 0, s.Vocab, s.Hidden)
	}
	return out
}

func roundTo(dt safetensors.DType, v float32) float32 {
	switch dt {
	case safetensors.BF16:
		return safetensors.BF16ToFloat32(safetensors.Float32ToBF16(v))
	case safetensors.F16:
		return safetensors.F16ToFloat32(safetensors.Float32ToF16(v))
	}
	return v
}

// Config renders config.json for s.
func Config(s Spec) ([]byte, error) {
	arch, mtype := "LlamaForCausalLM", "llama"
	switch s.Arch {
	case "qwen2":
		arch, mtype = "Qwen2ForCausalLM", "qwen2"
	case "qwen3":
		arch, mtype = "Qwen3ForCausalLM", "qwen3"
	case "gemma3":
		arch, mtype = "Gemma3ForCausalLM", "gemma3_text"
	case "gemma2":
		arch, mtype = "Gemma2ForCausalLM", "gemma2"
	case "mistral":
		arch, mtype = "MistralForCausalLM", "mistral"
	case "phi3":
		arch, mtype = "Phi3ForCausalLM", "phi3"
	}
	dtypeName := map[safetensors.DType]string{safetensors.F32: "float32", safetensors.F16: "float16", safetensors.BF16: "bfloat16"}[s.DType]
	c := map[string]any{
		"architectures":           []string{arch},
		"model_type":              mtype,
		"hidden_size":             s.Hidden,
		"intermediate_size":       s.Intermediate,
		"num_hidden_layers":       s.Layers,
		"num_attention_heads":     s.Heads,
		"num_key_value_heads":     s.KVHeads,
		"vocab_size":              s.Vocab,
		"max_position_embeddings": s.MaxPos,
		"rms_norm_eps":            s.RMSNormEps,
		"hidden_act":              "silu",
		"tie_word_embeddings":     s.Tie,
		"bos_token_id":            s.Vocab - 1,
		"eos_token_id":            s.Vocab - 1,
	}
	if s.HeadDim > 0 || s.Arch == "qwen3" || s.Arch == "gemma3" || s.Arch == "gemma2" { // their defaults are 128 and 256, not hidden/heads
		c["head_dim"] = s.headDim()
	}
	switch s.Arch {
	case "qwen2":
		c["use_sliding_window"] = false
	case "qwen3":
		c["use_sliding_window"] = false
		c["attention_bias"] = s.AttnBias
	case "gemma3":
		return gemma3Config(s, c, dtypeName)
	case "gemma2":
		gemma2Config(s, c)
	case "mistral":
		c["sliding_window"] = nil
		if s.SlidingWindow > 0 {
			c["sliding_window"] = s.SlidingWindow
		}
	case "phi3":
		c["sliding_window"] = nil
		c["pad_token_id"] = s.Vocab - 1 // Phi3Config's 32000 is past this vocabulary
		if s.PartialRotary > 0 {
			c["partial_rotary_factor"] = s.PartialRotary
		}
	default:
		c["attention_bias"] = s.AttnBias
		c["mlp_bias"] = s.MLPBias
	}
	var scaling map[string]any
	if s.Llama3 != nil {
		scaling = map[string]any{
			"rope_type": "llama3", "factor": s.Llama3.Factor, "low_freq_factor": s.Llama3.LowFreqFactor,
			"high_freq_factor": s.Llama3.HighFreqFactor, "original_max_position_embeddings": s.Llama3.OriginalMaxPositionEmbeddings,
		}
	}
	if lr := s.LongRoPE; lr != nil {
		// Phi-3's configs keep original_max_position_embeddings at the top level.
		scaling = map[string]any{"rope_type": "longrope", "short_factor": lr.ShortFactor, "long_factor": lr.LongFactor}
		c["original_max_position_embeddings"] = lr.OriginalMaxPositionEmbeddings
	}
	if s.ConfigVersion == 5 {
		rp := map[string]any{"rope_type": "default", "rope_theta": s.RopeTheta}
		for k, v := range scaling {
			rp[k] = v
		}
		c["rope_parameters"] = rp
		c["dtype"] = dtypeName
	} else {
		c["rope_theta"] = s.RopeTheta
		c["rope_scaling"] = scaling
		c["torch_dtype"] = dtypeName
	}
	return json.MarshalIndent(c, "", "  ")
}

// Write creates dir and writes config.json, the weights (one file, or shards
// and an index when ShardTensors > 0) and, unless NoTokenizer,
// tokenizer.json (and tokenizer_config.json when ChatTemplate is set).
func Write(dir string, s Spec) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cfg, err := Config(s)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		return err
	}
	files, err := Safetensors(s)
	if err != nil {
		return err
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	if s.NoTokenizer {
		return nil
	}
	tok, err := TokenizerWith(s.Vocab, s.ChatTokens)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), tok, 0o644); err != nil {
		return err
	}
	if s.ChatTemplate == "" {
		return nil
	}
	tc, err := TokenizerConfig(s)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), tc, 0o644)
}

// TokenizerConfig renders tokenizer_config.json with s.ChatTemplate and
// EndOfText as bos and eos.
func TokenizerConfig(s Spec) ([]byte, error) {
	return json.MarshalIndent(map[string]any{
		"chat_template":   s.ChatTemplate,
		"bos_token":       EndOfText,
		"eos_token":       map[string]any{"content": EndOfText, "special": true},
		"tokenizer_class": "PreTrainedTokenizerFast",
	}, "", "  ")
}

// Safetensors encodes the weights: {"model.safetensors": ...}, or shards
// plus "model.safetensors.index.json" when s.ShardTensors > 0.
func Safetensors(s Spec) (map[string][]byte, error) {
	ts := Tensors(s)
	enc := make([]safetensors.Tensor, len(ts))
	for i, t := range ts {
		b, err := safetensors.EncodeFloat32(s.DType, t.Values)
		if err != nil {
			return nil, err
		}
		enc[i] = safetensors.Tensor{Name: t.Name, DType: s.DType, Shape: t.Shape, Data: b}
	}
	meta := map[string]string{"format": "pt"}
	if s.ShardTensors <= 0 {
		var buf bytes.Buffer
		if err := safetensors.Write(&buf, enc, meta); err != nil {
			return nil, err
		}
		return map[string][]byte{"model.safetensors": buf.Bytes()}, nil
	}
	sort.Slice(enc, func(i, j int) bool { return enc[i].Name < enc[j].Name })
	n := (len(enc) + s.ShardTensors - 1) / s.ShardTensors
	out := map[string][]byte{}
	weightMap := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, n)
		part := enc[i*s.ShardTensors : min(len(enc), (i+1)*s.ShardTensors)]
		var buf bytes.Buffer
		if err := safetensors.Write(&buf, part, meta); err != nil {
			return nil, err
		}
		out[name] = buf.Bytes()
		for _, t := range part {
			weightMap[t.Name] = name
		}
	}
	idx, err := json.MarshalIndent(map[string]any{"metadata": map[string]any{}, "weight_map": weightMap}, "", "  ")
	if err != nil {
		return nil, err
	}
	out["model.safetensors.index.json"] = idx
	return out, nil
}

// gemma3Config adds Gemma3TextConfig's keys to c, in transformers 4's
// layout (rope_theta, rope_local_base_freq, rope_scaling,
// sliding_window_pattern) or 5's (rope_parameters by layer type,
// layer_types).
func gemma3Config(s Spec, c map[string]any, dtypeName string) ([]byte, error) {
	delete(c, "hidden_act")
	c["hidden_activation"] = "gelu_pytorch_tanh"
	c["attention_bias"] = s.AttnBias
	c["query_pre_attn_scalar"] = s.QueryPreAttnScalar
	if s.QueryPreAttnScalar == 0 {
		c["query_pre_attn_scalar"] = s.headDim()
	}
	c["sliding_window"] = s.SlidingWindow
	c["attn_logit_softcapping"] = nil
	c["final_logit_softcapping"] = nil
	if s.FinalSoftcap > 0 {
		c["final_logit_softcapping"] = s.FinalSoftcap
	}
	var scaling map[string]any
	if s.LinearRope > 0 {
		scaling = map[string]any{"rope_type": "linear", "factor": s.LinearRope}
	}
	if s.ConfigVersion == 5 {
		full := map[string]any{"rope_type": "default", "rope_theta": s.RopeTheta}
		for k, v := range scaling {
			full[k] = v
		}
		c["rope_parameters"] = map[string]any{"full_attention": full,
			"sliding_attention": map[string]any{"rope_type": "default", "rope_theta": s.RopeLocalTheta}}
		types := make([]string, s.Layers)
		for i := range types {
			types[i] = "sliding_attention"
			if (i+1)%s.SlidingPattern == 0 {
				types[i] = "full_attention"
			}
		}
		c["layer_types"] = types
		c["dtype"] = dtypeName
	} else {
		c["rope_theta"] = s.RopeTheta
		c["rope_local_base_freq"] = s.RopeLocalTheta
		c["rope_scaling"] = scaling
		c["sliding_window_pattern"] = s.SlidingPattern
		c["torch_dtype"] = dtypeName
	}
	return json.MarshalIndent(c, "", "  ")
}

// gemma2Config adds Gemma2Config's keys to c (the RoPE keys follow as for
// llama; with ConfigVersion 5, layer_types too).
func gemma2Config(s Spec, c map[string]any) {
	delete(c, "hidden_act")
	c["hidden_activation"] = "gelu_pytorch_tanh"
	c["attention_bias"] = s.AttnBias
	c["query_pre_attn_scalar"] = s.QueryPreAttnScalar
	if s.QueryPreAttnScalar == 0 {
		c["query_pre_attn_scalar"] = s.headDim()
	}
	c["sliding_window"] = s.SlidingWindow
	c["attn_logit_softcapping"], c["final_logit_softcapping"] = nil, nil
	if s.AttnSoftcap > 0 {
		c["attn_logit_softcapping"] = s.AttnSoftcap
	}
	if s.FinalSoftcap > 0 {
		c["final_logit_softcapping"] = s.FinalSoftcap
	}
	if s.ConfigVersion == 5 {
		types := make([]string, s.Layers)
		for i := range types {
			types[i] = "sliding_attention"
			if i%2 == 1 {
				types[i] = "full_attention"
			}
		}
		c["layer_types"] = types
	}
}
