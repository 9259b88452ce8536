package model

import (
	"fmt"

	"github.com/hipgo/hipgo/model/tokenizer"
)

// hfCodec adapts a tokenizer.json tokenizer to textCodec.
type hfCodec struct{ *tokenizer.Tokenizer }

// newStream skips special tokens (as skip_special_tokens does), so chat
// markers and padding a model emits never reach the text.
func (c hfCodec) newStream() streamDecoder {
	return c.NewStreamDecoderWith(tokenizer.DecodeOptions{SkipSpecial: true})
}

func loadTokenizerFile(path string) (textCodec, error) {
	t, err := tokenizer.Load(path)
	if err != nil {
		return nil, fmt.Errorf("model: %w: %w", ErrTokenizer, err)
	}
	return hfCodec{t}, nil
}

func parseTokenizer(name string, data []byte) (textCodec, error) {
	t, err := tokenizer.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w: %w", name, ErrTokenizer, err)
	}
	return hfCodec{t}, nil
}

// Tokenizer returns the model's tokenizer, or nil when loaded WithoutTokenizer.
func (m *Model) Tokenizer() *tokenizer.Tokenizer {
	if c, ok := m.tok.(hfCodec); ok {
		return c.Tokenizer
	}
	return nil
}
