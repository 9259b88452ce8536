package model_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/modeltest"
)

// Load a checkpoint directory and stream a generation. The model here is a
// small random one, so the text is noise; the stop reason and token count
// are what this example can promise.
func ExampleModel_Generate() {
	dir, err := os.MkdirTemp("", "model-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	if err := modeltest.Write(dir, modeltest.SmolLMTiny()); err != nil {
		fmt.Println(err)
		return
	}

	m, err := model.Load(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	var streamed strings.Builder
	res, err := m.Generate(context.Background(), "In the beginning", model.GenerateOptions{
		MaxTokens:   8,
		Temperature: 0.8,
		TopP:        0.95,
		Seed:        42,
	}, func(t model.Token) error {
		streamed.WriteString(t.Text) // a real program prints t.Text as it arrives
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Reason, len(res.Tokens), streamed.String() == res.Text)
	// Output: max_tokens 8 true
}

// A Session runs the forward pass directly, for callers with their own
// sampling loop: here, the logits of every prompt position.
func ExampleSession_Forward() {
	dir, err := os.MkdirTemp("", "model-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	spec := modeltest.Qwen2Tiny()
	if err := modeltest.Write(dir, spec); err != nil {
		fmt.Println(err)
		return
	}
	m, err := model.Load(dir, model.WithoutTokenizer())
	if err != nil {
		fmt.Println(err)
		return
	}
	s := m.NewSession()
	logits, err := s.Forward(context.Background(), []uint32{1, 2, 3}, true)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(logits) == 3*m.Config().VocabSize, s.Len())
	// Output: true 3
}
