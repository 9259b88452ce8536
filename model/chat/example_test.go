package chat_test

import (
	"fmt"

	"github.com/hipgo/hipgo/model/chat"
)

// A ChatML template (SmolLM2's and Qwen's format) rendered for a reply.
func ExampleTemplate_Render() {
	tpl, err := chat.New(`{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`,
		chat.Tokens{BOS: "<|im_start|>", EOS: "<|im_end|>"})
	if err != nil {
		fmt.Println(err)
		return
	}
	text, err := tpl.Render([]chat.Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "What is the capital of France?"},
	}, true)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(text)
	eot, _ := tpl.EndOfTurn()
	fmt.Printf("end of turn: %q\n", eot)
	// Output:
	// <|im_start|>system
	// Be brief.<|im_end|>
	// <|im_start|>user
	// What is the capital of France?<|im_end|>
	// <|im_start|>assistant
	// end of turn: "<|im_end|>\n"
}
