// Command mktestmodel writes a random llama-family checkpoint (config.json,
// model.safetensors, tokenizer.json) for tests, benchmarks and trying
// examples/generate without a real model:
//
//	go run ./model/internal/cmd/mktestmodel -preset smollm135m -out /tmp/smol
//	go run ./examples/generate -model /tmp/smol
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/model/safetensors"
)

var presets = map[string]func() modeltest.Spec{
	"llama3-tiny": modeltest.Llama3Tiny,
	"qwen2-tiny":  modeltest.Qwen2Tiny,
	"qwen3-tiny":  modeltest.Qwen3Tiny,
	"gemma3-tiny": modeltest.Gemma3Tiny,
	// Gemma 3 variants: soft-capping, biases, untied, transformers 5's
	// config; an attention scale other than head_dim's.
	"gemma3-tiny-softcap": modeltest.Gemma3TinySoftcap,
	"gemma3-tiny-scalar":  modeltest.Gemma3TinyScalar,
	"gemma2-tiny":         modeltest.Gemma2Tiny,
	// Mistral v0.3 (sliding_window null) and 7B v0.1's window.
	"mistral-tiny":        modeltest.MistralTiny,
	"mistral-tiny-window": modeltest.MistralTinyWindow,
	// Phi-3: fused weights, partial rotary, LongRoPE from position 32.
	"phi3-tiny":   modeltest.Phi3Tiny,
	"smollm-tiny": modeltest.SmolLMTiny,
	"smollm135m":  modeltest.SmolLM135M,
	"demo-shaped": modeltest.DemoShaped,
}

func main() {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	preset := flag.String("preset", "smollm-tiny", "model shape: "+strings.Join(names, ", "))
	out := flag.String("out", "", "output directory (required)")
	dtype := flag.String("dtype", "", "F32, F16 or BF16 (default: the preset's)")
	seed := flag.Uint64("seed", 0, "weight seed (default: the preset's)")
	shard := flag.Int("shard", 0, "tensors per shard (0: one file)")
	tie := flag.Bool("tie", false, "tie the output head to the embeddings (default: the preset's)")
	flag.Parse()
	mk, ok := presets[*preset]
	if !ok || *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	s := mk()
	if *dtype != "" {
		s.DType = safetensors.DType(strings.ToUpper(*dtype))
	}
	if *seed != 0 {
		s.Seed = *seed
	}
	s.ShardTensors = *shard
	s.Tie = s.Tie || *tie
	if err := modeltest.Write(*out, s); err != nil {
		fmt.Fprintln(os.Stderr, "mktestmodel:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s model to %s\n", *preset, *out)
}
