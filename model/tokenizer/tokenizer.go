package tokenizer

import (
	"errors"
	"os"
	"sync"
)

// Tokenizer encodes text to token ids and back for one tokenizer.json. It is
// immutable after loading (apart from an internal cache) and safe for
// concurrent use.
type Tokenizer struct {
	model      *bpeModel
	added      addedVocab
	addedIDs   map[string]uint32 // added token content -> id
	normalizer normalizer        // nil: none
	steps      []preTokenizer    // the pre-tokenizer, flattened
	// byteLevelAtModel: the last pre-tokenizer step is ByteLevel, and the
	// byte-to-character mapping is done per word into a reused buffer.
	byteLevelAtModel bool
	template         template // special tokens added when asked for
	decoder          decoder
	tokens           []tokenEntry // by id
	special          []uint32     // ids of special tokens, ascending
}

// tokenEntry is what an id decodes to.
type tokenEntry struct {
	text    string
	known   bool
	special bool
}

// Load reads and parses a tokenizer.json file. Errors are *Error values that
// name the file.
func Load(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Reason: "cannot read tokenizer file", Cause: err}
	}
	t, err := Parse(data)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.File = path
		}
		return nil, err
	}
	return t, nil
}

// encodeState holds one Encode call's reusable buffers.
type encodeState struct {
	segs, subSegs []segment
	pieces, next  []string
	word          []byte
}

var encodeStatePool = sync.Pool{New: func() any { return new(encodeState) }}

// Encode returns the token ids of text. With addSpecial the post-processor's
// template adds its special tokens (for Llama 3, <|begin_of_text|> first).
// Added and special tokens written in the text are recognised as single
// tokens, as in `tokenizers`.
func (t *Tokenizer) Encode(text string, addSpecial bool) []uint32 {
	st := encodeStatePool.Get().(*encodeState)
	ids := t.encode(st, make([]uint32, 0, len(text)/4+4), text)
	clear(st.pieces[:cap(st.pieces)])
	clear(st.next[:cap(st.next)])
	encodeStatePool.Put(st)
	if addSpecial && t.template != nil {
		ids = t.template.apply(ids)
	}
	return ids
}

func (t *Tokenizer) encode(st *encodeState, ids []uint32, text string) []uint32 {
	// Added tokens that are matched before normalization split the raw text;
	// the rest is normalized piece by piece and searched for the others.
	st.segs = t.added.split(st.segs[:0], text, t.added.raw)
	for _, sg := range st.segs {
		if sg.isToken {
			ids = append(ids, sg.id)
			continue
		}
		piece := text[sg.start:sg.end]
		if piece == "" {
			continue
		}
		if t.normalizer != nil {
			if piece = t.normalizer.normalize(piece); piece == "" {
				continue
			}
		}
		st.subSegs = t.added.split(st.subSegs[:0], piece, t.added.norm)
		for _, sub := range st.subSegs {
			switch {
			case sub.isToken:
				ids = append(ids, sub.id)
			case sub.end > sub.start:
				ids = t.encodeText(st, ids, piece[sub.start:sub.end], sg.start == 0 && sub.start == 0)
			}
		}
	}
	return ids
}

// encodeText pre-tokenizes s and runs the model on each piece. atStart
// reports that s begins the text (see preTokenizer).
func (t *Tokenizer) encodeText(st *encodeState, ids []uint32, s string, atStart bool) []uint32 {
	cur := append(st.pieces[:0], s)
	next := st.next[:0]
	for i, step := range t.steps {
		next = next[:0]
		for _, p := range cur {
			next = step.split(next, p, atStart && i == 0)
		}
		cur, next = next, cur
	}
	for _, p := range cur {
		if t.byteLevelAtModel {
			st.word = appendByteLevel(st.word[:0], p)
		} else {
			st.word = append(st.word[:0], p...)
		}
		ids = t.model.encode(ids, st.word)
	}
	st.pieces, st.next = cur, next
	return ids
}

// VocabSize is one more than the largest id the tokenizer knows, added tokens
// included, so every id it produces or decodes is below it. With dense ids
// (the usual case) it is the number of tokens.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// TokenID returns the id of a token written in the vocabulary's alphabet
// (for byte-level models "Ġworld" for " world"), or of an added token.
func (t *Tokenizer) TokenID(tok string) (uint32, bool) {
	if id, ok := t.addedIDs[tok]; ok {
		return id, true
	}
	id, ok := t.model.vocab[tok]
	return id, ok
}

// Token returns the token text of id, in the vocabulary's alphabet.
func (t *Tokenizer) Token(id uint32) (string, bool) {
	if int64(id) >= int64(len(t.tokens)) || !t.tokens[id].known {
		return "", false
	}
	return t.tokens[id].text, true
}

// SpecialIDs returns the ids of the tokens marked special in added_tokens
// (BOS, EOS, chat markers: the candidates for stop tokens), ascending.
func (t *Tokenizer) SpecialIDs() []uint32 {
	return append([]uint32(nil), t.special...)
}
