package model

import (
	"context"
	"testing"

	"github.com/hipgo/hipgo/model/internal/gpu/gpusim"
	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/stretchr/testify/require"
)

// TestSimGPUDecodeStepLaunches counts the forward kernels of one step on
// the simulated GPU. With the fused kernels (the default) a prefill's
// layer is 9 launches (rmsnorm, q|k|v, rope_kv_store_f32, attention, o,
// rmsnorm, gate|up, silu, down) and a batch-1 decode step's 5 (rope and
// the kv store inside rope_attention_warps_f32, each norm inside the
// product after it, norm_matvec_W, with silu in gate|up's), plus embed,
// the final norm and the LM head, and the row gather where the LM head's
// rows are not the step's tokens in order (the prefill's last token: 4; a
// decode step: 3); with HIPGO_GPU_FUSED=0, 10 per layer (rope and the kv
// store apart).
// The first decode step captures its graph (the simulation counts its
// kernels at capture and again at the replay), so the count is taken on
// the replayed steps after it. Greedy tokens are the
// same either way. The lookahead is off, so that each call's launches are
// its own step's (with it a call enqueues the next step's forward;
// TestSimGPULookahead counts those).
func TestSimGPUDecodeStepLaunches(t *testing.T) {
	ctx := context.Background()
	spec := modeltest.Llama3Tiny()
	prompt := testTokens(20, spec.Vocab)
	var tokens [][]uint32
	for _, c := range []struct {
		env                 string
		prefill, decodeStep int // launches a layer
	}{{"1", 9, 5}, {"0", 10, 10}} {
		t.Run("fused="+c.env, func(t *testing.T) {
			t.Setenv(EnvGPUFused, c.env)
			t.Setenv(EnvGPULookahead, "0")
			t.Setenv(EnvGPUGraphs, "1") // every decode step a graph (its capture counts the kernels twice)
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
			require.Equal(t, int64(c.prefill*L+4), per[0], "prefill")
			for i, n := range per[2:] {
				require.Equalf(t, int64(c.decodeStep*L+3), n, "replayed decode step %d", i+2)
			}
			steps := int64(len(per) + 1) // the captured step's kernels count twice
			require.EqualValues(t, 1, faults.Launched("copy_rows_f32"), "only the prefill gathers its last row")
			if c.env == "1" {
				require.Zero(t, faults.Launched("rope_f32"))
				require.Zero(t, faults.Launched("kv_store_f32"))
				require.Equal(t, int64(L), faults.Launched("rope_kv_store_f32"), "the prefill's layers")
				require.Equal(t, (steps-1)*int64(L), faults.Launched("rope_attention_warps_f32"), "the decode steps' layers")
				require.Equal(t, 2*(steps-1)*int64(L), faults.Launched("norm_matvec_f32"), "the decode steps' layer norms")
				require.Equal(t, 2*int64(L)+1+steps-1, faults.Launched("rmsnorm_f32"), "the prefill's norms and the decode steps' final ones")
			} else {
				require.Zero(t, faults.Launched("rope_kv_store_f32"))
				require.Zero(t, faults.Launched("norm_matvec_f32"))
				require.Equal(t, steps*int64(L), faults.Launched("rope_f32"))
				require.Equal(t, steps*int64(L), faults.Launched("kv_store_f32"))
			}
			tokens = append(tokens, got)
		})
	}
	require.Len(t, tokens, 2)
	require.Equal(t, tokens[0], tokens[1], "fused and unfused kernels give the same tokens")
}
