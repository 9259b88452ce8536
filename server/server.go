package server

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hipgo/hipgo/model/scheduler"
)

// Options configure a Server.
type Options struct {
	// ModelName is the id clients ask for in "model" and GET /v1/models
	// lists; a request naming another model is a 400.
	ModelName string
	// APIKeys, when set, are the keys one of which must come as
	// "Authorization: Bearer KEY" on /v1/*, /tokenize and /detokenize.
	APIKeys []string
	// AllowedHosts, when not nil, are the Host names (without port, "*"
	// for any) requests may name; others are 403s. A server listening on
	// a loopback address should allow only LoopbackHosts and the names
	// its users add: any web page can otherwise reach it through DNS
	// rebinding.
	AllowedHosts []string
	// CORSOrigins are the web origins ("https://app.example", "*" for any)
	// whose pages may call the API; a request from any other origin but the
	// server's own is a 403. Default: none.
	CORSOrigins []string
	// MaxBodyBytes bounds a request body (default 1 MiB).
	MaxBodyBytes int64
	// DefaultMaxTokens bounds a chat reply whose request sets no
	// max_tokens (0: the rest of the context). Completions default to 16,
	// as OpenAI's API does.
	DefaultMaxTokens int
	// Registry, when set, is where the metrics register (default: a new
	// registry of the server's own, served at /metrics).
	Registry *prometheus.Registry
	// Logger receives one access-log line ("request") per request; nil
	// discards them (a library writes no logs it was not asked for).
	Logger *slog.Logger
}

// Server is the API. Until SetScheduler is called it is loading: generation
// endpoints and /health/ready answer 503.
type Server struct {
	opts    Options
	sched   atomic.Pointer[scheduler.Scheduler]
	started time.Time
	metrics *metrics
	mux     *http.ServeMux
	log     *slog.Logger
	// draining: Drain was called; new generations are 503s.
	draining atomic.Bool
	inFlight atomic.Int64 // /v1 requests being handled
}

//go:embed page
var pageFS embed.FS

// New returns a loading server.
func New(opts Options) *Server {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 1 << 20
	}
	if opts.ModelName == "" {
		opts.ModelName = "hipgo"
	}
	reg := opts.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	s := &Server{opts: opts, started: time.Now(), mux: http.NewServeMux(), log: opts.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.metrics = newMetrics(reg, s)
	page, _ := fs.Sub(pageFS, "page")
	s.mux.Handle("GET /{$}", http.FileServerFS(page))
	s.mux.HandleFunc("GET /health/live", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "live"})
	})
	s.mux.HandleFunc("GET /health/ready", s.ready)
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	s.mux.Handle("GET /v1/models", s.api("models", s.models))
	s.mux.Handle("GET /v1/models/{id}", s.api("models", s.model))
	s.mux.Handle("POST /v1/chat/completions", s.api("chat", s.chat))
	s.mux.Handle("POST /v1/completions", s.api("completions", s.completions))
	s.mux.Handle("POST /tokenize", s.api("tokenize", s.tokenize))
	s.mux.Handle("POST /detokenize", s.api("detokenize", s.detokenize))
	return s
}

// Drain starts a graceful shutdown: /health/ready answers 503
// ("draining") at once, so a load balancer stops sending, and new
// generation requests are 503s (shutting_down) before anything runs;
// requests already admitted go on. The caller waits for InFlight to reach
// 0 (or its grace to pass), then shuts the HTTP server down.
func (s *Server) Drain() { s.draining.Store(true) }

// InFlight is how many /v1 requests are being handled now (a drain waits
// for none).
func (s *Server) InFlight() int { return int(s.inFlight.Load()) }

// SetScheduler makes the server serve through sch (it is ready from then).
// The caller closes sch after the HTTP server has shut down.
func (s *Server) SetScheduler(sch *scheduler.Scheduler) { s.sched.Store(sch) }

// ServeHTTP implements http.Handler: the request id (the client's
// X-Request-Id when sane, else a new one) on the response, guard, the
// route, then the access-log line.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e := &entry{id: requestID(r.Header.Get("X-Request-Id")), start: time.Now()}
	w.Header().Set("X-Request-Id", e.id)
	sw := &statusWriter{ResponseWriter: w}
	r = r.WithContext(context.WithValue(r.Context(), entryKey{}, e))
	s.guard(sw, r)
	s.logRequest(r, cmpStatus(sw.status), e)
}

// statusWriter remembers the status for the requests metric.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// api wraps a /v1 handler: authentication, the body limit, and counting
// the request by its status.
func (s *Server) api(endpoint string, h func(http.ResponseWriter, *http.Request) *apiError) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		defer func() { s.metrics.requests.WithLabelValues(endpoint, http.StatusText(cmpStatus(sw.status))).Inc() }()
		if !s.keyAllowed(r) {
			sw.Header().Set("WWW-Authenticate", `Bearer realm="hipgo"`)
			s.fail(sw, r, &apiError{Status: http.StatusUnauthorized, Message: "missing or wrong API key (Authorization: Bearer KEY)", Type: "authentication_error", Code: "invalid_api_key", Class: "unauthorized"})
			return
		}
		if r.Method == http.MethodPost && !jsonBody(r) {
			s.fail(sw, r, &apiError{Status: http.StatusUnsupportedMediaType, Message: fmt.Sprintf("Content-Type %q: the body must be application/json", r.Header.Get("Content-Type")),
				Type: "invalid_request_error", Param: "body", Code: "unsupported_media_type", Class: "bad_request"})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
		if e := h(sw, r); e != nil {
			s.fail(sw, r, e)
		}
	})
}

func cmpStatus(s int) int {
	if s == 0 {
		return http.StatusOK
	}
	return s
}

// fail writes an error response with the request's id, counts it, and
// notes it for the access log.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, e *apiError) {
	s.metrics.errors.WithLabelValues(e.Class).Inc()
	ent := entryOf(r)
	ent.err = e
	writeError(w, e, ent.id)
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) *apiError {
	writeJSON(w, http.StatusOK, modelList{Object: "list", Data: []modelInfo{s.info()}})
	return nil
}

// model is GET /v1/models/{id}: the served model, or a 404.
func (s *Server) model(w http.ResponseWriter, r *http.Request) *apiError {
	if id := r.PathValue("id"); id != s.opts.ModelName {
		return &apiError{Status: http.StatusNotFound, Message: fmt.Sprintf("model %q is not served here (this server serves %q)", id, s.opts.ModelName),
			Type: "invalid_request_error", Param: "model", Code: "model_not_found", Class: "not_found"}
	}
	writeJSON(w, http.StatusOK, s.info())
	return nil
}

func (s *Server) info() modelInfo {
	return modelInfo{ID: s.opts.ModelName, Object: "model", Created: s.started.Unix(), OwnedBy: "hipgo"}
}

// readiness is the body of /health/ready.
type readiness struct {
	Status     string `json:"status"` // ready, loading, draining, unavailable
	Backend    string `json:"backend,omitempty"`
	Fallback   bool   `json:"fallback,omitempty"` // serving on the CPU after the device was lost
	Reason     string `json:"reason,omitempty"`
	DeviceLost string `json:"device_lost,omitempty"`
	Since      string `json:"since,omitempty"` // RFC 3339, when the device was lost or serving stopped
	Queued     int    `json:"queued"`
	Running    int    `json:"running"`
}

func (s *Server) ready(w http.ResponseWriter, _ *http.Request) {
	sch := s.sched.Load()
	if sch == nil {
		writeJSON(w, http.StatusServiceUnavailable, readiness{Status: "loading", Reason: "the model is loading"})
		return
	}
	st := sch.Status()
	rd := readiness{Status: "ready", Backend: st.Model.Backend(), Fallback: st.FellBack, Queued: st.Queued, Running: st.Running}
	if s.draining.Load() {
		rd.Status, rd.Reason = "draining", "the server is shutting down"
		writeJSON(w, http.StatusServiceUnavailable, rd)
		return
	}
	if st.DeviceLost != nil {
		rd.DeviceLost = st.DeviceLost.Error()
		rd.Since = st.LostAt.UTC().Format(time.RFC3339Nano)
	}
	code := http.StatusOK
	if st.Down != nil {
		code, rd.Status, rd.Reason = http.StatusServiceUnavailable, "unavailable", st.Down.Error()
		var ue *scheduler.UnavailableError
		if asUnavailable(st.Down, &ue) {
			rd.Since = ue.Since.UTC().Format(time.RFC3339Nano)
		}
	}
	writeJSON(w, code, rd)
}
