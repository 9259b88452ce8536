package model

import (
	"fmt"
	"slices"

	"github.com/hipgo/hipgo/model/internal/gpu"
	"github.com/hipgo/hipgo/model/safetensors"
)

// rawDType maps a checkpoint dtype to the device's.
func rawDType(d safetensors.DType) gpu.DType {
	switch d {
	case safetensors.F16:
		return gpu.F16
	case safetensors.BF16:
		return gpu.BF16
	}
	return gpu.F32
}

// raw reads one or more [rows_i, cols] tensors stacked into one tensor in
// their file's dtype; when they differ, or the format is WeightsF32, every
// one is widened to float32.
func (l *loader) raw(cols int, names []string, rows []int) (gpu.Tensor, error) {
	infos := make([]safetensors.TensorInfo, len(names))
	files := make([]*safetensors.File, len(names))
	same := true
	size := 0
	for i, n := range names {
		var err error
		want := []int{rows[i], cols}
		if cols == 0 {
			want = []int{rows[i]}
		}
		if infos[i], files[i], err = l.info(n, want); err != nil {
			return gpu.Tensor{}, err
		}
		same = same && infos[i].DType == infos[0].DType
		size += rows[i] * max(cols, 1)
	}
	dt := rawDType(infos[0].DType)
	if !same || l.format == WeightsF32 {
		dt = gpu.F32
	}
	out := gpu.Tensor{DType: dt, Data: make([]byte, size*dt.Size())}
	off := 0
	for i, n := range names {
		nb := rows[i] * max(cols, 1) * dt.Size()
		dst := out.Data[off : off+nb]
		var err error
		if dt == gpu.F32 && infos[i].DType != safetensors.F32 {
			v := make([]float32, nb/4)
			if err = files[i].ReadFloat32(n, v); err == nil {
				copy(dst, gpu.F32Tensor(v).Data)
			}
		} else {
			err = files[i].ReadRaw(n, dst)
		}
		if err != nil {
			return gpu.Tensor{}, &TensorError{File: files[i].Name(), Tensor: n, Reason: "unreadable", Err: err}
		}
		off += nb
		l.advance(infos[i].Size)
	}
	return out, nil
}

// loadRawWeights reads every tensor the config calls for in its file's
// dtype, for upload to a device, with the shape checks of loadWeights.
func loadRawWeights(cfg *Config, set *safetensors.Set, format WeightFormat, progress func(done, total int64)) (*gpu.Weights, error) {
	l := &loader{set: set, format: format, progress: progress}
	for _, n := range set.Names() {
		info, _, _ := set.Info(n)
		l.total += info.Size
	}
	D, V, I := cfg.HiddenSize, cfg.VocabSize, cfg.IntermediateSize
	qD, kvD := cfg.NumHeads*cfg.HeadDim, cfg.NumKVHeads*cfg.HeadDim
	w := &gpu.Weights{Layers: make([]gpu.Layer, cfg.NumLayers)}
	var err error
	if w.Embed, err = l.raw(D, []string{"model.embed_tokens.weight"}, []int{V}); err != nil {
		return nil, err
	}
	vec := func(name string, n int) (gpu.Tensor, error) { return l.raw(0, []string{name}, []int{n}) }
	for i := range w.Layers {
		p := fmt.Sprintf("model.layers.%d.", i)
		lw := &w.Layers[i]
		if lw.AttnNorm, err = vec(p+"input_layernorm.weight", D); err != nil {
			return nil, err
		}
		qkv := []string{p + "self_attn.q_proj.", p + "self_attn.k_proj.", p + "self_attn.v_proj."}
		qkvRows := []int{qD, kvD, kvD}
		if lw.QKV, err = l.raw(D, suffix(qkv, "weight"), qkvRows); err != nil {
			return nil, err
		}
		if lw.QKVBias, err = l.biases(cfg.QKVBias, suffix(qkv, "bias"), qkvRows); err != nil {
			return nil, err
		}
		if lw.O, err = l.raw(qD, []string{p + "self_attn.o_proj.weight"}, []int{D}); err != nil {
			return nil, err
		}
		if lw.OBias, err = l.biases(cfg.OBias, []string{p + "self_attn.o_proj.bias"}, []int{D}); err != nil {
			return nil, err
		}
		if lw.MLPNorm, err = vec(p+"post_attention_layernorm.weight", D); err != nil {
			return nil, err
		}
		gu := []string{p + "mlp.gate_proj.", p + "mlp.up_proj."}
		if lw.GateUp, err = l.raw(D, suffix(gu, "weight"), []int{I, I}); err != nil {
			return nil, err
		}
		if lw.GateUpBias, err = l.biases(cfg.MLPBias, suffix(gu, "bias"), []int{I, I}); err != nil {
			return nil, err
		}
		if lw.Down, err = l.raw(I, []string{p + "mlp.down_proj.weight"}, []int{D}); err != nil {
			return nil, err
		}
		if lw.DownBias, err = l.biases(cfg.MLPBias, []string{p + "mlp.down_proj.bias"}, []int{D}); err != nil {
			return nil, err
		}
	}
	if w.Norm, err = vec("model.norm.weight", D); err != nil {
		return nil, err
	}
	if cfg.TieWordEmbeddings {
		w.Tied = true
	} else if w.LMHead, err = l.raw(D, []string{"lm_head.weight"}, []int{V}); err != nil {
		return nil, err
	}
	if err := l.unused(cfg); err != nil {
		return nil, err
	}
	if l.progress != nil && l.done < l.total {
		l.progress(l.total, l.total)
	}
	return w, nil
}

// gpuConfig is the device backend's view of the config.
func (c *Config) gpuConfig() gpu.Config {
	return gpu.Config{
		Hidden: c.HiddenSize, Intermediate: c.IntermediateSize, Layers: c.NumLayers,
		Heads: c.NumHeads, KVHeads: c.NumKVHeads, HeadDim: c.HeadDim, Vocab: c.VocabSize,
		Eps: float32(c.RMSNormEps), InvFreq: c.ropeInvFreq(),
	}
}

// rawSize is the device memory the weights occupy (a tied head counted once).
func rawSize(w *gpu.Weights) int64 {
	n := int64(len(w.Embed.Data) + len(w.Norm.Data) + len(w.LMHead.Data))
	for _, l := range w.Layers {
		for _, t := range slices.Concat([]gpu.Tensor{l.AttnNorm, l.MLPNorm, l.QKV, l.O, l.GateUp, l.Down}, l.QKVParts, l.GateUpParts) {
			n += int64(len(t.Data))
		}
		n += 4 * int64(len(l.QKVBias)+len(l.OBias)+len(l.GateUpBias)+len(l.DownBias))
	}
	return n
}
