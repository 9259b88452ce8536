package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/demo"
	"github.com/hipgo/hipgo/model/scheduler"
	"github.com/hipgo/hipgo/runtime"
)

// TestReadinessThroughLoadingAndDeviceLoss proves /health/ready is 503
// while loading, 200 when serving, and 503 after the device is lost with
// the fault and since when; /health/live stays 200; /metrics shows the
// state. With a fallback, ready stays 200 and says it serves on the CPU.
func TestReadinessThroughLoadingAndDeviceLoss(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		t.Run(map[bool]string{false: "fail", true: "cpu"}[fallback], func(t *testing.T) {
			var lose atomic.Bool
			m, err := model.LoadFS(demo.FS(), model.WithStepFaults(func(uint64) error {
				if lose.Load() {
					return &runtime.DeviceLostError{Device: "cuda:0 sim", Cause: errors.New("illegal address")}
				}
				return nil
			}))
			require.NoError(t, err)
			srv := New(Options{ModelName: demoName})
			ts := httptestServer(t, srv)
			status, body := get(t, ts+"/health/ready")
			require.Equal(t, http.StatusServiceUnavailable, status)
			require.Contains(t, body, `"loading"`)
			status, _ = post(t, ts+"/v1/completions", `{"prompt": "x"}`)
			require.Equal(t, http.StatusServiceUnavailable, status)

			cfg := scheduler.Config{OnStep: srv.OnStep}
			if fallback {
				cfg.Fallback = func() (*model.Model, error) { return model.LoadFS(demo.FS()) }
			}
			sch := scheduler.New(m, cfg)
			defer sch.Close()
			srv.SetScheduler(sch)
			status, _ = get(t, ts+"/health/ready")
			require.Equal(t, http.StatusOK, status)

			lose.Store(true)
			before := time.Now()
			status, body = post(t, ts+"/v1/completions", `{"prompt": "x", "max_tokens": 3}`)
			require.Equal(t, http.StatusServiceUnavailable, status, body)
			require.Contains(t, body, "device_lost")
			status, body = get(t, ts+"/health/ready")
			var rd readiness
			require.NoError(t, json.Unmarshal([]byte(body), &rd))
			require.Contains(t, rd.DeviceLost, "illegal address")
			since, err := time.Parse(time.RFC3339Nano, rd.Since)
			require.NoError(t, err)
			require.WithinDuration(t, before, since, 5*time.Second)
			_, metrics := get(t, ts+"/metrics")
			require.Contains(t, metrics, "hipgo_device_lost_timestamp_seconds")
			if fallback {
				require.Equal(t, http.StatusOK, status, body)
				require.True(t, rd.Fallback)
				require.Equal(t, "cpu", rd.Backend)
				require.Contains(t, metrics, `hipgo_device_state{backend="cpu",state="fallback"} 1`)
				status, body = post(t, ts+"/v1/completions", `{"prompt": "x", "max_tokens": 3}`)
				require.Equal(t, http.StatusOK, status, body)
			} else {
				require.Equal(t, http.StatusServiceUnavailable, status, body)
				require.Equal(t, "unavailable", rd.Status)
				require.Contains(t, metrics, `state="unavailable"} 1`)
				start := time.Now()
				status, _ = post(t, ts+"/v1/completions", `{"prompt": "x", "max_tokens": 3}`)
				require.Equal(t, http.StatusServiceUnavailable, status)
				t.Logf("503 after the loss in %v", time.Since(start))
			}
			status, _ = get(t, ts+"/health/live")
			require.Equal(t, http.StatusOK, status)
			require.Contains(t, metrics, `hipgo_errors_total{class="device_lost"} 1`)
			require.Contains(t, metrics, `hipgo_requests_total{endpoint="completions",status="Service Unavailable"}`)
			for _, name := range []string{"hipgo_prompt_tokens_total", "hipgo_completion_tokens_total", "hipgo_queue_depth", "hipgo_batch_size_bucket", "hipgo_time_to_first_token_seconds_bucket", "hipgo_time_per_output_token_seconds_bucket", "hipgo_failed_steps_total 1"} {
				require.Contains(t, metrics, name)
			}
		})
	}
}

// TestClientDisconnectFreesTheSlot proves a streaming client that goes
// away ends its generation: the batch empties long before the request's
// max_tokens would have been generated, and a request after it is served
// with MaxBatch 1.
func TestClientDisconnectFreesTheSlot(t *testing.T) {
	// Steps of at least 2 ms: the long request takes seconds.
	ts := start(t, scheduler.Config{MaxBatch: 1}, Options{}, model.WithStepFaults(func(uint64) error { time.Sleep(2 * time.Millisecond); return nil }))
	ctx, cancel := context.WithCancel(context.Background())
	body := fmt.Sprintf(`{"prompt": "x", "max_tokens": %d, "temperature": 0, "stream": true}`, ts.m.ContextLength()-8)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	{
		r := bufio.NewReader(resp.Body)
		_, err = r.ReadString('\n') // the stream is running
		require.NoError(t, err)
	}
	require.Equal(t, 1, ts.sched.Status().Running)
	cancel()
	for i := 0; ts.sched.Status().Running != 0; i++ {
		require.Less(t, i, 5000, "the disconnected request still runs")
		time.Sleep(time.Millisecond)
	}
	status, body := post(t, ts.URL+"/v1/completions", `{"prompt": "x", "max_tokens": 2}`)
	require.Equal(t, http.StatusOK, status, body)
}

// TestChatPageIsServed proves / serves the embedded page, which calls the
// streaming chat endpoint and loads nothing from elsewhere.
func TestChatPageIsServed(t *testing.T) {
	ts := start(t, scheduler.Config{}, Options{})
	status, body := get(t, ts.URL+"/")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "/v1/chat/completions")
	require.NotContains(t, body, "http://")
	require.NotContains(t, body, "https://")
}
