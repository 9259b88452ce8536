package runtime

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hipgo/hipgo/runtime/driver"
)

// Environment variables read by Open.
const (
	// EnvBackend picks one backend ("rocm", "cuda", "metal") instead of
	// trying each in order.
	EnvBackend = "HIPGO_BACKEND"
	// EnvWatchdog is a Go duration ("300ms", "10s") bounding each Wait; empty
	// or "0" is off. An invalid value is an error from Open, not a default.
	EnvWatchdog = "HIPGO_GPU_WATCHDOG"
	// EnvWaitSpin is a Go duration ("2ms", "0") for how long a Wait polls
	// its event before it sleeps (see WithWaitSpin); empty is the device's
	// default (DefaultWaitSpin, or HostWaitSpin where the device runs on the
	// host). An invalid or negative value is an error from Open.
	EnvWaitSpin = "HIPGO_GPU_WAIT_SPIN"
	// EnvCUDAJIT "1" makes LoadModule hand a CUDA GPU the PTX even where a
	// cubin is shipped for it, so the driver compiles the kernels (see
	// LoadModule); empty or "0" loads the cubin. Any other value is an error
	// from Open.
	EnvCUDAJIT = "HIPGO_CUDA_JIT"
)

// DefaultWaitSpin is how long a Wait polls its event before it sleeps on a
// GPU, unless WithWaitSpin or HIPGO_GPU_WAIT_SPIN says otherwise: longer than a
// decode step of a model of up to about 8B parameters in 16 bits on an H200
// (the 1B shape's batch-1 step waits about 1.1 ms). A Wait that sleeps is
// woken by the host callback or the monitor, which cost 150-250 µs a step
// there (720-775 against 863-888 tokens/s at batch 1); polling
// costs one CPU thread while it lasts (Gosched between queries, so other
// goroutines still run).
const DefaultWaitSpin = 10 * time.Millisecond

// HostWaitSpin is the default wait spin of a device whose kernels run on
// the host's cores (driver.Info.RunsOnHost: the simulated backend), where a
// polling waiter competes with the kernels for the CPU: long enough for a
// short step, as every device's spin was before 2026-12-01.
const HostWaitSpin = 100 * time.Microsecond

type config struct {
	backend     driver.Kind
	ordinal     int
	watchdog    time.Duration
	watchdogSet bool
	waitSpin    time.Duration
	waitSpinSet bool
	noCallbacks bool
	cudaJIT     bool
	drivers     []driver.Driver
}

// Option configures Open.
type Option func(*config)

// WithBackend opens only the named backend (overrides HIPGO_BACKEND).
func WithBackend(k driver.Kind) Option { return func(c *config) { c.backend = k } }

// WithOrdinal opens the device with this index within its backend.
func WithOrdinal(i int) Option { return func(c *config) { c.ordinal = i } }

// WithWatchdog bounds each Wait (overrides HIPGO_GPU_WATCHDOG); 0 is off.
func WithWatchdog(d time.Duration) Option {
	return func(c *config) { c.watchdog, c.watchdogSet = d, true }
}

// WithWaitSpin sets how long each Wait polls its event itself, yielding the
// processor between queries, before it sleeps until a host callback or the
// monitor settles the event (overrides HIPGO_GPU_WAIT_SPIN). 0 never polls:
// the least CPU, at a wake-up's latency per Wait. The poll never outlasts
// the watchdog or the Wait's context.
func WithWaitSpin(d time.Duration) Option {
	return func(c *config) { c.waitSpin, c.waitSpinSet = d, true }
}

// WithoutCallbacks leaves completion to the monitor alone (no host callback
// per event). For measurement and tests.
func WithoutCallbacks() Option { return func(c *config) { c.noCallbacks = true } }

// WithDrivers replaces the built-in backends, in order: for tests and for
// backends outside this module.
func WithDrivers(ds ...driver.Driver) Option { return func(c *config) { c.drivers = ds } }

// ParseWatchdog parses a HIPGO_GPU_WATCHDOG value.
func ParseWatchdog(s string) (time.Duration, error) {
	return parseEnvDuration(EnvWatchdog, s, 0, "500ms or 10s")
}

// ParseWaitSpin parses a HIPGO_GPU_WAIT_SPIN value: empty is
// DefaultWaitSpin (Open then takes the device's default instead: HostWaitSpin
// where the device runs on the host).
func ParseWaitSpin(s string) (time.Duration, error) {
	return parseEnvDuration(EnvWaitSpin, s, DefaultWaitSpin, "2ms or 0")
}

// parseEnvDuration parses the value s of environment variable name: empty
// is empty, "0" is 0, else a Go duration that is not negative (examples
// name some for the error).
func parseEnvDuration(name, s string, empty time.Duration, examples string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "":
		return empty, nil
	case "0":
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s=%q is not a Go duration such as %s: %w", name, s, examples, ErrInvalidArgument)
	}
	if d < 0 {
		return 0, fmt.Errorf("%s=%q is negative: %w", name, s, ErrInvalidArgument)
	}
	return d, nil
}

// Open returns a device of the first backend that has one: ROCm, then CUDA,
// then Metal, unless HIPGO_BACKEND or WithBackend names one. When none does,
// the error is an *OpenError (errors.Is(err, ErrNoDevice)) naming every
// backend tried and why it was unusable: library not found (with the paths
// tried; ErrLibraryNotFound), library found but refused by dlopen (with its
// reason; ErrLibraryRejected), init failure (with the code), or no device.
func Open(ctx context.Context, opts ...Option) (*Device, error) {
	cfg := config{drivers: builtinDrivers()}
	if b := strings.TrimSpace(os.Getenv(EnvBackend)); b != "" {
		cfg.backend = driver.Kind(strings.ToLower(b))
	}
	for _, o := range opts {
		o(&cfg)
	}
	if !cfg.watchdogSet {
		wd, err := ParseWatchdog(os.Getenv(EnvWatchdog))
		if err != nil {
			return nil, err
		}
		cfg.watchdog = wd
	} else if cfg.watchdog < 0 {
		return nil, fmt.Errorf("watchdog %v is negative: %w", cfg.watchdog, ErrInvalidArgument)
	}
	if env := strings.TrimSpace(os.Getenv(EnvWaitSpin)); !cfg.waitSpinSet && env != "" {
		spin, err := ParseWaitSpin(env)
		if err != nil {
			return nil, err
		}
		cfg.waitSpin, cfg.waitSpinSet = spin, true
	} else if cfg.waitSpin < 0 {
		return nil, fmt.Errorf("wait spin %v is negative: %w", cfg.waitSpin, ErrInvalidArgument)
	}
	switch v := strings.TrimSpace(os.Getenv(EnvCUDAJIT)); v {
	case "", "0":
	case "1":
		cfg.cudaJIT = true
	default:
		return nil, fmt.Errorf("%s=%q: want 1 (compile the PTX) or 0 (load the shipped cubin): %w", EnvCUDAJIT, v, ErrInvalidArgument)
	}
	if cfg.ordinal < 0 {
		return nil, fmt.Errorf("device ordinal %d is negative: %w", cfg.ordinal, ErrInvalidArgument)
	}

	candidates := cfg.drivers
	if cfg.backend != "" {
		candidates = nil
		var known []string
		for _, d := range cfg.drivers {
			known = append(known, string(d.Kind()))
			if d.Kind() == cfg.backend {
				candidates = append(candidates, d)
			}
		}
		if len(candidates) == 0 {
			return nil, fmt.Errorf("backend %q is not one of %s: %w", cfg.backend, strings.Join(known, ", "), ErrInvalidArgument)
		}
	}

	oe := &OpenError{}
	for _, drv := range candidates {
		dev, err := openOne(ctx, drv, cfg)
		if err == nil {
			return dev, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		oe.Attempts = append(oe.Attempts, Attempt{Backend: drv.Kind(), Err: err})
	}
	return nil, oe
}

// openOne probes one backend. Vendor initialisation can take long (or, on a
// broken install, hang), so it runs apart from the caller, who may give up
// through ctx.
func openOne(ctx context.Context, drv driver.Driver, cfg config) (*Device, error) {
	type result struct {
		dev driver.Device
		err error
	}
	ch := make(chan result, 1)
	go func() {
		n, err := drv.DeviceCount()
		switch {
		case err != nil:
			ch <- result{err: err}
		case n == 0:
			ch <- result{err: &NoDeviceError{Backend: drv.Kind()}}
		case cfg.ordinal >= n:
			ch <- result{err: fmt.Errorf("%s: device %d requested, %d present: %w", drv.Kind(), cfg.ordinal, n, ErrInvalidArgument)}
		default:
			d, err := drv.Open(cfg.ordinal)
			ch <- result{dev: d, err: err}
		}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, r.err
		}
		return newDevice(r.dev, cfg), nil
	case <-ctx.Done():
		// The backend may still open the device: close it when it does, or
		// it stays open for the process's life (a retained CUDA primary
		// context, a ROCm device registered for HSA faults).
		go func() {
			if r := <-ch; r.dev != nil {
				_ = r.dev.Close() // nobody is left to report it to
			}
		}()
		return nil, ctx.Err()
	}
}
