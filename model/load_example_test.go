package model_test

import (
	"context"
	"fmt"
	"os"

	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/chat"
	"github.com/hipgo/hipgo/model/modeltest"
)

// Load a checkpoint directory and generate greedily. model/demo in this
// repository is such a directory (config.json, model.safetensors,
// tokenizer.json): the demo model, trained on the King James Bible. A
// program that embeds it uses model.LoadFS(demo.FS()) instead.
func ExampleLoad() {
	m, err := model.Load("demo", model.WithDeviceMode(model.DeviceCPU)) // DeviceAuto: the GPU when one is usable
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	// The zero GenerateOptions are greedy; DefaultGenerateOptions samples.
	res, err := m.Generate(context.Background(), "And God said", model.GenerateOptions{MaxTokens: 12}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q\n%s after %d tokens\n", res.Text, res.Reason, len(res.Tokens))
	// Output:
	// ", I will not go up with my father's concubine"
	// max_tokens after 12 tokens
}

// Chat formats a conversation with the model's chat template (here one
// supplied with WithChatTemplate; a checkpoint's own comes from
// tokenizer_config.json or chat_template.jinja) and generates the
// assistant's reply, stopping at the template's end-of-turn token. The
// model is a small random one, so the reply is noise; the prompt is what
// the template rendered.
func ExampleModel_Chat() {
	dir, err := os.MkdirTemp("", "model-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	spec := modeltest.SmolLMTiny()
	spec.ChatTokens = []string{"<|im_start|>", "<|im_end|>"} // special tokens the template writes
	if err := modeltest.Write(dir, spec); err != nil {
		fmt.Println(err)
		return
	}
	const chatML = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}" +
		"{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
	m, err := model.Load(dir, model.WithChatTemplate(chatML, chat.Tokens{}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	msgs := []chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}}
	prompt, err := m.ChatTemplate().Render(msgs, true)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(prompt)
	res, err := m.Chat(context.Background(), msgs, model.GenerateOptions{MaxTokens: 4}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	id, _ := m.EndOfTurnID()
	fmt.Println(res.Reason == model.StopMaxTokens || res.Reason == model.StopEOS, id == m.Tokenizer().Encode("<|im_end|>", false)[0])
	// Output:
	// <|im_start|>system
	// Be brief.<|im_end|>
	// <|im_start|>user
	// Hi<|im_end|>
	// <|im_start|>assistant
	// true true
}
