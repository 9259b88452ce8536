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

// loadTokenizerFile reads path and checks it against cfg, read from cfgName.
func loadTokenizerFile(path string, cfg *Config, cfgName string) (textCodec, error) {
	t, err := tokenizer.Load(path)
	if err != nil {
		return nil, fmt.Errorf("model: %w: %w", ErrTokenizer, err)
	}
	if err := checkTokenizerVocab(t, cfg, path, cfgName+"'s vocab_size"); err != nil {
		return nil, err
	}
	return hfCodec{t}, nil
}

// parseTokenizer parses the tokenizer.json name and checks it against cfg,
// read from cfgName.
func parseTokenizer(name string, data []byte, cfg *Config, cfgName string) (textCodec, error) {
	t, err := tokenizer.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w: %w", name, ErrTokenizer, err)
	}
	if err := checkTokenizerVocab(t, cfg, name, cfgName+"'s vocab_size"); err != nil {
		return nil, err
	}
	return hfCodec{t}, nil
}

// checkTokenizerVocab rejects a tokenizer that can produce an id with no
// embedding row or logit, which would otherwise fail mid-generation. Fewer
// tokens than vocab_size is normal: embedding matrices are often padded.
// tokName and sizeName say where the two numbers come from.
func checkTokenizerVocab(t *tokenizer.Tokenizer, cfg *Config, tokName, sizeName string) error {
	if n := t.VocabSize(); n > cfg.VocabSize {
		return fmt.Errorf("model: %w: %s has ids up to %d but %s is %d", ErrTokenizer, tokName, n-1, sizeName, cfg.VocabSize)
	}
	return nil
}

// Tokenizer returns the model's tokenizer, or nil when loaded WithoutTokenizer.
func (m *Model) Tokenizer() *tokenizer.Tokenizer {
	if c, ok := m.tok.(hfCodec); ok {
		return c.Tokenizer
	}
	return nil
}
