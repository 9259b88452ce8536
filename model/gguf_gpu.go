package model

import (
	"encoding/binary"
	"fmt"

	"github.com/hipgo/hipgo/model/gguf"
	"github.com/hipgo/hipgo/model/internal/cpu"
	"github.com/hipgo/hipgo/model/internal/gpu"
)

// ggufSource reads a GGUF file's weights. The device gets every matrix in
// its file format (quantized blocks included), converted from the CPU
// loader's matrices without widening.
func ggufSource(cfg *Config, f *gguf.File, o options) weightSource {
	return weightSource{
		cpu: func() (*weights, error) { return loadGGUFWeights(cfg, f, o.format, o.progress) },
		gpu: func() (*gpu.Weights, error) {
			w, err := loadGGUFWeights(cfg, f, o.format, o.progress)
			if err != nil {
				return nil, err
			}
			return deviceWeights(w, f.Name())
		},
	}
}

// deviceTensor is m's storage as a device tensor: its bytes as they are
// (quantized blocks stay blocks).
func deviceTensor(m cpu.Matrix) (gpu.Tensor, error) {
	switch {
	case m.F32 != nil:
		return gpu.F32Tensor(m.F32), nil
	case m.BF16 != nil:
		b := make([]byte, 2*len(m.BF16))
		for i, v := range m.BF16 {
			binary.LittleEndian.PutUint16(b[2*i:], v)
		}
		return gpu.Tensor{DType: gpu.BF16, Data: b}, nil
	}
	dt, err := gpu.QuantDType(m.QType) // F16 and the block formats, as stored
	if err != nil {
		return gpu.Tensor{}, err
	}
	return gpu.Tensor{DType: dt, Data: m.Q}, nil
}

// deviceWeights converts loaded weights for upload. Fused matrices whose
// parts differ in type stay unfused (gpu.Layer's QKVParts, GateUpParts).
func deviceWeights(w *weights, file string) (*gpu.Weights, error) {
	var err error
	conv := func(name string, m cpu.Matrix) gpu.Tensor {
		if err != nil {
			return gpu.Tensor{}
		}
		var t gpu.Tensor
		if t, err = deviceTensor(m); err != nil {
			err = &TensorError{File: file, Tensor: name, Reason: "no GPU kernel for its type", Err: err}
		}
		return t
	}
	vec := func(v []float32) gpu.Tensor { return gpu.F32Tensor(v) }
	out := &gpu.Weights{Embed: conv("token_embd.weight", w.embed), Norm: vec(w.norm), Tied: w.tied, Layers: make([]gpu.Layer, len(w.layers))}
	if !w.tied {
		out.LMHead = conv("output.weight", w.lmHead)
	}
	for i := range w.layers {
		l := &w.layers[i]
		p := fmt.Sprintf("blk.%d.", i)
		d := &out.Layers[i]
		d.AttnNorm, d.MLPNorm = vec(l.attnNorm), vec(l.mlpNorm)
		d.QKVBias, d.OBias, d.GateUpBias, d.DownBias = l.qkvBias, l.oBias, l.gateUpBias, l.downBias
		if l.qkvParts != nil {
			for j, m := range l.qkvParts {
				d.QKVParts = append(d.QKVParts, conv(p+[]string{"attn_q", "attn_k", "attn_v"}[j]+".weight", m))
			}
		} else {
			d.QKV = conv(p+"attn_q|k|v.weight", l.qkv)
		}
		d.O = conv(p+"attn_output.weight", l.o)
		if l.gateUpParts != nil {
			for j, m := range l.gateUpParts {
				d.GateUpParts = append(d.GateUpParts, conv(p+[]string{"ffn_gate", "ffn_up"}[j]+".weight", m))
			}
		} else {
			d.GateUp = conv(p+"ffn_gate|up.weight", l.gateUp)
		}
		d.Down = conv(p+"ffn_down.weight", l.down)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}
