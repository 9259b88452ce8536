package server

import (
	"crypto/subtle"
	"embed"
	"io/fs"
	"net/http"
	"strings"
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
	// APIKey, when set, must come as "Authorization: Bearer KEY" on /v1/*.
	APIKey string
	// MaxBodyBytes bounds a request body (default 1 MiB).
	MaxBodyBytes int64
	// Registry, when set, is where the metrics register (default: a new
	// registry of the server's own, served at /metrics).
	Registry *prometheus.Registry
}

// Server is the API. Until SetScheduler is called it is loading: generation
// endpoints and /health/ready answer 503.
type Server struct {
	opts    Options
	sched   atomic.Pointer[scheduler.Scheduler]
	started time.Time
	metrics *metrics
	mux     *http.ServeMux
	ids     atomic.Uint64
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
	s := &Server{opts: opts, started: time.Now(), mux: http.NewServeMux()}
	s.metrics = newMetrics(reg, s)
	page, _ := fs.Sub(pageFS, "page")
	s.mux.Handle("GET /{$}", http.FileServerFS(page))
	s.mux.HandleFunc("GET /health/live", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "live"})
	})
	s.mux.HandleFunc("GET /health/ready", s.ready)
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	s.mux.Handle("GET /v1/models", s.api("models", s.models))
	s.mux.Handle("POST /v1/chat/completions", s.api("chat", s.chat))
	s.mux.Handle("POST /v1/completions", s.api("completions", s.completions))
	return s
}

// SetScheduler makes the server serve through sch (it is ready from then).
// The caller closes sch after the HTTP server has shut down.
func (s *Server) SetScheduler(sch *scheduler.Scheduler) { s.sched.Store(sch) }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

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
		defer func() { s.metrics.requests.WithLabelValues(endpoint, http.StatusText(cmpStatus(sw.status))).Inc() }()
		if s.opts.APIKey != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.opts.APIKey)) != 1 {
				e := &apiError{Status: http.StatusUnauthorized, Message: "missing or wrong API key (Authorization: Bearer KEY)", Type: "authentication_error", Code: "invalid_api_key", Class: "unauthorized"}
				s.fail(sw, e)
				return
			}
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
		if e := h(sw, r); e != nil {
			s.fail(sw, e)
		}
	})
}

func cmpStatus(s int) int {
	if s == 0 {
		return http.StatusOK
	}
	return s
}

// fail writes an error response and counts it.
func (s *Server) fail(w http.ResponseWriter, e *apiError) {
	s.metrics.errors.WithLabelValues(e.Class).Inc()
	writeError(w, e)
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) *apiError {
	writeJSON(w, http.StatusOK, modelList{Object: "list", Data: []modelInfo{{ID: s.opts.ModelName, Object: "model", Created: s.started.Unix(), OwnedBy: "hipgo"}}})
	return nil
}

// readiness is the body of /health/ready.
type readiness struct {
	Status     string `json:"status"` // ready, loading, unavailable
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
