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
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hipgo/hipgo/internal/cli"
	"github.com/hipgo/hipgo/internal/netlimit"
	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/scheduler"
	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/server"
)

func main() {
	// The first SIGTERM or SIGINT drains (ctx), a second stops at once (kill).
	ctx, drain := context.WithCancel(context.Background())
	kill, stop := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		drain()
		<-sigs
		stop()
	}()
	if err := run(ctx, kill, os.Args[1:], os.Stderr, nil); err != nil {
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

// run serves until ctx ends, then drains: /health/ready turns 503, new
// requests are refused, and the ones in flight get -shutdown-grace to
// finish (less if kill ends first) before they are ended.
func run(ctx, kill context.Context, args []string, stderr io.Writer, ready func(addr string)) error {
	fl := flag.NewFlagSet("serve", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() {
		fmt.Fprintf(fl.Output(), "serve runs the OpenAI-compatible API (and a chat page) over a llama-family model\n"+
			"(the embedded demo model unless -model names one), batched on the GPU when one is\n"+
			"usable, else on the CPU. docs/serve.md describes the API.\n\nusage: go run ./examples/serve [flags]\n\n")
		fl.PrintDefaults()
	}
	dir := fl.String("model", "", "model directory (config.json, model.safetensors, tokenizer.json) or GGUF file; empty: the embedded demo model")
	device := fl.String("device", model.DeviceAuto, "where to run: auto (the GPU when one is usable), cpu or gpu")
	addr := fl.String("addr", "127.0.0.1:8080", "listen address (loopback by default; use :8080 to listen on every interface)")
	apiKey := fl.String("api-key", "", "require Authorization: Bearer KEY on /v1/*, /tokenize and /detokenize (default: none; visible in ps: prefer "+envAPIKey+" or -api-key-file)")
	apiKeyFile := fl.String("api-key-file", "", "file of API keys, one a line (# comments); any of them is accepted")
	hostsFlag := fl.String("allowed-hosts", "", "comma-separated Host names to answer besides "+strings.Join(server.LoopbackHosts, ", ")+" on a loopback address (any on other addresses unless set; * for any)")
	corsFlag := fl.String("cors-origins", "", "comma-separated web origins whose pages may call the API (default: none; * for any)")
	readHeader := fl.Duration("read-header-timeout", 10*time.Second, "longest wait for a request's headers")
	readTimeout := fl.Duration("read-timeout", time.Minute, "longest wait for a whole request, body included (0: none)")
	idleTimeout := fl.Duration("idle-timeout", time.Minute, "how long a keep-alive connection may idle between requests")
	reqTimeout := fl.Duration("request-timeout", 10*time.Minute, "longest a request may run, streams included (0: none)")
	maxConns := fl.Int("max-conns", 1024, "most connections open at once (more wait to be accepted)")
	defaultMax := fl.Int("default-max-tokens", 2048, "reply length of a chat request that sets no max_tokens (0: the rest of the context)")
	grace := fl.Duration("shutdown-grace", 30*time.Second, "on SIGTERM or SIGINT, how long requests in flight may take to finish (a second signal ends them at once)")
	name := fl.String("name", "", "the model id of the API (default: the directory's name, or hipgo-demo)")
	ctxLen := fl.Int("ctx", 0, "context length per sequence (0: the model's)")
	maxBatch := fl.Int("max-batch", 16, "most sequences stepping together")
	maxQueue := fl.Int("max-queue", 256, "most requests waiting for a batch slot (more get 429)")
	prefill := fl.Int("prefill-budget", scheduler.DefaultPrefillBudget, "most prompt tokens a step feeds: long prompts go in slices beside the running requests' decode, the shortest first (-1: every prompt whole)")
	maxFailed := fl.Int("max-failed-steps", 8, "stop admitting after this many consecutive failed steps (-1: never)")
	kvTokens := fl.Int("kv-tokens", 0, "GPU KV-cache pool in tokens (0: the model's default)")
	onLoss := fl.String("on-device-loss", "fail", "after the GPU is lost: fail (503 until restarted) or cpu (serve on the CPU)")
	maxBody := fl.Int64("max-body", 1<<20, "largest request body in bytes")
	watchdog := fl.Duration("watchdog", defaultWatchdog, "fail a GPU step that waits longer than this (a hung kernel) with a watchdog error instead of holding its requests (0: never; without this flag "+runtime.EnvWatchdog+" sets it when set)")
	injectFrac := fl.Float64("inject-step-failures", 0, "testing: fail this fraction of batch steps (0: none)")
	injectSeed := fl.Uint64("inject-seed", 1, "testing: seed of -inject-step-failures")
	oobAt := fl.Uint64("inject-oob-at-step", 0, "testing, GPU only: at this step launch the runtime's out-of-bounds test kernel, a real device fault (0: never)")
	logFormat := fl.String("log-format", "text", "log lines on stderr as text (key=value) or json")
	logLevel := fl.String("log-level", "info", "least level logged: debug (adds the health probes and scrapes), info (a line per request), warn (failures, refused keys and hosts), error")
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
	if *prefill == 0 || *prefill < -1 {
		return fmt.Errorf("-prefill-budget %d: want a positive number of tokens, or -1", *prefill)
	}
	if *injectFrac < 0 || *injectFrac > 1 {
		return fmt.Errorf("-inject-step-failures %g is not in [0, 1]", *injectFrac)
	}
	if *maxConns < 1 || *defaultMax < 0 || *readHeader <= 0 || *readTimeout < 0 || *idleTimeout < 0 || *reqTimeout < 0 || *grace < 0 {
		return errors.New("-max-conns must be at least 1, -read-header-timeout positive, and -default-max-tokens and the other timeouts 0 or more")
	}
	keys, err := apiKeys(*apiKey, *apiKeyFile, os.Getenv(envAPIKey))
	if err != nil {
		return err
	}
	log, err := logger(stderr, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	modelName := *name
	if modelName == "" {
		modelName = "hipgo-demo"
		if *dir != "" {
			modelName = filepath.Base(filepath.Clean(*dir))
		}
	}

	srv := server.New(server.Options{ModelName: modelName, APIKeys: keys, MaxBodyBytes: *maxBody, DefaultMaxTokens: *defaultMax,
		AllowedHosts: allowedHosts(*addr, *hostsFlag), CORSOrigins: list(*corsFlag), Logger: log})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: withTimeout(srv, *reqTimeout), ReadHeaderTimeout: *readHeader, ReadTimeout: *readTimeout, IdleTimeout: *idleTimeout}
	if *reqTimeout > 0 {
		hs.WriteTimeout = *reqTimeout + 10*time.Second // a client that stops reading a stream
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(netlimit.Listener(ln, *maxConns)) }()
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

	cfg := scheduler.Config{MaxBatch: *maxBatch, MaxQueue: *maxQueue, MaxFailedSteps: *maxFailed, PrefillBudget: *prefill, OnStep: srv.OnStep}
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
		sch.Close()
		return err
	case <-ctx.Done():
	}
	log.Info("draining: not ready, admitting nothing new; requests in flight may finish", "in_flight", srv.InFlight(), "grace", grace.String())
	srv.Drain()
	graceCtx, cancel := context.WithTimeout(kill, *grace)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for srv.InFlight() > 0 && graceCtx.Err() == nil {
		select {
		case <-tick.C:
		case <-graceCtx.Done():
		}
	}
	if n := srv.InFlight(); n > 0 {
		log.Warn("ending the requests still running", "in_flight", n, "why", context.Cause(graceCtx).Error())
	} else {
		log.Info("drained: no request in flight")
	}
	sch.Close() // ends what still runs
	log.Info("closing the listener and the connections")
	closeCtx, cancelClose := context.WithTimeout(kill, 5*time.Second)
	defer cancelClose()
	if err := hs.Shutdown(closeCtx); err != nil {
		hs.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

// logger is the command's logger: text or json lines on stderr from
// level up (slog's level names: debug, info, warn, error).
func logger(stderr io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log-level %q is not debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(stderr, opts)), nil
	}
	return nil, fmt.Errorf("-log-format %q is not text or json", format)
}

// envAPIKey names the variable that holds an API key (kept out of ps).
const envAPIKey = "HIPGO_API_KEY"

// apiKeys are the keys of -api-key, -api-key-file (a key a line, # for
// comments) and HIPGO_API_KEY together.
func apiKeys(flagKey, file, env string) ([]string, error) {
	var keys []string
	for _, k := range []string{flagKey, env} {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("-api-key-file: %w", err)
		}
		n := len(keys)
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				keys = append(keys, line)
			}
		}
		if len(keys) == n {
			return nil, fmt.Errorf("-api-key-file %s holds no key", file)
		}
	}
	return keys, nil
}

// allowedHosts is the server's Host allow-list: on a loopback address the
// loopback names and -allowed-hosts; elsewhere -allowed-hosts alone, or
// nil (any host) when it is empty.
func allowedHosts(addr, flagHosts string) []string {
	extra := list(flagHosts)
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	if host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return append(append([]string(nil), server.LoopbackHosts...), extra...)
	}
	return extra
}

// list splits a comma-separated flag, dropping empty entries.
func list(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// withTimeout bounds each request's run by d (0: none): its context ends
// then, which ends its generation.
func withTimeout(h http.Handler, d time.Duration) http.Handler {
	if d == 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
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
