package modeltest

import (
	"github.com/hipgo/hipgo/model/internal/gpu/gpusim"
	"github.com/hipgo/hipgo/runtime/driver"
)

// SimGPU is a simulated NVIDIA GPU (CUDA sm_90) with memory bytes of device
// memory, on which a model's GPU backend runs: the runtime loads the real
// kernels' metadata and checks every launch against it, while the forward
// and sampler kernels compute in Go with the CPU backend's operations. It
// is for tests above the model of what the GPU backend does (what it
// refuses, how a server handles it), never of the kernels' numerics:
//
//	dev, err := runtime.Open(ctx, runtime.WithDrivers(modeltest.SimGPU(2<<30)))
//	m, err := model.LoadFS(demo.FS(), model.WithDevice(dev))
func SimGPU(memory uint64) driver.Driver { return gpusim.Driver(memory, nil) }
