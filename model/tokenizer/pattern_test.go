package tokenizer

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// The hand-written matchers are checked against Go's regexp running each
// pattern rewritten for RE2: Oniguruma's Unicode \s (U+0009-000D, U+0085 and
// the Zs, Zl, Zp categories, per Oniguruma's doc/RE) spelled out as a class,
// and the one lookahead alternative `\s+(?!\S)` replaced by the equivalent
// `(\s+)(?:\z|\s\S)`, whose capture group is the match: a greedy run either
// reaches the end of the text or gives back one character so that a space
// and a non-space follow it, which is exactly when the lookahead holds.
const re2Space = `\t-\r\x{85}\p{Z}`

var re2Rewrites = map[*regexPattern]string{
	gpt2Regex: `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^` + re2Space + `\p{L}\p{N}]+` +
		`|([` + re2Space + `]+)(?:\z|[` + re2Space + `][^` + re2Space + `])|[` + re2Space + `]+`,
	llama3Regex: `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^` + re2Space + `\p{L}\p{N}]+[\r\n]*` +
		`|[` + re2Space + `]*[\r\n]+|([` + re2Space + `]+)(?:\z|[` + re2Space + `][^` + re2Space + `])|[` + re2Space + `]+`,
	qwen2Regex: `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^` + re2Space + `\p{L}\p{N}]+[\r\n]*` +
		`|[` + re2Space + `]*[\r\n]+|([` + re2Space + `]+)(?:\z|[` + re2Space + `][^` + re2Space + `])|[` + re2Space + `]+`,
}

// re2Split cuts s into the pieces find_iter would give, using the rewrite.
func re2Split(t *testing.T, re *regexp.Regexp, s string) []string {
	var out []string
	for pos := 0; pos < len(s); {
		loc := re.FindStringSubmatchIndex(s[pos:])
		if loc == nil {
			out = append(out, s[pos:])
			break
		}
		start, end := loc[0], loc[1]
		if loc[2] >= 0 { // the lookahead alternative: its group is the match
			end = loc[3]
		}
		require.Greater(t, end, start, "empty match in %q", s)
		if start > 0 {
			out = append(out, s[pos:pos+start])
		}
		out = append(out, s[pos+start:pos+end])
		pos += end
	}
	return out
}

func splitWith(p splitPattern, s string) []string {
	return (&splitStep{pattern: p, behavior: behaviorIsolated}).split(nil, s, false)
}

// TestRE2SpaceClassIsWhiteSpace proves the rewrite's \s class is the
// White_Space set that the matchers use (unicode.IsSpace), for every code
// point.
func TestRE2SpaceClassIsWhiteSpace(t *testing.T) {
	class := regexp.MustCompile(`^[` + re2Space + `]$`)
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		inClass := (r >= 9 && r <= 13) || r == 0x85 || unicode.Is(unicode.Z, r)
		require.Equal(t, unicode.IsSpace(r), inClass, "U+%04X", r)
	}
	require.True(t, class.MatchString("\u3000"))
	require.False(t, class.MatchString("\u200b"), "ZERO WIDTH SPACE is not White_Space")
}

// interesting runes: every class boundary the patterns care about.
var patternAlphabet = []string{
	" ", " ", " ", "\t", "\n", "\r", "\v", "\f", "\u0085", "\u00a0", "\u3000", "\u2028", "\u2003", "\u200b", "\ufeff",
	"a", "Z", "s", "S", "ſ", "t", "T", "r", "R", "e", "E", "v", "V", "m", "M", "l", "L", "d", "D", "k", "\u212a", "x",
	"'", "'", "'", "\"", "1", "2", "3", "٣", "½", "Ⅻ", "②", "!", ".", ",", "-", "_", "😀", "👍🏽", "é", "\u0301", "中", "ß",
	"\u200d", "\xff", "\xe3\x80", "\ufffd",
}

func randomPatternText(r *rand.Rand, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(patternAlphabet[r.IntN(len(patternAlphabet))])
	}
	return b.String()
}

// TestMatchersAgreeWithRE2Rewrite compares the hand-written matchers with Go's
// regexp on the rewritten patterns, over random text from an alphabet of
// every character class the patterns distinguish (including invalid UTF-8).
func TestMatchersAgreeWithRE2Rewrite(t *testing.T) {
	iters := 20000
	if testing.Short() || raceEnabled {
		iters = 2000
	}
	for pat, rewrite := range re2Rewrites {
		re := regexp.MustCompile(rewrite)
		rng := rand.New(rand.NewPCG(1, uint64(len(rewrite))))
		t.Run(pat.name, func(t *testing.T) {
			for i := 0; i < iters; i++ {
				s := randomPatternText(rng, 1+rng.IntN(24))
				require.Equal(t, re2Split(t, re, s), splitWith(pat, s), "text %q", s)
			}
		})
	}
}

// TestMatchersHandDerived pins splits worked out by hand from the regex
// semantics, the lookahead cases above all.
func TestMatchersHandDerived(t *testing.T) {
	cases := []struct {
		pat  *regexPattern
		text string
		want []string
		why  string
	}{
		{gpt2Regex, "Hello world", []string{"Hello", " world"}, "optional space joins the letters"},
		{gpt2Regex, "Hello  world", []string{"Hello", " ", " world"}, `\s+(?!\S) gives back the last space`},
		{gpt2Regex, "Hello   ", []string{"Hello", "   "}, "a run at the end keeps all of it"},
		{gpt2Regex, "a \n b", []string{"a", " \n", " b"}, "the run minus its last char, which leads ' b'"},
		{gpt2Regex, "a\n\nb", []string{"a", "\n", "\n", "b"}, "a lone newline before a letter falls to plain \\s+"},
		{gpt2Regex, "it's", []string{"it", "'s"}, "contraction"},
		{gpt2Regex, "IT'S", []string{"IT", "'", "S"}, "GPT-2's contractions are case-sensitive"},
		{gpt2Regex, "x  123", []string{"x", " ", " 123"}, "digits take one leading space"},
		{gpt2Regex, "$$$ !!", []string{"$$$", " !!"}, "symbol runs"},
		{gpt2Regex, "\u3000x", []string{"\u3000", "x"}, "ideographic space is \\s but not the optional ' '"},
		{gpt2Regex, " \u3000x", []string{" ", "\u3000", "x"}, "Unicode whitespace run gives back its last char"},
		{llama3Regex, "Hello  world", []string{"Hello", " ", " world"}, "lookahead as in GPT-2"},
		{llama3Regex, "a  \n\n  b", []string{"a", "  \n\n", " ", " b"}, `\s*[\r\n]+ ends at the last newline`},
		{llama3Regex, "x\n\ny", []string{"x", "\n\n", "y"}, "newlines are not a letter prefix"},
		{llama3Regex, "a \r\n b", []string{"a", " \r\n", " b"}, "CRLF with spaces around"},
		{llama3Regex, "don't DON'T I'LL we'Re", []string{"don", "'t", " DON", "'T", " I", "'LL", " we", "'Re"}, "case-insensitive contractions"},
		{llama3Regex, "x'ſa", []string{"x", "'ſ", "a"}, "long s folds to s under (?i), so the contraction wins over 'ſa"},
		{llama3Regex, "'hello 'sup", []string{"'hello", " '", "sup"}, "a quote prefixes letters; after a space the quote is a symbol"},
		{llama3Regex, "'sup", []string{"'s", "up"}, "a contraction wins over the letter run, even inside a word"},
		{llama3Regex, "1234567", []string{"123", "456", "7"}, "digits in threes"},
		{llama3Regex, " 123", []string{" ", "123"}, "digits take no space"},
		{llama3Regex, "hello!!\n\nworld", []string{"hello", "!!\n\n", "world"}, "symbols take trailing newlines"},
		{llama3Regex, "\tfoo\nfoo", []string{"\tfoo", "\n", "foo"}, "tab may prefix letters, newline may not"},
		{llama3Regex, "foo   ", []string{"foo", "   "}, "trailing run"},
		{llama3Regex, "😀😀 x", []string{"😀😀", " x"}, "emoji are symbols"},
		{llama3Regex, "e\u0301x", []string{"e", "\u0301x"}, "a combining mark is not a letter, so it prefixes the next word"},
		{qwen2Regex, "1234567", []string{"1", "2", "3", "4", "5", "6", "7"}, "Qwen2 splits every digit"},
		{qwen2Regex, "a  \n\n  b", []string{"a", "  \n\n", " ", " b"}, "as Llama 3"},
	}
	for _, c := range cases {
		require.Equal(t, c.want, splitWith(c.pat, c.text), "%s on %q: %s", c.pat.name, c.text, c.why)
	}
}

// TestKnownRegexNeedsExactText proves the patterns are recognised by their
// exact text only: a changed pattern is not silently treated as a known one.
func TestKnownRegexNeedsExactText(t *testing.T) {
	for _, p := range []string{gpt2Pattern, llama3Pattern, qwen2Pattern} {
		_, ok := knownRegex(p)
		require.True(t, ok)
		_, ok = knownRegex(strings.Replace(p, `\p{L}`, `\p{Lu}`, 1))
		require.False(t, ok)
	}
}

// TestSplitBehaviors checks each SplitDelimiterBehavior against the examples
// in `tokenizers`' own documentation of Split ("the-final--countdown" split
// on '-').
func TestSplitBehaviors(t *testing.T) {
	text := "the-final--countdown"
	cases := map[splitBehavior][]string{
		behaviorRemoved:            {"the", "final", "countdown"},
		behaviorIsolated:           {"the", "-", "final", "-", "-", "countdown"},
		behaviorMergedWithPrevious: {"the-", "final-", "-", "countdown"},
		behaviorMergedWithNext:     {"the", "-final", "-", "-countdown"},
		behaviorContiguous:         {"the", "-", "final", "--", "countdown"},
	}
	for b, want := range cases {
		got := (&splitStep{pattern: literalPattern("-"), behavior: b}).split(nil, text, false)
		require.Equal(t, want, got, "behavior %d", b)
	}
	// invert: the pattern marks the kept parts.
	got := (&splitStep{pattern: literalPattern("-"), behavior: behaviorRemoved, invert: true}).split(nil, text, false)
	require.Equal(t, []string{"-", "-", "-"}, got)
}

// TestDigits checks the Digits pre-tokenizer against `tokenizers`' own test
// ("Hey 123 friend!").
func TestDigits(t *testing.T) {
	require.Equal(t, []string{"Hey ", "123", " friend!"}, (&digitsStep{}).split(nil, "Hey 123 friend!", false))
	require.Equal(t, []string{"Hey ", "1", "2", "3", " friend!"}, (&digitsStep{individual: true}).split(nil, "Hey 123 friend!", false))
}
