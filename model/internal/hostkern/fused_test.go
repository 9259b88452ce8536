package hostkern

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// The fused kernel rope_kv_store_f32 promises the bytes of the unfused
// launches it replaces. Its test runs the fused launch and the unfused
// sequence on every source, on copies of the same buffers, and requires
// the same bytes from both ways on each source and from both sources (the
// unfused kernels' own tests check them against the CPU ops).

// runSeqs runs each sequence of launches on every source (each sequence on
// its own copies of the buffers) and returns outs[source][seq][j], the copy
// of want[j] after that sequence.
func runSeqs(t *testing.T, seqs [][]Launch, want ...*Buf) [][][]*Buf {
	t.Helper()
	outs := make([][][]*Buf, len(sources))
	for i, s := range sources {
		for _, seq := range seqs {
			bufs := map[*Buf]*Buf{}
			var ls []Launch
			for _, l := range seq {
				ls = append(ls, cloneLaunch(l, bufs))
			}
			require.NoError(t, s.driver(t).Run(context.Background(), ls...), s.name)
			var got []*Buf
			for _, w := range want {
				c, ok := bufs[w]
				require.True(t, ok, "a wanted buffer is an argument of every sequence")
				got = append(got, c)
			}
			outs[i] = append(outs[i], got)
		}
	}
	return outs
}

// requireSameBytes: on every source, every sequence left each wanted buffer
// as the first sequence did; with across, every source as the first source.
func requireSameBytes(t *testing.T, outs [][][]*Buf, across bool, what string) {
	t.Helper()
	for i, s := range sources {
		for q := 1; q < len(outs[i]); q++ {
			for j := range outs[i][q] {
				require.Truef(t, bytes.Equal(outs[i][0][j].Data, outs[i][q][j].Data), "%s: %s: fused and unfused differ (buffer %d)", s.name, what, j)
			}
		}
		if across && i > 0 {
			for j := range outs[i][0] {
				require.Truef(t, bytes.Equal(outs[0][0][j].Data, outs[i][0][j].Data), "%s: %s wrote other bytes than %s (buffer %d)", what, s.name, sources[0].name, j)
			}
		}
	}
}

// TestRoPEKVStore: rope_kv_store_f32 equals rope_f32 of the q and k heads
// then kv_store_f32 bit for bit (the qkv rows and both caches): GQA and
// MHA, an odd head_dim (its last element is stored unrotated), rows with a
// gap past v, and out-of-range slots (rotated, not stored).
func TestRoPEKVStore(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for _, c := range []struct{ heads, kvHeads, headdim, extra int }{{4, 2, 64, 0}, {3, 1, 10, 5}, {6, 2, 7, 1}, {2, 2, 128, 3}, {32, 8, 64, 0}} {
		t.Run(fmt.Sprintf("h%d/kv%d/d%d", c.heads, c.kvHeads, c.headdim), func(t *testing.T) {
			half, kvD := c.headdim/2, c.kvHeads*c.headdim
			inv := make([]float32, max(half, 1))
			for i := range half {
				inv[i] = float32(1 / math.Pow(500000, float64(2*i)/float64(c.headdim)))
			}
			pos := []uint32{0, 1, 17, 1000, 131071, 77777}
			const numSlots = 40
			slots := []uint32{3, 39, 40, 17, 1 << 30, 0}
			T := len(pos)
			stride := (c.heads+2*c.kvHeads)*c.headdim + c.extra
			qkv := F32s(randF32(rng, T*stride, 1))
			kc, vc := F32s(randF32(rng, numSlots*kvD, 1)), F32s(randF32(rng, numSlots*kvD, 1))
			kOff, vOff := c.heads*c.headdim, (c.heads+c.kvHeads)*c.headdim
			fused := Launch{"rope_kv_store_f32", T, []Arg{qkv, kc, vc, U32s(pos), F32s(inv), U32s(slots), U32(T), U32(c.heads), U32(c.kvHeads), U32(c.headdim), U32(stride), U32(numSlots)}}
			ps, ss := U32s(pos), U32s(slots)
			unfused := []Launch{
				{"rope_f32", T, []Arg{qkv, ps, F32s(inv), U32(T), U32(c.heads + c.kvHeads), U32(c.headdim), U32(stride)}},
				{"kv_store_f32", T, []Arg{kc, vc, qkv, ss, U32(T), U32(kvD), U32(kOff), U32(vOff), U32(stride), U32(numSlots)}},
			}
			outs := runSeqs(t, [][]Launch{{fused}, unfused}, qkv, kc, vc)
			requireSameBytes(t, outs, true, "rope_kv_store_f32")
			// It did something: slot 3's k row is token 0's rotated k.
			q := outs[0][0][0].Floats()
			require.Equal(t, q[kOff:kOff+kvD], outs[0][0][1].Floats()[3*kvD:4*kvD])
		})
	}
}

// ropeAttentionStep is a decode step's inputs for rope_attention_warps_f32
// (one query token a sequence, at its last position, over block tables of
// 16-key blocks in shuffled order; the fourth sequence's slot is out of
// range): attention_warps_f32's arguments (att), then inv_freq, slots and
// num_slots (tail).
type ropeAttentionStep struct {
	T, H, KV, hd, stride, numSlots int
	out, qkv, kc, vc               *Buf
	slots                          []uint32
	att, tail                      []Arg
	pos, inv                       *Buf
}

func newRopeAttentionStep(rng *rand.Rand, H, KV, hd int) *ropeAttentionStep {
	const bs = 16
	half, kvD := hd/2, KV*hd
	stride := (H + 2*KV) * hd
	inv := make([]float32, max(half, 1))
	for i := range half {
		inv[i] = float32(1 / math.Pow(500000, float64(2*i)/float64(hd)))
	}
	ctx := []int{1, 17, 80, 33, 16}
	nseq, maxBlocks := len(ctx), 6
	perm := rng.Perm(nseq * maxBlocks)
	tables := make([]uint32, nseq*maxBlocks)
	for i := range tables {
		tables[i] = uint32(perm[i])
	}
	numSlots := nseq * maxBlocks * bs
	var qSeq, qPos, slots []uint32
	for s, n := range ctx {
		p := n - 1
		qSeq, qPos = append(qSeq, uint32(s)), append(qPos, uint32(p))
		slot := tables[s*maxBlocks+p/bs]*bs + uint32(p%bs)
		if s == 3 {
			slot = uint32(numSlots)
		}
		slots = append(slots, slot)
	}
	T := len(qSeq)
	st := &ropeAttentionStep{T: T, H: H, KV: KV, hd: hd, stride: stride, numSlots: numSlots, slots: slots,
		qkv: F32s(randF32(rng, T*stride, 1)), out: F32s(make([]float32, T*H*hd)),
		kc: F32s(randF32(rng, numSlots*kvD, 1)), vc: F32s(randF32(rng, numSlots*kvD, 1)),
		pos: U32s(qPos), inv: F32s(inv)}
	scale := float32(1 / math.Sqrt(float64(hd)))
	st.att = []Arg{st.out, st.qkv, st.kc, st.vc, U32s(qSeq), st.pos, U32s(tables), U32(maxBlocks), U32(bs), U32(T), U32(H), U32(KV), U32(hd), U32(stride), F32(scale)}
	st.tail = []Arg{st.inv, U32s(slots), U32(numSlots)}
	return st
}

// fused is the rope_attention_warps_f32 launch with the partials ws, bias
// and parts, and o's image xs in split's type (Null{} and 0: out).
func (st *ropeAttentionStep) fused(ws, bias Arg, parts int, xs Arg, split uint32) Launch {
	args := append(append(append([]Arg(nil), st.att...), st.tail...), ws, bias, U32(parts), xs, U32(split))
	return Launch{"rope_attention_warps_f32", st.T * st.KV, args}
}

// unfused is rope_kv_store_f32 then attention_warps_f32.
func (st *ropeAttentionStep) unfused() []Launch {
	return []Launch{
		{"rope_kv_store_f32", st.T, []Arg{st.qkv, st.kc, st.vc, st.pos, st.inv, U32s(st.slots), U32(st.T), U32(st.H), U32(st.KV), U32(st.hd), U32(st.stride), U32(st.numSlots)}},
		{"attention_warps_f32", st.T * st.KV, st.att},
	}
}

// TestRoPEAttentionWarps: rope_attention_warps_f32 equals
// rope_kv_store_f32 then attention_warps_f32 bit for bit (the output, the
// qkv rows and both caches), from qkv itself and from a q|k|v product's
// partials (parts 1 and 3, with a bias and without), whose reference sum
// is copy_rows_f32 of part 0 and add_f32 of each later part and of the
// bias, in that order: the Llama-3.2-1B heads, GQA 3 with an odd head_dim,
// MHA, groups of 8 at head_dim 256, and a token whose slot is out of range
// (rotated, not stored: its attention reads what the cache held).
func TestRoPEAttentionWarps(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	shapes := []struct{ heads, kvHeads, headdim int }{{32, 8, 64}, {6, 2, 7}, {4, 4, 128}, {16, 2, 256}}
	for _, c := range shapes {
		for _, parts := range []int{0, 1, 3} {
			for _, withBias := range []bool{false, true} {
				if parts == 0 && withBias {
					continue // the bias is the product's, with its partials
				}
				t.Run(fmt.Sprintf("h%d/kv%d/d%d/parts%d/bias%v", c.heads, c.kvHeads, c.headdim, parts, withBias), func(t *testing.T) {
					st := newRopeAttentionStep(rng, c.heads, c.kvHeads, c.headdim)
					T, stride := st.T, st.stride
					var ws, bias Arg = Null{}, Null{}
					var sum []Launch // the partials' sum into qkv, as the product's last block adds them
					if parts > 0 {
						wsb := F32s(randF32(rng, parts*T*stride, 1))
						ws = wsb
						ident := make([]uint32, T)
						for i := range ident {
							ident[i] = uint32(i)
						}
						sum = append(sum, Launch{"copy_rows_f32", T, []Arg{st.qkv, wsb, U32s(ident), U32(T), U32(stride)}})
						for s := 1; s < parts; s++ {
							sum = append(sum, Launch{"add_f32", ceilDiv(T*stride, 256), []Arg{st.qkv, View{wsb, 4 * s * T * stride}, U32(T * stride)}})
						}
						if withBias {
							b := randF32(rng, stride, 1)
							bias = F32s(b)
							rowsOf := make([]float32, 0, T*stride)
							for range T {
								rowsOf = append(rowsOf, b...)
							}
							sum = append(sum, Launch{"add_f32", ceilDiv(T*stride, 256), []Arg{st.qkv, F32s(rowsOf), U32(T * stride)}})
						}
					}
					outs := runSeqs(t, [][]Launch{{st.fused(ws, bias, parts, Null{}, 0)}, append(sum, st.unfused()...)}, st.out, st.qkv, st.kc, st.vc)
					requireSameBytes(t, outs, true, "rope_attention_warps_f32")
					// It did something: every token's output is written, and
					// sequence 1's new key is its rotated k.
					H, hd, kvD := st.H, st.hd, st.KV*st.hd
					o := outs[0][0][0].Floats()
					for tk := range T {
						require.NotZero(t, o[tk*H*hd], "token %d's output", tk)
					}
					q := outs[0][0][1].Floats()
					k := outs[0][0][2].Floats()
					require.Equal(t, q[stride+H*hd:stride+H*hd+kvD], k[int(st.slots[1])*kvD:int(st.slots[1]+1)*kvD])
				})
			}
		}
	}
}

// TestRoPEAttentionWarpsImage: with a split code rope_attention_warps_f32
// writes, instead of its output, o's image: byte for byte the one
// wg_split_x_W makes of the output written without it (rows 5 to 15 and
// the columns past heads * head_dim to the stage's end zero, over an image
// that held 0xff bytes), and the same qkv rows and caches; out is left as
// it was. Shapes: the Llama-3.2-1B heads in bf16 and f16, MHA at 128, 8
// heads a kv head at 256, and 3 heads of 8 (24 of a 64-wide stage). With a
// head_dim not a multiple of 8 it writes nothing.
func TestRoPEAttentionWarpsImage(t *testing.T) {
	rng := rand.New(rand.NewPCG(63, 64))
	for _, c := range []struct {
		heads, kvHeads, headdim int
		split                   uint32
		kernel                  string
	}{{32, 8, 64, 3, "wg_split_x_bf16"}, {32, 8, 64, 4, "wg_split_x_f16"}, {4, 4, 128, 3, "wg_split_x_bf16"}, {16, 2, 256, 4, "wg_split_x_f16"}, {3, 1, 8, 3, "wg_split_x_bf16"}} {
		t.Run(fmt.Sprintf("h%d/kv%d/d%d/%s", c.heads, c.kvHeads, c.headdim, c.kernel), func(t *testing.T) {
			st := newRopeAttentionStep(rng, c.heads, c.kvHeads, c.headdim)
			in := st.H * st.hd
			img, imgRef := filled(wgImageBytes(st.T, in), 0xff), filled(wgImageBytes(st.T, in), 0xff)
			fused := st.fused(Null{}, Null{}, 0, img, c.split)
			ref := append(st.unfused(), Launch{c.kernel, wgSplitGrid(st.T, in), []Arg{imgRef, st.out, U32(st.T), U32(in)}})
			got := runSeqs(t, [][]Launch{{fused}}, img, st.qkv, st.kc, st.vc, st.out)
			want := runSeqs(t, [][]Launch{ref}, imgRef, st.qkv, st.kc, st.vc)
			for i, s := range sources {
				g, w := got[i][0], want[i][0]
				require.Equal(t, w[0].Data, g[0].Data, "%s: o's image", s.name)
				for j := 1; j < 4; j++ {
					require.Equal(t, w[j].Data, g[j].Data, "%s: buffer %d as unfused", s.name, j)
				}
				require.Equal(t, st.out.Data, g[4].Data, "%s: out is not written", s.name)
				require.NotEqual(t, imgRef.Data, g[0].Data, "%s: the image is written", s.name)
			}
			require.Equal(t, want[0][0][0].Data, want[1][0][0].Data, "both sources' images")
		})
	}
	t.Run("headdim 7", func(t *testing.T) {
		st := newRopeAttentionStep(rng, 6, 2, 7)
		img := filled(wgImageBytes(st.T, 42), 0xff)
		outs := runSeqs(t, [][]Launch{{st.fused(Null{}, Null{}, 0, img, 3)}}, img, st.qkv)
		for i := range outs {
			require.Equal(t, filled(wgImageBytes(st.T, 42), 0xff).Data, outs[i][0][0].Data, "%s: the image", sources[i].name)
			require.Equal(t, st.qkv.Data, outs[i][0][1].Data, "%s: qkv", sources[i].name)
		}
	})
}

// TestNormMatvec: norm_matvec_W writes, bit for bit, what rmsnorm_W and
// then matmul_W write for one row (and, with silu, silu_mul_f32 after
// them), on both sources: rows of in that take matvec_tile's laps of 8
// loads, of 4, single loads and the scalar path (in % 8 != 0), outputs that
// leave a block's groups idle, a bias, and in past FW_NV_MAX_IN, where it
// writes nothing.
func TestNormMatvec(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, dtype := range []string{"f32", "bf16", "f16"} {
		for i, in := range []int{2048, 4096, 576, 1000, 7, 2056, 64} {
			n, silu, withBias := []int{19, 8, 24, 13, 5, 9, 1}[i], i%2 == 1, i%3 == 0
			t.Run(fmt.Sprintf("%s/in%d/n%d/silu=%v/bias=%v", dtype, in, n, silu, withBias), func(t *testing.T) {
				N := n
				if silu {
					N = 2 * n
				}
				x := F32s(randF32(rng, in, 2))
				w := makeWeights(rng, dtype, N*in, 0.05)
				nw := makeWeights(rng, dtype, in, 1)
				var bias Arg = Null{}
				if withBias {
					bias = F32s(randF32(rng, N, 1))
				}
				const eps = float32(1e-5)
				y, xb, gu := F32s(make([]float32, n)), F32s(make([]float32, in)), F32s(make([]float32, N))
				fused := []Launch{{"norm_matvec_" + dtype, (n + 7) / 8, []Arg{y, x, w.buf, bias, nw.buf, U32(in), U32(n), F32(eps), U32(b2u(silu))}}}
				unfused := []Launch{{"rmsnorm_" + dtype, 1, []Arg{xb, x, nw.buf, U32(1), U32(in), F32(eps)}}}
				if silu {
					unfused = append(unfused, Launch{"matmul_" + dtype, (N + 7) / 8, []Arg{gu, xb, w.buf, bias, U32(1), U32(in), U32(N), U32(0)}},
						Launch{"silu_mul_f32", (n + 255) / 256, []Arg{y, gu, U32(1), U32(n)}})
				} else {
					unfused = append(unfused, Launch{"matmul_" + dtype, (N + 7) / 8, []Arg{y, xb, w.buf, bias, U32(1), U32(in), U32(N), U32(0)}})
				}
				outs := runSeqs(t, [][]Launch{fused, unfused}, y)
				requireSameBytes(t, outs, true, "norm_matvec_"+dtype)
				for _, v := range outs[0][0][0].Floats() {
					require.False(t, math.IsNaN(float64(v)) || v == 0, "every output written")
				}
			})
		}
		t.Run(dtype+"/in4100", func(t *testing.T) {
			const in, n = 4100, 3
			sentinel := []float32{-7, -7, -7}
			y := F32s(sentinel)
			w, nw := makeWeights(rng, dtype, n*in, 0.05), makeWeights(rng, dtype, in, 1)
			outs := runAll(t, Launch{"norm_matvec_" + dtype, 1, []Arg{y, F32s(randF32(rng, in, 1)), w.buf, Null{}, nw.buf, U32(in), U32(n), F32(1e-5), U32(0)}}, true, y)
			each(t, outs, func(t *testing.T, b []*Buf) {
				require.Equal(t, sentinel, b[0].Floats(), "past FW_NV_MAX_IN nothing is written")
			})
		})
	}
}

func b2u(b bool) int {
	if b {
		return 1
	}
	return 0
}
