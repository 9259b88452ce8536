package model

import (
	"context"
	"errors"
	"testing"

	"github.com/hipgo/hipgo/model/internal/cpu"
	"github.com/hipgo/hipgo/model/internal/gpu/gpusim"
	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/runtime"
	"github.com/stretchr/testify/require"
)

// TestCPUOnlyModelsRefusedOffTheCPU proves the GPU and MLX backends
// refuse a model whose computations their forward passes lack (Qwen3's q/k
// norms; Gemma 3's and Gemma 2's layout, GeGLU, sliding-window layers and
// soft-capping)
// with a *BackendError naming the architecture and the missing
// computations, before any weights are read, instead of computing another
// model: a GGUF or safetensors checkpoint with DeviceGPU or WithDevice is an
// error, with DeviceAuto it runs on the CPU and CPUReason says why (and the
// device the model opened is closed), and DeviceMLX is an error.
func TestCPUOnlyModelsRefusedOffTheCPU(t *testing.T) {
	gemmaSoftcap := modeltest.Gemma3TinySoftcap()
	for name, tc := range map[string]struct {
		spec    modeltest.Spec
		arch    Architecture
		missing []string
	}{
		"qwen3": {modeltest.Qwen3Tiny(), Qwen3, []string{"the per-head RMSNorm of q and k before RoPE (q_norm, k_norm)"}},
		"gemma3": {gemmaSoftcap, Gemma3, []string{
			"the per-head RMSNorm of q and k before RoPE (q_norm, k_norm)",
			"Gemma's scaled embeddings, (1+w) RMSNorms and post-attention and post-feedforward norms",
			"the GeGLU MLP (gelu_pytorch_tanh)",
			"sliding-window attention layers",
			"final logit soft-capping"}},
		"gemma2": {modeltest.Gemma2Tiny(), Gemma2, []string{
			"Gemma's scaled embeddings, (1+w) RMSNorms and post-attention and post-feedforward norms",
			"the GeGLU MLP (gelu_pytorch_tanh)",
			"sliding-window attention layers",
			"attention logit soft-capping",
			"final logit soft-capping"}},
	} {
		t.Run(name, func(t *testing.T) { requireRefusedOffTheCPU(t, tc.spec, tc.arch, tc.missing) })
	}
}

func requireRefusedOffTheCPU(t *testing.T, spec modeltest.Spec, arch Architecture, missing []string) {
	spec.NoTokenizer = true
	dir := t.TempDir()
	require.NoError(t, modeltest.Write(dir, spec))
	var opened []*runtime.Device
	sim := func(o *options) {
		o.openDevice = func(ctx context.Context) (*runtime.Device, error) {
			dev, err := runtime.Open(ctx, runtime.WithDrivers(gpusim.Driver(2<<30, nil)))
			opened = append(opened, dev)
			return dev, err
		}
	}
	isRefusal := func(t *testing.T, err error, backend string) {
		t.Helper()
		require.ErrorIs(t, err, ErrBackend)
		var be *BackendError
		require.ErrorAs(t, err, &be)
		require.Equal(t, &BackendError{Backend: backend, Architecture: arch, Missing: missing}, be)
		require.Contains(t, err.Error(), string(arch)+" needs "+missing[0])
		require.Contains(t, err.Error(), "the "+backend+" backend does not compute yet")
	}
	for format, path := range map[string]string{"safetensors": dir, "gguf": ggufFromSpec(t, spec, nil, nil)} {
		t.Run(format, func(t *testing.T) {
			opened = nil
			_, err := Load(path, WithoutTokenizer(), WithDeviceMode(DeviceGPU), sim)
			isRefusal(t, err, "gpu")

			m, err := Load(path, WithoutTokenizer(), WithDeviceMode(DeviceAuto), sim)
			require.NoError(t, err)
			require.Equal(t, "cpu", m.Backend())
			isRefusal(t, m.CPUReason(), "gpu")
			_, err = m.GenerateTokens(context.Background(), []uint32{1, 2, 3}, GenerateOptions{MaxTokens: 2}, nil)
			require.NoError(t, err)
			require.NoError(t, m.Close())

			require.Len(t, opened, 2)
			for _, d := range opened {
				_, err := d.Alloc(16)
				require.ErrorIs(t, err, runtime.ErrClosed, "the model closed the device it opened")
			}

			dev, err := runtime.Open(context.Background(), runtime.WithDrivers(gpusim.Driver(2<<30, nil)))
			require.NoError(t, err)
			defer dev.Close()
			_, err = Load(path, WithoutTokenizer(), WithDevice(dev))
			isRefusal(t, err, "gpu")
		})
	}
	t.Run("mlx", func(t *testing.T) {
		// DeviceMLX needs libmlxc before place; place is where it is refused.
		cfg, err := ParseConfig("", mustConfig(t, spec))
		require.NoError(t, err)
		read := false
		src := weightSource{cpu: func() (*weights, error) { read = true; return nil, errors.New("not reached") }}
		_, err = place(cfg, nil, options{}, src, placement{mlx: true}, cpu.Shared(), 1, cfg.MaxPositionEmbeddings)
		isRefusal(t, err, "mlx")
		require.False(t, read, "refused before the weights are read")
	})
}

func mustConfig(t *testing.T, s modeltest.Spec) []byte {
	t.Helper()
	data, err := modeltest.Config(s)
	require.NoError(t, err)
	return data
}
