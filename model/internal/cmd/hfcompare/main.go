// Command hfcompare runs hipgo's CPU forward pass on a checkpoint for
// hf_compare.py, which checks it against transformers on the same files:
//
//	hfcompare -model DIR -prompt ids.json -n 32 -threads 4 -out OUTDIR
//	hfcompare -model FILE.gguf -prompt ids.json -text "..." -out OUTDIR
//
// -model is a checkpoint directory or a GGUF file. ids.json is a JSON array
// of prompt token ids; with -text the model's own tokenizer also encodes
// the text and result.json reports its ids (text_ids), so the caller can
// check the tokenizer against its reference; -texts does the same for each
// string of a JSON array (texts_ids). It writes OUTDIR/logits.f32,
// the float32 logits of every prompt position (little-endian, [T, vocab]
// row-major), and OUTDIR/result.json with the greedy continuation of n
// tokens, prefill and decode tokens/s with -threads threads (GOMAXPROCS), and
// what produced them. It is built with CGO_ENABLED=0 and carried to a
// machine without Go.
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/internal/cpu"
)

// Result is result.json.
type Result struct {
	Model               string     `json:"model"`
	PromptTokens        int        `json:"prompt_tokens"`
	Vocab               int        `json:"vocab"`
	Greedy              []uint32   `json:"greedy"`
	Threads             int        `json:"threads"`
	SIMD                string     `json:"simd"`
	WeightBytes         int64      `json:"weight_bytes"`
	LoadSeconds         float64    `json:"load_seconds"`
	PrefillTokensPerS   float64    `json:"prefill_tokens_per_s"`
	DecodeTokens        int        `json:"decode_tokens"`
	DecodeTokensPerS    float64    `json:"decode_tokens_per_s"`
	DecodeTokensPerSMed float64    `json:"decode_tokens_per_s_median"`
	GoVersion           string     `json:"go_version"`
	TextIDs             []uint32   `json:"text_ids,omitempty"`
	TextsIDs            [][]uint32 `json:"texts_ids,omitempty"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "hfcompare:", err)
		os.Exit(1)
	}
}

func run() error {
	dir := flag.String("model", "", "checkpoint directory or GGUF file")
	text := flag.String("text", "", "also encode this text with the model's tokenizer (result.json's text_ids)")
	textsPath := flag.String("texts", "", "also encode each string of this JSON array (result.json's texts_ids)")
	promptPath := flag.String("prompt", "", "JSON array of prompt token ids")
	n := flag.Int("n", 32, "greedy tokens to generate after the prompt")
	threads := flag.Int("threads", runtime.NumCPU(), "threads (sets GOMAXPROCS)")
	decode := flag.Int("decode-tokens", 64, "decode steps timed per run")
	runs := flag.Int("runs", 3, "timed decode runs (the best is reported)")
	out := flag.String("out", "", "output directory")
	kernels := flag.String("kernels", "", "kernel variant to measure (see cpu.SetKernels; empty: the default)")
	flag.Parse()
	if *dir == "" || *promptPath == "" || *out == "" || *threads < 1 || *n < 0 || *decode < 1 || *runs < 1 {
		flag.Usage()
		return errors.New("need -model, -prompt, -out and positive counts")
	}
	// Before the model exists, so its worker pool has exactly this many workers.
	runtime.GOMAXPROCS(*threads)
	if *kernels != "" {
		if err := cpu.SetKernels(*kernels); err != nil {
			return err
		}
	}

	data, err := os.ReadFile(*promptPath)
	if err != nil {
		return err
	}
	var prompt []uint32
	if err := json.Unmarshal(data, &prompt); err != nil {
		return fmt.Errorf("%s: %w", *promptPath, err)
	}
	if len(prompt) == 0 {
		return fmt.Errorf("%s: empty prompt", *promptPath)
	}
	start := time.Now()
	opts := []model.Option{model.WithThreads(*threads)}
	if *text == "" && *textsPath == "" {
		opts = append(opts, model.WithoutTokenizer())
	}
	m, err := model.Load(*dir, opts...)
	if err != nil {
		return err
	}
	res := Result{Model: *dir, PromptTokens: len(prompt), Vocab: m.Config().VocabSize, Threads: *threads,
		SIMD: cpu.SIMD(), WeightBytes: m.WeightBytes(), LoadSeconds: time.Since(start).Seconds(), GoVersion: runtime.Version()}
	if *text != "" {
		res.TextIDs = m.Tokenizer().Encode(*text, true)
	}
	if *textsPath != "" {
		data, err := os.ReadFile(*textsPath)
		if err != nil {
			return err
		}
		var texts []string
		if err := json.Unmarshal(data, &texts); err != nil {
			return fmt.Errorf("%s: %w", *textsPath, err)
		}
		for _, t := range texts {
			res.TextsIDs = append(res.TextsIDs, m.Tokenizer().Encode(t, true))
		}
	}
	ctx := context.Background()

	s := m.NewSession()
	start = time.Now()
	logits, err := s.Forward(ctx, prompt, true)
	if err != nil {
		return err
	}
	res.PrefillTokensPerS = float64(len(prompt)) / time.Since(start).Seconds()
	if err := writeLogits(filepath.Join(*out, "logits.f32"), logits); err != nil {
		return err
	}

	V := res.Vocab
	last := logits[(len(prompt)-1)*V:]
	for range *n {
		id := argmax(last)
		res.Greedy = append(res.Greedy, id)
		if s.Len() >= m.ContextLength() {
			break
		}
		if last, err = s.Forward(ctx, []uint32{id}, false); err != nil {
			return err
		}
	}

	// Decode speed: greedy single-token steps after the prompt, as
	// transformers' timing loop does; the best of several runs.
	var rates []float64
	for range *runs {
		s := m.NewSession()
		last, err := s.Forward(ctx, prompt, false)
		if err != nil {
			return err
		}
		steps := min(*decode, m.ContextLength()-len(prompt))
		start := time.Now()
		for range steps {
			if last, err = s.Forward(ctx, []uint32{argmax(last)}, false); err != nil {
				return err
			}
		}
		rates = append(rates, float64(steps)/time.Since(start).Seconds())
		res.DecodeTokens = steps
	}
	res.DecodeTokensPerS, res.DecodeTokensPerSMed = best(rates), median(rates)

	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(*out, "result.json"), js, 0o644)
}

func argmax(v []float32) uint32 {
	b := 0
	for i, x := range v {
		if x > v[b] {
			b = i
		}
	}
	return uint32(b)
}

func best(v []float64) float64 {
	b := math.Inf(-1)
	for _, x := range v {
		b = max(b, x)
	}
	return b
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func writeLogits(path string, v []float32) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	buf := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
	}
	return os.WriteFile(path, buf, 0o644)
}
