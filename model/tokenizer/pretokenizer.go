package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// preTokenizer is one step of the pre-tokenizer pipeline. A Sequence in
// tokenizer.json is flattened into a list of steps, each applied to every
// piece the previous step produced, as `tokenizers` does.
type preTokenizer interface {
	// split appends the non-empty pieces of s to out, in order. atStart
	// reports that s begins the text being encoded (its original offset is
	// 0), which Metaspace's prepend_scheme "first" depends on.
	split(out []string, s string, atStart bool) []string
}

// splitBehavior is what Split does with the matches (`tokenizers`'
// SplitDelimiterBehavior).
type splitBehavior uint8

const (
	behaviorRemoved splitBehavior = iota
	behaviorIsolated
	behaviorMergedWithPrevious
	behaviorMergedWithNext
	behaviorContiguous
)

var behaviorNames = map[string]splitBehavior{
	"Removed":            behaviorRemoved,
	"Isolated":           behaviorIsolated,
	"MergedWithPrevious": behaviorMergedWithPrevious,
	"MergedWithNext":     behaviorMergedWithNext,
	"Contiguous":         behaviorContiguous,
}

// span is a piece of a string and whether it is a match of the pattern.
type span struct {
	start, end int
	match      bool
}

// splitStep is the Split pre-tokenizer.
type splitStep struct {
	pattern  splitPattern
	behavior splitBehavior
	invert   bool
}

func (st *splitStep) split(out []string, s string, _ bool) []string {
	if st.behavior == behaviorIsolated {
		// Every match and every gap becomes a piece; the match flags (and so
		// invert) do not matter. This is the path the real models take.
		prev := 0
		for from := 0; from < len(s); {
			a, b, ok := st.pattern.find(s, from)
			if !ok {
				break
			}
			if a > prev {
				out = append(out, s[prev:a])
			}
			out = append(out, s[a:b])
			prev, from = b, b
		}
		if prev < len(s) {
			out = append(out, s[prev:])
		}
		return out
	}
	var spans []span
	prev := 0
	for from := 0; from < len(s); {
		a, b, ok := st.pattern.find(s, from)
		if !ok {
			break
		}
		if a > prev {
			spans = append(spans, span{prev, a, st.invert})
		}
		spans = append(spans, span{a, b, !st.invert})
		prev, from = b, b
	}
	if prev < len(s) {
		spans = append(spans, span{prev, len(s), st.invert})
	}
	return appendSpans(out, s, spans, st.behavior)
}

// appendSpans applies a split behavior to the spans of s (which cover s in
// order) and appends the resulting pieces.
func appendSpans(out []string, s string, spans []span, behavior splitBehavior) []string {
	var pieces []span
	switch behavior {
	case behaviorIsolated:
		pieces = spans
	case behaviorRemoved:
		for _, sp := range spans {
			if !sp.match {
				pieces = append(pieces, sp)
			}
		}
	case behaviorContiguous:
		// Consecutive spans with the same flag join; the flag before the
		// first span counts as "no match".
		prevMatch := false
		for _, sp := range spans {
			if sp.match == prevMatch && len(pieces) > 0 {
				pieces[len(pieces)-1].end = sp.end
			} else {
				pieces = append(pieces, sp)
			}
			prevMatch = sp.match
		}
	case behaviorMergedWithPrevious:
		prevMatch := false
		for _, sp := range spans {
			if sp.match && !prevMatch && len(pieces) > 0 {
				pieces[len(pieces)-1].end = sp.end
			} else {
				pieces = append(pieces, sp)
			}
			prevMatch = sp.match
		}
	case behaviorMergedWithNext:
		// Walk backwards: a match joins the piece that follows it.
		prevMatch := false
		for i := len(spans) - 1; i >= 0; i-- {
			sp := spans[i]
			if sp.match && !prevMatch && len(pieces) > 0 {
				pieces[len(pieces)-1].start = sp.start
			} else {
				pieces = append(pieces, sp)
			}
			prevMatch = sp.match
		}
		for i, j := 0, len(pieces)-1; i < j; i, j = i+1, j-1 {
			pieces[i], pieces[j] = pieces[j], pieces[i]
		}
	}
	for _, p := range pieces {
		if p.end > p.start {
			out = append(out, s[p.start:p.end])
		}
	}
	return out
}

// digitsStep is the Digits pre-tokenizer: numeric characters (Rust's
// char::is_numeric, the N categories) split from the rest, one per piece or
// in runs.
type digitsStep struct {
	individual bool
}

func (d *digitsStep) split(out []string, s string, _ bool) []string {
	var spans []span
	last := 0
	for i, r := range s {
		if unicode.IsNumber(r) {
			if last < i {
				spans = append(spans, span{last, i, false})
			}
			n := utf8.RuneLen(r) // a number is never U+FFFD, so never an invalid byte
			spans = append(spans, span{i, i + n, true})
			last = i + n
		}
	}
	if last < len(s) {
		spans = append(spans, span{last, len(s), false})
	}
	behavior := behaviorContiguous
	if d.individual {
		behavior = behaviorIsolated
	}
	return appendSpans(out, s, spans, behavior)
}

// byteLevelStep is the ByteLevel pre-tokenizer: an optional leading space,
// the GPT-2 split when useRegex is set, then every byte replaced by its
// table character. When it is the last step the Tokenizer does the byte
// replacement itself, into a reused buffer, so mapBytes is false there.
type byteLevelStep struct {
	addPrefixSpace bool
	useRegex       bool
	mapBytes       bool
}

func (b *byteLevelStep) split(out []string, s string, _ bool) []string {
	if b.addPrefixSpace && !strings.HasPrefix(s, " ") {
		s = " " + s
	}
	start := len(out)
	if b.useRegex {
		out = (&splitStep{pattern: gpt2Regex, behavior: behaviorIsolated}).split(out, s, false)
	} else {
		out = append(out, s)
	}
	if b.mapBytes {
		for i := start; i < len(out); i++ {
			out[i] = string(appendByteLevel(nil, out[i]))
		}
	}
	return out
}

// prependScheme is when Metaspace puts its replacement character first.
type prependScheme uint8

const (
	prependAlways prependScheme = iota
	prependFirst                // only before the piece that starts the text
	prependNever
)

var prependSchemeNames = map[string]prependScheme{"always": prependAlways, "first": prependFirst, "never": prependNever}

// metaspaceStep is the Metaspace pre-tokenizer (SentencePiece's whitespace
// handling): spaces become the replacement character ("▁"), which is put
// first as prepend_scheme says unless the piece already starts with it, and
// with split the piece is cut before each replacement character.
type metaspaceStep struct {
	replacement string
	scheme      prependScheme
	splitPieces bool
}

func (m *metaspaceStep) split(out []string, s string, atStart bool) []string {
	s = strings.ReplaceAll(s, " ", m.replacement)
	if !strings.HasPrefix(s, m.replacement) && (m.scheme == prependAlways || (m.scheme == prependFirst && atStart)) {
		s = m.replacement + s
	}
	if !m.splitPieces {
		if s != "" {
			out = append(out, s)
		}
		return out
	}
	// MergedWithNext: each replacement character starts a piece.
	prev := 0
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], m.replacement)
		if j < 0 {
			break
		}
		if i+j > prev {
			out = append(out, s[prev:i+j])
			prev = i + j
		}
		i += j + len(m.replacement)
	}
	if prev < len(s) {
		out = append(out, s[prev:])
	}
	return out
}
