package model

import (
	"fmt"

	"github.com/hipgo/hipgo/model/chat"
)

// TextStream turns one sequence's generated tokens into text as Generate
// streams it: bytes of an incomplete UTF-8 character, and a tail that could
// still grow into a stop string, are held back, and text from a stop string
// on is never released. It is for callers that step a Batch themselves (a
// server); Generate and Chat use it too, so streaming reads the same
// everywhere. A TextStream is used by one goroutine at a time.
type TextStream struct {
	dec   streamDecoder // nil without a tokenizer
	stops stopMatcher
	done  bool
}

// NewTextStream starts the text of one sequence that ends at any of stop
// (no empty string; they are not part of the text). Without a tokenizer
// it releases no text.
func (m *Model) NewTextStream(stop []string) *TextStream {
	s := &TextStream{stops: stopMatcher{stops: stop}}
	if m.tok != nil {
		s.dec = m.tok.newStream()
	}
	return s
}

// Add feeds a generated token (not an end-of-sequence one: call Finish for
// that) and returns the text it releases. stopped reports that a stop string
// appeared: text is what came before it, and the sequence is over.
func (s *TextStream) Add(id uint32) (text string, stopped bool) {
	if s.done || s.dec == nil {
		return "", s.done
	}
	text, stopped = s.stops.push(s.dec.Add(id))
	s.done = stopped
	return text, stopped
}

// Finish ends the sequence (end of sequence, max tokens, a full context) and
// releases what was held back, an incomplete character as U+FFFD. stopped
// reports that the held-back text completed a stop string (text is then
// what came before it).
func (s *TextStream) Finish() (text string, stopped bool) {
	if s.done || s.dec == nil {
		return "", s.done
	}
	s.done = true
	text, stopped = s.stops.push(s.dec.Flush())
	if !stopped {
		text += s.stops.flush()
	}
	return text, stopped
}

// PromptTokens encodes a prompt as Generate does: with the tokenizer's
// special tokens, from BOS when the text encodes to nothing.
func (m *Model) PromptTokens(prompt string) ([]uint32, error) {
	if m.tok == nil {
		return nil, ErrNoTokenizer
	}
	ids := m.tok.Encode(prompt, true)
	if len(ids) == 0 && m.cfg.BOSTokenID >= 0 {
		ids = []uint32{uint32(m.cfg.BOSTokenID)}
	}
	return ids, nil
}

// ChatPrompt is the prompt Chat generates from: messages rendered by the
// chat template with the assistant header, encoded without adding special
// tokens. Stop a reply at EndOfTurnID as at EOS. Without a template it is
// ErrNoChatTemplate.
func (m *Model) ChatPrompt(messages []chat.Message) ([]uint32, error) {
	if m.tok == nil {
		return nil, ErrNoTokenizer
	}
	if m.chat == nil {
		if m.chatErr != nil {
			return nil, fmt.Errorf("%w: %w", ErrNoChatTemplate, m.chatErr)
		}
		return nil, ErrNoChatTemplate
	}
	text, err := m.chat.Render(messages, true)
	if err != nil {
		return nil, err
	}
	return m.tok.Encode(text, false), nil
}
