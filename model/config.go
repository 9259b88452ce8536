package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Architecture is the Hugging Face class a checkpoint was saved from.
type Architecture string

// Supported architectures. SmolLM checkpoints are LlamaForCausalLM with tied embeddings.
const (
	Llama Architecture = "LlamaForCausalLM"
	Qwen2 Architecture = "Qwen2ForCausalLM"
	// Qwen3 is the dense Qwen3: Llama's layout plus a per-head RMSNorm of q
	// and k before RoPE (QKNorm), with head_dim its own setting.
	Qwen3 Architecture = "Qwen3ForCausalLM"
	// Gemma3 is the text model of Gemma 3 (Gemma3ForCausalLM, model_type
	// gemma3_text; GGUF gemma3): Gemma's layout (Config.Gemma), q/k norms,
	// a GeGLU MLP, and sliding-window layers interleaved with global ones,
	// each kind with its own RoPE base.
	Gemma3 Architecture = "Gemma3ForCausalLM"
	// Gemma2 is Gemma 2: Gemma 3's layout without q/k norms, every other
	// layer sliding with one RoPE base, and attention and final logit
	// soft-capping.
	Gemma2 Architecture = "Gemma2ForCausalLM"
	// Mistral is Llama's layout (no biases) with sliding_window: null (v0.2
	// and later) runs as Llama does on every backend; a window shorter than
	// max_position_embeddings (7B v0.1's 4096) makes every layer a
	// sliding-window one, on the CPU. llama.cpp writes Mistral GGUFs as
	// llama.
	Mistral Architecture = "MistralForCausalLM"
	// Phi3 is Phi-3 and Phi-4 (Phi3ForCausalLM): Llama's computation with
	// fused qkv_proj and gate_up_proj weights, RoPE on the first
	// partial_rotary_factor of each head, LongRoPE scaling, and
	// sliding_window as Mistral's (none when absent). CPU only.
	Phi3 Architecture = "Phi3ForCausalLM"
)

// gemma: the Gemma layout (Config.Gemma).
func (a Architecture) gemma() bool { return a == Gemma2 || a == Gemma3 }

// architectures are the supported architectures by config.json's
// model_type and by GGUF's general.architecture.
var architectures = []struct {
	arch            Architecture
	modelType, gguf string
}{{Llama, "llama", "llama"}, {Qwen2, "qwen2", "qwen2"}, {Qwen3, "qwen3", "qwen3"}, {Gemma3, "gemma3_text", "gemma3"}, {Gemma2, "gemma2", "gemma2"}, {Mistral, "mistral", ""}, {Phi3, "phi3", ""}}

// Names an error message lists the supported architectures by.
const (
	byClass = iota
	byModelType
	byGGUF
)

// supportedList names the supported architectures for an error message.
func supportedList(by int) string {
	var names []string
	for _, a := range architectures {
		if by == byGGUF && a.gguf == "" {
			continue
		}
		switch by {
		case byClass:
			names = append(names, string(a.arch))
		case byModelType:
			names = append(names, a.modelType)
		default:
			names = append(names, a.gguf)
		}
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Gemma3Vision is the class of Gemma 3's image-and-text checkpoints: Load
// reads the Gemma 3 text model inside (text_config, language_model.*
// tensors) and leaves the vision tower and projector unread
// (Config.VisionSkipped).
const Gemma3Vision = "Gemma3ForConditionalGeneration"

// RopeScaling is the RoPE frequency scaling of a config. Type is
// "linear", "llama3" or "longrope".
type RopeScaling struct {
	Type                          string
	Factor                        float64
	LowFreqFactor                 float64 // llama3
	HighFreqFactor                float64 // llama3
	OriginalMaxPositionEmbeddings int     // llama3 and longrope
	// longrope (Phi-3): each rotary pair's inverse frequency is divided by
	// its ShortFactor, or by its LongFactor in a forward call that reaches
	// past OriginalMaxPositionEmbeddings (the call's last position decides
	// for all its tokens, as transformers decides; keys cached before keep
	// theirs), and cos and sin are multiplied by AttentionFactor.
	ShortFactor, LongFactor []float64
	AttentionFactor         float64
}

// Config is a validated llama-family config.json.
type Config struct {
	Architecture     Architecture
	HiddenSize       int
	IntermediateSize int
	NumLayers        int
	NumHeads         int
	NumKVHeads       int
	HeadDim          int
	// RotaryDim: RoPE turns the first RotaryDim values of each head of q
	// and k (head_dim times partial_rotary_factor, Phi-3's) and leaves the
	// rest; 0: all of them.
	RotaryDim             int
	VocabSize             int
	MaxPositionEmbeddings int
	RMSNormEps            float64
	RopeTheta             float64
	RopeScaling           *RopeScaling // nil: plain RoPE
	// RopeFreqFactors divide each rotary pair's inverse frequency (a GGUF's
	// rope_freqs.weight: how llama.cpp's converter stores Llama 3.1 rope
	// scaling); nil: none.
	RopeFreqFactors   []float32
	TieWordEmbeddings bool
	QKVBias           bool // q/k/v projections have biases (Qwen2, or Llama and Qwen3 attention_bias)
	OBias             bool // o_proj has a bias (Llama and Qwen3 attention_bias)
	// QKNorm: each head of q and of k is RMS-normalised, with a head_dim
	// weight shared by the heads (q_norm, k_norm), before RoPE (Qwen3).
	QKNorm      bool
	MLPBias     bool // gate/up/down have biases (Llama mlp_bias)
	BOSTokenID  int  // -1 when the config names none
	EOSTokenIDs []int
	DType       string // torch_dtype (transformers 4) or dtype (5), informational

	// Gemma: Gemma's layout. Embeddings are multiplied by sqrt(HiddenSize)
	// (a float32 scale, as transformers' float32 forward does); every
	// RMSNorm multiplies by (1 + w) (the loader adds 1 to a checkpoint's
	// weights, GGUF files store them added); and each layer has four norms:
	// before attention, on attention's output before the residual add
	// (post_attention_layernorm), before the MLP (pre_feedforward_layernorm)
	// and on the MLP's output (post_feedforward_layernorm).
	Gemma bool
	// HiddenAct is the MLP's gate activation: "silu" (SwiGLU) or
	// "gelu_pytorch_tanh" (GeGLU with tanh-approximated GELU; Gemma).
	HiddenAct string
	// QueryPreAttnScalar sets the attention scale to its -1/2 power; 0:
	// HeadDim's (Gemma's query_pre_attn_scalar).
	QueryPreAttnScalar float64
	// SlidingWindow > 0: a layer with SlidingLayers[l] set attends to the
	// last SlidingWindow positions only (its own included), with RoPE base
	// RopeLocalTheta and no RoPE scaling (RopeLocalTheta 0: the global
	// layers' RoPE, Gemma 2's); the other layers attend to every position
	// with RopeTheta and RopeScaling.
	SlidingWindow  int
	SlidingLayers  []bool
	RopeLocalTheta float64
	// FinalLogitSoftcap > 0: logits become cap*tanh(logits/cap).
	FinalLogitSoftcap float64
	// AttnLogitSoftcap > 0: attention scores (after the scale) become
	// cap*tanh(score/cap) before the softmax (Gemma 2).
	AttnLogitSoftcap float64
	// VisionSkipped: the checkpoint is a Gemma3ForConditionalGeneration;
	// this is its text model (text_config, language_model.* tensors), and
	// its vision tower and projector are not loaded (no image input).
	VisionSkipped bool
}

// attnScale is the factor of q·k before the softmax.
func (c *Config) attnScale() float32 {
	if c.QueryPreAttnScalar > 0 {
		return float32(1 / math.Sqrt(c.QueryPreAttnScalar))
	}
	return float32(1 / math.Sqrt(float64(c.HeadDim)))
}

// rotaryDim is how many values of each head RoPE turns.
func (c *Config) rotaryDim() int {
	if c.RotaryDim > 0 {
		return c.RotaryDim
	}
	return c.HeadDim
}

// longRoPE reports whether a forward call whose last position is end-1
// takes LongRoPE's long factors.
func (c *Config) longRoPE(end int) bool {
	rs := c.RopeScaling
	return rs != nil && rs.Type == "longrope" && end > rs.OriginalMaxPositionEmbeddings
}

// window is the sliding window of layer l; 0: the layer attends to every
// position.
func (c *Config) window(l int) int {
	if c.SlidingWindow > 0 && l < len(c.SlidingLayers) && c.SlidingLayers[l] {
		return c.SlidingWindow
	}
	return 0
}

// ConfigFile is the file name ParseConfig's errors use by default.
const ConfigFile = "config.json"

// limits keep a hostile config from asking for absurd allocations before the
// weights are checked against it.
const (
	maxDim    = 1 << 20
	maxLayers = 1 << 12
	maxVocab  = 1 << 24
	maxCtx    = 1 << 24
)

// ParseConfig parses and validates a config.json. file names it in errors.
func ParseConfig(file string, data []byte) (*Config, error) {
	if file == "" {
		file = ConfigFile
	}
	p := &configParser{file: file}
	if err := json.Unmarshal(data, &p.raw); err != nil {
		return nil, &ConfigError{File: file, Reason: "not a JSON object", Err: err}
	}
	if p.raw == nil {
		return nil, &ConfigError{File: file, Reason: "not a JSON object"}
	}
	return p.parse()
}

type configParser struct {
	file string
	raw  map[string]json.RawMessage
	// prefix names the object raw came from in errors ("text_config."),
	// except for the keys in outer, taken from the top level.
	prefix string
	outer  map[string]bool
	phi3   bool // the architecture is Phi3 (partial rotary and longrope are its)
}

func (p *configParser) errf(field, format string, args ...any) error {
	if key, _, _ := strings.Cut(field, "."); !p.outer[key] {
		field = p.prefix + field
	}
	return &ConfigError{File: p.file, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// textConfig makes a Gemma3ForConditionalGeneration's text_config the
// object parsed, with the top level's eos_token_id, bos_token_id,
// tie_word_embeddings and dtype where text_config lacks them.
func (p *configParser) textConfig() error {
	m := p.raw["text_config"]
	if isNull(m) {
		return p.errf("text_config", "missing (the text model's config)")
	}
	var tc map[string]json.RawMessage
	if err := json.Unmarshal(m, &tc); err != nil || tc == nil {
		return p.errf("text_config", "want an object (the text model's config), got %s", m)
	}
	if mt, _, err := p.stringField(tc, "text_config.", "model_type"); err != nil {
		return err
	} else if mt != "" && mt != "gemma3_text" {
		return p.errf("text_config.model_type", "%q is not supported (want gemma3_text)", mt)
	}
	p.outer = map[string]bool{}
	for _, k := range []string{"eos_token_id", "bos_token_id", "tie_word_embeddings", "torch_dtype", "dtype"} {
		if _, ok := tc[k]; !ok {
			if v, ok := p.raw[k]; ok {
				tc[k], p.outer[k] = v, true
			}
		}
	}
	delete(tc, "architectures")
	p.raw, p.prefix = tc, "text_config."
	return nil
}

func isNull(m json.RawMessage) bool {
	return m == nil || bytes.Equal(bytes.TrimSpace(m), []byte("null"))
}

// intField reads an integer field; def < 0 makes it required.
func (p *configParser) intField(raw map[string]json.RawMessage, prefix, key string, def, lo, hi int) (int, error) {
	field := prefix + key
	m, ok := raw[key]
	if !ok || isNull(m) {
		if def < 0 {
			return 0, p.errf(field, "missing (required)")
		}
		return def, nil
	}
	var f float64
	if err := json.Unmarshal(m, &f); err != nil || f != math.Trunc(f) {
		return 0, p.errf(field, "want an integer, got %s", m)
	}
	if f < float64(lo) || f > float64(hi) {
		return 0, p.errf(field, "%s is out of range [%d, %d]", m, lo, hi)
	}
	return int(f), nil
}

func (p *configParser) floatField(raw map[string]json.RawMessage, prefix, key string, def float64, required bool) (float64, error) {
	field := prefix + key
	m, ok := raw[key]
	if !ok || isNull(m) {
		if required {
			return 0, p.errf(field, "missing (required)")
		}
		return def, nil
	}
	var f float64
	if err := json.Unmarshal(m, &f); err != nil {
		return 0, p.errf(field, "want a number, got %s", m)
	}
	return f, nil
}

func (p *configParser) boolField(key string, def bool) (bool, error) {
	m, ok := p.raw[key]
	if !ok || isNull(m) {
		return def, nil
	}
	var b bool
	if err := json.Unmarshal(m, &b); err != nil {
		return false, p.errf(key, "want true or false, got %s", m)
	}
	return b, nil
}

func (p *configParser) stringField(raw map[string]json.RawMessage, prefix, key string) (string, bool, error) {
	m, ok := raw[key]
	if !ok || isNull(m) {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(m, &s); err != nil {
		return "", false, p.errf(prefix+key, "want a string, got %s", m)
	}
	return s, true, nil
}

func (p *configParser) architecture() (Architecture, error) {
	if m, ok := p.raw["architectures"]; ok && !isNull(m) {
		var archs []string
		if err := json.Unmarshal(m, &archs); err != nil {
			return "", p.errf("architectures", "want a list of strings, got %s", m)
		}
		for _, a := range archs {
			for _, s := range architectures {
				if Architecture(a) == s.arch {
					return s.arch, nil
				}
			}
		}
		if slices.Contains(archs, Gemma3Vision) {
			return Gemma3, p.textConfig()
		}
		return "", p.errf("architectures", "%v is not supported (want %s)", archs, supportedList(byClass))
	}
	mt, _, err := p.stringField(p.raw, "", "model_type")
	if err != nil {
		return "", err
	}
	if mt == "" {
		return "", p.errf("architectures", "missing, and no model_type either")
	}
	for _, s := range architectures {
		if mt == s.modelType {
			return s.arch, nil
		}
	}
	if mt == "gemma3" { // Gemma3Vision's
		return Gemma3, p.textConfig()
	}
	return "", p.errf("model_type", "%q is not supported (want %s)", mt, supportedList(byModelType))
}

func (p *configParser) parse() (*Config, error) {
	c := &Config{BOSTokenID: -1}
	var err error
	if c.Architecture, err = p.architecture(); err != nil {
		return nil, err
	}
	p.phi3 = c.Architecture == Phi3
	c.VisionSkipped = p.prefix != ""
	// Required, but for Gemma 3, whose configs (the multimodal models'
	// text_config above all) rely on Gemma3TextConfig's defaults.
	def := func(gemma int) int {
		if c.Architecture.gemma() {
			return gemma
		}
		return -1
	}
	defVocab := 262208
	if c.Architecture == Gemma2 {
		defVocab = 256000 // Gemma2Config's
	}
	ints := []struct {
		dst         *int
		key         string
		def, lo, hi int
	}{
		{&c.HiddenSize, "hidden_size", def(2304), 1, maxDim},
		{&c.IntermediateSize, "intermediate_size", def(9216), 1, maxDim},
		{&c.NumLayers, "num_hidden_layers", def(26), 1, maxLayers},
		{&c.NumHeads, "num_attention_heads", def(8), 1, maxDim},
		{&c.VocabSize, "vocab_size", def(defVocab), 1, maxVocab},
	}
	for _, f := range ints {
		if *f.dst, err = p.intField(p.raw, "", f.key, f.def, f.lo, f.hi); err != nil {
			return nil, err
		}
	}
	defKV := c.NumHeads
	switch {
	case c.Architecture.gemma():
		defKV = 4
	case c.Architecture == Mistral && c.NumHeads%8 == 0:
		defKV = 8 // MistralConfig's
	}
	if c.NumKVHeads, err = p.intField(p.raw, "", "num_key_value_heads", defKV, 1, maxDim); err != nil {
		return nil, err
	}
	if c.NumHeads%c.NumKVHeads != 0 {
		return nil, p.errf("num_key_value_heads", "%d does not divide num_attention_heads %d", c.NumKVHeads, c.NumHeads)
	}
	defHead := 0
	switch {
	case c.Architecture == Qwen3:
		defHead = 128 // transformers' Qwen3Config default, whatever hidden_size is
	case c.Architecture.gemma():
		defHead = 256 // Gemma3TextConfig's and Gemma2Config's default
	case c.HiddenSize%c.NumHeads == 0:
		defHead = c.HiddenSize / c.NumHeads
	}
	if c.HeadDim, err = p.intField(p.raw, "", "head_dim", defHead, 0, maxDim); err != nil {
		return nil, err
	}
	if c.HeadDim == 0 {
		return nil, p.errf("head_dim", "missing, and hidden_size %d is not a multiple of num_attention_heads %d", c.HiddenSize, c.NumHeads)
	}
	if c.HeadDim%2 != 0 {
		return nil, p.errf("head_dim", "%d is odd; rotary embeddings rotate pairs", c.HeadDim)
	}
	defCtx := 2048 // transformers' LlamaConfig default
	switch c.Architecture {
	case Qwen2, Qwen3:
		defCtx = 32768
	case Gemma3, Mistral:
		defCtx = 131072
	case Gemma2:
		defCtx = 8192
	}
	if c.MaxPositionEmbeddings, err = p.intField(p.raw, "", "max_position_embeddings", defCtx, 1, maxCtx); err != nil {
		return nil, err
	}
	if c.RMSNormEps, err = p.floatField(p.raw, "", "rms_norm_eps", 1e-6, false); err != nil {
		return nil, err
	}
	if !(c.RMSNormEps > 0 && c.RMSNormEps < 1) {
		return nil, p.errf("rms_norm_eps", "%g is not in (0, 1)", c.RMSNormEps)
	}
	c.HiddenAct = "silu"
	if c.Architecture.gemma() {
		if err := p.gemma(c); err != nil {
			return nil, err
		}
	} else {
		if act, ok, err := p.stringField(p.raw, "", "hidden_act"); err != nil {
			return nil, err
		} else if ok && act != "silu" {
			return nil, p.errf("hidden_act", "%q is not supported (want silu)", act)
		}
		if err := p.rope(c); err != nil {
			return nil, err
		}
	}
	if c.TieWordEmbeddings, err = p.boolField("tie_word_embeddings", c.Architecture.gemma()); err != nil {
		return nil, err
	}
	attnBias, err := p.boolField("attention_bias", false)
	if err != nil {
		return nil, err
	}
	if c.MLPBias, err = p.boolField("mlp_bias", false); err != nil {
		return nil, err
	}
	switch c.Architecture {
	case Qwen2:
		// Qwen2's attention always has q/k/v biases and no o_proj bias.
		c.QKVBias = true
	case Qwen3, Gemma3:
		c.QKVBias, c.OBias, c.QKNorm = attnBias, attnBias, true
	case Mistral, Phi3:
		// Their attention has no biases whatever attention_bias says.
		if err := p.everyLayerWindow(c); err != nil {
			return nil, err
		}
	default:
		c.QKVBias, c.OBias = attnBias, attnBias
	}
	if c.Architecture == Qwen2 || c.Architecture == Qwen3 {
		if sw, err := p.boolField("use_sliding_window", false); err != nil {
			return nil, err
		} else if sw {
			return nil, p.errf("use_sliding_window", "sliding-window attention is not supported")
		}
	}
	if c.Architecture != Llama && c.MLPBias {
		return nil, p.errf("mlp_bias", "%s has no MLP biases", c.Architecture)
	}
	if c.BOSTokenID, err = p.tokenID("bos_token_id", c.VocabSize); err != nil {
		return nil, err
	}
	if c.EOSTokenIDs, err = p.tokenIDs("eos_token_id", c.VocabSize); err != nil {
		return nil, err
	}
	if _, ok := p.raw["bos_token_id"]; !ok && c.Architecture.gemma() && c.VocabSize > 2 {
		c.BOSTokenID = 2 // Gemma3TextConfig's and Gemma2Config's defaults
	}
	if _, ok := p.raw["eos_token_id"]; !ok && c.Architecture.gemma() && c.VocabSize > 1 {
		c.EOSTokenIDs = []int{1}
	}
	for _, key := range []string{"torch_dtype", "dtype"} {
		if s, ok, err := p.stringField(p.raw, "", key); err != nil {
			return nil, err
		} else if ok {
			c.DType = s
		}
	}
	return c, nil
}

// everyLayerWindow reads Mistral's and Phi-3's sliding_window, a window
// on every layer (when absent: MistralConfig's 4096, Phi3Config's none;
// null: none). A window that holds the whole context changes nothing and
// is dropped, so such a model runs wherever Llama does.
func (p *configParser) everyLayerWindow(c *Config) error {
	m, ok := p.raw["sliding_window"]
	if (ok && isNull(m)) || (!ok && c.Architecture == Phi3) {
		return nil
	}
	w, err := p.intField(p.raw, "", "sliding_window", 4096, 1, maxCtx)
	if err != nil || w >= c.MaxPositionEmbeddings {
		return err
	}
	c.SlidingWindow, c.SlidingLayers = w, make([]bool, c.NumLayers)
	for i := range c.SlidingLayers {
		c.SlidingLayers[i] = true
	}
	return nil
}

// rope reads rope_theta and rope_scaling (transformers 4) or rope_parameters (transformers 5).
func (p *configParser) rope(c *Config) error {
	var err error
	if c.RopeTheta, err = p.floatField(p.raw, "", "rope_theta", 10000, false); err != nil {
		return err
	}
	field := "rope_scaling"
	m := p.raw["rope_scaling"]
	if rp, ok := p.raw["rope_parameters"]; ok && !isNull(rp) {
		field, m = "rope_parameters", rp
	}
	var sc map[string]json.RawMessage
	if !isNull(m) {
		if err := json.Unmarshal(m, &sc); err != nil {
			return p.errf(field, "want an object, got %s", m)
		}
	}
	prefix := field + "."
	if field == "rope_parameters" {
		if c.RopeTheta, err = p.floatField(sc, prefix, "rope_theta", c.RopeTheta, false); err != nil {
			return err
		}
	}
	if !(c.RopeTheta > 1) || math.IsInf(c.RopeTheta, 0) {
		return p.errf("rope_theta", "%g is not a finite base > 1", c.RopeTheta)
	}
	if c.Architecture == Phi3 {
		if err := p.partialRotary(c, sc, prefix); err != nil {
			return err
		}
	}
	if sc == nil {
		return nil
	}
	if c.RopeScaling, err = p.scaling(sc, prefix); err != nil || c.RopeScaling == nil || c.RopeScaling.Type != "longrope" {
		return err
	}
	return p.longrope(c, sc, prefix)
}

// partialRotary reads Phi-3's partial_rotary_factor (top level, or in
// rope_parameters) into RotaryDim, as transformers rounds it: int(head_dim
// * factor).
func (p *configParser) partialRotary(c *Config, sc map[string]json.RawMessage, prefix string) error {
	field := "partial_rotary_factor"
	prf, err := p.floatField(p.raw, "", field, 1, false)
	if err != nil {
		return err
	}
	if m := sc["partial_rotary_factor"]; !isNull(m) {
		field = prefix + field
		if prf, err = p.floatField(sc, prefix, "partial_rotary_factor", 1, false); err != nil {
			return err
		}
	}
	if !(prf > 0 && prf <= 1) {
		return p.errf(field, "%g is not in (0, 1]", prf)
	}
	rd := int(float64(c.HeadDim) * prf)
	if rd < 2 || rd%2 != 0 {
		return p.errf(field, "%g of head_dim %d turns %d values; RoPE wants an even number of at least 2", prf, c.HeadDim, rd)
	}
	if rd < c.HeadDim {
		c.RotaryDim = rd
	}
	return nil
}

// longrope reads LongRoPE's factors (rope_scaling or rope_parameters of
// type longrope, Phi-3's) as transformers' _compute_longrope_parameters
// does: original_max_position_embeddings from the block or the top level,
// factor max_position_embeddings over it when absent, attention_factor
// sqrt(1 + ln(factor)/ln(original)) when absent (1 for a factor <= 1).
func (p *configParser) longrope(c *Config, sc map[string]json.RawMessage, prefix string) error {
	rs := c.RopeScaling
	var err error
	if _, ok := sc["original_max_position_embeddings"]; ok {
		rs.OriginalMaxPositionEmbeddings, err = p.intField(sc, prefix, "original_max_position_embeddings", -1, 1, maxCtx)
	} else {
		rs.OriginalMaxPositionEmbeddings, err = p.intField(p.raw, "", "original_max_position_embeddings", -1, 1, maxCtx)
	}
	if err != nil {
		return err
	}
	orig := float64(rs.OriginalMaxPositionEmbeddings)
	if rs.Factor, err = p.floatField(sc, prefix, "factor", float64(c.MaxPositionEmbeddings)/orig, false); err != nil {
		return err
	}
	if !(rs.Factor > 0) || math.IsInf(rs.Factor, 0) {
		return p.errf(prefix+"factor", "%g is not a finite factor > 0", rs.Factor)
	}
	def := 1.0
	if rs.Factor > 1 {
		def = math.Sqrt(1 + math.Log(rs.Factor)/math.Log(orig))
	}
	if rs.AttentionFactor, err = p.floatField(sc, prefix, "attention_factor", def, false); err != nil {
		return err
	}
	if !(rs.AttentionFactor > 0) || math.IsInf(rs.AttentionFactor, 0) || math.IsNaN(rs.AttentionFactor) {
		return p.errf(prefix+"attention_factor", "%g is not a finite number > 0", rs.AttentionFactor)
	}
	for _, f := range []struct {
		key string
		dst *[]float64
	}{{"short_factor", &rs.ShortFactor}, {"long_factor", &rs.LongFactor}} {
		m := sc[f.key]
		if isNull(m) {
			return p.errf(prefix+f.key, "missing (required for longrope)")
		}
		if err := json.Unmarshal(m, f.dst); err != nil {
			return p.errf(prefix+f.key, "want a list of numbers, got %s", m)
		}
		if len(*f.dst) != c.rotaryDim()/2 {
			return p.errf(prefix+f.key, "%d factors for %d rotary pairs", len(*f.dst), c.rotaryDim()/2)
		}
		for _, v := range *f.dst {
			if !(v > 0) || math.IsInf(v, 0) {
				return p.errf(prefix+f.key, "%g is not a finite factor > 0", v)
			}
		}
	}
	return nil
}

// scaling reads a rope_scaling block (or rope_parameters' scaling keys);
// nil: none.
func (p *configParser) scaling(sc map[string]json.RawMessage, prefix string) (*RopeScaling, error) {
	typ, ok, err := p.stringField(sc, prefix, "rope_type")
	if err != nil {
		return nil, err
	}
	if !ok { // older configs spell it "type"
		if typ, _, err = p.stringField(sc, prefix, "type"); err != nil {
			return nil, err
		}
	}
	phi3 := p.phi3
	if prf, err := p.floatField(sc, prefix, "partial_rotary_factor", 1, false); err != nil {
		return nil, err
	} else if prf != 1 && !phi3 {
		return nil, p.errf(prefix+"partial_rotary_factor", "%g is not supported (want 1)", prf)
	}
	typ = strings.ToLower(typ)
	if typ == "su" && phi3 { // early Phi-3 configs' name for longrope
		typ = "longrope"
	}
	switch typ {
	case "", "default":
		return nil, nil
	case "linear", "llama3":
	case "longrope":
		if !phi3 {
			return nil, p.errf(prefix+"rope_type", "%q is supported for Phi3ForCausalLM only", typ)
		}
		return &RopeScaling{Type: typ}, nil
	default:
		return nil, p.errf(prefix+"rope_type", "%q is not supported (want default, linear, llama3 or, for Phi-3, longrope)", typ)
	}
	rs := &RopeScaling{Type: typ}
	if rs.Factor, err = p.floatField(sc, prefix, "factor", 0, true); err != nil {
		return nil, err
	}
	if !(rs.Factor >= 1) || math.IsInf(rs.Factor, 0) {
		return nil, p.errf(prefix+"factor", "%g is not a finite factor >= 1", rs.Factor)
	}
	if rs.Type == "llama3" {
		if rs.LowFreqFactor, err = p.floatField(sc, prefix, "low_freq_factor", 0, true); err != nil {
			return nil, err
		}
		if rs.HighFreqFactor, err = p.floatField(sc, prefix, "high_freq_factor", 0, true); err != nil {
			return nil, err
		}
		if rs.OriginalMaxPositionEmbeddings, err = p.intField(sc, prefix, "original_max_position_embeddings", -1, 1, maxCtx); err != nil {
			return nil, err
		}
		if !(rs.LowFreqFactor > 0) || !(rs.HighFreqFactor > rs.LowFreqFactor) || math.IsInf(rs.HighFreqFactor, 0) {
			return nil, p.errf(prefix+"high_freq_factor", "want 0 < low_freq_factor (%g) < high_freq_factor (%g)", rs.LowFreqFactor, rs.HighFreqFactor)
		}
	}
	return rs, nil
}

// gemma reads what Gemma3TextConfig and Gemma2Config add to the
// llama-family keys, with their defaults: the activation, the attention
// scale and soft-capping, the sliding-window layers and, for Gemma 3, the
// two RoPE bases (transformers 4's rope_theta, rope_scaling and
// rope_local_base_freq, or transformers 5's rope_parameters with
// full_attention and sliding_attention).
func (p *configParser) gemma(c *Config) error {
	c.Gemma = true
	act, _, err := p.stringField(p.raw, "", "hidden_activation")
	if err != nil {
		return err
	}
	if act != "" && act != "gelu_pytorch_tanh" {
		return p.errf("hidden_activation", "%q is not supported (want gelu_pytorch_tanh)", act)
	}
	c.HiddenAct = "gelu_pytorch_tanh"
	if c.QueryPreAttnScalar, err = p.floatField(p.raw, "", "query_pre_attn_scalar", 256, false); err != nil {
		return err
	}
	if !(c.QueryPreAttnScalar > 0) || math.IsInf(c.QueryPreAttnScalar, 0) {
		return p.errf("query_pre_attn_scalar", "%g is not a finite number > 0", c.QueryPreAttnScalar)
	}
	if m := p.raw["attn_logit_softcapping"]; !isNull(m) && c.Architecture == Gemma3 {
		// transformers' Gemma3Attention does not apply it and llama.cpp's
		// converter refuses it: a value here has no agreed meaning.
		return p.errf("attn_logit_softcapping", "%s is not supported for Gemma 3 (want null: transformers' Gemma 3 attention does not apply it)", m)
	}
	// Absent: Gemma2Config's 50 and 30 (Gemma 3: none); null: none.
	for _, f := range []struct {
		key    string
		dst    *float64
		gemma2 float64
	}{{"attn_logit_softcapping", &c.AttnLogitSoftcap, 50}, {"final_logit_softcapping", &c.FinalLogitSoftcap, 30}} {
		m, ok := p.raw[f.key]
		switch {
		case !ok:
			if c.Architecture == Gemma2 {
				*f.dst = f.gemma2
			}
		case isNull(m):
		default:
			if *f.dst, err = p.floatField(p.raw, "", f.key, 0, false); err != nil {
				return err
			}
			if !(*f.dst > 0) || math.IsInf(*f.dst, 0) {
				return p.errf(f.key, "%s is not a finite number > 0", m)
			}
		}
	}
	if bidi, err := p.boolField("use_bidirectional_attention", false); err != nil {
		return err
	} else if bidi {
		return p.errf("use_bidirectional_attention", "bidirectional attention (EmbeddingGemma) is not supported")
	}
	if m, ok := p.raw["sliding_window"]; ok && isNull(m) {
		return p.errf("sliding_window", "null; the sliding layers need a window")
	}
	if c.SlidingWindow, err = p.intField(p.raw, "", "sliding_window", 4096, 1, maxCtx); err != nil {
		return err
	}
	c.SlidingLayers = make([]bool, c.NumLayers)
	if m := p.raw["layer_types"]; !isNull(m) {
		var types []string
		if err := json.Unmarshal(m, &types); err != nil {
			return p.errf("layer_types", "want a list of strings, got %s", m)
		}
		if len(types) != c.NumLayers {
			return p.errf("layer_types", "%d entries for %d layers", len(types), c.NumLayers)
		}
		for i, t := range types {
			switch t {
			case "sliding_attention":
				c.SlidingLayers[i] = true
			case "full_attention":
			default:
				return p.errf("layer_types", "%q is not supported (want sliding_attention or full_attention)", t)
			}
		}
	} else {
		pattern := 2 // Gemma2Config's: every other layer
		if c.Architecture == Gemma3 {
			if pattern, err = p.intField(p.raw, "", "sliding_window_pattern", 6, 1, maxLayers); err != nil {
				return err
			}
		}
		for i := range c.SlidingLayers {
			c.SlidingLayers[i] = (i+1)%pattern != 0 // Gemma3TextConfig's and Gemma2Config's rule
		}
	}
	if !slices.Contains(c.SlidingLayers, true) {
		c.SlidingWindow, c.SlidingLayers = 0, nil
	}
	if c.Architecture == Gemma2 {
		return p.rope(c) // one RoPE for every layer
	}
	c.RopeTheta, c.RopeLocalTheta = 1e6, 1e4
	if rp := p.raw["rope_parameters"]; !isNull(rp) {
		var kinds map[string]json.RawMessage
		if err := json.Unmarshal(rp, &kinds); err != nil {
			return p.errf("rope_parameters", "want an object, got %s", rp)
		}
		for _, k := range []struct {
			key   string
			theta *float64
		}{{"full_attention", &c.RopeTheta}, {"sliding_attention", &c.RopeLocalTheta}} {
			m, ok := kinds[k.key]
			if !ok {
				return p.errf("rope_parameters", "no %s (want full_attention and sliding_attention)", k.key)
			}
			prefix := "rope_parameters." + k.key + "."
			var sc map[string]json.RawMessage
			if err := json.Unmarshal(m, &sc); err != nil || sc == nil {
				return p.errf("rope_parameters."+k.key, "want an object, got %s", m)
			}
			if *k.theta, err = p.floatField(sc, prefix, "rope_theta", *k.theta, false); err != nil {
				return err
			}
			rs, err := p.scaling(sc, prefix)
			if err != nil {
				return err
			}
			if k.theta == &c.RopeTheta {
				c.RopeScaling = rs
			} else if rs != nil {
				return p.errf(prefix+"rope_type", "%q on sliding layers is not supported (want default)", rs.Type)
			}
		}
	} else {
		if c.RopeTheta, err = p.floatField(p.raw, "", "rope_theta", c.RopeTheta, false); err != nil {
			return err
		}
		if c.RopeLocalTheta, err = p.floatField(p.raw, "", "rope_local_base_freq", c.RopeLocalTheta, false); err != nil {
			return err
		}
		var sc map[string]json.RawMessage
		if m := p.raw["rope_scaling"]; !isNull(m) {
			if err := json.Unmarshal(m, &sc); err != nil {
				return p.errf("rope_scaling", "want an object, got %s", m)
			}
			if c.RopeScaling, err = p.scaling(sc, "rope_scaling."); err != nil {
				return err
			}
		}
	}
	for _, t := range []struct {
		field string
		v     float64
	}{{"rope_theta", c.RopeTheta}, {"rope_local_base_freq", c.RopeLocalTheta}} {
		if !(t.v > 1) || math.IsInf(t.v, 0) {
			return p.errf(t.field, "%g is not a finite base > 1", t.v)
		}
	}
	return nil
}

func (p *configParser) tokenID(key string, vocab int) (int, error) {
	ids, err := p.tokenIDs(key, vocab)
	if err != nil || len(ids) == 0 {
		return -1, err
	}
	return ids[0], nil
}

// tokenIDs reads an int, a list of ints, or null.
func (p *configParser) tokenIDs(key string, vocab int) ([]int, error) {
	m, ok := p.raw[key]
	if !ok || isNull(m) {
		return nil, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(m, &list); err != nil {
		list = []json.RawMessage{m}
	}
	var ids []int
	for i := range list {
		id, err := p.intField(map[string]json.RawMessage{key: list[i]}, "", key, -1, 0, vocab-1)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// ropeInvFreq is each rotary pair's inverse frequency, scaled as transformers
// does (computed in float64, rounded once to float32 like torch's tensor).
func (c *Config) ropeInvFreq() []float32 { return c.invFreq(c.RopeTheta, true, false) }

// ropeLongInvFreq is ropeInvFreq with LongRoPE's long factors; nil
// without LongRoPE.
func (c *Config) ropeLongInvFreq() []float32 {
	if c.RopeScaling == nil || c.RopeScaling.Type != "longrope" {
		return nil
	}
	return c.invFreq(c.RopeTheta, true, true)
}

// ropeLocalInvFreq is ropeInvFreq for sliding-window layers: base
// RopeLocalTheta, unscaled (0: the global layers'); nil without sliding
// layers.
func (c *Config) ropeLocalInvFreq() []float32 {
	if c.SlidingWindow == 0 {
		return nil
	}
	if c.RopeLocalTheta == 0 {
		return c.ropeInvFreq()
	}
	return c.invFreq(c.RopeLocalTheta, false, false)
}

func (c *Config) invFreq(theta float64, scaled, long bool) []float32 {
	rd := c.rotaryDim()
	half := rd / 2
	out := make([]float32, half)
	for i := range half {
		inv := 1 / math.Pow(theta, float64(2*i)/float64(rd))
		if !scaled {
			out[i] = float32(inv)
			continue
		}
		if rs := c.RopeScaling; rs != nil {
			switch rs.Type {
			case "linear":
				inv /= rs.Factor
			case "llama3":
				inv = llama3Scale(inv, rs)
			case "longrope":
				if long {
					inv /= rs.LongFactor[i]
				} else {
					inv /= rs.ShortFactor[i]
				}
			}
		}
		if i < len(c.RopeFreqFactors) {
			inv /= float64(c.RopeFreqFactors[i])
		}
		out[i] = float32(inv)
	}
	return out
}

// llama3Scale applies Llama 3.1's frequency-dependent scaling: wavelengths
// longer than the original context divided by low_freq_factor are slowed by
// factor, shorter than it divided by high_freq_factor are kept, and the band
// between is interpolated linearly in original_context/wavelength.
func llama3Scale(inv float64, rs *RopeScaling) float64 {
	old := float64(rs.OriginalMaxPositionEmbeddings)
	lowWavelen := old / rs.LowFreqFactor
	highWavelen := old / rs.HighFreqFactor
	wavelen := 2 * math.Pi / inv
	switch {
	case wavelen < highWavelen:
		return inv
	case wavelen > lowWavelen:
		return inv / rs.Factor
	}
	smooth := (old/wavelen - rs.LowFreqFactor) / (rs.HighFreqFactor - rs.LowFreqFactor)
	return (1-smooth)*inv/rs.Factor + smooth*inv
}
