package server

import (
	"context"
	"crypto/rand"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/hipgo/hipgo/model/scheduler"
)

// maxRequestID bounds the X-Request-Id a client may choose.
const maxRequestID = 128

// requestID is the client's X-Request-Id when it is sane (1 to
// maxRequestID printable ASCII characters, no spaces: safe in a log line
// and a header), else a new random one (128 bits, base32), unique across
// processes and restarts as a counter is not.
func requestID(given string) string {
	if len(given) == 0 || len(given) > maxRequestID {
		return rand.Text()
	}
	for i := range len(given) {
		if given[i] <= ' ' || given[i] > '~' {
			return rand.Text()
		}
	}
	return given
}

// entry is a request's access-log line in the making: ServeHTTP starts it,
// the handlers fill in what they learn.
type entry struct {
	id    string
	start time.Time
	route string // the route's pattern path; "" when none matched
	// model, tokens and ttft, once a generation ran.
	model                          string
	promptTokens, completionTokens int
	ttft                           time.Duration
	err                            *apiError // the failure, if any (also one after a stream's 200)
}

type entryKey struct{}

// entryOf is r's entry (a throwaway one for a request that did not come
// through ServeHTTP).
func entryOf(r *http.Request) *entry {
	if e, ok := r.Context().Value(entryKey{}).(*entry); ok {
		return e
	}
	return &entry{id: requestID(""), start: time.Now()}
}

// generated records a generation's model, tokens and time to first token
// (from the request's arrival).
func (e *entry) generated(model string, st *scheduler.Stream) {
	u := st.Usage()
	e.model, e.promptTokens, e.completionTokens = model, u.PromptTokens, u.CompletionTokens
	if !u.FirstToken.IsZero() {
		e.ttft = u.FirstToken.Sub(e.start)
	}
}

// cancelled is the entry's error of a request whose client went away.
var cancelled = &apiError{Class: "cancelled"}

// quiet are the routes probes and scrapers call every few seconds: they
// are logged at debug level, a ready probe's 503 too (the state it reports
// is logged where it changes, and /metrics has it).
var quiet = map[string]bool{"/health/live": true, "/health/ready": true, "/metrics": true}

// logRequest writes r's access-log line: warn for refusals (401, 403),
// debug for quiet routes, warn for server errors (a stream that failed
// after its 200 included), else info.
func (s *Server) logRequest(r *http.Request, status int, e *entry) {
	level := slog.LevelInfo
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		level = slog.LevelWarn
	case quiet[e.route]:
		level = slog.LevelDebug
	case status >= 500 || (e.err != nil && e.err.Status >= 500):
		level = slog.LevelWarn
	}
	ctx := context.WithoutCancel(r.Context())
	if !s.log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("request_id", e.id),
		slog.String("method", r.Method),
		slog.String("route", e.route),
		slog.Int("status", status),
		slog.Float64("duration_ms", ms(time.Since(e.start))),
		slog.String("remote", r.RemoteAddr),
	}
	if e.route == "" {
		attrs = append(attrs, slog.String("path", truncate(r.URL.Path, 256)))
	}
	if e.model != "" {
		attrs = append(attrs, slog.String("model", e.model), slog.Int("prompt_tokens", e.promptTokens), slog.Int("completion_tokens", e.completionTokens))
		if e.ttft > 0 {
			attrs = append(attrs, slog.Float64("ttft_ms", ms(e.ttft)))
		}
	}
	if e.err != nil {
		attrs = append(attrs, slog.String("error", e.err.Class))
		if e.err.Code != "" {
			attrs = append(attrs, slog.String("code", e.err.Code))
		}
		if e.err.Status >= 500 { // the server's own words; a 4xx message may quote the client
			attrs = append(attrs, slog.String("message", e.err.Message))
		}
	}
	s.log.LogAttrs(ctx, level, "request", attrs...)
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
