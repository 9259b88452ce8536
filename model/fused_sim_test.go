package model

import (
	"context"
	"strings"
	"testing"

	"github.com/hipgo/hipgo/model/internal/gpu/gpusim"
	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/stretchr/testify/require"
)

// TestSimGPUDecodeStepLaunches counts the forward kernels of one step on
// the simulated GPU. With the fused decode kernels (the default) a batch-1
// decode step is 6 launches per layer (rmsnorm+qkv, rope+kv store,
// attention, o, rmsnorm+gate|up+silu, down) plus embed, the row gather and
// the fused final norm+LM head (3); a 20-token prefill chunk, too wide for
// the norm-fused kernels, is 9 per layer (only rope+kv store fused) plus the
// same 3 (its LM head sees one row). With HIPGO_GPU_FUSED=0: 10 per layer
// plus 4 for both. The first decode step captures its graph (the simulation
// counts its kernels at capture and again at the replay), so the count is
// taken on the replayed steps after it. Greedy tokens are the same either
// way.
func TestSimGPUDecodeStepLaunches(t *testing.T) {
	ctx := context.Background()
	spec := modeltest.Llama3Tiny()
	prompt := testTokens(20, spec.Vocab)
	var tokens [][]uint32
	for _, c := range []struct {
		env                     string
		decodeLayer, decodeRest int
		prefillLayer            int
	}{{"1", 6, 3, 9}, {"0", 10, 4, 10}} {
		rest := c.decodeRest
		t.Run("fused="+c.env, func(t *testing.T) {
			t.Setenv(EnvGPUFused, c.env)
			faults := &gpusim.Faults{}
			m := loadSpec(t, spec, WithDevice(simDevice(t, faults)))
			L := m.Config().NumLayers
			b := m.NewBatch()
			_, err := b.Add(prompt, GenerateOptions{})
			require.NoError(t, err)
			var got []uint32
			var per []int64
			for range 5 { // prefill, a decode step captured, then replayed ones
				n0 := faults.Launches()
				out, err := b.Step(ctx)
				require.NoError(t, err)
				per = append(per, faults.Launches()-n0)
				for _, o := range out {
					got = append(got, o.ID)
				}
			}
			t.Logf("%d layers: forward launches per step %v", L, per)
			require.Equal(t, int64(c.prefillLayer*L+rest), per[0], "prefill")
			for i, n := range per[2:] {
				require.Equalf(t, int64(c.decodeLayer*L+rest), n, "replayed decode step %d", i+2)
			}
			// By name: the plain kernels the fused ones replace run only
			// where fusion does not apply (the 20-token prefill's silu), or
			// everywhere when it is off.
			steps := int64(len(per) + 1) // the captured step's kernels count twice
			if c.env == "1" {
				require.Zero(t, faults.Launched("rope_f32"))
				require.Zero(t, faults.Launched("kv_store_f32"))
				require.Equal(t, int64(L), faults.Launched("silu_mul_f32"), "the prefill's")
				require.Equal(t, steps*int64(L), faults.Launched("rope_kv_store_f32"))
				require.Equal(t, (steps-1)*int64(L), faults.Launched("rmsnorm_matmul_silu_"+strings.ToLower(string(spec.DType))))
			} else {
				for _, k := range []string{"rope_kv_store_f32", "rmsnorm_matmul_f32", "rmsnorm_matmul_bf16", "rmsnorm_matmul_silu_f32", "rmsnorm_matmul_silu_bf16"} {
					require.Zerof(t, faults.Launched(k), "%s with fusion off", k)
				}
				require.Equal(t, steps*int64(L), faults.Launched("silu_mul_f32"))
			}
			tokens = append(tokens, got)
		})
	}
	require.Len(t, tokens, 2)
	require.Equal(t, tokens[0], tokens[1], "fused and unfused kernels give the same tokens")
}
