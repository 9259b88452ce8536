// Command generate streams text from a llama-family model, on the GPU when
// one is usable and otherwise on the CPU.
//
//	go run ./examples/generate                      # the embedded demo model
//	go run ./examples/generate -model DIR -prompt "Once upon a time" -n 100
//	go run ./examples/generate -model DIR -chat -system "Be brief." -prompt "What is the capital of France?"
//	go run ./examples/generate -device gpu          # the GPU, or an error naming why not
//	go run ./examples/generate -device mlx          # MLX through libmlxc (docs/mlx.md)
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
// Every flag is checked before the model loads, and the prompt is echoed
// only once the model has accepted it. -stop (repeatable) ends the text
// before the first of its strings.
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
	"math/rand/v2"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/hipgo/hipgo/internal/cli"
	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/chat"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		os.Exit(cli.ExitCode("generate", err, os.Stderr))
	}
}

// decimal is the float64 of f's shortest decimal form, so that a float32
// default prints as it is written (0.95, not 0.949999988079071) and parses
// back to the same float32.
func decimal(f float32) float64 {
	d, _ := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
	return d
}

// run is the whole program, separated from main so tests can drive it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	def := model.DefaultGenerateOptions()
	fl := flag.NewFlagSet("generate", flag.ContinueOnError)
	fl.SetOutput(stderr)
	dir := fl.String("model", "", "model directory (config.json, model.safetensors, tokenizer.json) or GGUF file; empty: the embedded demo model")
	prompt := fl.String("prompt", "And God said", "prompt text")
	n := fl.Int("n", def.MaxTokens, "maximum tokens to generate (0: until EOS or the context is full)")
	temp := fl.Float64("temp", decimal(def.Temperature), "temperature (0: greedy)")
	topK := fl.Int("top-k", def.TopK, "keep the k most probable tokens (0: off)")
	topP := fl.Float64("top-p", decimal(def.TopP), "keep the smallest set of tokens with this probability, in (0, 1] (1: off)")
	minP := fl.Float64("min-p", decimal(def.MinP), "keep tokens at least this fraction as probable as the best (0: off)")
	seed := fl.Int64("seed", -1, "random seed, 0 or more (-1: pick one and print it)")
	threads := fl.Int("threads", 0, "parallelism of each CPU matrix product (0: GOMAXPROCS)")
	device := fl.String("device", model.DeviceAuto, "where to run: auto (the GPU when one is usable), cpu, gpu or mlx")
	chatMode := fl.Bool("chat", false, "the prompt is a user message: format it with the model's chat template and print the reply")
	system := fl.String("system", "", "with -chat: a system message before the user's")
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
	if fl.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (the prompt goes in -prompt)", fl.Args())
	}
	if *system != "" && !*chatMode {
		return errors.New("-system needs -chat")
	}
	if *threads < 0 {
		return fmt.Errorf("-threads %d is negative (0: GOMAXPROCS): %w", *threads, model.ErrOptions)
	}
	if *seed < -1 {
		return fmt.Errorf("-seed %d: a seed is 0 or more, or -1 to pick one: %w", *seed, model.ErrOptions)
	}
	// GenerateOptions accepts TopP 0 when greedy (the zero value); the flag
	// says off with 1 at any temperature.
	if !(*topP > 0 && *topP <= 1) {
		return fmt.Errorf("-top-p %v is out of range (0, 1] (1: off): %w", *topP, model.ErrOptions)
	}
	if *seed == -1 {
		*seed = rand.Int64N(1 << 31)
	}
	gopts := model.GenerateOptions{
		MaxTokens:   *n,
		Temperature: float32(*temp),
		TopK:        *topK,
		TopP:        float32(*topP),
		MinP:        float32(*minP),
		Seed:        uint64(*seed),
		Stop:        stops,
	}
	// Every option is checked before the model loads or anything is printed.
	if err := gopts.Validate(); err != nil {
		return err
	}
	switch *device {
	case model.DeviceAuto, model.DeviceCPU, model.DeviceGPU, model.DeviceMLX:
	default:
		return fmt.Errorf("-device %q is not auto, cpu, gpu or mlx: %w", *device, model.ErrOptions)
	}

	bar := newProgressBar(stderr)
	opts := []model.Option{model.WithProgress(bar.update), model.WithThreads(*threads), model.WithDeviceMode(*device)}
	loadStart := time.Now()
	var m *model.Model
	var err error
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

	// The prompt is echoed with the first token, once the model has accepted
	// it (a prompt longer than the context is an error, not an echo).
	echo := !*chatMode
	echoPrompt := func() {
		if echo {
			fmt.Fprint(stdout, *prompt)
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
			return fmt.Errorf("-chat: %s: %w (it is a plain text model: drop -chat)", modelName(*dir), model.ErrNoChatTemplate)
		}
		var msgs []chat.Message
		if *system != "" {
			msgs = append(msgs, chat.Message{Role: "system", Content: *system})
		}
		msgs = append(msgs, chat.Message{Role: "user", Content: *prompt})
		res, err = m.Chat(ctx, msgs, gopts, emit)
	} else {
		res, err = m.Generate(ctx, *prompt, gopts, emit)
		if err == nil {
			echoPrompt() // nothing was generated
		}
	}
	if !echo { // a line was started: the prompt, or -chat's reply
		fmt.Fprintln(stdout)
	}
	fmt.Fprintf(stderr, "prompt: %d tokens, %.1f tokens/s; decode: %d tokens, %.1f tokens/s; stopped: %s; seed %d\n",
		res.PromptTokens, res.PromptTokensPerSecond(), len(res.Tokens), res.DecodeTokensPerSecond(), res.Reason, *seed)
	return err
}

// where says what the model runs on.
func where(m *model.Model) string {
	if b := m.Backend(); b != "cpu" {
		return "on " + b
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
