package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// LoopbackHosts are the Host names a server listening on a loopback
// address answers by default (Options.AllowedHosts): a request that names
// any other host reached it through DNS rebinding, a web page's way into a
// local server.
var LoopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// hostAllowed reports whether the request's Host (its name, without the
// port) is one the server answers: any when AllowedHosts is nil, else one
// of them ("*" allows all), compared without case.
func (s *Server) hostAllowed(r *http.Request) bool {
	if s.opts.AllowedHosts == nil {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	for _, a := range s.opts.AllowedHosts {
		if a == "*" || strings.EqualFold(a, host) {
			return true
		}
	}
	return false
}

// originAllowed reports whether a browser request may be served: no Origin
// (not a browser's cross-origin request), the server's own origin (the
// chat page), or one of CORSOrigins ("*" allows all). cors is true for the
// last case: the response then carries the CORS headers.
func (s *Server) originAllowed(r *http.Request) (ok, cors bool) {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true, false
	}
	if u, err := url.Parse(origin); err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host) {
		return true, false
	}
	for _, o := range s.opts.CORSOrigins {
		if o == "*" || strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return true, true
		}
	}
	return false, false
}

// keyAllowed reports whether the request carries one of the API keys
// (every key when there are none).
func (s *Server) keyAllowed(r *http.Request) bool {
	if len(s.opts.APIKeys) == 0 {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	match := 0
	for _, k := range s.opts.APIKeys { // every key compared, in constant time each
		match |= subtle.ConstantTimeCompare([]byte(got), []byte(k))
	}
	return match == 1
}

// jsonBody reports whether a POST's Content-Type is application/json (any
// parameters): a browser sends a cross-origin "simple request" only with
// text/plain, a form type or none, so requiring JSON keeps web pages from
// driving the API.
func jsonBody(r *http.Request) bool {
	t, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && t == "application/json"
}

// pageCSP is the chat page's Content-Security-Policy: its one inline
// script by hash, inline styles, requests to this origin only, no framing.
var pageCSP = func() string {
	b, err := pageFS.ReadFile("page/index.html")
	if err != nil {
		panic(err)
	}
	csp := "default-src 'none'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; script-src"
	for _, m := range regexp.MustCompile(`(?s)<script>(.*?)</script>`).FindAllSubmatch(b, -1) {
		sum := sha256.Sum256(m[1])
		csp += " 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	return csp
}()

// guard is the checks every request passes before its route: the security
// headers, the Host and Origin checks, CORS preflights, and OpenAI-shaped
// 404 and 405 errors for what no route serves.
func (s *Server) guard(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", pageCSP)
	if !s.hostAllowed(r) {
		s.reject(w, r, &apiError{Status: http.StatusForbidden, Type: "invalid_request_error", Code: "host_not_allowed", Class: "forbidden",
			Message: fmt.Sprintf("Host %q is not one this server answers (a request through DNS rebinding?); the server's -allowed-hosts lists more", r.Host)})
		return
	}
	ok, cors := s.originAllowed(r)
	if !ok {
		s.reject(w, r, &apiError{Status: http.StatusForbidden, Type: "invalid_request_error", Code: "origin_not_allowed", Class: "forbidden",
			Message: fmt.Sprintf("Origin %q may not call this server; the server's -cors-origins lists the web origins that may", r.Header.Get("Origin"))})
		return
	}
	if cors {
		h.Set("Access-Control-Allow-Origin", r.Header.Get("Origin"))
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions {
			h.Set("Access-Control-Allow-Methods", "GET, POST")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	_, pattern := s.mux.Handler(r)
	if pattern == "" {
		s.reject(w, r, s.noRoute(r))
		return
	}
	_, path, _ := strings.Cut(pattern, " ")
	entryOf(r).route = strings.TrimSuffix(path, "{$}")
	s.mux.ServeHTTP(w, r)
}

// routes are the paths the server serves and their methods, for 405s.
var routes = map[string][]string{
	"/": {"GET"}, "/health/live": {"GET"}, "/health/ready": {"GET"}, "/metrics": {"GET"},
	"/v1/models": {"GET"}, "/v1/chat/completions": {"POST"}, "/v1/completions": {"POST"},
	"/tokenize": {"POST"}, "/detokenize": {"POST"},
}

// noRoute is the 404 or 405 for a request no route serves.
func (s *Server) noRoute(r *http.Request) *apiError {
	methods, ok := routes[r.URL.Path]
	if !ok && strings.HasPrefix(r.URL.Path, "/v1/models/") {
		methods, ok = []string{"GET"}, true
	}
	if ok && !slices.Contains(methods, r.Method) {
		return &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error", Code: "method_not_allowed", Class: "not_found",
			Message: fmt.Sprintf("%s %s: this path takes %s", r.Method, r.URL.Path, strings.Join(methods, ", ")), allow: methods}
	}
	return &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "not_found", Class: "not_found",
		Message: fmt.Sprintf("%s %s: no such endpoint", r.Method, r.URL.Path)}
}

// reject writes e for a request refused before its route.
func (s *Server) reject(w http.ResponseWriter, r *http.Request, e *apiError) {
	if len(e.allow) > 0 {
		w.Header().Set("Allow", strings.Join(e.allow, ", "))
	}
	s.fail(w, r, e)
}
