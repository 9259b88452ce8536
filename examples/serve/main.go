// Command serve runs the OpenAI-compatible server (package server) over a
// llama-family model, continuously batched on the GPU when one is usable
// and otherwise on the CPU.
//
//	go run ./examples/serve                          # the embedded demo model on 127.0.0.1:8080
//	go run ./examples/serve -model DIR -device gpu -api-key secret -on-device-loss=cpu
//
// Then open http://127.0.0.1:8080/ for the chat page, or point an OpenAI
// client at http://127.0.0.1:8080/v1. docs/serve.md describes the API, the
// flags and the failure semantics.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hipgo/hipgo/internal/cli"
	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/scheduler"
	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr, nil); err != nil {
		os.Exit(cli.ExitCode("serve", err, os.Stderr))
	}
}

// run is the whole program; ready, when set, receives the listening
// address (tests listen on port 0).
// defaultWatchdog bounds each wait for the GPU: without one a hung kernel
// holds every request of its step, and every later step, until the process
// is killed. A decode or prefill step takes milliseconds; loading a model
// waits seconds at most.
const defaultWatchdog = time.Minute

// watchdogOptions is the device's watchdog: -watchdog when given, else
// HIPGO_GPU_WATCHDOG when set (runtime.Open reads it), else the flag's
// default.
func watchdogOptions(given bool, d time.Duration, env string) []runtime.Option {
	if !given && env != "" {
		return nil
	}
	return []runtime.Option{runtime.WithWatchdog(d)}
}

func run(ctx context.Context, args []string, stderr io.Writer, ready func(addr string)) error {
	fl := flag.NewFlagSet("serve", flag.ContinueOnError)
	fl.SetOutput(stderr)
	dir := fl.String("model", "", "model directory (config.json, model.safetensors, tokenizer.json) or GGUF file; empty: the embedded demo model")
	device := fl.String("device", model.DeviceAuto, "where to run: auto (the GPU when one is usable), cpu or gpu")
	addr := fl.String("addr", "127.0.0.1:8080", "listen address (loopback by default; use :8080 to listen on every interface)")
	apiKey := fl.String("api-key", "", "require Authorization: Bearer KEY on /v1/* (default: none)")
	name := fl.String("name", "", "the model id of the API (default: the directory's name, or hipgo-demo)")
	ctxLen := fl.Int("ctx", 0, "context length per sequence (0: the model's)")
	maxBatch := fl.Int("max-batch", 16, "most sequences stepping together")
	maxQueue := fl.Int("max-queue", 256, "most requests waiting for a batch slot (more get 429)")
	maxFailed := fl.Int("max-failed-steps", 8, "stop admitting after this many consecutive failed steps (-1: never)")
	kvTokens := fl.Int("kv-tokens", 0, "GPU KV-cache pool in tokens (0: the model's default)")
	onLoss := fl.String("on-device-loss", "fail", "after the GPU is lost: fail (503 until restarted) or cpu (serve on the CPU)")
	maxBody := fl.Int64("max-body", 1<<20, "largest request body in bytes")
	watchdog := fl.Duration("watchdog", defaultWatchdog, "fail a GPU step that waits longer than this (a hung kernel) with a watchdog error instead of holding its requests (0: never; without this flag "+runtime.EnvWatchdog+" sets it when set)")
	injectFrac := fl.Float64("inject-step-failures", 0, "testing: fail this fraction of batch steps (0: none)")
	injectSeed := fl.Uint64("inject-seed", 1, "testing: seed of -inject-step-failures")
	oobAt := fl.Uint64("inject-oob-at-step", 0, "testing, GPU only: at this step launch the runtime's out-of-bounds test kernel, a real device fault (0: never)")
	if err := cli.Parse(fl, args); err != nil {
		return err
	}
	if fl.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fl.Args())
	}
	if *watchdog < 0 {
		return fmt.Errorf("-watchdog %v: want 0 or more", *watchdog)
	}
	given := false
	fl.Visit(func(f *flag.Flag) { given = given || f.Name == "watchdog" })
	if *onLoss != "fail" && *onLoss != "cpu" {
		return fmt.Errorf("-on-device-loss %q is not fail or cpu", *onLoss)
	}
	if *injectFrac < 0 || *injectFrac > 1 {
		return fmt.Errorf("-inject-step-failures %g is not in [0, 1]", *injectFrac)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	modelName := *name
	if modelName == "" {
		modelName = "hipgo-demo"
		if *dir != "" {
			modelName = filepath.Base(filepath.Clean(*dir))
		}
	}

	srv := server.New(server.Options{ModelName: modelName, APIKey: *apiKey, MaxBodyBytes: *maxBody})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	log.Info("listening (loading the model)", "addr", ln.Addr().String())
	if ready != nil {
		ready(ln.Addr().String())
	}

	load := func(opts ...model.Option) (*model.Model, error) {
		if *ctxLen > 0 {
			opts = append(opts, model.WithContextLength(*ctxLen))
		}
		if *dir == "" {
			return model.LoadFS(demoModel(), opts...)
		}
		return model.Load(*dir, opts...)
	}
	var opts []model.Option
	var dev *runtime.Device
	if *device != model.DeviceCPU {
		openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		dev, err = runtime.Open(openCtx, watchdogOptions(given, *watchdog, os.Getenv(runtime.EnvWatchdog))...)
		cancel()
		switch {
		case err == nil:
			opts = append(opts, model.WithDevice(dev))
			defer dev.Close()
		case *device == model.DeviceGPU:
			return errors.Join(fmt.Errorf("%w: %w", model.ErrNoGPU, err), hs.Close())
		default:
			log.Info("running on the CPU", "why", err.Error())
		}
	}
	if *kvTokens > 0 {
		opts = append(opts, model.WithKVCacheTokens(*kvTokens))
	}
	faults, err := injector(*injectFrac, *injectSeed, *oobAt, dev, log)
	if err != nil {
		return errors.Join(err, hs.Close())
	}
	if faults != nil {
		opts = append(opts, model.WithStepFaults(faults))
	}
	start := time.Now()
	m, err := load(opts...)
	if err != nil {
		return errors.Join(err, hs.Close())
	}
	defer m.Close()
	log.Info("model loaded", "model", modelName, "backend", m.Backend(), "seconds", time.Since(start).Seconds(), "context", m.ContextLength())

	cfg := scheduler.Config{MaxBatch: *maxBatch, MaxQueue: *maxQueue, MaxFailedSteps: *maxFailed, OnStep: srv.OnStep}
	if *onLoss == "cpu" {
		cfg.Fallback = func() (*model.Model, error) {
			log.Warn("the device is lost: serving on the CPU from now on")
			return load(model.WithDeviceMode(model.DeviceCPU))
		}
	}
	sch := scheduler.New(m, cfg)
	srv.SetScheduler(sch)
	log.Info("ready")

	select {
	case err = <-served:
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sch.Close() // ends running streams, so Shutdown does not wait for them
	err = errors.Join(err, hs.Shutdown(shutdownCtx))
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// injector is the WithStepFaults hook of the testing flags: a seeded
// fraction of steps fail with a launch rejection, and at step oobAt the
// runtime's out-of-bounds test kernel runs on the model's device, whose
// sticky fault then fails that step and loses the device.
func injector(frac float64, seed, oobAt uint64, dev *runtime.Device, log *slog.Logger) (func(uint64) error, error) {
	if frac == 0 && oobAt == 0 {
		return nil, nil
	}
	var oob func() error
	if oobAt > 0 {
		if dev == nil {
			return nil, errors.New("-inject-oob-at-step needs a GPU")
		}
		mod, err := dev.LoadModule("testkernels")
		if err != nil {
			return nil, err
		}
		k, err := mod.Kernel("oob_write_u32")
		if err != nil {
			return nil, err
		}
		buf, err := dev.Alloc(4)
		if err != nil {
			return nil, err
		}
		oob = func() error {
			st, err := dev.NewStream()
			if err != nil {
				return err
			}
			one := runtime.Dim3{X: 1, Y: 1, Z: 1}
			return st.Launch(k, runtime.LaunchConfig{Grid: one, Block: one}, buf, uint32(1), uint64(1)<<40)
		}
	}
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func(step uint64) error {
		if step == oobAt && oob != nil {
			log.Warn("launching the out-of-bounds test kernel", "step", step)
			if err := oob(); err != nil {
				return err
			}
			return nil // the step itself meets the sticky fault
		}
		mu.Lock()
		fail := frac > 0 && rng.Float64() < frac
		mu.Unlock()
		if fail {
			return &runtime.LaunchError{Kernel: "injected", Reason: fmt.Sprintf("-inject-step-failures: step %d", step)}
		}
		return nil
	}, nil
}
