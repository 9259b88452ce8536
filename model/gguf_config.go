package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/hipgo/hipgo/model/gguf"
)

// ggufArch maps general.architecture to the Hugging Face class whose
// semantics the forward pass follows.
func ggufArch(name string) (Architecture, bool) {
	for _, a := range architectures {
		if a.gguf != "" && a.gguf == name {
			return a.arch, true
		}
	}
	return "", false
}

// ggufConfigKeys maps config.json keys to the GGUF metadata that carries
// them ("{arch}." is the architecture prefix), so configFromGGUF can reuse
// ParseConfig's validation and still name the GGUF key in its errors.
var ggufConfigKeys = []struct{ hf, gguf string }{
	{"hidden_size", "{arch}.embedding_length"},
	{"intermediate_size", "{arch}.feed_forward_length"},
	{"num_hidden_layers", "{arch}.block_count"},
	{"num_attention_heads", "{arch}.attention.head_count"},
	{"num_key_value_heads", "{arch}.attention.head_count_kv"},
	{"head_dim", "{arch}.attention.key_length"},
	{"max_position_embeddings", "{arch}.context_length"},
	{"rms_norm_eps", "{arch}.attention.layer_norm_rms_epsilon"},
	{"rope_theta", "{arch}.rope.freq_base"},
	{"vocab_size", "{arch}.vocab_size"},
	{"bos_token_id", "tokenizer.ggml.bos_token_id"},
}

// configFromGGUF reads a llama.*, qwen2.* or qwen3.* GGUF's
// hyperparameters into a Config, checked by the same rules as config.json.
// Errors are *ConfigError naming the GGUF file and metadata key.
func configFromGGUF(f *gguf.File) (*Config, error) {
	name := f.Name()
	errf := func(field, format string, args ...any) error {
		return &ConfigError{File: name, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	archName, err := f.String("general.architecture")
	if err != nil {
		return nil, &ConfigError{File: name, Field: "general.architecture", Reason: "unreadable", Err: err}
	}
	arch, ok := ggufArch(archName)
	if !ok && archName == "phi3" {
		// llama.cpp picks LongRoPE's factors by the context size, not by
		// each call's positions as transformers does, and fuses gate and up
		// into ffn_up: not read yet.
		return nil, errf("general.architecture", "%q is not supported yet (load the Phi-3 safetensors checkpoint: Phi3ForCausalLM runs on the CPU)", archName)
	}
	if !ok {
		return nil, errf("general.architecture", "%q is not supported (want %s)", archName, supportedList(byGGUF))
	}
	key := func(k string) string {
		if len(k) > 6 && k[:6] == "{arch}" {
			return archName + k[6:]
		}
		return k
	}
	raw := map[string]json.RawMessage{}
	origin := map[string]string{}
	put := func(hf, field string, v any) error {
		data, err := json.Marshal(v)
		if err != nil { // NaN or Inf
			return errf(field, "%v is not a finite number", v)
		}
		raw[hf], origin[hf] = data, field
		return nil
	}
	for _, k := range ggufConfigKeys {
		field := key(k.gguf)
		origin[k.hf] = field // named even when missing
		v, ok := f.Lookup(field)
		if !ok {
			continue
		}
		if err := put(k.hf, field, v.Any()); err != nil {
			return nil, err
		}
	}
	archJSON, _ := json.Marshal([]string{string(arch)})
	raw["architectures"] = archJSON
	// Without key_length llama.cpp's head size is embedding_length over
	// head_count for every architecture, where config.json's Qwen3 default
	// is 128.
	if _, ok := raw["head_dim"]; !ok && (arch == Qwen3 || arch.gemma()) {
		d, dok := f.Lookup(key("{arch}.embedding_length"))
		h, hok := f.Lookup(key("{arch}.attention.head_count"))
		if dok && hok {
			dv, _ := d.Uint()
			hv, _ := h.Uint()
			if hv > 0 && dv%hv == 0 {
				_ = put("head_dim", key("{arch}.embedding_length"), dv/hv)
			}
		}
	}
	// GGUF has no vocab_size for most architectures: the token list is it.
	if _, ok := raw["vocab_size"]; !ok {
		if v, ok := f.Lookup("tokenizer.ggml.tokens"); ok && v.Type() == gguf.TypeArray {
			_ = put("vocab_size", "tokenizer.ggml.tokens", v.Len())
		} else if t, ok := f.Tensor("token_embd.weight"); ok && len(t.Dims) == 2 {
			_ = put("vocab_size", "token_embd.weight", t.Dims[1])
		}
	}
	eos, err := ggufStopIDs(f)
	if err != nil {
		return nil, err
	}
	if len(eos) > 0 {
		_ = put("eos_token_id", "tokenizer.ggml.eos_token_id", eos)
	}
	// An absent output.weight means the head is tied to token_embd.
	_, hasOutput := f.Tensor("output.weight")
	_ = put("tie_word_embeddings", "output.weight", !hasOutput)
	if arch == Llama || arch == Qwen3 || arch.gemma() {
		_, bias := f.Tensor("blk.0.attn_q.bias")
		_ = put("attention_bias", "blk.0.attn_q.bias", bias)
	}
	if arch.gemma() {
		if err := gemmaFromGGUF(f, arch, key, raw, put); err != nil {
			return nil, err
		}
	}
	p := &configParser{file: name, raw: raw}
	c, err := p.parse()
	if err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			if field, ok := origin[ce.Field]; ok {
				ce.Field = field
			} else if ce.Field != "" {
				ce.Field = key("{arch}.") + ce.Field
			}
		}
		return nil, err
	}
	if dim, ok := f.Lookup(key("{arch}.rope.dimension_count")); ok {
		if d, _ := dim.Uint(); d != uint64(c.HeadDim) {
			return nil, errf(key("{arch}.rope.dimension_count"), "%v is not the head dimension %d (partial rotary embeddings are not supported)", dim, c.HeadDim)
		}
	}
	if st, ok := f.Lookup(key("{arch}.rope.scaling.type")); ok && st.String() != "none" {
		factor, _ := f.Float(key("{arch}.rope.scaling.factor"))
		if st.String() != "linear" || !(factor >= 1) || math.IsInf(factor, 0) {
			return nil, errf(key("{arch}.rope.scaling.type"), "%q with factor %g is not supported (want linear with a factor >= 1)", st, factor)
		}
		c.RopeScaling = &RopeScaling{Type: "linear", Factor: factor}
	}
	if rf, ok := f.Tensor("rope_freqs.weight"); ok {
		if c.RopeFreqFactors, err = ropeFreqFactors(f, rf, c.HeadDim/2); err != nil {
			return nil, err
		}
	}
	if v, ok := f.Lookup(key("{arch}.attention.sliding_window")); ok && !arch.gemma() {
		return nil, errf(key("{arch}.attention.sliding_window"), "sliding-window attention (%v) is not supported", v)
	}
	c.DType = "gguf"
	if ft, ok := f.Lookup("general.file_type"); ok {
		c.DType = fmt.Sprintf("gguf file_type %v", ft)
	}
	return c, nil
}

// ggufStopIDs is the end-of-sequence token and, when the file names them,
// the end-of-turn and end-of-message tokens: generation stops at any.
func ggufStopIDs(f *gguf.File) ([]int, error) {
	var ids []int
	for _, k := range []string{"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"} {
		v, ok := f.Lookup(k)
		if !ok {
			continue
		}
		id, ok := v.Int()
		if !ok || id < 0 || id > maxVocab {
			return nil, &ConfigError{File: f.Name(), Field: k, Reason: fmt.Sprintf("%v is not a token id", v)}
		}
		if !slices.Contains(ids, int(id)) {
			ids = append(ids, int(id))
		}
	}
	return ids, nil
}

// ropeFreqFactors reads rope_freqs.weight: one float32 divisor per rotary
// pair, finite and positive.
func ropeFreqFactors(f *gguf.File, info gguf.TensorInfo, half int) ([]float32, error) {
	bad := func(format string, args ...any) error {
		return &ConfigError{File: f.Name(), Field: info.Name, Reason: fmt.Sprintf(format, args...)}
	}
	if info.Type != gguf.F32 || len(info.Dims) != 1 || info.Dims[0] != int64(half) {
		return nil, bad("is %s %v, want F32 [%d] (one factor per rotary pair)", info.Type, info.Dims, half)
	}
	data := make([]byte, info.Size)
	if err := f.ReadTensor(info.Name, data); err != nil {
		return nil, &ConfigError{File: f.Name(), Field: info.Name, Reason: "unreadable", Err: err}
	}
	out := bytesToF32(data)
	for i, x := range out {
		if !(x > 0) || math.IsInf(float64(x), 0) {
			return nil, bad("factor %d is %g, want a finite number > 0", i, x)
		}
	}
	return out, nil
}

// gemmaFromGGUF puts a gemma3 or gemma2 GGUF's Gemma keys into raw as
// config.json spells them, read as llama.cpp reads them. gemma3: without
// attention.sliding_window every layer is global; with it, the layers
// attention.sliding_window_pattern marks (a bool per layer, or n: every
// n-th layer is global; absent: 6) slide, with RoPE base
// rope.freq_base_swa (absent: 10000) and no RoPE scaling. gemma2: the
// window is 4096 when absent, the pattern 2, the RoPE the global layers'
// (a different rope.freq_base_swa is refused), and absent soft-capping
// keys are 50 (attention) and 30 (final). The attention scale is
// llama.cpp's: 1/sqrt(key_length), or 1/sqrt(embedding_length /
// head_count) for the 27B models (62 layers in Gemma 3, 46 in Gemma 2:
// their query_pre_attn_scalar); GGUF has no key for it.
func gemmaFromGGUF(f *gguf.File, arch Architecture, key func(string) string, raw map[string]json.RawMessage, put func(hf, field string, v any) error) error {
	errf := func(field, format string, args ...any) error {
		return &ConfigError{File: f.Name(), Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	uintKey := func(k string) (uint64, bool, error) {
		v, ok := f.Lookup(key(k))
		if !ok {
			return 0, false, nil
		}
		u, ok := v.Uint()
		if !ok {
			return 0, false, errf(key(k), "%v is not an unsigned integer", v)
		}
		return u, true, nil
	}
	floatKey := func(k string) (float64, bool, error) {
		if _, ok := f.Lookup(key(k)); !ok {
			return 0, false, nil
		}
		v, err := f.Float(key(k))
		if err != nil {
			return 0, false, errf(key(k), "unreadable: %v", err)
		}
		return v, true, nil
	}
	layers, _, err := uintKey("{arch}.block_count")
	if err != nil {
		return err
	}
	types := make([]string, layers)
	for i := range types {
		types[i] = "full_attention"
	}
	window, ok, err := uintKey("{arch}.attention.sliding_window")
	if err != nil {
		return err
	}
	if !ok && arch == Gemma2 {
		window, ok = 4096, true
	}
	if ok && window > 0 {
		_ = put("sliding_window", key("{arch}.attention.sliding_window"), window)
		pattern := uint64(6)
		if arch == Gemma2 {
			pattern = 2
		}
		field := key("{arch}.attention.sliding_window_pattern")
		var swa []bool
		if v, ok := f.Lookup(field); ok && v.Type() == gguf.TypeArray {
			if swa, ok = v.Any().([]bool); !ok {
				return errf(field, "%v is not a list of bools", v)
			}
			if len(swa) != len(types) {
				return errf(field, "%d entries for %d layers", len(swa), len(types))
			}
		} else if n, ok, err := uintKey("{arch}.attention.sliding_window_pattern"); err != nil {
			return err
		} else if ok {
			pattern = n
		}
		for i := range types {
			// llama.cpp's set_swa_pattern: n == 0 makes every layer slide.
			if (swa != nil && swa[i]) || (swa == nil && (pattern == 0 || uint64(i)%pattern < pattern-1)) {
				types[i] = "sliding_attention"
			}
		}
		local := 10000.0
		base, hasSWA, err := floatKey("{arch}.rope.freq_base_swa")
		if err != nil {
			return err
		} else if hasSWA {
			local = base
		}
		if arch == Gemma2 {
			if global, _, _ := floatKey("{arch}.rope.freq_base"); hasSWA && local != global {
				return errf(key("{arch}.rope.freq_base_swa"), "%g differs from rope.freq_base %g: Gemma 2 has one RoPE base", local, global)
			}
		} else if err := put("rope_local_base_freq", key("{arch}.rope.freq_base_swa"), local); err != nil {
			return err
		}
	}
	if err := put("layer_types", key("{arch}.attention.sliding_window_pattern"), types); err != nil {
		return err
	}
	for _, k := range []string{"final_logit_softcapping", "attn_logit_softcapping"} {
		v, ok, err := floatKey("{arch}." + k)
		switch {
		case err != nil:
			return err
		case ok && v != 0:
			err = put(k, key("{arch}."+k), v)
		case arch == Gemma3 || ok: // gemma3's absent keys, or 0: none
			err = put(k, key("{arch}."+k), nil)
		}
		if err != nil {
			return err
		}
	}
	var hd uint64
	if err := json.Unmarshal(raw["head_dim"], &hd); err != nil || hd == 0 {
		hd = 256 // ParseConfig's Gemma 3 default; it checks the value
	}
	scalar, field := hd, key("{arch}.attention.key_length")
	if (arch == Gemma3 && layers == 62) || (arch == Gemma2 && layers == 46) {
		d, _, _ := uintKey("{arch}.embedding_length")
		h, _, _ := uintKey("{arch}.attention.head_count")
		if h > 0 && d%h == 0 {
			scalar, field = d/h, key("{arch}.embedding_length")
		}
	}
	return put("query_pre_attn_scalar", field, scalar)
}
