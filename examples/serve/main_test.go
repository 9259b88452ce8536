package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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

	for _, args := range [][]string{{"-on-device-loss", "gpu"}, {"-inject-step-failures", "2"}, {"extra"}} {
		require.Error(t, run(context.Background(), args, io.Discard, nil), "%v", args)
	}
}
