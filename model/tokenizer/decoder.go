package tokenizer

import (
	"strings"
)

// decoderKind is the tokenizer.json decoder.
type decoderKind uint8

const (
	// decoderNone: no decoder; `tokenizers` joins the tokens with spaces.
	decoderNone decoderKind = iota
	// decoderByteLevel maps each character back to its byte.
	decoderByteLevel
)

// DecodeOptions changes what Decode produces.
type DecodeOptions struct {
	// SkipSpecial drops the added tokens marked special (EOS, BOS, chat
	// markers), as skip_special_tokens does in `tokenizers`.
	SkipSpecial bool
}

// Decode turns ids back into text, keeping every token. Ids that are not in
// the vocabulary are skipped, as `tokenizers` does; bytes that do not form
// valid UTF-8 become U+FFFD.
func (t *Tokenizer) Decode(ids []uint32) string {
	return t.DecodeWith(ids, DecodeOptions{})
}

// DecodeWith is Decode with options.
func (t *Tokenizer) DecodeWith(ids []uint32, opts DecodeOptions) string {
	switch t.decoder {
	case decoderByteLevel:
		var buf []byte
		for _, id := range ids {
			if tok, ok := t.decodeToken(id, opts); ok {
				buf = appendTokenBytes(buf, tok)
			}
		}
		return string(appendLossy(nil, buf))
	default:
		var b strings.Builder
		first := true
		for _, id := range ids {
			if tok, ok := t.decodeToken(id, opts); ok {
				if !first {
					b.WriteByte(' ')
				}
				b.WriteString(tok)
				first = false
			}
		}
		return b.String()
	}
}

// Piece is the bytes id decodes to on its own (llama.cpp's token piece),
// special tokens included: for a byte-level tokenizer the token's bytes,
// which can be part of a UTF-8 character; otherwise its text. False for an
// id the vocabulary does not hold.
func (t *Tokenizer) Piece(id uint32) ([]byte, bool) {
	tok, ok := t.decodeToken(id, DecodeOptions{})
	if !ok {
		return nil, false
	}
	if t.decoder == decoderByteLevel {
		return appendTokenBytes(nil, tok), true
	}
	return []byte(tok), true
}

// decodeToken is the token text of id as decoding sees it, or false when the
// id is unknown or skipped.
func (t *Tokenizer) decodeToken(id uint32, opts DecodeOptions) (string, bool) {
	if int64(id) >= int64(len(t.tokens)) {
		return "", false
	}
	e := &t.tokens[id]
	if !e.known || (opts.SkipSpecial && e.special) {
		return "", false
	}
	return e.text, true
}

// StreamDecoder turns ids into text one at a time, for printing tokens as a
// model generates them. Byte-level tokens can end in the middle of a UTF-8
// character; Add holds such bytes back until the character is complete, so
// the concatenation of everything Add and Flush return equals Decode of all
// the ids. A StreamDecoder is not safe for concurrent use.
type StreamDecoder struct {
	t       *Tokenizer
	opts    DecodeOptions
	pending []byte
	started bool
}

// NewStreamDecoder returns a stream decoder that keeps every token.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder {
	return t.NewStreamDecoderWith(DecodeOptions{})
}

// NewStreamDecoderWith returns a stream decoder with options.
func (t *Tokenizer) NewStreamDecoderWith(opts DecodeOptions) *StreamDecoder {
	return &StreamDecoder{t: t, opts: opts}
}

// Add decodes one more id and returns the text that is now complete (often
// empty while a character is split across tokens).
func (d *StreamDecoder) Add(id uint32) string {
	tok, ok := d.t.decodeToken(id, d.opts)
	if !ok {
		return ""
	}
	if d.t.decoder != decoderByteLevel {
		if d.started {
			tok = " " + tok
		}
		d.started = true
		return tok
	}
	d.pending = appendTokenBytes(d.pending, tok)
	n := completeLen(d.pending)
	if n == 0 {
		return ""
	}
	out := string(appendLossy(nil, d.pending[:n]))
	d.pending = d.pending[:copy(d.pending, d.pending[n:])]
	return out
}

// Flush returns what is held back (an incomplete character, as U+FFFD) and
// resets the decoder for a new sequence.
func (d *StreamDecoder) Flush() string {
	out := string(appendLossy(nil, d.pending))
	d.pending = d.pending[:0]
	d.started = false
	return out
}
