package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
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
)

// architectures are the supported architectures by model_type.
var architectures = []struct {
	arch      Architecture
	modelType string
}{{Llama, "llama"}, {Qwen2, "qwen2"}, {Qwen3, "qwen3"}}

// supportedList names the supported architectures for an error message,
// by class (classes) or model_type.
func supportedList(classes bool) string {
	var names []string
	for _, a := range architectures {
		if classes {
			names = append(names, string(a.arch))
		} else {
			names = append(names, a.modelType)
		}
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// RopeScaling is the RoPE frequency scaling of a config. Type is "linear" or "llama3".
type RopeScaling struct {
	Type                          string
	Factor                        float64
	LowFreqFactor                 float64 // llama3
	HighFreqFactor                float64 // llama3
	OriginalMaxPositionEmbeddings int     // llama3
}

// Config is a validated llama-family config.json.
type Config struct {
	Architecture          Architecture
	HiddenSize            int
	IntermediateSize      int
	NumLayers             int
	NumHeads              int
	NumKVHeads            int
	HeadDim               int
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
}

func (p *configParser) errf(field, format string, args ...any) error {
	return &ConfigError{File: p.file, Field: field, Reason: fmt.Sprintf(format, args...)}
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
		return "", p.errf("architectures", "%v is not supported (want %s)", archs, supportedList(true))
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
	return "", p.errf("model_type", "%q is not supported (want %s)", mt, supportedList(false))
}

func (p *configParser) parse() (*Config, error) {
	c := &Config{BOSTokenID: -1}
	var err error
	if c.Architecture, err = p.architecture(); err != nil {
		return nil, err
	}
	ints := []struct {
		dst         *int
		key         string
		def, lo, hi int
	}{
		{&c.HiddenSize, "hidden_size", -1, 1, maxDim},
		{&c.IntermediateSize, "intermediate_size", -1, 1, maxDim},
		{&c.NumLayers, "num_hidden_layers", -1, 1, maxLayers},
		{&c.NumHeads, "num_attention_heads", -1, 1, maxDim},
		{&c.VocabSize, "vocab_size", -1, 1, maxVocab},
	}
	for _, f := range ints {
		if *f.dst, err = p.intField(p.raw, "", f.key, f.def, f.lo, f.hi); err != nil {
			return nil, err
		}
	}
	if c.NumKVHeads, err = p.intField(p.raw, "", "num_key_value_heads", c.NumHeads, 1, maxDim); err != nil {
		return nil, err
	}
	if c.NumHeads%c.NumKVHeads != 0 {
		return nil, p.errf("num_key_value_heads", "%d does not divide num_attention_heads %d", c.NumKVHeads, c.NumHeads)
	}
	defHead := 0
	switch {
	case c.Architecture == Qwen3:
		defHead = 128 // transformers' Qwen3Config default, whatever hidden_size is
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
	if c.Architecture == Qwen2 || c.Architecture == Qwen3 {
		defCtx = 32768
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
	if act, ok, err := p.stringField(p.raw, "", "hidden_act"); err != nil {
		return nil, err
	} else if ok && act != "silu" {
		return nil, p.errf("hidden_act", "%q is not supported (want silu)", act)
	}
	if err := p.rope(c); err != nil {
		return nil, err
	}
	if c.TieWordEmbeddings, err = p.boolField("tie_word_embeddings", false); err != nil {
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
	case Qwen3:
		c.QKVBias, c.OBias, c.QKNorm = attnBias, attnBias, true
	default:
		c.QKVBias, c.OBias = attnBias, attnBias
	}
	if c.Architecture == Qwen2 || c.Architecture == Qwen3 {
		if sw, err := p.boolField("use_sliding_window", false); err != nil {
			return nil, err
		} else if sw {
			return nil, p.errf("use_sliding_window", "sliding-window attention is not supported")
		}
		if c.MLPBias {
			return nil, p.errf("mlp_bias", "%s has no MLP biases", c.Architecture)
		}
	}
	if c.BOSTokenID, err = p.tokenID("bos_token_id", c.VocabSize); err != nil {
		return nil, err
	}
	if c.EOSTokenIDs, err = p.tokenIDs("eos_token_id", c.VocabSize); err != nil {
		return nil, err
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
	if sc == nil {
		return nil
	}
	typ, ok, err := p.stringField(sc, prefix, "rope_type")
	if err != nil {
		return err
	}
	if !ok { // older configs spell it "type"
		if typ, _, err = p.stringField(sc, prefix, "type"); err != nil {
			return err
		}
	}
	if prf, err := p.floatField(sc, prefix, "partial_rotary_factor", 1, false); err != nil {
		return err
	} else if prf != 1 {
		return p.errf(prefix+"partial_rotary_factor", "%g is not supported (want 1)", prf)
	}
	switch strings.ToLower(typ) {
	case "", "default":
		return nil
	case "linear", "llama3":
	default:
		return p.errf(prefix+"rope_type", "%q is not supported (want default, linear or llama3)", typ)
	}
	rs := &RopeScaling{Type: strings.ToLower(typ)}
	if rs.Factor, err = p.floatField(sc, prefix, "factor", 0, true); err != nil {
		return err
	}
	if !(rs.Factor >= 1) || math.IsInf(rs.Factor, 0) {
		return p.errf(prefix+"factor", "%g is not a finite factor >= 1", rs.Factor)
	}
	if rs.Type == "llama3" {
		if rs.LowFreqFactor, err = p.floatField(sc, prefix, "low_freq_factor", 0, true); err != nil {
			return err
		}
		if rs.HighFreqFactor, err = p.floatField(sc, prefix, "high_freq_factor", 0, true); err != nil {
			return err
		}
		if rs.OriginalMaxPositionEmbeddings, err = p.intField(sc, prefix, "original_max_position_embeddings", -1, 1, maxCtx); err != nil {
			return err
		}
		if !(rs.LowFreqFactor > 0) || !(rs.HighFreqFactor > rs.LowFreqFactor) || math.IsInf(rs.HighFreqFactor, 0) {
			return p.errf(prefix+"high_freq_factor", "want 0 < low_freq_factor (%g) < high_freq_factor (%g)", rs.LowFreqFactor, rs.HighFreqFactor)
		}
	}
	c.RopeScaling = rs
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
func (c *Config) ropeInvFreq() []float32 {
	half := c.HeadDim / 2
	out := make([]float32, half)
	for i := range half {
		inv := 1 / math.Pow(c.RopeTheta, float64(2*i)/float64(c.HeadDim))
		if rs := c.RopeScaling; rs != nil {
			switch rs.Type {
			case "linear":
				inv /= rs.Factor
			case "llama3":
				inv = llama3Scale(inv, rs)
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
