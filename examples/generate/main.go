// Command generate streams text from a llama-family model, on the GPU when
// one is usable and otherwise on the CPU.
//
//	go run ./examples/generate                      # the embedded demo model
//	go run ./examples/generate -model DIR -prompt "Once upon a time" -n 100
//	go run ./examples/generate -model DIR -chat -system "Be brief." -prompt "What is the capital of France?"
//	go run ./examples/generate -device gpu          # the GPU, or an error naming why not
//	go run ./examples/generate -device mlx          # MLX through libmlxc (docs/mlx.md)
//	go run ./examples/generate -prompt-file long.txt  # a prompt too long for the command line
//	echo "Once upon a time" | go run ./examples/generate -prompt -
//
// -device auto (the default) runs on the GPU that runtime.Open finds and
// otherwise on the CPU, saying in one line why; -device cpu never looks for
// a GPU; -device gpu fails when there is none; -device mlx runs the
// forward pass with MLX and fails when libmlxc cannot be loaded.
//
// DIR holds a Hugging Face checkpoint: config.json, model.safetensors (or a
// sharded model.safetensors.index.json) and tokenizer.json; -model can also
// name a GGUF file (llama.cpp's and ollama's format, quantized or not). Text goes to
// stdout as it is generated; a progress bar while a large model loads and the
// prompt and decode speeds at the end go to stderr.
//
// Every flag is checked before the model loads, and an error names the
// flag as typed; the prompt is echoed only once the model has accepted it.
// -stop (repeatable) ends the text before the first of its strings.
// SIGINT (Ctrl-C) and SIGTERM stop the run between tokens, with the speeds
// of what ran.
//
// With -chat the prompt is one user message (after the -system message, if
// given), formatted by the model's chat template (tokenizer_config.json or
// chat_template.jinja), and only the assistant's reply is printed, ending at
// the template's end-of-turn token. A model without a chat template (the
// demo model is one) is an error with -chat.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hipgo/hipgo/internal/cli"
	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/chat"
	"github.com/hipgo/hipgo/sampling"
)

func main() {
	ctx, stop := signalContext()
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		os.Exit(cli.ExitCode("generate", err, os.Stderr))
	}
}

// signalContext ends at SIGINT (Ctrl-C) or SIGTERM (kill, a service
// manager): either way the run stops between tokens and reports the text so
// far and the speeds.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// about is the first lines of -h.
const about = `generate streams text from a llama-family model (the embedded demo model
unless -model names one), on the GPU when one is usable, else on the CPU.`

// decimal is the float64 of f's shortest decimal form, so that a float32
// default prints as it is written (0.95, not 0.949999988079071) and parses
// back to the same float32.
func decimal(f float32) float64 {
	d, _ := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
	return d
}

// flagError is a flag value the command rejects, named as the user typed it.
func flagError(name string, v any, rule string) error {
	return fmt.Errorf("-%s %v: %s: %w", name, v, rule, model.ErrOptions)
}

// checkFloat checks a float flag as the float64 it was parsed to, then that
// float32 (what the model takes) keeps it on the same side of the range:
// -temp 1e308 overflows to +Inf and -top-p 1e-50 rounds to 0.
func checkFloat(name string, v float64, ok func(float64) bool, rule string) (float32, error) {
	if !ok(v) {
		return 0, flagError(name, v, rule)
	}
	f := float32(v)
	if !ok(float64(f)) || math.IsInf(float64(f), 0) {
		return 0, flagError(name, v, fmt.Sprintf("%s, and this is %v in float32 (the model's precision)", rule, f))
	}
	return f, nil
}

// readPrompt is -prompt's text, or the file -prompt-file names; "-" in
// either reads stdin. One trailing newline (what an editor or echo adds) is
// dropped from text that was read.
func readPrompt(prompt, file string, fileSet bool, stdin io.Reader) (string, error) {
	var data []byte
	var err error
	switch {
	case fileSet && file == "":
		return "", fmt.Errorf("-prompt-file: empty file name (- reads stdin): %w", model.ErrOptions)
	case fileSet && file == "-", !fileSet && prompt == "-":
		what := "-prompt -"
		if fileSet {
			what = "-prompt-file -"
		}
		if data, err = io.ReadAll(stdin); err != nil {
			return "", fmt.Errorf("%s: reading stdin: %w", what, err)
		}
	case fileSet:
		if data, err = os.ReadFile(file); err != nil {
			return "", fmt.Errorf("-prompt-file: %w", err)
		}
	default:
		return prompt, nil
	}
	s := string(data)
	s = strings.TrimSuffix(s, "\n")
	s = strings.TrimSuffix(s, "\r")
	return s, nil
}

// run is the whole program, separated from main so tests can drive it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runWithStdin(ctx, args, os.Stdin, stdout, stderr)
}

// runWithStdin is run reading "-prompt -" from stdin.
func runWithStdin(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	def := model.DefaultGenerateOptions()
	fl := flag.NewFlagSet("generate", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() {
		fmt.Fprintf(fl.Output(), "%s\n\nusage: go run ./examples/generate [flags]\n\n", about)
		fl.PrintDefaults()
	}
	dir := fl.String("model", "", "model directory (config.json, model.safetensors, tokenizer.json) or GGUF file; empty: the embedded demo model")
	prompt := fl.String("prompt", "And God said", "prompt text (-: read it from stdin)")
	promptFile := fl.String("prompt-file", "", "read the prompt from this file (-: stdin); one trailing newline is dropped")
	n := fl.Int("n", def.MaxTokens, "maximum tokens to generate (0: until EOS or the context is full)")
	temp := fl.Float64("temp", decimal(def.Temperature), "temperature (0: greedy)")
	topK := fl.Int("top-k", def.TopK, "keep the k most probable tokens (0: off)")
	topP := fl.Float64("top-p", decimal(def.TopP), "keep the smallest set of tokens with this probability, in (0, 1] (1: off)")
	minP := fl.Float64("min-p", decimal(def.MinP), "keep tokens at least this fraction as probable as the best, in [0, 1] (0: off)")
	seed := fl.Int64("seed", -1, "random seed of a sampled run, 0 or more (-1: pick one and print it)")
	threads := fl.Int("threads", 0, "parallelism of each CPU matrix product, at most GOMAXPROCS (0: GOMAXPROCS)")
	device := fl.String("device", model.DeviceAuto, "where to run: auto (the GPU when one is usable), cpu, gpu or mlx")
	chatMode := fl.Bool("chat", false, "the prompt is a user message: format it with the model's chat template and print the reply")
	system := fl.String("system", "", "with -chat: a system message before the user's (given empty, an empty one)")
	var stops []string
	fl.Func("stop", "end the text before this string (repeatable)", func(s string) error {
		if s == "" {
			return errors.New("empty stop string")
		}
		stops = append(stops, s)
		return nil
	})
	if err := cli.Parse(fl, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fl.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if fl.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (the prompt goes in -prompt or -prompt-file)", fl.Args())
	}
	if set["system"] && !*chatMode {
		return fmt.Errorf("-system needs -chat: %w", model.ErrOptions)
	}
	if set["prompt"] && set["prompt-file"] {
		return fmt.Errorf("-prompt and -prompt-file both given: pass one: %w", model.ErrOptions)
	}
	if *n < 0 {
		return flagError("n", *n, "is negative (0: until EOS or the context is full)")
	}
	temperature, err := checkFloat("temp", *temp, func(v float64) bool { return v >= 0 && !math.IsInf(v, 1) },
		"must be finite and 0 or more (0: greedy)")
	if err != nil {
		return err
	}
	if *topK < 0 {
		return flagError("top-k", *topK, "is negative (0: off)")
	}
	p, err := checkFloat("top-p", *topP, func(v float64) bool { return v > 0 && v <= 1 }, "must be in (0, 1] (1: off)")
	if err != nil {
		return err
	}
	// A min-p too small for float32 rounds to 0, off: it filtered nothing.
	mp, err := checkFloat("min-p", *minP, func(v float64) bool { return v >= 0 && v <= 1 }, "must be in [0, 1] (0: off)")
	if err != nil {
		return err
	}
	if *threads < 0 {
		return flagError("threads", *threads, "is negative (0: GOMAXPROCS)")
	}
	if *seed < -1 {
		return flagError("seed", *seed, "a seed is 0 or more, or -1 to pick one")
	}
	switch *device {
	case model.DeviceAuto, model.DeviceCPU, model.DeviceGPU, model.DeviceMLX:
	default:
		return flagError("device", fmt.Sprintf("%q", *device), "is not auto, cpu, gpu or mlx")
	}
	greedy := sampling.Params{Temperature: temperature}.Greedy()
	if *seed == -1 {
		*seed = rand.Int64N(1 << 31)
	}
	gopts := model.GenerateOptions{
		MaxTokens:   *n,
		Temperature: temperature,
		TopK:        *topK,
		TopP:        p,
		MinP:        mp,
		Seed:        uint64(*seed),
		Stop:        stops,
	}
	// The flags above cover every option; this is the library's own check.
	if err := gopts.Validate(); err != nil {
		return err
	}
	text, err := readPrompt(*prompt, *promptFile, set["prompt-file"], stdin)
	if err != nil {
		return err
	}

	bar := newProgressBar(stderr)
	opts := []model.Option{model.WithProgress(bar.update), model.WithThreads(*threads), model.WithDeviceMode(*device)}
	loadStart := time.Now()
	var m *model.Model
	if *dir == "" {
		fsys, derr := demoFS()
		if derr != nil {
			return derr
		}
		m, err = model.LoadFS(fsys, opts...)
	} else {
		m, err = model.Load(*dir, opts...)
	}
	bar.done()
	if err != nil {
		return err
	}
	defer m.Close()
	if why := m.CPUReason(); why != nil {
		fmt.Fprintf(stderr, "running on the CPU: %v\n", why)
	}
	fmt.Fprintf(stderr, "loaded %s in %.2fs (%d MB of weights, %s)\n",
		modelName(*dir), time.Since(loadStart).Seconds(), m.WeightBytes()>>20, where(m))
	if m.Backend() == "cpu" && *threads > m.Threads() {
		fmt.Fprintf(stderr, "-threads %d: this process runs at most %d at once (GOMAXPROCS), so it uses %d\n", *threads, m.Threads(), m.Threads())
	}

	// The prompt is echoed with the first token, once the model has accepted
	// it (a prompt longer than the context is an error, not an echo).
	echo := !*chatMode
	echoPrompt := func() {
		if echo {
			fmt.Fprint(stdout, text)
			echo = false
		}
	}
	emit := func(t model.Token) error {
		echoPrompt()
		_, err := io.WriteString(stdout, t.Text)
		return err
	}
	var res model.Result
	if *chatMode {
		if m.ChatTemplate() == nil {
			if cerr := m.ChatTemplateError(); cerr != nil {
				return fmt.Errorf("-chat: %s: %w: %w", modelName(*dir), model.ErrNoChatTemplate, cerr)
			}
			return fmt.Errorf("-chat: %s: %w (it is a plain text model: drop -chat)", modelName(*dir), model.ErrNoChatTemplate)
		}
		var msgs []chat.Message
		if set["system"] {
			msgs = append(msgs, chat.Message{Role: "system", Content: *system})
		}
		msgs = append(msgs, chat.Message{Role: "user", Content: text})
		res, err = m.Chat(ctx, msgs, gopts, emit)
	} else {
		res, err = m.Generate(ctx, text, gopts, emit)
		if err == nil {
			echoPrompt() // nothing was generated
		}
	}
	if !echo { // a line was started: the prompt, or -chat's reply
		fmt.Fprintln(stdout)
	}
	if res.PromptDuration == 0 && res.Reason != model.StopCancelled {
		return err // the prompt never ran (refused, or failed in the prefill): no speeds to report
	}
	line := fmt.Sprintf("prompt: %d tokens, %.1f tokens/s; decode: %d tokens, %.1f tokens/s; stopped: %s",
		res.PromptTokens, res.PromptTokensPerSecond(), len(res.Tokens), res.DecodeTokensPerSecond(), res.Reason)
	if !greedy {
		line += fmt.Sprintf("; seed %d", *seed)
	}
	fmt.Fprintln(stderr, line)
	return err
}

// where says what the model runs on.
func where(m *model.Model) string {
	if b := m.Backend(); b != "cpu" {
		return "on " + b
	}
	if m.Threads() == 1 {
		return "on the CPU, 1 thread"
	}
	return fmt.Sprintf("on the CPU, %d threads", m.Threads())
}

func modelName(dir string) string {
	if dir == "" {
		return "the demo model"
	}
	return dir
}

// demoFS returns the embedded demo model's files (see demo.go).
func demoFS() (fs.FS, error) {
	if demoModel == nil {
		return nil, errors.New("no -model given and this build has no demo model (model/demo)")
	}
	return demoModel(), nil
}
