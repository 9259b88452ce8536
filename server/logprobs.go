package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/hipgo/hipgo/model/scheduler"
	"github.com/hipgo/hipgo/model/tokenizer"
)

// chatLogprobs is a chat choice's logprobs, OpenAI's shape.
type chatLogprobs struct {
	Content []chatTokenLogprob `json:"content"`
	Refusal []chatTokenLogprob `json:"refusal"` // always null: no refusals
}

type chatTokenLogprob struct {
	Token       string           `json:"token"`
	Logprob     float64          `json:"logprob"`
	Bytes       []int            `json:"bytes"`
	TopLogprobs []chatTopLogprob `json:"top_logprobs"`
}

type chatTopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// completionLogprobs is a completion choice's logprobs, OpenAI's legacy
// shape: parallel lists, one entry a token.
type completionLogprobs struct {
	Tokens        []string      `json:"tokens"`
	TokenLogprobs []float64     `json:"token_logprobs"`
	TopLogprobs   []topLogprobs `json:"top_logprobs"`
	TextOffset    []int         `json:"text_offset"`
}

// topLogprobs is one token's alternatives as a JSON object from token text
// to logprob, best first. Two ids with the same text (two byte tokens of
// invalid UTF-8) keep the first, the more probable.
type topLogprobs []chatTopLogprob

func (t topLogprobs) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	seen := map[string]bool{}
	for _, e := range t {
		if seen[e.Token] {
			continue
		}
		seen[e.Token] = true
		if len(seen) > 1 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(e.Token)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.WriteString(strconv.FormatFloat(e.Logprob, 'g', -1, 64))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// logprobWriter turns a request's token logprobs into the wire shapes; it
// keeps the text offset across a stream's chunks.
type logprobWriter struct {
	tok  *tokenizer.Tokenizer // nil: no pieces
	text []byte               // the pieces so far
}

// piece is a token's text and bytes: its tokenizer.Piece. A piece that is
// not valid UTF-8 (part of a character) is written "bytes:" and its bytes
// escaped (\xNN); its bytes are exact.
func (w *logprobWriter) piece(id uint32) (string, []int) {
	var b []byte
	if w.tok != nil {
		b, _ = w.tok.Piece(id)
	}
	ints := make([]int, len(b))
	for i, c := range b {
		ints[i] = int(c)
	}
	if utf8.Valid(b) {
		return string(b), ints
	}
	s := "bytes:"
	for _, c := range b {
		s += fmt.Sprintf("\\x%02x", c)
	}
	return s, ints
}

// wireLogprob is a logprob as JSON can carry it: -inf (a token the model
// gives no probability) is OpenAI's -9999.
func wireLogprob(x float32) float64 {
	if math.IsInf(float64(x), -1) || x < -9999 || x != x {
		return -9999
	}
	return float64(x)
}

func (w *logprobWriter) tops(lp scheduler.Logprob) []chatTopLogprob {
	out := make([]chatTopLogprob, len(lp.Top))
	for i, e := range lp.Top {
		s, b := w.piece(e.ID)
		out[i] = chatTopLogprob{Token: s, Logprob: wireLogprob(e.Logprob), Bytes: b}
	}
	return out
}

func (w *logprobWriter) chat(lps []scheduler.Logprob) *chatLogprobs {
	out := &chatLogprobs{Content: make([]chatTokenLogprob, len(lps))}
	for i, lp := range lps {
		s, b := w.piece(lp.ID)
		out.Content[i] = chatTokenLogprob{Token: s, Logprob: wireLogprob(lp.Logprob), Bytes: b, TopLogprobs: w.tops(lp)}
	}
	return out
}

// completion is the legacy shape; text_offset counts the characters
// (Unicode code points, as vLLM's Python strings do) of the tokens' pieces
// before each, which is the completion's text up to it; a token that
// starts inside a character has that character's offset.
func (w *logprobWriter) completion(lps []scheduler.Logprob) *completionLogprobs {
	out := &completionLogprobs{Tokens: []string{}, TokenLogprobs: []float64{}, TopLogprobs: []topLogprobs{}, TextOffset: []int{}}
	for _, lp := range lps {
		s, b := w.piece(lp.ID)
		out.Tokens = append(out.Tokens, s)
		out.TokenLogprobs = append(out.TokenLogprobs, wireLogprob(lp.Logprob))
		out.TopLogprobs = append(out.TopLogprobs, w.tops(lp))
		out.TextOffset = append(out.TextOffset, charOffset(w.text))
		for _, c := range b {
			w.text = append(w.text, byte(c))
		}
	}
	return out
}

// charOffset is the characters of text, a partial character at its end
// left out.
func charOffset(text []byte) int {
	for i := len(text) - 1; i >= 0 && i >= len(text)-utf8.UTFMax; i-- {
		if utf8.RuneStart(text[i]) {
			if !utf8.FullRune(text[i:]) {
				text = text[:i]
			}
			break
		}
	}
	return utf8.RuneCount(text)
}
