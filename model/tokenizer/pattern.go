package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The Split patterns that byte-level BPE models use, exactly as they appear
// in tokenizer.json. `tokenizers` runs them with Oniguruma, a backtracking
// engine: alternatives are tried in order at each position and the first that
// matches wins; quantifiers are greedy and give back characters when a later
// part fails. \s is Unicode White_Space, \p{L} and \p{N} are the general
// categories. Go's regexp has no lookahead and an ASCII-only \s, so each
// pattern below has a hand-written matcher that follows those rules.
const (
	// GPT-2, and the ByteLevel pre-tokenizer's built-in pattern.
	gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	// Llama 3 (and OpenAI's cl100k): case-insensitive contractions, a letter
	// run with one optional leading non-letter, digits in groups of 1-3.
	llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// Qwen2, Qwen2.5 and Qwen3: Llama 3's pattern with single digits.
	qwen2Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// splitPattern finds matches for the Split pre-tokenizer.
type splitPattern interface {
	// find returns the leftmost match that starts at or after from. A match
	// is never empty: ok implies start < end.
	find(s string, from int) (start, end int, ok bool)
}

// regexPattern is one of the recognised regexes: matchAt returns the end of
// the match that the regex finds starting exactly at p, or -1.
type regexPattern struct {
	name    string
	matchAt func(s string, p int) int
}

func (r *regexPattern) find(s string, from int) (int, int, bool) {
	for p := from; p < len(s); {
		if e := r.matchAt(s, p); e > p {
			return p, e, true
		}
		_, n := decodeRune(s, p)
		p += n
	}
	return 0, 0, false
}

var (
	gpt2Regex   = &regexPattern{name: "GPT-2", matchAt: gpt2MatchAt}
	llama3Regex = &regexPattern{name: "Llama-3", matchAt: func(s string, p int) int { return llama3MatchAt(s, p, 3) }}
	qwen2Regex  = &regexPattern{name: "Qwen2", matchAt: func(s string, p int) int { return llama3MatchAt(s, p, 1) }}
)

// knownRegex returns the matcher for a pattern string from tokenizer.json.
func knownRegex(pattern string) (*regexPattern, bool) {
	switch pattern {
	case gpt2Pattern:
		return gpt2Regex, true
	case llama3Pattern:
		return llama3Regex, true
	case qwen2Pattern:
		return qwen2Regex, true
	}
	return nil, false
}

// literalPattern is Split's {"String": ...}: the text itself, matched
// left to right without overlap.
type literalPattern string

func (l literalPattern) find(s string, from int) (int, int, bool) {
	i := strings.Index(s[from:], string(l))
	if i < 0 {
		return 0, 0, false
	}
	return from + i, from + i + len(l), true
}

// charClass partitions all characters the way the patterns see them: every
// character is exactly one of \s, \p{L}, \p{N}, or the rest.
type charClass uint8

const (
	classOther charClass = iota
	classLetter
	classNumber
	classSpace
)

var asciiClass = func() (t [utf8.RuneSelf]charClass) {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		t[r] = classifySlow(r)
	}
	return t
}()

func classifySlow(r rune) charClass {
	switch {
	case unicode.IsLetter(r):
		return classLetter
	case unicode.IsNumber(r):
		return classNumber
	case unicode.IsSpace(r): // White_Space, the same set as Oniguruma's Unicode \s
		return classSpace
	}
	return classOther
}

func classify(r rune) charClass {
	if r < utf8.RuneSelf {
		return asciiClass[r]
	}
	return classifySlow(r)
}

// decodeRune decodes the character at s[p]. An invalid byte decodes as
// U+FFFD of width 1, which classifies as "other": invalid input is split
// like a symbol and still reaches the model byte by byte.
func decodeRune(s string, p int) (rune, int) {
	if c := s[p]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[p:])
}

// runEnd returns the end of the run of class c characters starting at p.
func runEnd(s string, p int, c charClass) int {
	for p < len(s) {
		r, n := decodeRune(s, p)
		if classify(r) != c {
			break
		}
		p += n
	}
	return p
}

// contractionAt matches 's|'t|'re|'ve|'m|'ll|'d at p; with fold, matching is
// case-insensitive as (?i:...) is, so "'S", "'Re" and "'ſ" (long s folds to
// s) match too.
func contractionAt(s string, p int, fold bool) int {
	if s[p] != '\'' || p+1 >= len(s) {
		return -1
	}
	q := p + 1
	r1, n1 := decodeRune(s, q)
	c1 := asciiFold(r1, fold)
	switch c1 {
	case 's', 't', 'm', 'd':
		return q + n1
	case 'r', 'v', 'l':
		want := rune('e')
		if c1 == 'l' {
			want = 'l'
		}
		q += n1
		if q < len(s) {
			r2, n2 := decodeRune(s, q)
			if asciiFold(r2, fold) == want {
				return q + n2
			}
		}
	}
	return -1
}

// asciiFold returns the lower-case ASCII letter r matches: r itself if it is
// a lower-case ASCII letter, and with fold also any character in the same
// simple case-folding orbit (upper case, and e.g. U+017F for s, U+212A for k).
// Otherwise it returns -1.
func asciiFold(r rune, fold bool) rune {
	if r >= 'a' && r <= 'z' {
		return r
	}
	if !fold {
		return -1
	}
	if r >= 'A' && r <= 'Z' {
		return r + ('a' - 'A')
	}
	if r < utf8.RuneSelf {
		return -1
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f >= 'a' && f <= 'z' {
			return f
		}
	}
	return -1
}

// spaceTailAt matches `\s+(?!\S)|\s+` at p, where e is the end of the
// whitespace run starting at p. The greedy run followed by the lookahead
// keeps the whole run at the end of the text; before a non-space character it
// gives back the run's last character (which then leads the next piece), and
// a single space before a non-space falls through to the plain `\s+`.
func spaceTailAt(s string, p, e int) int {
	if e == p {
		return -1
	}
	if e == len(s) {
		return e
	}
	_, n := utf8.DecodeLastRuneInString(s[p:e])
	if e-n > p {
		return e - n
	}
	return e
}

// gpt2MatchAt is gpt2Pattern anchored at p.
func gpt2MatchAt(s string, p int) int {
	if e := contractionAt(s, p, false); e > 0 {
		return e
	}
	// ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional space, then
	// a run of one class. The space variant is tried first; without it the
	// run would start with the space itself, which no run class contains.
	q := p
	if s[p] == ' ' {
		q++
	}
	if q < len(s) {
		r, n := decodeRune(s, q)
		if c := classify(r); c != classSpace {
			return runEnd(s, q+n, c)
		}
	}
	return spaceTailAt(s, p, runEnd(s, p, classSpace))
}

// llama3MatchAt is llama3Pattern (maxDigits 3) or qwen2Pattern (maxDigits 1)
// anchored at p.
func llama3MatchAt(s string, p int, maxDigits int) int {
	if e := contractionAt(s, p, true); e > 0 {
		return e
	}
	r0, n0 := decodeRune(s, p)
	c0 := classify(r0)

	// [^\r\n\p{L}\p{N}]?\p{L}+ : a letter run, with one leading character
	// that is not a letter, digit, CR or LF (a space, tab, quote, ...).
	if c0 == classLetter {
		return runEnd(s, p+n0, classLetter)
	}
	if c0 != classNumber && r0 != '\r' && r0 != '\n' && p+n0 < len(s) {
		r1, n1 := decodeRune(s, p+n0)
		if classify(r1) == classLetter {
			return runEnd(s, p+n0+n1, classLetter)
		}
	}

	// \p{N}{1,maxDigits}
	if c0 == classNumber {
		e := p + n0
		for k := 1; k < maxDigits && e < len(s); k++ {
			r, n := decodeRune(s, e)
			if classify(r) != classNumber {
				break
			}
			e += n
		}
		return e
	}

	// ` ?[^\s\p{L}\p{N}]+[\r\n]*`
	q := p
	if r0 == ' ' {
		q++
	}
	if q < len(s) {
		r, n := decodeRune(s, q)
		if classify(r) == classOther {
			e := runEnd(s, q+n, classOther)
			for e < len(s) && (s[e] == '\r' || s[e] == '\n') {
				e++
			}
			return e
		}
	}
	if c0 != classSpace {
		return -1
	}

	// \s*[\r\n]+ : \s* takes the whole whitespace run and gives characters
	// back until [\r\n]+ can match, so the match ends just after the run's
	// last CR or LF. (Scanning bytes is safe: no multi-byte whitespace
	// character contains the bytes 0x0A or 0x0D.)
	e := runEnd(s, p, classSpace)
	for i := e - 1; i >= p; i-- {
		if s[i] == '\r' || s[i] == '\n' {
			return i + 1
		}
	}
	return spaceTailAt(s, p, e)
}
