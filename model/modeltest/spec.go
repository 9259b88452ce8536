package modeltest

import (
	"github.com/hipgo/hipgo/model/safetensors"
)

// Llama3Scaling is Llama 3.1's rope_scaling block.
type Llama3Scaling struct {
	Factor, LowFreqFactor, HighFreqFactor float64
	OriginalMaxPositionEmbeddings         int
}

// Spec describes a random model.
type Spec struct {
	Arch         string // "llama", "qwen2", "qwen3", "gemma3", "gemma2", "mistral" or "phi3"
	Hidden       int
	Intermediate int
	Layers       int
	Heads        int
	KVHeads      int
	HeadDim      int // 0: Hidden/Heads, and no head_dim key in the config
	Vocab        int // at least 258 when a tokenizer is written
	MaxPos       int
	RopeTheta    float64
	Llama3       *Llama3Scaling
	Tie          bool
	AttnBias     bool // llama and qwen3 attention_bias
	MLPBias      bool // llama mlp_bias
	RMSNormEps   float64
	DType        safetensors.DType
	Seed         uint64
	Std          float32 // weight standard deviation
	ShardTensors int     // > 0: write shards of this many tensors with an index
	NoTokenizer  bool
	// ChatTokens are special tokens (chat markers such as "<|im_end|>")
	// given the ids just below EndOfText's; ChatTemplate, when set, is
	// written with EndOfText as bos and eos to tokenizer_config.json.
	ChatTokens    []string
	ChatTemplate  string
	ConfigVersion int // 5: transformers 5 layout (rope_parameters, dtype); else 4 (rope_theta, rope_scaling, torch_dtype)
	// Gemma 3 (Arch "gemma3"; AttnBias as qwen3's): every SlidingPattern-th
	// layer is global, the others attend to the last SlidingWindow
	// positions with RoPE base RopeLocalTheta; LinearRope > 0 scales the
	// global layers' RoPE linearly; QueryPreAttnScalar (0: head_dim) sets
	// the attention scale; FinalSoftcap > 0 soft-caps the logits.
	SlidingWindow      int
	SlidingPattern     int
	RopeLocalTheta     float64
	LinearRope         float64
	QueryPreAttnScalar float64
	FinalSoftcap       float64
	// Gemma 2 (Arch "gemma2"): every other layer slides (SlidingWindow),
	// one RoPE base; AttnSoftcap and FinalSoftcap > 0 soft-cap the
	// attention scores and the logits (0: null in the config).
	AttnSoftcap float64
	// Mistral (Arch "mistral"): SlidingWindow > 0 makes every layer attend
	// to the last SlidingWindow positions (7B v0.1's); 0: sliding_window
	// null (v0.3's).
	//
	// Phi-3 (Arch "phi3"): fused qkv_proj and gate_up_proj weights;
	// PartialRotary in (0, 1) turns that part of each head (0: all);
	// LongRoPE, when set, is its rope_scaling.
	PartialRotary float64
	LongRoPE      *LongRoPEScaling
}

// LongRoPEScaling is Phi-3's rope_scaling of type longrope: a factor per
// rotary pair below and past OriginalMaxPositionEmbeddings (factor and
// attention_factor left to their defaults).
type LongRoPEScaling struct {
	ShortFactor, LongFactor       []float64
	OriginalMaxPositionEmbeddings int
}

// Presets used across tests and benchmarks.

// Llama3Tiny is a small Llama-3-style model: GQA (4 heads, 2 KV heads) and
// llama3 rope scaling with a context long enough to reach the scaled band.
func Llama3Tiny() Spec {
	return Spec{Arch: "llama", Hidden: 64, Intermediate: 96, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 300, MaxPos: 256,
		RopeTheta: 500000, Llama3: &Llama3Scaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 64},
		RMSNormEps: 1e-5, DType: safetensors.F32, Seed: 1, Std: 0.2}
}

// Qwen2Tiny is a small Qwen2-style model with q/k/v biases and an untied head.
func Qwen2Tiny() Spec {
	return Spec{Arch: "qwen2", Hidden: 48, Intermediate: 80, Layers: 2, Heads: 6, KVHeads: 2, Vocab: 290, MaxPos: 128,
		RopeTheta: 1000000, RMSNormEps: 1e-6, DType: safetensors.F32, Seed: 2, Std: 0.2}
}

// Qwen3Tiny is a small dense Qwen3: q/k norms, GQA (4 heads, 2 KV heads)
// and a head_dim (24) other than hidden/heads (16), with an untied head.
func Qwen3Tiny() Spec {
	return Spec{Arch: "qwen3", Hidden: 64, Intermediate: 96, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 24, Vocab: 280, MaxPos: 160,
		RopeTheta: 1000000, RMSNormEps: 1e-6, DType: safetensors.F32, Seed: 5, Std: 0.2}
}

// Gemma3Tiny is a small Gemma 3 text model with every feature on: a
// sliding window of 8 (shorter than test prompts) on layers 0-4 and 6,
// layer 5 global (Gemma 3's pattern of 6), local and global RoPE bases
// 10000 and 1000000 with linear scaling 8 on the global layer, q/k norms,
// GQA (4 heads, 2 KV heads), a head_dim (32) other than hidden/heads (16),
// and a tied head. Norm weights are drawn around 0 (Gemma applies 1+w).
func Gemma3Tiny() Spec {
	return Spec{Arch: "gemma3", Hidden: 64, Intermediate: 96, Layers: 7, Heads: 4, KVHeads: 2, HeadDim: 32, Vocab: 280, MaxPos: 256,
		RopeTheta: 1000000, RopeLocalTheta: 10000, LinearRope: 8, SlidingWindow: 8, SlidingPattern: 6, Tie: true,
		RMSNormEps: 1e-6, DType: safetensors.F32, Seed: 6, Std: 0.2}
}

// Gemma3TinySoftcap is Gemma3Tiny with final logit soft-capping (2.5, below
// its largest logits), attention biases and an untied head, in
// transformers 5's config layout (layer_types, rope_parameters by layer
// type).
func Gemma3TinySoftcap() Spec {
	s := Gemma3Tiny()
	s.FinalSoftcap, s.AttnBias, s.Tie, s.ConfigVersion, s.Seed = 2.5, true, false, 5, 7
	return s
}

// Gemma3TinyScalar is Gemma3Tiny with an attention scale of 20^-1/2
// (query_pre_attn_scalar 20 beside head_dim 32), a window of 5 and every
// third layer global.
func Gemma3TinyScalar() Spec {
	s := Gemma3Tiny()
	s.QueryPreAttnScalar, s.SlidingWindow, s.SlidingPattern, s.Seed = 20, 5, 3, 8
	return s
}

// Gemma2Tiny is a small Gemma 2: a window of 8 on layers 0 and 2, layers 1
// and 3 global, one RoPE base (20000, not Gemma 3's local 10000) for all,
// attention soft-capping at 4.5 and final soft-capping at 6.5 (both below
// the values they cap here), GQA (4 heads, 2 KV heads), a head_dim (32)
// other than hidden/heads (16), tied.
func Gemma2Tiny() Spec {
	return Spec{Arch: "gemma2", Hidden: 64, Intermediate: 96, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 32, Vocab: 280, MaxPos: 256,
		RopeTheta: 20000, SlidingWindow: 8, AttnSoftcap: 4.5, FinalSoftcap: 6.5, Tie: true,
		RMSNormEps: 1e-6, DType: safetensors.F32, Seed: 9, Std: 0.2}
}

// MistralTiny is a small Mistral v0.3: Llama's layout with GQA (4 heads, 1
// KV head), sliding_window null, RoPE base 1000000, an untied head.
func MistralTiny() Spec {
	return Spec{Arch: "mistral", Hidden: 64, Intermediate: 112, Layers: 3, Heads: 4, KVHeads: 1, Vocab: 280, MaxPos: 256,
		RopeTheta: 1000000, RMSNormEps: 1e-5, DType: safetensors.F32, Seed: 10, Std: 0.2}
}

// MistralTinyWindow is MistralTiny with Mistral 7B v0.1's windowed
// attention: every layer sees the last 8 positions.
func MistralTinyWindow() Spec {
	s := MistralTiny()
	s.SlidingWindow, s.Seed = 8, 11
	return s
}

// Phi3Tiny is a small Phi-3 with every feature on: fused qkv_proj and
// gate_up_proj, RoPE on the first 12 of each head's 16 values
// (partial_rotary_factor 0.75), LongRoPE with an original context of 32
// (short factors near 1, long ones up to 6; factor 256/32 and its
// attention factor sqrt(1+ln 8/ln 32)), GQA (4 heads, 2 KV heads), untied.
func Phi3Tiny() Spec {
	short := []float64{1, 1.05, 1.1, 1.2, 1.35, 1.5}
	long := []float64{1, 1.4, 2, 3, 4.5, 6}
	return Spec{Arch: "phi3", Hidden: 64, Intermediate: 96, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 280, MaxPos: 256,
		RopeTheta: 10000, PartialRotary: 0.75, LongRoPE: &LongRoPEScaling{ShortFactor: short, LongFactor: long, OriginalMaxPositionEmbeddings: 32},
		RMSNormEps: 1e-5, DType: safetensors.F32, Seed: 12, Std: 0.2}
}

// SmolLMTiny is a small tied-embedding llama (SmolLM-style) in bf16.
func SmolLMTiny() Spec {
	return Spec{Arch: "llama", Hidden: 48, Intermediate: 64, Layers: 3, Heads: 3, KVHeads: 1, Vocab: 270, MaxPos: 96,
		RopeTheta: 10000, Tie: true, RMSNormEps: 1e-5, DType: safetensors.BF16, Seed: 3, Std: 0.2}
}

// DemoShaped has the demo model's shapes (tools/traindemo/train.py's
// defaults: hidden 384, 6 layers, 6 heads, 2 KV heads, intermediate 1024,
// vocab 4096, context 512, tied, bf16) with random weights, for measuring
// before the trained model exists.
func DemoShaped() Spec {
	return Spec{Arch: "llama", Hidden: 384, Intermediate: 1024, Layers: 6, Heads: 6, KVHeads: 2, Vocab: 4096, MaxPos: 512,
		RopeTheta: 10000, Tie: true, RMSNormEps: 1e-5, DType: safetensors.BF16, Seed: 4096, Std: 0.02}
}

// SmolLM135M has SmolLM-135M's shapes (hidden 576, 30 layers, 9 heads, 3 KV
// heads, intermediate 1536, vocab 49152, tied embeddings) with random weights.
func SmolLM135M() Spec {
	return Spec{Arch: "llama", Hidden: 576, Intermediate: 1536, Layers: 30, Heads: 9, KVHeads: 3, Vocab: 49152, MaxPos: 2048,
		RopeTheta: 10000, Tie: true, RMSNormEps: 1e-5, DType: safetensors.BF16, Seed: 135, Std: 0.02}
}

func (s Spec) headDim() int {
	if s.HeadDim > 0 {
		return s.HeadDim
	}
	return s.Hidden / s.Heads
}
