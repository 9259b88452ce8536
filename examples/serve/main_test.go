package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/cli"
	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/runtime"
)

// TestServeStartsReadyAndShutsDown proves the command serves the demo
// model on loopback: ready, a completion, and a clean return when its
// context ends; and that bad flags are errors.
func TestServeStartsReadyAndShutsDown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-device", "cpu"}, io.Discard, func(a string) { addrs <- a })
	}()
	base := "http://" + <-addrs
	ready := false
	for range 3000 {
		resp, err := http.Get(base + "/health/ready")
		require.NoError(t, err)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			ready = true
			break
		}
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "loading")
		time.Sleep(10 * time.Millisecond)
	}
	require.True(t, ready)
	resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"And God said","max_tokens":3}`))
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.Contains(t, string(b), `"model":"hipgo-demo"`)
	cancel()
	require.NoError(t, <-done)

	for _, args := range [][]string{{"-on-device-loss", "gpu"}, {"-inject-step-failures", "2"}, {"extra"}, {"-watchdog", "-1s"}} {
		require.Error(t, run(context.Background(), args, io.Discard, nil), "%v", args)
	}
}

// TestWatchdogOfTheDevice: the device serve opens bounds its waits by
// -watchdog when given, else by HIPGO_GPU_WATCHDOG when set, else by a
// minute, so that a hung kernel fails its step instead of holding it.
func TestWatchdogOfTheDevice(t *testing.T) {
	open := func(given bool, d time.Duration, env string) time.Duration {
		t.Setenv(runtime.EnvWatchdog, env)
		drv := simgpu.New(simgpu.Config{Devices: 1})
		dev, err := runtime.Open(context.Background(), append(watchdogOptions(given, d, env), runtime.WithDrivers(drv))...)
		require.NoError(t, err)
		defer dev.Close()
		return dev.Watchdog()
	}
	require.Equal(t, time.Minute, open(false, defaultWatchdog, ""), "the default")
	require.Equal(t, 5*time.Second, open(false, defaultWatchdog, "5s"), "the environment without the flag")
	require.Equal(t, 2*time.Second, open(true, 2*time.Second, "5s"), "the flag over the environment")
	require.Equal(t, time.Duration(0), open(true, 0, ""), "-watchdog 0: none")
}

// TestExitCodes: -h exits 0 with the usage alone, a flag the flag package
// rejects exits 2 without a second report, and any other error exits 1
// naming the command.
func TestExitCodes(t *testing.T) {
	var usage bytes.Buffer
	err := run(context.Background(), []string{"-h"}, &usage, nil)
	require.Contains(t, usage.String(), "-max-batch")
	var report bytes.Buffer
	require.Equal(t, 0, cli.ExitCode("serve", err, &report))
	require.Empty(t, report.String())

	err = run(context.Background(), []string{"-no-such-flag"}, &usage, nil)
	require.Equal(t, 2, cli.ExitCode("serve", err, &report))
	require.Empty(t, report.String(), "the flag package has reported it")

	err = run(context.Background(), []string{"extra"}, io.Discard, nil)
	require.Equal(t, 1, cli.ExitCode("serve", err, &report))
	require.Equal(t, "serve: unexpected arguments [\"extra\"]\n", report.String())
}
