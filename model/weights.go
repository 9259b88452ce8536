package model

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hipgo/hipgo/model/internal/cpu"
	"github.com/hipgo/hipgo/model/safetensors"
)

// weights are a loaded checkpoint, shared read-only by every session.
// Projections are fused at load (q|k|v and gate|up) so each layer needs
// fewer parallel regions per token.
type weights struct {
	embed  cpu.Matrix // [vocab, hidden]
	lmHead cpu.Matrix // [vocab, hidden]; shares embed's data when tied
	tied   bool
	norm   []float32
	layers []layerWeights
}

type layerWeights struct {
	attnNorm, mlpNorm []float32
	qkv               cpu.Matrix // [(heads + 2*kvHeads) * headDim, hidden]
	qkvBias           []float32  // nil without biases
	o                 cpu.Matrix // [hidden, heads*headDim]
	oBias             []float32
	gateUp            cpu.Matrix // [2*intermediate, hidden]
	gateUpBias        []float32
	down              cpu.Matrix // [hidden, intermediate]
	downBias          []float32
	// qkvParts and gateUpParts hold q, k, v (gate, up) unfused, and qkv
	// (gateUp) is then empty, when a GGUF stores them in different block
	// formats: llama.cpp's Q4_K_M recipe, ollama's default, keeps attn_v
	// in Q6_K and attn_q/attn_k in Q4_K, and a Matrix holds one format.
	qkvParts, gateUpParts []cpu.Matrix
}

// WeightFormat chooses how matrices are held in memory.
type WeightFormat int

const (
	// WeightsAuto keeps BF16 checkpoints in bfloat16 (half the memory and
	// memory traffic; products still accumulate in float32) and widens F16
	// and F32 to float32.
	WeightsAuto WeightFormat = iota
	// WeightsF32 widens everything to float32.
	WeightsF32
)

// loader reads tensors from a checkpoint, checking shapes against the config.
type loader struct {
	set      *safetensors.Set
	format   WeightFormat
	progress func(done, total int64)
	done     int64
	total    int64
}

func (l *loader) info(name string, want []int) (safetensors.TensorInfo, *safetensors.File, error) {
	info, f, ok := l.set.Info(name)
	if !ok {
		var files []string
		for _, f := range l.set.Files() {
			files = append(files, f.Name())
		}
		return info, nil, &TensorError{File: strings.Join(files, ", "), Tensor: name, Want: want, Reason: "missing from the checkpoint"}
	}
	if !slices.Equal(info.Shape, want) {
		return info, nil, &TensorError{File: f.Name(), Tensor: name, Want: want, Got: info.Shape, Reason: "shape does not match config.json"}
	}
	switch info.DType {
	case safetensors.F32, safetensors.F16, safetensors.BF16:
	default:
		return info, nil, &TensorError{File: f.Name(), Tensor: name, Reason: fmt.Sprintf("dtype %s is not F32, F16 or BF16", info.DType)}
	}
	return info, f, nil
}

func (l *loader) advance(n int64) {
	l.done += n
	if l.progress != nil {
		l.progress(l.done, l.total)
	}
}

// vector reads a 1-D float tensor (norm weights, biases) as float32.
func (l *loader) vector(name string, n int) ([]float32, error) {
	info, f, err := l.info(name, []int{n})
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	if err := f.ReadFloat32(name, out); err != nil {
		return nil, &TensorError{File: f.Name(), Tensor: name, Reason: "unreadable", Err: err}
	}
	l.advance(info.Size)
	return out, nil
}

// matrix reads one or more [rows_i, cols] tensors stacked into one matrix.
func (l *loader) matrix(cols int, names []string, rows []int) (cpu.Matrix, error) {
	infos := make([]safetensors.TensorInfo, len(names))
	files := make([]*safetensors.File, len(names))
	allBF16 := true
	total := 0
	for i, n := range names {
		var err error
		if infos[i], files[i], err = l.info(n, []int{rows[i], cols}); err != nil {
			return cpu.Matrix{}, err
		}
		allBF16 = allBF16 && infos[i].DType == safetensors.BF16
		total += rows[i]
	}
	m := cpu.Matrix{Rows: total, Cols: cols}
	useBF16 := allBF16 && l.format == WeightsAuto
	if useBF16 {
		m.BF16 = make([]uint16, total*cols)
	} else {
		m.F32 = make([]float32, total*cols)
	}
	off := 0
	for i, n := range names {
		size := rows[i] * cols
		var err error
		if useBF16 {
			err = files[i].ReadBF16(n, m.BF16[off:off+size])
		} else {
			err = files[i].ReadFloat32(n, m.F32[off:off+size])
		}
		if err != nil {
			return cpu.Matrix{}, &TensorError{File: files[i].Name(), Tensor: n, Reason: "unreadable", Err: err}
		}
		off += size
		l.advance(infos[i].Size)
	}
	return m, nil
}

// biases reads optional biases stacked like matrix; nil when has is false.
func (l *loader) biases(has bool, names []string, sizes []int) ([]float32, error) {
	if !has {
		return nil, nil
	}
	var out []float32
	for i, n := range names {
		v, err := l.vector(n, sizes[i])
		if err != nil {
			return nil, err
		}
		out = append(out, v...)
	}
	return out, nil
}

// loadWeights reads and checks every tensor the config calls for.
func loadWeights(cfg *Config, set *safetensors.Set, format WeightFormat, progress func(done, total int64)) (*weights, error) {
	l := &loader{set: set, format: format, progress: progress}
	for _, n := range set.Names() {
		info, _, _ := set.Info(n)
		l.total += info.Size
	}
	D, V, I := cfg.HiddenSize, cfg.VocabSize, cfg.IntermediateSize
	qD, kvD := cfg.NumHeads*cfg.HeadDim, cfg.NumKVHeads*cfg.HeadDim
	w := &weights{layers: make([]layerWeights, cfg.NumLayers)}
	var err error
	if w.embed, err = l.matrix(D, []string{"model.embed_tokens.weight"}, []int{V}); err != nil {
		return nil, err
	}
	for i := range w.layers {
		p := fmt.Sprintf("model.layers.%d.", i)
		lw := &w.layers[i]
		if lw.attnNorm, err = l.vector(p+"input_layernorm.weight", D); err != nil {
			return nil, err
		}
		qkv := []string{p + "self_attn.q_proj.", p + "self_attn.k_proj.", p + "self_attn.v_proj."}
		qkvRows := []int{qD, kvD, kvD}
		if lw.qkv, err = l.matrix(D, suffix(qkv, "weight"), qkvRows); err != nil {
			return nil, err
		}
		if lw.qkvBias, err = l.biases(cfg.QKVBias, suffix(qkv, "bias"), qkvRows); err != nil {
			return nil, err
		}
		if lw.o, err = l.matrix(qD, []string{p + "self_attn.o_proj.weight"}, []int{D}); err != nil {
			return nil, err
		}
		if lw.oBias, err = l.biases(cfg.OBias, []string{p + "self_attn.o_proj.bias"}, []int{D}); err != nil {
			return nil, err
		}
		if lw.mlpNorm, err = l.vector(p+"post_attention_layernorm.weight", D); err != nil {
			return nil, err
		}
		gu := []string{p + "mlp.gate_proj.", p + "mlp.up_proj."}
		if lw.gateUp, err = l.matrix(D, suffix(gu, "weight"), []int{I, I}); err != nil {
			return nil, err
		}
		if lw.gateUpBias, err = l.biases(cfg.MLPBias, suffix(gu, "bias"), []int{I, I}); err != nil {
			return nil, err
		}
		if lw.down, err = l.matrix(I, []string{p + "mlp.down_proj.weight"}, []int{D}); err != nil {
			return nil, err
		}
		if lw.downBias, err = l.biases(cfg.MLPBias, []string{p + "mlp.down_proj.bias"}, []int{D}); err != nil {
			return nil, err
		}
	}
	if w.norm, err = l.vector("model.norm.weight", D); err != nil {
		return nil, err
	}
	if cfg.TieWordEmbeddings {
		// transformers ties lm_head to the embeddings even when the file has both.
		w.lmHead, w.tied = w.embed, true
	} else if w.lmHead, err = l.matrix(D, []string{"lm_head.weight"}, []int{V}); err != nil {
		return nil, err
	}
	if l.progress != nil && l.done < l.total {
		// Tensors the model does not use (a tied lm_head, rotary caches) were
		// counted in the total but not read.
		l.progress(l.total, l.total)
	}
	return w, nil
}

func suffix(prefixes []string, s string) []string {
	out := make([]string, len(prefixes))
	for i, p := range prefixes {
		out[i] = p + s
	}
	return out
}
