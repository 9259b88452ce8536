package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hipgo/hipgo/internal/cli"
	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/runtime"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		os.Exit(cli.ExitCode("decodebench", err, os.Stderr))
	}
}

type options struct {
	dir, device, label   string
	kvCache              model.KVCacheType
	batches              []int
	prompt, gen, prefill int
	runs                 int
	watchdog             time.Duration
}

func parse(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("decodebench", flag.ContinueOnError)
	fs.StringVar(&o.dir, "model", "", "checkpoint directory or GGUF file (required)")
	fs.StringVar(&o.device, "device", "auto", "auto, cpu or gpu")
	fs.StringVar(&o.label, "label", "", "name printed with each line (default: the model path)")
	kv := fs.String("kv-cache", "", "KV cache type: f32 or f16 (default: the backend's)")
	batch := fs.String("batch", "1,32", "comma-separated batch sizes")
	fs.IntVar(&o.prompt, "prompt", 16, "prompt tokens per sequence before decode")
	fs.IntVar(&o.gen, "new", 128, "decode steps timed per run")
	fs.IntVar(&o.prefill, "prefill", 512, "prompt length of the prefill measurement (0: none)")
	fs.IntVar(&o.runs, "runs", 3, "runs per measurement; the median is printed")
	fs.DurationVar(&o.watchdog, "watchdog", 30*time.Second,
		"bound on each wait for the GPU, so that a hung kernel ends the run with an error (0: none; "+runtime.EnvWatchdog+" overrides it)")
	if err := cli.Parse(fs, args); err != nil {
		return o, err
	}
	if o.dir == "" {
		return o, errors.New("-model is required")
	}
	for _, f := range strings.Split(*batch, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return o, fmt.Errorf("-batch %q: want positive integers", *batch)
		}
		o.batches = append(o.batches, n)
	}
	switch {
	case o.prompt < 1 || o.gen < 1 || o.runs < 1 || o.prefill < 0:
		return o, errors.New("-prompt, -new and -runs must be at least 1, -prefill at least 0")
	case o.watchdog < 0:
		return o, fmt.Errorf("-watchdog %v: want 0 or more", o.watchdog)
	}
	if o.label == "" {
		o.label = o.dir
	}
	o.kvCache = model.KVCacheType(*kv)
	return o, nil
}

// setWatchdog makes d the runtime's watchdog (runtime.Open reads
// HIPGO_GPU_WATCHDOG) unless the environment already sets one. Without it a
// hung kernel stalls a benchmark silently until whoever runs it gives up.
func setWatchdog(d time.Duration) {
	if os.Getenv(runtime.EnvWatchdog) == "" && d > 0 {
		os.Setenv(runtime.EnvWatchdog, d.String())
	}
}

// result is one JSON line.
type result struct {
	Tool         string    `json:"tool"`
	Model        string    `json:"model"`
	Device       string    `json:"device"`
	Phase        string    `json:"phase"` // decode or prefill
	Batch        int       `json:"batch"`
	Prompt       int       `json:"prompt"`
	KVCache      string    `json:"kv_cache,omitempty"`
	New          int       `json:"new,omitempty"`
	TokensPerSec float64   `json:"tokens_per_s"`
	MsPerStep    float64   `json:"ms_per_step"`
	WeightBytes  int64     `json:"weight_bytes"`
	Runs         []float64 `json:"runs_tokens_per_s"`
}

func run(args []string, stdout io.Writer) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	setWatchdog(o.watchdog)
	ctxLen := max(o.prompt+o.gen+2, o.prefill+2)
	maxB := slices.Max(o.batches)
	m, err := model.Load(o.dir, model.WithoutTokenizer(), model.WithDeviceMode(o.device),
		model.WithContextLength(ctxLen), model.WithKVCacheTokens(poolTokens(maxB, ctxLen)), model.WithKVCacheType(o.kvCache))
	if err != nil {
		return err
	}
	defer m.Close()
	fmt.Fprintf(os.Stderr, "decodebench: %s on %s, %d weight bytes\n", o.label, m.Backend(), m.WeightBytes())
	ctx := context.Background()
	vocab := m.Config().VocabSize
	rng := rand.New(rand.NewPCG(1, 2))
	prompt := func(n int) []uint32 {
		p := make([]uint32, n)
		for i := range p {
			p[i] = uint32(rng.IntN(vocab))
		}
		return p
	}
	emit := func(r result) error {
		r.Tool, r.Model, r.Device, r.WeightBytes, r.KVCache = "hipgo", o.label, m.Backend(), m.WeightBytes(), string(o.kvCache)
		slices.Sort(r.Runs)
		r.TokensPerSec = r.Runs[len(r.Runs)/2]
		line, err := json.Marshal(r)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, string(line))
		return nil
	}
	// One untimed warm-up run of each shape first: the first steps load
	// kernels and grow scratch memory.
	for _, B := range o.batches {
		r := result{Phase: "decode", Batch: B, Prompt: o.prompt, New: o.gen}
		for i := range o.runs + 1 {
			tps, err := decode(ctx, m, B, o.prompt, o.gen, prompt)
			if err != nil {
				return fmt.Errorf("decode at batch %d: %w", B, err)
			}
			if i > 0 {
				r.Runs = append(r.Runs, tps)
			}
		}
		r.MsPerStep = 1000 * float64(B) / median(r.Runs)
		if err := emit(r); err != nil {
			return err
		}
	}
	if o.prefill > 0 {
		r := result{Phase: "prefill", Batch: 1, Prompt: o.prefill}
		for i := range o.runs + 1 {
			b := m.NewBatch()
			if _, err := b.Add(prompt(o.prefill), model.GenerateOptions{}); err != nil {
				return err
			}
			t0 := time.Now()
			_, err := b.Step(ctx) // the prompt's forward and its first token
			d := time.Since(t0)
			b.Close()
			if err != nil {
				return fmt.Errorf("prefill: %w", err)
			}
			if i > 0 {
				r.Runs = append(r.Runs, float64(o.prefill)/d.Seconds())
			}
		}
		r.MsPerStep = 1000 * float64(o.prefill) / median(r.Runs)
		if err := emit(r); err != nil {
			return err
		}
	}
	return nil
}

// decode prefills B sequences (untimed), then times gen greedy steps and
// returns tokens per second over the batch.
func decode(ctx context.Context, m *model.Model, B, promptLen, gen int, prompt func(int) []uint32) (float64, error) {
	b := m.NewBatch()
	defer b.Close()
	for range B {
		if _, err := b.Add(prompt(promptLen), model.GenerateOptions{}); err != nil {
			return 0, err
		}
	}
	if _, err := b.Step(ctx); err != nil {
		return 0, err
	}
	t0 := time.Now()
	for range gen {
		if _, err := b.Step(ctx); err != nil {
			return 0, err
		}
	}
	return float64(B*gen) / time.Since(t0).Seconds(), nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// poolTokens sizes the KV pool for b sequences of up to ctxLen tokens each:
// every sequence holds whole blocks.
func poolTokens(b, ctxLen int) int {
	return b * ((ctxLen + model.KVBlockTokens - 1) / model.KVBlockTokens) * model.KVBlockTokens
}
