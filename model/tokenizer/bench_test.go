package tokenizer

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/hipgo/hipgo/internal/testenv"
)

// benchText is the book of Genesis (King James Bible, public domain) from
// Debian's bible-kjv, without the verse references: about 200 KB of plain
// English.
func benchText(b *testing.B) string {
	bible := testenv.LookPath(b, "bible")
	out, err := exec.Command(bible, "-f", "Gen1:1-Gen50:26").Output()
	testenv.NeedHost(b, err)
	var sb strings.Builder
	for _, line := range strings.Split(string(out), "\n") {
		if _, verse, ok := strings.Cut(line, " "); ok {
			sb.WriteString(verse)
			sb.WriteByte('\n')
		}
	}
	return sb.String()
}

// BenchmarkEncode measures Encode on plain English (MB/s). "warm" reuses the
// word cache across iterations, as a long-running server does; "cold" empties
// it before every iteration.
func BenchmarkEncode(b *testing.B) {
	text := benchText(b)
	tokenizers := map[string]func(testing.TB) *Tokenizer{
		"gpt2-style":   func(tb testing.TB) *Tokenizer { return gpt2StyleFixture().parse(tb) },
		"llama3-style": func(tb testing.TB) *Tokenizer { return llama3StyleFixture().parse(tb) },
		"qwen2-style":  func(tb testing.TB) *Tokenizer { return qwen2StyleFixture().parse(tb) },
		"llama3-real":  func(tb testing.TB) *Tokenizer { return loadFromEnv(tb, envLlama3) },
	}
	for name, load := range tokenizers {
		b.Run(name, func(b *testing.B) {
			tok := load(b)
			b.Run("warm", func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				for b.Loop() {
					tok.Encode(text, false)
				}
			})
			b.Run("cold", func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				for b.Loop() {
					b.StopTimer()
					tok.model.cache.mu.Lock()
					tok.model.cache.m = nil
					tok.model.cache.mu.Unlock()
					b.StartTimer()
					tok.Encode(text, false)
				}
			})
		})
	}
}

// BenchmarkDecode measures Decode of the encoded text.
func BenchmarkDecode(b *testing.B) {
	text := benchText(b)
	tok := llama3StyleFixture().parse(b)
	idList := tok.Encode(text, false)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.Decode(idList)
	}
}
