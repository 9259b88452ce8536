// Command embed is a small Go HTTP service that embeds hipgo: one loaded
// model serves both the service's own route and the OpenAI-compatible API
// of package server, mounted under /llm/.
//
//	go run ./examples/embed                    # the embedded demo model on 127.0.0.1:8090
//	curl -N 'http://127.0.0.1:8090/generate?prompt=And+God+said&n=40'
//	curl http://127.0.0.1:8090/llm/v1/completions -H 'Content-Type: application/json' \
//	  -d '{"model":"hipgo-demo","prompt":"And God said","max_tokens":20}'
//
// Its routes:
//
//	GET /           what the service is
//	GET /generate   streams plain text from model.Generate, called by the
//	                service's own handler with the request's context: a
//	                client that goes away ends its generation at the next token
//	/llm/           package server's API (/llm/v1/chat/completions,
//	                /llm/v1/completions, /llm/health/ready, /llm/metrics...)
//
// The model is loaded once; the server's scheduler batches the API's
// requests on it while /generate runs its own generations beside them (a
// *model.Model is safe for concurrent use). SIGINT or SIGTERM shuts down
// cleanly: the API is drained, the listener closes, requests in flight get
// a few seconds, then the scheduler and the model are closed. The server's
// chat page expects the API at the root, so under /llm/ use the API itself.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/hipgo/hipgo/internal/cli"
	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/demo"
	"github.com/hipgo/hipgo/model/scheduler"
	"github.com/hipgo/hipgo/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr, nil); err != nil {
		os.Exit(cli.ExitCode("embed", err, os.Stderr))
	}
}

// shutdownGrace is how long requests in flight may take to finish once the
// service is stopping.
const shutdownGrace = 5 * time.Second

// run serves until ctx ends, then shuts down; ready, when set, receives
// the listening address once the model is loaded (tests listen on port 0).
func run(ctx context.Context, args []string, stderr io.Writer, ready func(addr string)) error {
	fl := flag.NewFlagSet("embed", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() {
		fmt.Fprintf(fl.Output(), "embed is a Go HTTP service that embeds hipgo: its own /generate route and\nthe OpenAI-compatible API under /llm/, over one loaded model.\n\nusage: go run ./examples/embed [flags]\n\n")
		fl.PrintDefaults()
	}
	addr := fl.String("addr", "127.0.0.1:8090", "listen address")
	dir := fl.String("model", "", "model directory or GGUF file; empty: the embedded demo model")
	device := fl.String("device", model.DeviceAuto, "where to run: auto (the GPU when one is usable), cpu or gpu")
	if err := cli.Parse(fl, args); err != nil {
		return err
	}
	if fl.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fl.Args())
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))

	// One model for everything.
	var m *model.Model
	var err error
	if *dir == "" {
		m, err = model.LoadFS(demo.FS(), model.WithDeviceMode(*device))
	} else {
		m, err = model.Load(*dir, model.WithDeviceMode(*device))
	}
	if err != nil {
		return err
	}
	defer m.Close()
	log.Info("model loaded", "backend", m.Backend(), "context", m.ContextLength())

	// The API: package server over a scheduler of the same model.
	name := "hipgo-demo"
	if *dir != "" {
		name = filepath.Base(filepath.Clean(*dir))
	}
	api := server.New(server.Options{ModelName: name})
	sch := scheduler.New(m, scheduler.Config{OnStep: api.OnStep})
	defer sch.Close()
	api.SetScheduler(sch)

	mux := http.NewServeMux()
	mux.Handle("/llm/", http.StripPrefix("/llm", api))
	mux.HandleFunc("GET /generate", generateHandler(m, log))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "embed: GET /generate?prompt=...&n=... streams text; the OpenAI-compatible API is under /llm/v1/")
	})

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String())
	if ready != nil {
		ready(ln.Addr().String())
	}

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	api.Drain() // the API answers 503 to new generations
	graceCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	// Shutdown closes the listener and waits for the handlers; past the
	// grace, Close ends the connections, which cancels their requests'
	// contexts and with them their generations.
	if err := hs.Shutdown(graceCtx); err != nil {
		log.Warn("requests still running after the grace: ending them", "err", err)
		hs.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

// generateHandler streams the text model.Generate produces for ?prompt=
// (greedily, at most ?n= tokens, 64 by default) as plain text,
// flushing each piece. It passes the request's context: when the client
// goes away (or the server closes the connection) the context ends and
// Generate stops at the next token.
func generateHandler(m *model.Model, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		prompt := q.Get("prompt")
		if prompt == "" {
			http.Error(w, "prompt: required", http.StatusBadRequest)
			return
		}
		opts := model.GenerateOptions{MaxTokens: 64} // greedy: Temperature 0
		if s := q.Get("n"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				http.Error(w, fmt.Sprintf("n: %q is not a positive number of tokens", s), http.StatusBadRequest)
				return
			}
			opts.MaxTokens = n
		}
		if err := opts.Validate(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		flusher, _ := w.(http.Flusher)
		started := false
		res, err := m.Generate(r.Context(), prompt, opts, func(t model.Token) error {
			started = true
			if _, err := io.WriteString(w, t.Text); err != nil {
				return err
			}
			if flusher != nil {
				flusher.Flush()
			}
			return nil
		})
		log.Info("generate", "prompt_tokens", res.PromptTokens, "tokens", len(res.Tokens), "stopped", string(res.Reason))
		if err != nil && !started && r.Context().Err() == nil {
			status := http.StatusInternalServerError
			if errors.Is(err, model.ErrContextLength) || errors.Is(err, model.ErrOptions) {
				status = http.StatusBadRequest
			}
			http.Error(w, err.Error(), status)
		}
	}
}
