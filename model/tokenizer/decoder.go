package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// decoderKind is the tokenizer.json decoder.
type decoderKind uint8

const (
	// decoderNone: no decoder; `tokenizers` joins the tokens with spaces.
	decoderNone decoderKind = iota
	// decoderByteLevel maps each character back to its byte.
	decoderByteLevel
	// decoderChain runs decodeSteps over the tokens and joins the result
	// (the SentencePiece-style decoders: Replace, ByteFallback, Fuse,
	// Strip, Metaspace).
	decoderChain
)

// decoder is the parsed tokenizer.json decoder.
type decoder struct {
	kind  decoderKind
	steps []decodeStep // decoderChain only
	// streamWhole: the chain is not local enough for the stream decoder's
	// window (a Strip of more than one leading character or of trailing
	// ones), so a StreamDecoder returns everything from Flush.
	streamWhole bool
	// byteRuns: the chain has ByteFallback, whose output for a run of byte
	// tokens is only known once the run ends.
	byteRuns bool
}

// decodeStep is one decoder of a chain: `tokenizers`' decode_chain, which
// maps the list of token strings to a new list.
type decodeStep interface {
	decodeChain(tokens []string) []string
}

// replaceDecoder replaces a literal string in every token.
type replaceDecoder struct{ old, new string }

func (r replaceDecoder) decodeChain(tokens []string) []string {
	for i, t := range tokens {
		tokens[i] = strings.ReplaceAll(t, r.old, r.new)
	}
	return tokens
}

// byteFallbackDecoder turns runs of byte tokens (<0xNN>) into the text of
// their bytes: valid UTF-8 as one string, anything else as one U+FFFD per
// byte (not per invalid sequence, unlike the ByteLevel decoder).
type byteFallbackDecoder struct{}

func (byteFallbackDecoder) decodeChain(tokens []string) []string {
	out := make([]string, 0, len(tokens))
	var run []byte
	flush := func() {
		if len(run) == 0 {
			return
		}
		if utf8.Valid(run) {
			out = append(out, string(run))
		} else {
			for range run {
				out = append(out, "\uFFFD")
			}
		}
		run = run[:0]
	}
	for _, t := range tokens {
		if b, ok := byteToken(t); ok {
			run = append(run, b)
			continue
		}
		flush()
		out = append(out, t)
	}
	flush()
	return out
}

// byteToken parses a byte token as `tokenizers` does: six bytes, "<0x",
// two characters that Rust's u8::from_str_radix(_, 16) accepts (which
// allows a leading '+'), ">".
func byteToken(t string) (byte, bool) {
	if len(t) != 6 || !strings.HasPrefix(t, "<0x") || t[5] != '>' {
		return 0, false
	}
	digits := t[3:5]
	if digits[0] == '+' {
		digits = digits[1:]
	}
	var v byte
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | c
	}
	return v, true
}

// fuseDecoder joins every token into one.
type fuseDecoder struct{}

func (fuseDecoder) decodeChain(tokens []string) []string {
	return []string{strings.Join(tokens, "")}
}

// stripDecoder removes up to start leading and stop trailing copies of
// content from every token.
type stripDecoder struct {
	content     rune
	start, stop int
}

func (s stripDecoder) decodeChain(tokens []string) []string {
	for i, t := range tokens {
		for n := 0; n < s.start; n++ {
			r, size := utf8.DecodeRuneInString(t)
			if size == 0 || r != s.content {
				break
			}
			t = t[size:]
		}
		for n := 0; n < s.stop; n++ {
			r, size := utf8.DecodeLastRuneInString(t)
			if size == 0 || r != s.content {
				break
			}
			t = t[:len(t)-size]
		}
		tokens[i] = t
	}
	return tokens
}

// metaspaceDecoder turns the replacement character back into spaces; in the
// first token it is dropped instead, unless the prepend scheme is "never".
type metaspaceDecoder struct {
	replacement rune
	scheme      prependScheme
}

func (m metaspaceDecoder) decodeChain(tokens []string) []string {
	for i, t := range tokens {
		with := " "
		if i == 0 && m.scheme != prependNever {
			with = ""
		}
		tokens[i] = strings.ReplaceAll(t, string(m.replacement), with)
	}
	return tokens
}

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
	switch t.decoder.kind {
	case decoderByteLevel:
		var buf []byte
		for _, id := range ids {
			if tok, ok := t.decodeToken(id, opts); ok {
				buf = appendTokenBytes(buf, tok)
			}
		}
		return string(appendLossy(nil, buf))
	case decoderChain:
		tokens := make([]string, 0, len(ids))
		for _, id := range ids {
			if tok, ok := t.decodeToken(id, opts); ok {
				tokens = append(tokens, tok)
			}
		}
		for _, st := range t.decoder.steps {
			tokens = st.decodeChain(tokens)
		}
		return strings.Join(tokens, "")
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
// which can be part of a UTF-8 character; for a byte-fallback token
// (<0xNN>) its byte; otherwise its text. False for an id the vocabulary
// does not hold.
func (t *Tokenizer) Piece(id uint32) ([]byte, bool) {
	tok, ok := t.decodeToken(id, DecodeOptions{})
	if !ok {
		return nil, false
	}
	if t.decoder.kind == decoderByteLevel {
		return appendTokenBytes(nil, tok), true
	}
	if b, ok := byteToken(tok); ok && t.decoder.byteRuns {
		return []byte{b}, true
	}
	return []byte(tok), true
}

// TextBytes is the bytes id adds to a decoded text after other tokens
// (where Piece is the token on its own): for a byte-level tokenizer the
// same, for a SentencePiece-style decoder chain with its ▁ turned into a
// space (and not dropped, as it is at the start of a text), for a byte
// token its byte. False for special tokens and ids the vocabulary does
// not hold. Constrained decoding matches these bytes against a grammar.
func (t *Tokenizer) TextBytes(id uint32) ([]byte, bool) {
	tok, ok := t.decodeToken(id, DecodeOptions{SkipSpecial: true})
	if !ok {
		return nil, false
	}
	switch t.decoder.kind {
	case decoderByteLevel:
		return appendTokenBytes(nil, tok), true
	case decoderChain:
		if b, ok := byteToken(tok); ok && t.decoder.byteRuns {
			return []byte{b}, true
		}
		// Decode it after a plain token, which nothing strips or joins
		// with, and keep what it added.
		tokens := []string{"a", tok}
		for _, st := range t.decoder.steps {
			tokens = st.decodeChain(tokens)
		}
		s := strings.Join(tokens, "")
		if !strings.HasPrefix(s, "a") {
			return nil, false
		}
		return []byte(s[1:]), true
	}
	return []byte(" " + tok), true // no decoder: tokens joined with spaces
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
// model generates them. It holds text back until later tokens cannot change
// it (bytes of a UTF-8 character split across byte-level tokens, a run of
// <0xNN> byte tokens), so the concatenation of everything Add and Flush
// return equals Decode of all the ids. A StreamDecoder is not safe for
// concurrent use.
type StreamDecoder struct {
	t       *Tokenizer
	opts    DecodeOptions
	pending []byte
	started bool
	// The decoder chain's window, as in `tokenizers`' DecodeStream: window
	// holds the ids from the last text returned on; the first prefixLen
	// of them decode to prefix, which was returned already.
	window    []uint32
	prefixLen int
	prefix    string
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
	switch d.t.decoder.kind {
	case decoderByteLevel:
		d.pending = appendTokenBytes(d.pending, tok)
		n := completeLen(d.pending)
		if n == 0 {
			return ""
		}
		out := string(appendLossy(nil, d.pending[:n]))
		d.pending = d.pending[:copy(d.pending, d.pending[n:])]
		return out
	case decoderChain:
		d.window = append(d.window, id)
		if d.t.decoder.streamWhole {
			return ""
		}
		if _, isByte := byteToken(tok); isByte && d.t.decoder.byteRuns {
			return ""
		}
		// Every decoder of the chain works per token, per run of byte
		// tokens or (Metaspace, Strip) on the first token alone, so with
		// the window starting at a token already returned, its text is the
		// returned prefix followed by the new text.
		text := d.t.DecodeWith(d.window, d.opts)
		out := strings.TrimPrefix(text, d.prefix)
		d.window = d.window[:copy(d.window, d.window[d.prefixLen:])]
		d.prefixLen = len(d.window)
		d.prefix = d.t.DecodeWith(d.window, d.opts)
		return out
	default:
		if d.started {
			tok = " " + tok
		}
		d.started = true
		return tok
	}
}

// Flush returns what is held back (an incomplete character as U+FFFD) and
// resets the decoder for a new sequence.
func (d *StreamDecoder) Flush() string {
	out := string(appendLossy(nil, d.pending))
	if len(d.window) > d.prefixLen {
		out += strings.TrimPrefix(d.t.DecodeWith(d.window, d.opts), d.prefix)
	}
	d.pending = d.pending[:0]
	d.window, d.prefixLen, d.prefix = d.window[:0], 0, ""
	d.started = false
	return out
}
