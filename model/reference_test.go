package model

import (
	"math"
	"testing"

	"github.com/hipgo/hipgo/model/modeltest"
)

// This file is an independent float64 implementation of the llama forward
// pass, written as plainly as possible from the architecture's definition
// (no KV cache, no fusion, no parallelism), used as the reference for the
// optimised float32 code.

type refModel struct {
	s modeltest.Spec
	w map[string][]float64
}

func newRef(s modeltest.Spec) *refModel {
	r := &refModel{s: s, w: map[string][]float64{}}
	for _, t := range modeltest.Tensors(s) {
		v := make([]float64, len(t.Values))
		for i, x := range t.Values {
			v[i] = float64(x)
		}
		r.w[t.Name] = v
	}
	return r
}

// linear computes W x (+ b) for W stored [out, in].
func (r *refModel) linear(name string, x []float64, out int, bias bool) []float64 {
	W := r.w[name+".weight"]
	in := len(x)
	y := make([]float64, out)
	for o := range out {
		var s float64
		for i := range in {
			s += W[o*in+i] * x[i]
		}
		if bias {
			s += r.w[name+".bias"][o]
		}
		y[o] = s
	}
	return y
}

func refRMSNorm(x, w []float64, eps float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+eps)
	out := make([]float64, len(x))
	for i := range x {
		out[i] = x[i] * inv * w[i]
	}
	return out
}

// refInvFreq follows the published definitions: theta^(-2i/d), then for
// llama3 scaling the three wavelength bands of Llama 3.1.
func refInvFreq(s modeltest.Spec, hd int) []float64 {
	out := make([]float64, hd/2)
	for i := range out {
		f := math.Pow(s.RopeTheta, -float64(2*i)/float64(hd))
		if sc := s.Llama3; sc != nil {
			wl := 2 * math.Pi / f
			lowWl := float64(sc.OriginalMaxPositionEmbeddings) / sc.LowFreqFactor
			highWl := float64(sc.OriginalMaxPositionEmbeddings) / sc.HighFreqFactor
			if wl > lowWl {
				f = f / sc.Factor
			} else if wl >= highWl {
				a := (float64(sc.OriginalMaxPositionEmbeddings)/wl - sc.LowFreqFactor) / (sc.HighFreqFactor - sc.LowFreqFactor)
				f = (1-a)*f/sc.Factor + a*f
			}
		}
		out[i] = f
	}
	return out
}

// refRotate applies rotate_half RoPE to one head vector at position pos.
func refRotate(v []float64, pos int, inv []float64) {
	half := len(v) / 2
	for i := range half {
		c, s := math.Cos(float64(pos)*inv[i]), math.Sin(float64(pos)*inv[i])
		a, b := v[i], v[i+half]
		v[i] = a*c - b*s
		v[i+half] = b*c + a*s
	}
}

// logits returns [T][vocab] logits for every position of tokens.
func (r *refModel) logits(tokens []uint32) [][]float64 {
	s := r.s
	D, hd := s.Hidden, s.Hidden/s.Heads
	if s.HeadDim > 0 {
		hd = s.HeadDim
	}
	H, KV := s.Heads, s.KVHeads
	T := len(tokens)
	inv := refInvFreq(s, hd)
	qkvBias := s.Arch == "qwen2" || s.AttnBias
	x := make([][]float64, T)
	for t, id := range tokens {
		x[t] = append([]float64(nil), r.w["model.embed_tokens.weight"][int(id)*D:(int(id)+1)*D]...)
	}
	for l := range s.Layers {
		p := "model.layers." + itoa(l) + "."
		q := make([][]float64, T)
		k := make([][]float64, T)
		v := make([][]float64, T)
		for t := range T {
			h := refRMSNorm(x[t], r.w[p+"input_layernorm.weight"], s.RMSNormEps)
			q[t] = r.linear(p+"self_attn.q_proj", h, H*hd, qkvBias)
			k[t] = r.linear(p+"self_attn.k_proj", h, KV*hd, qkvBias)
			v[t] = r.linear(p+"self_attn.v_proj", h, KV*hd, qkvBias)
			if s.Arch == "qwen3" { // each head RMS-normalised before RoPE
				for hh := range H {
					copy(q[t][hh*hd:], refRMSNorm(q[t][hh*hd:(hh+1)*hd], r.w[p+"self_attn.q_norm.weight"], s.RMSNormEps))
				}
				for hh := range KV {
					copy(k[t][hh*hd:], refRMSNorm(k[t][hh*hd:(hh+1)*hd], r.w[p+"self_attn.k_norm.weight"], s.RMSNormEps))
				}
			}
			for hh := range H {
				refRotate(q[t][hh*hd:(hh+1)*hd], t, inv)
			}
			for hh := range KV {
				refRotate(k[t][hh*hd:(hh+1)*hd], t, inv)
			}
		}
		for t := range T {
			att := make([]float64, H*hd)
			for hh := range H {
				g := hh / (H / KV)
				sc := make([]float64, t+1)
				mx := math.Inf(-1)
				for j := 0; j <= t; j++ {
					var d float64
					for i := range hd {
						d += q[t][hh*hd+i] * k[j][g*hd+i]
					}
					sc[j] = d / math.Sqrt(float64(hd))
					mx = math.Max(mx, sc[j])
				}
				var z float64
				for j := range sc {
					sc[j] = math.Exp(sc[j] - mx)
					z += sc[j]
				}
				for j := range sc {
					for i := range hd {
						att[hh*hd+i] += sc[j] / z * v[j][g*hd+i]
					}
				}
			}
			o := r.linear(p+"self_attn.o_proj", att, D, s.AttnBias)
			for i := range D {
				x[t][i] += o[i]
			}
			h := refRMSNorm(x[t], r.w[p+"post_attention_layernorm.weight"], s.RMSNormEps)
			gate := r.linear(p+"mlp.gate_proj", h, s.Intermediate, s.MLPBias)
			up := r.linear(p+"mlp.up_proj", h, s.Intermediate, s.MLPBias)
			a := make([]float64, s.Intermediate)
			for i := range a {
				a[i] = gate[i] / (1 + math.Exp(-gate[i])) * up[i]
			}
			d := r.linear(p+"mlp.down_proj", a, D, s.MLPBias)
			for i := range D {
				x[t][i] += d[i]
			}
		}
	}
	head := "lm_head"
	if s.Tie {
		head = "model.embed_tokens"
	}
	out := make([][]float64, T)
	for t := range T {
		h := refRMSNorm(x[t], r.w["model.norm.weight"], s.RMSNormEps)
		out[t] = r.linear(head, h, s.Vocab, false)
	}
	return out
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// relDiff is max|got-want| / max|want| over a row.
func relDiff(t *testing.T, got []float32, want []float64) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("length %d, want %d", len(got), len(want))
	}
	var md, mw float64
	for i := range want {
		md = math.Max(md, math.Abs(float64(got[i])-want[i]))
		mw = math.Max(mw, math.Abs(want[i]))
	}
	return md / mw
}
