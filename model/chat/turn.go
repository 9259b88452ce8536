package chat

import (
	"fmt"
	"strings"
)

// probeReply is an assistant reply no template writes by itself.
const probeReply = "hipgo-probe-reply-7f3a"

// EndOfTurn returns what the template writes right after an assistant
// reply: the end-of-turn marker and whatever follows it up to the next turn
// ("<|im_end|>\n" for SmolLM2 and Qwen2.5, "<|eot_id|>" for Llama 3, "</s>"
// for Mistral). It renders a user turn and an assistant turn and takes the
// text after the reply; a caller matches the tokenizer's special tokens
// against its start to find the token that ends a reply. It is empty when
// the template writes nothing after a reply.
func (t *Template) EndOfTurn() (string, error) {
	out, err := t.render([]Message{{Role: "user", Content: "hipgo-probe-question"}, {Role: "assistant", Content: probeReply}}, false)
	if err != nil {
		return "", fmt.Errorf("chat: finding the end-of-turn marker: %w", err)
	}
	i := strings.LastIndex(out, probeReply)
	if i < 0 {
		return "", fmt.Errorf("chat: finding the end-of-turn marker: the template dropped the assistant's reply: %w", ErrRender)
	}
	return out[i+len(probeReply):], nil
}
