package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/demo"
	"github.com/hipgo/hipgo/model/scheduler"
)

const demoName = "hipgo-demo"

// leakOpts ignores the model's shared CPU worker pool, which lives for the
// process by design.
var leakOpts = []goleak.Option{goleak.IgnoreAnyFunction("github.com/hipgo/hipgo/model/internal/cpu.(*Pool).work")}

type testServer struct {
	*httptest.Server
	srv   *Server
	sched *scheduler.Scheduler
	m     *model.Model
}

// start serves the demo model on 127.0.0.1 (httptest listens on loopback)
// and shuts everything down at the end of the test.
func start(t testing.TB, cfg scheduler.Config, opts Options, mopts ...model.Option) *testServer {
	t.Helper()
	m, err := model.LoadFS(demo.FS(), mopts...)
	require.NoError(t, err)
	if opts.ModelName == "" {
		opts.ModelName = demoName
	}
	srv := New(opts)
	cfg.OnStep = srv.OnStep
	sch := scheduler.New(m, cfg)
	srv.SetScheduler(sch)
	ts := &testServer{Server: httptest.NewServer(srv), srv: srv, sched: sch, m: m}
	t.Cleanup(func() { sch.Close(); ts.Close() })
	return ts
}

// post sends a JSON body and returns the status and body.
func post(t testing.TB, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// httptestServer serves h on 127.0.0.1 for the test and returns its URL.
func httptestServer(t testing.TB, h http.Handler) string {
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}
