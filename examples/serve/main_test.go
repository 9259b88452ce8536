package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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
		done <- run(ctx, context.Background(), []string{"-addr", "127.0.0.1:0", "-device", "cpu"}, io.Discard, func(a string) { addrs <- a })
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

	for _, args := range [][]string{{"-on-device-loss", "gpu"}, {"-inject-step-failures", "2"}, {"extra"}, {"-watchdog", "-1s"}, {"-log-format", "xml"}, {"-log-level", "loud"}, {"-prefill-budget", "0"}, {"-prefill-budget", "-2"}} {
		require.Error(t, run(context.Background(), context.Background(), args, io.Discard, nil), "%v", args)
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
	err := run(context.Background(), context.Background(), []string{"-h"}, &usage, nil)
	require.Contains(t, usage.String(), "-max-batch")
	require.True(t, strings.HasPrefix(usage.String(), "serve runs the OpenAI-compatible API"), "-h opens with what the command does: %q", usage.String())
	require.Contains(t, usage.String(), "-prefill-budget")
	var report bytes.Buffer
	require.Equal(t, 0, cli.ExitCode("serve", err, &report))
	require.Empty(t, report.String())

	err = run(context.Background(), context.Background(), []string{"-no-such-flag"}, &usage, nil)
	require.Equal(t, 2, cli.ExitCode("serve", err, &report))
	require.Empty(t, report.String(), "the flag package has reported it")

	err = run(context.Background(), context.Background(), []string{"extra"}, io.Discard, nil)
	require.Equal(t, 1, cli.ExitCode("serve", err, &report))
	require.Equal(t, "serve: unexpected arguments [\"extra\"]\n", report.String())
}

// serving runs the command with args on 127.0.0.1:0 until the test ends
// and returns its base URL once it is ready, the function that drains it
// (the first SIGTERM), and its result.
func serving(t *testing.T, args ...string) (base string, drain, kill func(), done <-chan error) {
	t.Helper()
	return servingTo(t, io.Discard, args...)
}

// servingTo is serving with the command's stderr (its logs) going to
// stderr.
func servingTo(t *testing.T, stderr io.Writer, args ...string) (base string, drain, kill func(), done <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	killCtx, stop := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); stop() })
	addrs := make(chan string, 1)
	res := make(chan error, 1)
	go func() {
		res <- run(ctx, killCtx, append([]string{"-addr", "127.0.0.1:0", "-device", "cpu"}, args...), stderr, func(a string) { addrs <- a })
	}()
	select {
	case a := <-addrs:
		base = "http://" + a
	case err := <-res:
		t.Fatalf("returned before listening: %v", err)
	}
	for range 3000 {
		resp, err := http.Get(base + "/health/ready")
		require.NoError(t, err)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return base, cancel, stop, res
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("never ready")
	return
}

// TestDrainLetsRequestsInFlightFinish: on the first signal the server
// turns not ready and refuses new generations with 503 shutting_down, the
// stream in flight runs to its end, and the command then returns nil.
func TestDrainLetsRequestsInFlightFinish(t *testing.T) {
	base, drain, _, done := serving(t, "-shutdown-grace", "60s")
	resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"And God said","max_tokens":480,"temperature":0,"stream":true}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	rd := bufio.NewReader(resp.Body)
	_, err = rd.ReadString('\n') // the stream has begun
	require.NoError(t, err)
	drain()
	require.Eventually(t, func() bool {
		r, err := http.Get(base + "/health/ready")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusServiceUnavailable
	}, 5*time.Second, 5*time.Millisecond, "not ready once draining")
	r, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"x","max_tokens":2}`))
	require.NoError(t, err)
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, r.StatusCode, string(b))
	require.Contains(t, string(b), "shutting_down")
	select {
	case err := <-done:
		t.Fatalf("returned (%v) with a stream in flight", err)
	default:
	}
	rest, err := io.ReadAll(rd)
	require.NoError(t, err)
	require.Contains(t, string(rest), `"finish_reason":"length"`, "the stream ran to max_tokens")
	require.True(t, strings.HasSuffix(strings.TrimSpace(string(rest)), "data: [DONE]"))
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("did not return once the stream ended")
	}
}

// TestSecondSignalEndsAtOnce: a stream still running when the drain's
// grace is cut short by a second signal ends, and the command returns.
func TestSecondSignalEndsAtOnce(t *testing.T) {
	base, drain, kill, done := serving(t, "-shutdown-grace", "10m")
	resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"And God said","max_tokens":480,"temperature":0,"stream":true}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	_, err = bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	drain()
	kill()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("a second signal did not end the drain")
	}
}

// TestSlowAndIdleSocketsAreDropped: a body trickled past -read-timeout and
// a connection idle past -idle-timeout are closed by the server.
func TestSlowAndIdleSocketsAreDropped(t *testing.T) {
	base, _, _, _ := serving(t, "-read-timeout", "300ms", "-idle-timeout", "300ms")
	addr := strings.TrimPrefix(base, "http://")
	slow, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer slow.Close()
	_, err = io.WriteString(slow, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	require.NoError(t, err)
	idle, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer idle.Close()
	_, err = io.WriteString(idle, "GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	require.NoError(t, err)
	r, err := http.ReadResponse(bufio.NewReader(idle), nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, r.Body)
	r.Body.Close()
	for name, c := range map[string]net.Conn{"slow body": slow, "idle": idle} {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
		_, err := io.Copy(io.Discard, c) // returns at EOF, when the server closes
		require.NoError(t, err, "%s: the server did not close the connection", name)
	}
}

// TestKeysFromFlagFileAndEnvironment: any key of -api-key, -api-key-file
// and HIPGO_API_KEY is accepted, others are 401s; an empty key file is an
// error.
func TestKeysFromFlagFileAndEnvironment(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "keys")
	require.NoError(t, os.WriteFile(file, []byte("# team keys\nfile-one\n\n  file-two  \n"), 0o600))
	t.Setenv(envAPIKey, "from-env")
	keys, err := apiKeys("from-flag", file, os.Getenv(envAPIKey))
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"from-flag", "from-env", "file-one", "file-two"}, keys)
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, []byte("# none\n"), 0o600))
	_, err = apiKeys("", empty, "")
	require.Error(t, err)

	base, _, _, _ := serving(t, "-api-key-file", file)
	for key, want := range map[string]int{"file-two": http.StatusOK, "from-env": http.StatusOK, "nope": http.StatusUnauthorized} {
		req, err := http.NewRequest(http.MethodPost, base+"/v1/completions", strings.NewReader(`{"prompt":"x","max_tokens":1}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, want, resp.StatusCode, key)
	}
}

// TestHostsOfTheListenAddress: a loopback address answers the loopback
// names and -allowed-hosts; another address any host unless
// -allowed-hosts lists them.
func TestHostsOfTheListenAddress(t *testing.T) {
	require.Equal(t, []string{"localhost", "127.0.0.1", "::1"}, allowedHosts("127.0.0.1:8080", ""))
	require.Equal(t, []string{"localhost", "127.0.0.1", "::1", "box.lan"}, allowedHosts("localhost:8080", "box.lan"))
	require.Equal(t, []string{"localhost", "127.0.0.1", "::1"}, allowedHosts("[::1]:8080", ""))
	require.Nil(t, allowedHosts(":8080", ""))
	require.Nil(t, allowedHosts("0.0.0.0:8080", " "))
	require.Equal(t, []string{"api.example", "api2.example"}, allowedHosts("10.0.0.5:80", "api.example, api2.example"))
}

// syncBuffer is the command's stderr, written from its goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLogsAreStructured: -log-format json writes one JSON object a line on
// stderr: the access line of a request (its id, route, status, model and
// tokens), the health probes at -log-level debug, and the shutdown's
// phases in order; text is key=value; -log-level warn keeps a refused key
// and drops a served request.
func TestLogsAreStructured(t *testing.T) {
	var logs syncBuffer
	base, drain, _, done := servingTo(t, &logs, "-log-format", "json", "-log-level", "debug")
	req, err := http.NewRequest(http.MethodPost, base+"/v1/completions", strings.NewReader(`{"prompt":"And God said","max_tokens":2}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", "serve-log-1")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "serve-log-1", resp.Header.Get("X-Request-Id"))
	drain()
	require.NoError(t, <-done)

	var access, probe map[string]any
	var phases []string
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "every line is JSON: %s", line)
		switch {
		case m["request_id"] == "serve-log-1":
			require.Nil(t, access, "one line per request")
			access = m
		case m["route"] == "/health/ready" && probe == nil:
			probe = m
		case m["msg"] != "request":
			phases = append(phases, m["msg"].(string))
		}
	}
	require.NotNil(t, access, logs.String())
	require.Equal(t, "/v1/completions", access["route"])
	require.EqualValues(t, 200, access["status"])
	require.Equal(t, "hipgo-demo", access["model"])
	require.EqualValues(t, 2, access["completion_tokens"])
	require.Positive(t, access["prompt_tokens"])
	require.NotNil(t, probe, "the probes at debug level")
	require.Equal(t, "DEBUG", probe["level"])
	var shutdown []string
	for _, p := range phases {
		if i := slices.IndexFunc([]string{"draining", "drained", "closing", "stopped"}, func(w string) bool { return strings.HasPrefix(p, w) }); i >= 0 {
			shutdown = append(shutdown, p)
		}
	}
	require.Len(t, shutdown, 4, "%q", phases)
	for i, w := range []string{"draining", "drained", "closing", "stopped"} {
		require.True(t, strings.HasPrefix(shutdown[i], w), "phase %d: %q", i, shutdown)
	}

	var text syncBuffer
	base, _, _, _ = servingTo(t, &text)
	resp, err = http.Post(base+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"x","max_tokens":1}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Eventually(t, func() bool {
		return strings.Contains(text.String(), "msg=request request_id="+resp.Header.Get("X-Request-Id")+" method=POST route=/v1/completions status=200")
	}, 5*time.Second, time.Millisecond, "text: %s", text.String())
	require.NotContains(t, text.String(), "route=/health/ready", "probes are debug")

	var warn syncBuffer
	base, _, _, _ = servingTo(t, &warn, "-log-level", "warn", "-api-key", "k")
	for _, key := range []string{"k", "wrong"} {
		req, err := http.NewRequest(http.MethodPost, base+"/v1/completions", strings.NewReader(`{"prompt":"x","max_tokens":1}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("X-Request-Id", "warn-"+key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
	}
	require.Eventually(t, func() bool { return strings.Contains(warn.String(), "request_id=warn-wrong") }, 5*time.Second, time.Millisecond)
	require.Contains(t, warn.String(), "level=WARN msg=request request_id=warn-wrong")
	require.NotContains(t, warn.String(), "request_id=warn-k ", "a served request is info")
}
