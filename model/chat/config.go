package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrNoTemplate: the tokenizer configuration carries no chat template (a
// base model, or a checkpoint saved without one).
var ErrNoTemplate = errors.New("chat: no chat template")

// TokenizerConfig is what a Hugging Face tokenizer_config.json says about
// chat: the template source and the special token strings.
type TokenizerConfig struct {
	Template string
	Tokens   Tokens
}

// ParseTokenizerConfig reads the chat fields of tokenizer_config.json:
// chat_template (a string, or a list of {name, template} from which
// "default" is taken) and bos_token and eos_token (a string, an added-token
// object with "content", or null). A missing chat_template is not an error:
// Template is then empty.
func ParseTokenizerConfig(data []byte) (TokenizerConfig, error) {
	var raw struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
		BOS          json.RawMessage `json:"bos_token"`
		EOS          json.RawMessage `json:"eos_token"`
	}
	var c TokenizerConfig
	if err := json.Unmarshal(data, &raw); err != nil {
		return c, fmt.Errorf("chat: tokenizer_config.json: %w", err)
	}
	var err error
	if c.Template, err = templateField(raw.ChatTemplate); err != nil {
		return c, fmt.Errorf("chat: tokenizer_config.json: chat_template: %w", err)
	}
	if c.Tokens.BOS, err = tokenField(raw.BOS); err != nil {
		return c, fmt.Errorf("chat: tokenizer_config.json: bos_token: %w", err)
	}
	if c.Tokens.EOS, err = tokenField(raw.EOS); err != nil {
		return c, fmt.Errorf("chat: tokenizer_config.json: eos_token: %w", err)
	}
	return c, nil
}

func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

func templateField(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw, &named); err != nil {
		return "", errors.New("neither a string nor a list of {name, template}")
	}
	var names []string
	for _, n := range named {
		if n.Name == "default" {
			return n.Template, nil
		}
		names = append(names, n.Name)
	}
	return "", fmt.Errorf("no template named \"default\" among %q", names)
}

func tokenField(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
		return "", errors.New("neither a string nor an object with \"content\"")
	}
	return *obj.Content, nil
}
