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

// A Batch steps several sequences together, the loop a server runs for
// continuous batching: sequences join with Add, each Step gives every
// sequence one token, and the caller removes a sequence when it is done
// (here after a fixed number of tokens; a server also checks IsEOS, stop
// strings and BatchToken.Full).
func ExampleBatch() {
	dir, err := os.MkdirTemp("", "model-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	if err := modeltest.Write(dir, modeltest.Llama3Tiny()); err != nil {
		fmt.Println(err)
		return
	}
	m, err := model.Load(dir, model.WithoutTokenizer(), model.WithDeviceMode(model.DeviceCPU))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()

	b := m.NewBatch()
	defer b.Close()
	want := map[model.SeqID]int{} // tokens each sequence still wants
	for i, prompt := range [][]uint32{{1, 2, 3}, {4, 5, 6, 7, 8, 9}} {
		id, err := b.Add(prompt, model.GenerateOptions{Temperature: 0.8, TopP: 1, Seed: uint64(i)})
		if err != nil {
			fmt.Println(err)
			return
		}
		want[id] = 3 + 2*i
	}
	steps := 0
	for b.Len() > 0 {
		if steps == 2 { // a sequence joins between steps
			id, err := b.Add([]uint32{10, 11}, model.GenerateOptions{})
			if err != nil {
				fmt.Println(err)
				return
			}
			want[id] = 2
		}
		toks, err := b.Step(context.Background())
		if err != nil {
			fmt.Println(err)
			return
		}
		steps++
		for _, t := range toks {
			if want[t.Seq]--; want[t.Seq] == 0 {
				_ = b.Remove(t.Seq)
			}
		}
	}
	fmt.Println("steps:", steps)
	// Output: steps: 5
}
