package model

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/model/internal/gpu/gpusim"
	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/runtime"
)

// TestSimGPULoadsTheSamplerWithTheModel: loading a model on a GPU loads
// the sampler's module with the forward's, so the first request does not
// wait for it (where the driver compiles PTX, about a second); generating
// afterwards loads no module at all.
func TestSimGPULoadsTheSamplerWithTheModel(t *testing.T) {
	var sampler, all atomic.Int64
	dev, err := runtime.Open(context.Background(), runtime.WithDrivers(gpusim.DriverWith(2<<30, &gpusim.Faults{}, func(c *simgpu.Config) {
		c.OnLoadModule = func(image []byte) error {
			all.Add(1)
			if bytes.Contains(image, []byte("gumbel_max_f32")) {
				sampler.Add(1)
			}
			return nil
		}
	})))
	require.NoError(t, err)
	t.Cleanup(func() { _ = dev.Close() })
	spec := modeltest.Llama3Tiny()
	m := loadSpec(t, spec, WithDevice(dev))
	defer func() { require.NoError(t, m.Close()) }()
	require.EqualValues(t, 1, sampler.Load(), "the sampler's module, at load")
	loaded := all.Load()
	for _, temp := range []float32{0, 0.8} {
		_, err := m.GenerateTokens(context.Background(), testTokens(8, spec.Vocab), GenerateOptions{MaxTokens: 4, Temperature: temp, TopP: 1, Seed: 3}, nil)
		require.NoError(t, err)
	}
	require.Equal(t, loaded, all.Load(), "no module loaded by generating")
}
