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

// TestRoPEAttentionWarps: rope_attention_warps_f32 equals
// rope_kv_store_f32 then attention_warps_f32 bit for bit (the output, the
// qkv rows and both caches), from qkv itself and from a q|k|v product's
// partials (parts 1 and 3, with a bias and without), whose reference sum
// is copy_rows_f32 of part 0 and add_f32 of each later part and of the
// bias, in that order: the Llama-3.2-1B heads, GQA 3 with an odd head_dim,
// MHA, groups of 8 at head_dim 256, and a token whose slot is out of range
// (rotated, not stored: its attention reads what the cache held).
func TestRoPEAttentionWarps(t *testing.T) {
	const bs = 16
	rng := rand.New(rand.NewPCG(61, 62))
	shapes := []struct{ heads, kvHeads, headdim int }{{32, 8, 64}, {6, 2, 7}, {4, 4, 128}, {16, 2, 256}}
	for _, c := range shapes {
		for _, parts := range []int{0, 1, 3} {
			for _, withBias := range []bool{false, true} {
				if parts == 0 && withBias {
					continue // the bias is the product's, with its partials
				}
				t.Run(fmt.Sprintf("h%d/kv%d/d%d/parts%d/bias%v", c.heads, c.kvHeads, c.headdim, parts, withBias), func(t *testing.T) {
					H, KV, hd := c.heads, c.kvHeads, c.headdim
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
					// One query token a sequence, at its last position; the
					// fourth sequence's slot is out of range.
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
					scale := float32(1 / math.Sqrt(float64(hd)))
					qkv := F32s(randF32(rng, T*stride, 1))
					kc, vc := F32s(randF32(rng, numSlots*kvD, 1)), F32s(randF32(rng, numSlots*kvD, 1))
					out := F32s(make([]float32, T*H*hd))
					ps, ss, qs, tb, fi := U32s(qPos), U32s(slots), U32s(qSeq), U32s(tables), F32s(inv)
					var ws, bias Arg = Null{}, Null{}
					var sum []Launch // the partials' sum into qkv, as the product's last block adds them
					if parts > 0 {
						wsb := F32s(randF32(rng, parts*T*stride, 1))
						ws = wsb
						ident := make([]uint32, T)
						for i := range ident {
							ident[i] = uint32(i)
						}
						sum = append(sum, Launch{"copy_rows_f32", T, []Arg{qkv, wsb, U32s(ident), U32(T), U32(stride)}})
						for s := 1; s < parts; s++ {
							sum = append(sum, Launch{"add_f32", ceilDiv(T*stride, 256), []Arg{qkv, View{wsb, 4 * s * T * stride}, U32(T * stride)}})
						}
						if withBias {
							b := randF32(rng, stride, 1)
							bias = F32s(b)
							rowsOf := make([]float32, 0, T*stride)
							for range T {
								rowsOf = append(rowsOf, b...)
							}
							sum = append(sum, Launch{"add_f32", ceilDiv(T*stride, 256), []Arg{qkv, F32s(rowsOf), U32(T * stride)}})
						}
					}
					attArgs := []Arg{out, qkv, kc, vc, qs, ps, tb, U32(maxBlocks), U32(bs), U32(T), U32(H), U32(KV), U32(hd), U32(stride), F32(scale)}
					fused := Launch{"rope_attention_warps_f32", T * KV, append(append([]Arg(nil), attArgs...), fi, ss, U32(numSlots), ws, bias, U32(parts))}
					unfused := append(sum,
						Launch{"rope_kv_store_f32", T, []Arg{qkv, kc, vc, ps, fi, ss, U32(T), U32(H), U32(KV), U32(hd), U32(stride), U32(numSlots)}},
						Launch{"attention_warps_f32", T * KV, attArgs})
					outs := runSeqs(t, [][]Launch{{fused}, unfused}, out, qkv, kc, vc)
					requireSameBytes(t, outs, true, "rope_attention_warps_f32")
					// It did something: every token's output is written, and
					// sequence 1's new key is its rotated k.
					o := outs[0][0][0].Floats()
					for tk := range T {
						require.NotZero(t, o[tk*H*hd], "token %d's output", tk)
					}
					q := outs[0][0][1].Floats()
					k := outs[0][0][2].Floats()
					require.Equal(t, q[stride+H*hd:stride+H*hd+kvD], k[int(slots[1])*kvD:int(slots[1]+1)*kvD])
				})
			}
		}
	}
}
