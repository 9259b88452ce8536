package model

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hipgo/hipgo/mlx"
	"github.com/hipgo/hipgo/model/internal/gpu"
	"github.com/hipgo/hipgo/runtime"
)

// Device modes for WithDeviceMode.
const (
	// DeviceAuto runs on the GPU when runtime.Open finds a usable one (and
	// the model loads on it), else on the CPU; Model.CPUReason says why.
	DeviceAuto = "auto"
	// DeviceCPU runs in pure Go on the CPU (the default).
	DeviceCPU = "cpu"
	// DeviceGPU runs on the GPU runtime.Open finds; none is an error naming why.
	DeviceGPU = "gpu"
	// DeviceMLX runs the forward pass with MLX through libmlxc (package
	// mlx): on MLX's GPU where it has one (Metal), else its CPU. Without a
	// loadable libmlxc Load fails with ErrNoMLX.
	DeviceMLX = "mlx"
)

// ErrNoGPU: DeviceGPU was asked for and no usable GPU was found; the error
// wraps the reason (runtime's *OpenError lists every backend tried).
var ErrNoGPU = errors.New("model: device gpu asked for")

// openTimeout bounds runtime.Open in the device modes: vendor initialisation
// can hang on a broken install.
const openTimeout = 30 * time.Second

// WithDevice runs the model on dev through hipgo's forward kernels. The
// caller owns dev and closes it after the model.
func WithDevice(dev *runtime.Device) Option { return func(o *options) { o.dev = dev } }

// WithDeviceMode picks the device by name: DeviceAuto, DeviceCPU or
// DeviceGPU or DeviceMLX. In the GPU modes the model opens the device (runtime.Open) and
// closes it in Model.Close. Another name is an ErrOptions error from Load.
func WithDeviceMode(mode string) Option { return func(o *options) { o.mode = mode } }

// WithKVCacheTokens sizes the GPU backend's KV-cache pool, in tokens over
// all sequences (default: four contexts, at most 65536 tokens, never less
// than one context). The pool is handed out in blocks of KVBlockTokens: a
// sequence of n tokens holds ceil(n / KVBlockTokens) of them, so B
// sequences of n tokens need B * ceil(n / KVBlockTokens) * KVBlockTokens.
func WithKVCacheTokens(n int) Option { return func(o *options) { o.kvTokens = n } }

// KVCacheType is the element type of the KV cache (WithKVCacheType).
type KVCacheType string

const (
	// KVCacheAuto is the backend's default: f32 on every backend.
	KVCacheAuto KVCacheType = ""
	// KVCacheF32 keeps every cached key and value in float32.
	KVCacheF32 KVCacheType = "f32"
	// KVCacheF16 keeps the GPU backend's cache in IEEE half precision: each
	// key and value rounded to nearest even when stored, half the bytes of
	// f32, so twice the tokens fit a pool and long-context decode reads
	// half as much. The attention reads the f16 values exactly and sums in
	// float32. The CPU and MLX backends keep f32 and refuse it.
	KVCacheF16 KVCacheType = "f16"
)

// WithKVCacheType sets the KV cache's element type (default KVCacheAuto).
// Another type, or KVCacheF16 on the CPU or MLX, is an ErrOptions error
// from Load.
func WithKVCacheType(t KVCacheType) Option { return func(o *options) { o.kvType = t } }

// checkKVCacheType: t is a type Load knows.
func checkKVCacheType(t KVCacheType) error {
	switch t {
	case KVCacheAuto, KVCacheF32, KVCacheF16:
		return nil
	}
	return fmt.Errorf("model: KV cache type %q: want f32 or f16: %w", t, ErrOptions)
}

// KVBlockTokens is the tokens per block of the GPU backend's KV-cache pool.
const KVBlockTokens = gpu.BlockSize

// placement is where build puts the model: dev nil means the CPU, with
// cpuReason saying why when a GPU was asked for by auto.
type placement struct {
	dev       *runtime.Device
	owned     bool // the model opened dev and closes it
	cpuReason error
	mlx       bool // DeviceMLX
}

func choose(o options) (placement, error) {
	if o.dev != nil {
		if o.mode != "" && o.mode != DeviceGPU && o.mode != DeviceAuto {
			return placement{}, fmt.Errorf("model: WithDevice with device mode %q: %w", o.mode, ErrOptions)
		}
		return placement{dev: o.dev}, nil
	}
	switch o.mode {
	case "", DeviceCPU:
		return placement{}, nil
	case DeviceMLX:
		// Fail before the weights load when libmlxc is missing.
		if err := mlx.Load(); err != nil {
			return placement{}, fmt.Errorf("%w: %w", ErrNoMLX, err)
		}
		return placement{mlx: true}, nil
	case DeviceAuto, DeviceGPU:
	default:
		return placement{}, fmt.Errorf("model: device %q is not auto, cpu, gpu or mlx: %w", o.mode, ErrOptions)
	}
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	open := o.openDevice
	if open == nil {
		open = func(ctx context.Context) (*runtime.Device, error) { return runtime.Open(ctx) }
	}
	dev, err := open(ctx)
	if err != nil {
		if o.mode == DeviceGPU {
			return placement{}, fmt.Errorf("%w: %w", ErrNoGPU, err)
		}
		return placement{cpuReason: err}, nil
	}
	return placement{dev: dev, owned: true}, nil
}

// kvTokens is the pool size for a context of ctxLen.
func kvTokens(o options, ctxLen int) (int, error) {
	if o.kvTokens < 0 {
		return 0, fmt.Errorf("model: KV cache of %d tokens: %w", o.kvTokens, ErrOptions)
	}
	if o.kvTokens > 0 {
		return o.kvTokens, nil
	}
	return max(ctxLen, min(4*ctxLen, 1<<16)), nil
}

// buildGPU loads the weights in their file dtype and uploads them to dev.
func buildGPU(cfg *Config, load func() (*gpu.Weights, error), o options, dev *runtime.Device, ctxLen int) (*gpuBackend, int64, error) {
	n, err := kvTokens(o, ctxLen)
	if err != nil {
		return nil, 0, err
	}
	opts := gpu.Options{KVTokens: n, StepTokens: o.gpuStepTokens, HalfKVCache: o.kvType == KVCacheF16}
	for _, sw := range []struct {
		env string
		off *bool
	}{
		{EnvGPUEarlyStart, &opts.NoEarlyStart}, {EnvGPUFused, &opts.NoFusedKernels},
		{EnvGPUWarpgroupMMA, &opts.NoWarpgroupMMA}, {EnvGPULookahead, &opts.NoLookahead},
		{EnvGPUFoldAdds, &opts.NoFoldedAdds},
	} {
		if *sw.off, err = envOff(sw.env); err != nil {
			return nil, 0, err // before the weights are read
		}
	}
	switch v := os.Getenv(EnvGPUGraphs); v {
	case "", "auto":
		opts.GraphsByTiming = true
	case "1":
	case "0":
		opts.NoGraphs = true
	default:
		return nil, 0, fmt.Errorf("model: %s=%q: want 0 (off), 1 (on) or auto (by timing): %w", EnvGPUGraphs, v, ErrOptions)
	}
	w, err := load()
	if err != nil {
		return nil, 0, err
	}
	b, err := gpu.New(context.Background(), dev, cfg.gpuConfig(), w, opts)
	if err != nil {
		return nil, 0, fmt.Errorf("model: on %s: %w", dev, err)
	}
	return &gpuBackend{b: b, label: "gpu " + dev.String()}, rawSize(w), nil
}

// EnvGPUGraphs sets how the GPU backend launches decode steps: "auto" or
// unset times the first decode steps of each batch size both ways, one
// after another, and keeps the faster way for that batch size; "1"
// replays a captured graph of each step's kernels, and "0" launches them
// one by one. Graphs pay for small models, whose kernels run faster than
// the host launches them, and can cost a little for larger ones; "auto"
// finds which for each model and batch size.
const EnvGPUGraphs = "HIPGO_GPU_GRAPHS"

// EnvGPUEarlyStart turns early start off when "0": each forward kernel is
// then scheduled only once the one before it has finished (programmatic
// dependent launch, CUDA compute capability 9.0 and later, is what early
// start uses; elsewhere launches are plain anyway); "1" or unset: on.
const EnvGPUEarlyStart = "HIPGO_GPU_EARLY_START"

// EnvGPUFused turns the fused kernels off when "0": the GPU backend then
// launches rope_f32 and kv_store_f32 where rope_kv_store_f32 does both,
// silu_mul_f32 and wg_split_x_W where wg_silu_split_x_W or the gate|up
// product makes down's image, and wg_split_x_W where the decode attention
// makes o's (the same bytes, so it exists to measure them); "1" or unset:
// on.
const EnvGPUFused = "HIPGO_GPU_FUSED"

// EnvGPUWarpgroupMMA turns the warpgroup-MMA products off when "0": on a
// Hopper GPU (the sm_90a kernels) the GPU backend then keeps the mma.sync
// products where matmul_wgs_W would run (batched decode; the sums differ in
// rounding only), to measure them; "1" or unset: on.
const EnvGPUWarpgroupMMA = "HIPGO_GPU_WGMMA"

// EnvGPULookahead turns the GPU backend's lookahead off when "0": each
// decode step then waits for its tokens before the next step's forward is
// enqueued, instead of enqueueing it first on the guess that the same
// sequences continue (the same tokens either way; see the gpu package's
// lookahead.go); "1" or unset: on.
const EnvGPULookahead = "HIPGO_GPU_LOOKAHEAD"

// EnvGPUFoldAdds turns the folded adds off when "0": in batched decode on
// a Hopper GPU the o and down products, split over in, then add their
// partial sums in their own last block instead of leaving them to the
// norm after them (rmsnorm_fused_W; the same bytes), to measure it; "1"
// or unset: on.
const EnvGPUFoldAdds = "HIPGO_GPU_FOLD_ADDS"

// envOff reads an on/off switch: "0" is off, "1" or unset on.
func envOff(name string) (bool, error) {
	switch v := os.Getenv(name); v {
	case "", "1":
		return false, nil
	case "0":
		return true, nil
	default:
		return false, fmt.Errorf("model: %s=%q: want 0 (off) or 1 (on): %w", name, v, ErrOptions)
	}
}
