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
