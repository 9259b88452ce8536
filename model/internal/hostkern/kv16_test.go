package hostkern

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hipgo/hipgo/model/safetensors"
	"github.com/stretchr/testify/require"
)

// halves rounds v to f16 in place (nearest even) and returns the f16
// patterns as a buffer: a half-precision cache holding what v now holds.
func halves(v []float32) *Buf {
	h := make([]uint16, len(v))
	for i, x := range v {
		h[i] = safetensors.Float32ToF16(x)
		v[i] = safetensors.F16ToFloat32(h[i])
	}
	return U16s(h)
}

// halfBits decodes a buffer of f16 patterns.
func halfBits(b *Buf) []uint16 {
	v := make([]uint16, len(b.Data)/2)
	for i := range v {
		v[i] = binary.LittleEndian.Uint16(b.Data[2*i:])
	}
	return v
}

// TestKVStoreHalfCache: kv_store_f32_kv16 and rope_kv_store_f32_kv16 store
// in a half-precision cache the f16 rounding (nearest even) of every value
// kv_store_f32 and rope_kv_store_f32 store, and leave everything else as
// it was: the same slots (out-of-range ones skipped), the same rotated qkv
// rows. Values past f16's range become infinities, as the rounding says.
func TestKVStoreHalfCache(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	const tokens, kvDim, stride, kOff, vOff, numSlots = 5, 40, 130, 50, 90, 64
	qkv := randF32(rng, tokens*stride, 1)
	qkv[kOff+3], qkv[vOff+5] = 70000, -1e-8 // past f16's largest, below its smallest subnormal
	slots := []uint32{3, 63, 64, 17, 1 << 30}
	k0, v0 := randF32(rng, numSlots*kvDim, 1), randF32(rng, numSlots*kvDim, 1)
	kh, vh := halves(k0), halves(v0)
	kf, vf := F32s(k0), F32s(v0)
	args := func(k, v *Buf) []Arg {
		return []Arg{k, v, F32s(qkv), U32s(slots), U32(tokens), U32(kvDim), U32(kOff), U32(vOff), U32(stride), U32(numSlots)}
	}
	half := runAll(t, Launch{"kv_store_f32_kv16", tokens, args(kh, vh)}, true, kh, vh)
	full := runAll(t, Launch{"kv_store_f32", tokens, args(kf, vf)}, true, kf, vf)
	for i := range sources {
		requireHalfOf(t, full[i][0], half[i][0], sources[i].name+": k")
		requireHalfOf(t, full[i][1], half[i][1], sources[i].name+": v")
	}
	require.Equal(t, uint16(0x7c00), halfBits(half[0][0])[3*kvDim+3], "70000 stored as +inf")

	for _, c := range []struct{ heads, kvHeads, headdim, extra int }{{4, 2, 64, 0}, {6, 2, 7, 1}, {32, 8, 64, 0}} {
		t.Run(fmt.Sprintf("rope/h%d/kv%d/d%d", c.heads, c.kvHeads, c.headdim), func(t *testing.T) {
			kvD, T := c.kvHeads*c.headdim, 6
			inv := make([]float32, max(c.headdim/2, 1))
			for i := range inv {
				inv[i] = 1 / float32(1+i)
			}
			pos, slots := []uint32{0, 1, 17, 1000, 131071, 77777}, []uint32{3, 39, 40, 17, 1 << 30, 0}
			const numSlots = 40
			st := (c.heads+2*c.kvHeads)*c.headdim + c.extra
			q := randF32(rng, T*st, 1)
			k0, v0 := randF32(rng, numSlots*kvD, 1), randF32(rng, numSlots*kvD, 1)
			kh, vh := halves(k0), halves(v0)
			qh, qf, kf, vf := F32s(q), F32s(q), F32s(k0), F32s(v0)
			launch := func(name string, qkv, k, v *Buf) Launch {
				return Launch{name, T, []Arg{qkv, k, v, U32s(pos), F32s(inv), U32s(slots), U32(T), U32(c.heads), U32(c.kvHeads), U32(c.headdim), U32(st), U32(numSlots)}}
			}
			half := runAll(t, launch("rope_kv_store_f32_kv16", qh, kh, vh), true, qh, kh, vh)
			full := runAll(t, launch("rope_kv_store_f32", qf, kf, vf), true, qf, kf, vf)
			for i := range sources {
				require.Equal(t, full[i][0].Data, half[i][0].Data, "%s: the rotated qkv rows", sources[i].name)
				requireHalfOf(t, full[i][1], half[i][1], sources[i].name+": k")
				requireHalfOf(t, full[i][2], half[i][2], sources[i].name+": v")
			}
		})
	}
}

// requireHalfOf: every value of the half-precision buffer h is the f16
// rounding of full's.
func requireHalfOf(t *testing.T, full, h *Buf, what string) {
	t.Helper()
	f, hb := full.Floats(), halfBits(h)
	require.Len(t, hb, len(f), what)
	for i, x := range f {
		require.Equalf(t, safetensors.Float32ToF16(x), hb[i], "%s: element %d (%v)", what, i, x)
	}
}

// TestAttentionHalfCache: the attention kernels over a half-precision
// cache (attention_f32_kv16, attention_warps_f32_kv16,
// attention_prefill_f32_kv16, attention_split_f32_kv16 with
// attention_merge_f32) against the CPU attention over the same f16 values,
// at attention_f32's tolerance: decode and prefill, GQA and MHA, head_dim
// 48 (no vector loads past the first column), 64, 128 and 130 (the scalar
// path), and caches 4 bytes past 16-byte alignment (the scalar loads).
func TestAttentionHalfCache(t *testing.T) {
	decode := []attnCase{
		{heads: 32, kvHeads: 8, headdim: 64, ctx: []int{16, 80, 144, 150, 1}, nq: []int{1, 1, 1, 1, 1}, kv16: true},
		{heads: 16, kvHeads: 2, headdim: 64, ctx: []int{1000, 129, 3}, nq: []int{1, 1, 1}, kv16: true},
		{heads: 8, kvHeads: 2, headdim: 128, ctx: []int{257, 20}, nq: []int{1, 3}, kv16: true},
		{heads: 9, kvHeads: 3, headdim: 130, ctx: []int{129}, nq: []int{3}, kv16: true},
		{heads: 8, kvHeads: 2, headdim: 48, ctx: []int{1, 7, 64, 65}, nq: []int{1, 7, 1, 2}, kv16: true},
		{heads: 8, kvHeads: 2, headdim: 64, ctx: []int{100, 33}, nq: []int{1, 1}, shift: 4, kv16: true},
	}
	for _, kernel := range []string{"attention_f32_kv16", "attention_warps_f32_kv16", "attention_prefill_f32_kv16"} {
		for ci, c := range decode {
			t.Run(fmt.Sprintf("%s/case%d/h%d/kv%d/d%d", kernel, ci, c.heads, c.kvHeads, c.headdim), func(t *testing.T) {
				checkAttention(t, rand.New(rand.NewPCG(73, uint64(ci))), c, kernel)
			})
		}
	}
	prefill := attnCase{heads: 8, kvHeads: 2, headdim: 64, ctx: []int{100, 3, 50}, nq: []int{20, 1, 17}, kv16: true}
	t.Run("attention_prefill_f32_kv16/later-chunks", func(t *testing.T) {
		checkAttention(t, rand.New(rand.NewPCG(74, 0)), prefill, "attention_prefill_f32_kv16")
	})
	for ci, c := range decode {
		const R = 5
		t.Run(fmt.Sprintf("attention_split_f32_kv16/case%d/h%d/kv%d/d%d", ci, c.heads, c.kvHeads, c.headdim), func(t *testing.T) {
			checkAttentionOn(t, rand.New(rand.NewPCG(75, uint64(ci))), c, sources, func(args []Arg, tokens int) []Launch {
				H, KV, hd := c.heads, c.kvHeads, c.headdim
				part, ml := F32s(make([]float32, tokens*H*R*hd)), F32s(make([]float32, tokens*H*R*2))
				split := append(append([]Arg{part}, args[1:]...), ml, U32(R))
				return []Launch{
					{"attention_split_f32_kv16", tokens * KV * R, split},
					{"attention_merge_f32", tokens * H, []Arg{args[0], part, ml, U32(tokens), U32(H), U32(hd), U32(R)}},
				}
			})
		})
	}
}

// TestRoPEAttentionWarpsHalfCache: rope_attention_warps_f32_kv16 equals
// rope_kv_store_f32_kv16 then attention_warps_f32_kv16 bit for bit (the
// output, the qkv rows and both caches): the Llama-3.2-1B heads, GQA 3
// with an odd head_dim, MHA at 128, a token whose slot is out of range.
func TestRoPEAttentionWarpsHalfCache(t *testing.T) {
	rng := rand.New(rand.NewPCG(76, 77))
	for _, c := range []struct{ heads, kvHeads, headdim int }{{32, 8, 64}, {6, 2, 7}, {4, 4, 128}} {
		t.Run(fmt.Sprintf("h%d/kv%d/d%d", c.heads, c.kvHeads, c.headdim), func(t *testing.T) {
			st := newRopeAttentionStep(rng, c.heads, c.kvHeads, c.headdim)
			kc, vc := halves(st.kc.Floats()), halves(st.vc.Floats())
			st.kc, st.vc = kc, vc
			st.att[2], st.att[3] = kc, vc
			fused := st.fused(Null{}, Null{}, 0, Null{}, 0)
			fused.Kernel += "_kv16"
			unfused := st.unfused()
			unfused[0].Kernel += "_kv16"
			unfused[0].Args[1], unfused[0].Args[2] = kc, vc
			unfused[1].Kernel += "_kv16"
			outs := runSeqs(t, [][]Launch{{fused}, unfused}, st.out, st.qkv, st.kc, st.vc)
			requireSameBytes(t, outs, true, "rope_attention_warps_f32_kv16")
			o := outs[0][0][0].Floats()
			for tk := range st.T {
				require.NotZero(t, o[tk*st.H*st.hd], "token %d's output", tk)
			}
		})
	}
}
