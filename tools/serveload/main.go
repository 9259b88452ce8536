// Command serveload drives a running examples/serve with concurrent
// streaming clients (internal/loadtest) and prints the summary lines the
// server's CI load test logs. It exits 1 when a request hung or got an
// answer that was neither a completion nor an OpenAI error.
//
//	serveload -url http://127.0.0.1:8080 -clients 64 -requests 20 -max-tokens 32
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/hipgo/hipgo/internal/loadtest"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8080", "the server")
	model := flag.String("model", "hipgo-demo", "model id")
	clients := flag.Int("clients", 64, "concurrent clients")
	requests := flag.Int("requests", 20, "requests per client")
	maxTokens := flag.Int("max-tokens", 32, "max_tokens of each request")
	timeout := flag.Duration("timeout", 2*time.Minute, "per request; past it a request counts as a hang")
	key := flag.String("api-key", "", "API key")
	flag.Parse()
	rep := loadtest.Run(context.Background(), loadtest.Config{BaseURL: *url, Model: *model, Clients: *clients, Requests: *requests, MaxTokens: *maxTokens, Timeout: *timeout, APIKey: *key})
	fmt.Printf("serveload %d clients x %d requests, max_tokens %d\n%s\n", *clients, *requests, *maxTokens, rep.Summary())
	for _, m := range rep.Malformed {
		fmt.Println("malformed:", m)
	}
	if rep.Hangs > 0 || len(rep.Malformed) > 0 {
		os.Exit(1)
	}
}
