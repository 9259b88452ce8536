package model

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/hipgo/hipgo/model/gguf"
	"github.com/hipgo/hipgo/model/internal/cpu"
	"github.com/hipgo/hipgo/model/internal/quant"
)

// ggufLoader reads llama.cpp-named tensors from a GGUF file into the same
// weights a safetensors checkpoint gives. Quantized tensors stay in their
// block format (cpu.Matrix.Q), decoded inside the products; WeightsF32
// widens them instead, for comparison with float32 references.
type ggufLoader struct {
	f        *gguf.File
	format   WeightFormat
	progress func(done, total int64)
	done     int64
	total    int64
}

func (l *ggufLoader) info(name string, want []int) (gguf.TensorInfo, error) {
	info, ok := l.f.Tensor(name)
	if !ok {
		return info, &TensorError{File: l.f.Name(), Tensor: name, Want: want, Reason: "missing from the GGUF file"}
	}
	if got := info.Shape(); !slices.Equal(got, want) {
		return info, &TensorError{File: l.f.Name(), Tensor: name, Want: want, Got: got, Reason: "shape does not match the GGUF metadata"}
	}
	if !quant.Type(info.Type).Known() {
		return info, &TensorError{File: l.f.Name(), Tensor: name, Reason: fmt.Sprintf("type %s is not supported (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K)", info.Type)}
	}
	return info, nil
}

func (l *ggufLoader) read(info gguf.TensorInfo) ([]byte, error) {
	buf := make([]byte, info.Size)
	if err := l.f.ReadTensor(info.Name, buf); err != nil {
		return nil, &TensorError{File: l.f.Name(), Tensor: info.Name, Reason: "unreadable", Err: err}
	}
	l.done += info.Size
	if l.progress != nil {
		l.progress(l.done, l.total)
	}
	return buf, nil
}

// vector reads a 1-D tensor (a norm weight, a bias) as float32.
func (l *ggufLoader) vector(name string, n int) ([]float32, error) {
	info, err := l.info(name, []int{n})
	if err != nil {
		return nil, err
	}
	data, err := l.read(info)
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	if err := quant.DequantizeRow(quant.Type(info.Type), data, out); err != nil {
		return nil, &TensorError{File: l.f.Name(), Tensor: name, Reason: "undecodable", Err: err}
	}
	return out, nil
}

// part is one tensor stacked into a fused matrix. heads > 0 reverses
// llama.cpp's q/k row permutation over that many heads.
type part struct {
	name  string
	rows  int
	heads int
}

// matrix reads parts of [rows_i, cols] stacked into one matrix. They must
// share a type, since a Matrix holds one format.
func (l *ggufLoader) matrix(cols int, parts ...part) (cpu.Matrix, error) {
	infos := make([]gguf.TensorInfo, len(parts))
	total := 0
	for i, p := range parts {
		var err error
		if infos[i], err = l.info(p.name, []int{p.rows, cols}); err != nil {
			return cpu.Matrix{}, err
		}
		if infos[i].Type != infos[0].Type {
			return cpu.Matrix{}, &TensorError{File: l.f.Name(), Tensor: p.name,
				Reason: fmt.Sprintf("type %s differs from %s's %s in one matrix", infos[i].Type, parts[0].name, infos[0].Type)}
		}
		total += p.rows
	}
	t := quant.Type(infos[0].Type)
	rb, err := quant.RowBytes(t, cols)
	if err != nil {
		return cpu.Matrix{}, &TensorError{File: l.f.Name(), Tensor: parts[0].name, Reason: "bad row", Err: err}
	}
	q := make([]byte, 0, total*rb)
	for i, p := range parts {
		data, err := l.read(infos[i])
		if err != nil {
			return cpu.Matrix{}, err
		}
		if p.heads > 0 {
			data, err = unpermuteRows(data, p.rows, rb, p.heads)
			if err != nil {
				return cpu.Matrix{}, &TensorError{File: l.f.Name(), Tensor: p.name, Reason: "cannot reverse the q/k permutation", Err: err}
			}
		}
		q = append(q, data...)
	}
	m := cpu.Matrix{Rows: total, Cols: cols}
	switch {
	case t == quant.F32:
		m.F32 = bytesToF32(q)
	case t == quant.BF16 && l.format == WeightsAuto:
		m.BF16 = make([]uint16, len(q)/2)
		for i := range m.BF16 {
			m.BF16[i] = binary.LittleEndian.Uint16(q[2*i:])
		}
	case l.format == WeightsF32:
		m.F32 = make([]float32, total*cols)
		for j := range total {
			if err := quant.DequantizeRow(t, q[j*rb:(j+1)*rb], m.F32[j*cols:(j+1)*cols]); err != nil {
				return cpu.Matrix{}, &TensorError{File: l.f.Name(), Tensor: parts[0].name, Reason: "undecodable", Err: err}
			}
		}
	default:
		m.Q, m.QType = q, t
	}
	if err := m.Validate(); err != nil {
		return cpu.Matrix{}, &TensorError{File: l.f.Name(), Tensor: parts[0].name, Reason: "bad matrix", Err: err}
	}
	return m, nil
}

func bytesToF32(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// unpermuteRows reverses convert_hf_to_gguf.py's permute for llama q/k
// weights: it reorders each head's rows from interleaved rotary pairs
// (GGUF row 2i+a) back to rotate_half's halves (row a*headDim/2+i), moving
// whole rows of rb bytes, so it works for any block format.
func unpermuteRows(data []byte, rows, rb, heads int) ([]byte, error) {
	if heads <= 0 || rows%heads != 0 || (rows/heads)%2 != 0 || len(data) != rows*rb {
		return nil, fmt.Errorf("%d rows of %d bytes (%d held) do not split into %d heads of pairs", rows, rb, len(data), heads)
	}
	hd := rows / heads
	half := hd / 2
	out := make([]byte, len(data))
	for h := range heads {
		for a := range 2 {
			for i := range half {
				src := (h*hd + 2*i + a) * rb
				dst := (h*hd + a*half + i) * rb
				copy(out[dst:dst+rb], data[src:src+rb])
			}
		}
	}
	return out, nil
}

// fused reads parts as one matrix when they share a type, else each alone
// (the returned list; the matrix is then empty).
func (l *ggufLoader) fused(cols int, parts ...part) (cpu.Matrix, []cpu.Matrix, error) {
	mixed := false
	var first gguf.Type
	for i, p := range parts {
		info, ok := l.f.Tensor(p.name)
		if !ok {
			break // matrix reports it
		}
		if i == 0 {
			first = info.Type
		}
		mixed = mixed || info.Type != first
	}
	if !mixed {
		m, err := l.matrix(cols, parts...)
		return m, nil, err
	}
	out := make([]cpu.Matrix, len(parts))
	for i, p := range parts {
		var err error
		if out[i], err = l.matrix(cols, p); err != nil {
			return cpu.Matrix{}, nil, err
		}
	}
	return cpu.Matrix{}, out, nil
}

// loadGGUFWeights reads and checks every tensor the config calls for.
// Llama GGUFs converted from Hugging Face have q/k rows permuted for
// llama.cpp's interleaved RoPE; they are put back for rotate_half. Qwen2,
// Qwen3 and Gemma 3 GGUFs are not permuted (llama.cpp runs them with NeoX
// RoPE). Gemma's norm weights are stored as the 1+w its RMSNorm applies.
func loadGGUFWeights(cfg *Config, f *gguf.File, format WeightFormat, progress func(done, total int64)) (*weights, error) {
	l := &ggufLoader{f: f, format: format, progress: progress}
	for _, t := range f.Tensors() {
		l.total += t.Size
	}
	D, V, I := cfg.HiddenSize, cfg.VocabSize, cfg.IntermediateSize
	qD, kvD := cfg.NumHeads*cfg.HeadDim, cfg.NumKVHeads*cfg.HeadDim
	qHeads, kHeads := 0, 0
	if cfg.Architecture == Llama {
		qHeads, kHeads = cfg.NumHeads, cfg.NumKVHeads
	}
	w := &weights{layers: make([]layerWeights, cfg.NumLayers)}
	var err error
	if w.embed, err = l.matrix(D, part{name: "token_embd.weight", rows: V}); err != nil {
		return nil, err
	}
	for i := range w.layers {
		p := fmt.Sprintf("blk.%d.", i)
		lw := &w.layers[i]
		if lw.attnNorm, err = l.vector(p+"attn_norm.weight", D); err != nil {
			return nil, err
		}
		if cfg.Gemma { // stored as 1+w by convert_hf_to_gguf.py
			if lw.postAttnNorm, err = l.vector(p+"post_attention_norm.weight", D); err != nil {
				return nil, err
			}
			if lw.postMLPNorm, err = l.vector(p+"post_ffw_norm.weight", D); err != nil {
				return nil, err
			}
		}
		if lw.qkv, lw.qkvParts, err = l.fused(D, part{p + "attn_q.weight", qD, qHeads}, part{p + "attn_k.weight", kvD, kHeads}, part{p + "attn_v.weight", kvD, 0}); err != nil {
			return nil, err
		}
		if cfg.QKVBias {
			var bq, bk, bv []float32
			if bq, err = l.vector(p+"attn_q.bias", qD); err != nil {
				return nil, err
			}
			if bk, err = l.vector(p+"attn_k.bias", kvD); err != nil {
				return nil, err
			}
			if bv, err = l.vector(p+"attn_v.bias", kvD); err != nil {
				return nil, err
			}
			if qHeads > 0 {
				if bq, err = unpermuteVector(bq, qHeads); err != nil {
					return nil, &TensorError{File: f.Name(), Tensor: p + "attn_q.bias", Reason: "cannot reverse the q/k permutation", Err: err}
				}
				if bk, err = unpermuteVector(bk, kHeads); err != nil {
					return nil, &TensorError{File: f.Name(), Tensor: p + "attn_k.bias", Reason: "cannot reverse the q/k permutation", Err: err}
				}
			}
			lw.qkvBias = slices.Concat(bq, bk, bv)
		}
		if cfg.QKNorm {
			if lw.qNorm, err = l.vector(p+"attn_q_norm.weight", cfg.HeadDim); err != nil {
				return nil, err
			}
			if lw.kNorm, err = l.vector(p+"attn_k_norm.weight", cfg.HeadDim); err != nil {
				return nil, err
			}
		}
		if lw.o, err = l.matrix(qD, part{name: p + "attn_output.weight", rows: D}); err != nil {
			return nil, err
		}
		if cfg.OBias {
			if lw.oBias, err = l.vector(p+"attn_output.bias", D); err != nil {
				return nil, err
			}
		}
		if lw.mlpNorm, err = l.vector(p+"ffn_norm.weight", D); err != nil {
			return nil, err
		}
		if lw.gateUp, lw.gateUpParts, err = l.fused(D, part{name: p + "ffn_gate.weight", rows: I}, part{name: p + "ffn_up.weight", rows: I}); err != nil {
			return nil, err
		}
		if lw.down, err = l.matrix(I, part{name: p + "ffn_down.weight", rows: D}); err != nil {
			return nil, err
		}
	}
	if w.norm, err = l.vector("output_norm.weight", D); err != nil {
		return nil, err
	}
	if cfg.TieWordEmbeddings {
		w.lmHead, w.tied = w.embed, true
	} else if w.lmHead, err = l.matrix(D, part{name: "output.weight", rows: V}); err != nil {
		return nil, err
	}
	if l.progress != nil && l.done < l.total {
		l.progress(l.total, l.total)
	}
	return w, nil
}

// unpermuteVector is unpermuteRows for a bias (one float per row).
func unpermuteVector(v []float32, heads int) ([]float32, error) {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	out, err := unpermuteRows(b, len(v), 4, heads)
	if err != nil {
		return nil, err
	}
	return bytesToF32(out), nil
}
