// Package loadtest drives an OpenAI-compatible server with concurrent
// streaming clients and summarises what came back: every request must end
// in a completion or an OpenAI-shaped error within its timeout. The server
// package's CI load test and tools/serveload (the GPU suite's) share it.
package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Config is one load run.
type Config struct {
	BaseURL   string // http://127.0.0.1:PORT
	Model     string
	Clients   int
	Requests  int // per client
	MaxTokens int
	Timeout   time.Duration // per request; past it the request counts as a hang
	APIKey    string
}

// Report is what a run saw.
type Report struct {
	Requests    int
	Completions int
	Errors      map[string]int // by HTTP status or "stream:<code>" for an error event
	Hangs       int            // requests past Config.Timeout
	Malformed   []string       // answers that were neither (at most 10)
	Latency     []time.Duration
	TTFT        []time.Duration
	Tokens      int
	Wall        time.Duration
}

// Run sends Clients x Requests streaming completions and waits for all.
func Run(ctx context.Context, cfg Config) *Report {
	rep := &Report{Errors: map[string]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Clients}}
	defer client.CloseIdleConnections()
	start := time.Now()
	for c := range cfg.Clients {
		wg.Go(func() {
			for i := range cfg.Requests {
				r := one(ctx, client, cfg, c*cfg.Requests+i)
				mu.Lock()
				rep.add(r)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	rep.Wall = time.Since(start)
	return rep
}

type result struct {
	latency, ttft time.Duration
	tokens        int
	ok            bool
	err           string // error class
	hang          bool
	malformed     string
}

func (r *Report) add(x result) {
	r.Requests++
	switch {
	case x.hang:
		r.Hangs++
	case x.ok:
		r.Completions++
		r.Latency = append(r.Latency, x.latency)
		if x.ttft > 0 {
			r.TTFT = append(r.TTFT, x.ttft)
		}
		r.Tokens += x.tokens
	case x.err != "":
		r.Errors[x.err]++
	default:
		if len(r.Malformed) < 10 {
			r.Malformed = append(r.Malformed, x.malformed)
		}
	}
}

func one(ctx context.Context, client *http.Client, cfg Config, n int) result {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	body, _ := json.Marshal(map[string]any{
		"model": cfg.Model, "prompt": fmt.Sprintf("And it came to pass %d", n%97), "max_tokens": cfg.MaxTokens,
		"temperature": 0.8, "seed": n, "stream": true, "stream_options": map[string]bool{"include_usage": true},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.BaseURL+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		return result{malformed: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	if cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return result{hang: true}
		}
		return result{malformed: err.Error()}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error *struct {
				Message, Type, Code string
			} `json:"error"`
		}
		if json.NewDecoder(resp.Body).Decode(&e) != nil || e.Error == nil || e.Error.Message == "" {
			if ctx.Err() != nil {
				return result{hang: true}
			}
			return result{malformed: fmt.Sprintf("status %d without an OpenAI error body", resp.StatusCode)}
		}
		return result{err: fmt.Sprintf("%d:%s", resp.StatusCode, e.Error.Code)}
	}
	sc := bufio.NewScanner(resp.Body)
	var r result
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			r.ok, r.latency = true, time.Since(start)
			return r
		}
		var ev struct {
			Error *struct {
				Message, Code string
			} `json:"error"`
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return result{malformed: "bad event: " + line}
		}
		if ev.Error != nil {
			return result{err: "stream:" + ev.Error.Code}
		}
		if r.ttft == 0 && len(ev.Choices) > 0 && ev.Choices[0].Text != "" {
			r.ttft = time.Since(start)
		}
		if ev.Usage != nil {
			r.tokens = ev.Usage.CompletionTokens
		}
	}
	if ctx.Err() != nil {
		return result{hang: true}
	}
	return result{malformed: fmt.Sprintf("stream ended without [DONE] or an error: %v", sc.Err())}
}

// Quantile is the q-quantile (0..1) of ds, 0 when empty.
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// Summary is the report in the lines the CI test logs and the GPU suite
// prints.
func (r *Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "requests %d: completions %d, errors %v, hangs %d, malformed %d\n", r.Requests, r.Completions, r.Errors, r.Hangs, len(r.Malformed))
	fmt.Fprintf(&b, "latency p50 %v p99 %v; ttft p50 %v p99 %v\n",
		Quantile(r.Latency, 0.5).Round(time.Millisecond), Quantile(r.Latency, 0.99).Round(time.Millisecond),
		Quantile(r.TTFT, 0.5).Round(time.Millisecond), Quantile(r.TTFT, 0.99).Round(time.Millisecond))
	fmt.Fprintf(&b, "tokens %d in %v: %.1f tokens/s aggregate", r.Tokens, r.Wall.Round(time.Millisecond), float64(r.Tokens)/r.Wall.Seconds())
	return b.String()
}
