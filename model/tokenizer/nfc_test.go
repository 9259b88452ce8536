package tokenizer

import (
	"bufio"
	"compress/bzip2"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/testenv"
)

// The NFC normalizer is checked against the Unicode Consortium's own
// conformance file, NormalizationTest.txt: the excerpt committed in testdata
// always, and the whole file from Debian's unicode-data package when it is
// installed.

const normalizationTestPath = "/usr/share/unicode/NormalizationTest.txt.bz2"

// checkNormalizationTest applies the NFC conformance rules to each line:
// c2 == NFC(c1) == NFC(c2) == NFC(c3) and c4 == NFC(c4) == NFC(c5). It
// returns the code points listed in Part 1.
func checkNormalizationTest(t *testing.T, r io.Reader) map[rune]bool {
	t.Helper()
	part1 := map[rune]bool{}
	part := ""
	lines := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "@Part") {
			part = strings.Fields(line)[0]
			continue
		}
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(line, ";")
		require.GreaterOrEqual(t, len(f), 5, line)
		c := make([]string, 5)
		for i := range c {
			c[i] = parseCodePoints(t, f[i])
		}
		for _, i := range []int{0, 1, 2} {
			require.Equal(t, c[1], nfc(c[i]), "line %q: NFC(c%d)", line, i+1)
		}
		for _, i := range []int{3, 4} {
			require.Equal(t, c[3], nfc(c[i]), "line %q: NFC(c%d)", line, i+1)
		}
		if part == "@Part1" {
			part1[[]rune(c[0])[0]] = true
		}
		lines++
	}
	require.NoError(t, sc.Err())
	require.Greater(t, lines, 100)
	return part1
}

func parseCodePoints(t *testing.T, field string) string {
	var b strings.Builder
	for _, h := range strings.Fields(field) {
		v, err := strconv.ParseUint(h, 16, 32)
		require.NoError(t, err, field)
		b.WriteRune(rune(v))
	}
	return b.String()
}

func TestNFCConformanceExcerpt(t *testing.T) {
	f, err := os.Open("testdata/NormalizationTest-excerpt.txt")
	require.NoError(t, err)
	defer f.Close()
	checkNormalizationTest(t, f)
}

// TestNFCConformanceFull runs the whole conformance file, including its rule
// that every assigned code point not listed in Part 1 is its own NFC.
func TestNFCConformanceFull(t *testing.T) {
	f, err := os.Open(normalizationTestPath)
	testenv.NeedHost(t, err) // Debian package unicode-data
	defer f.Close()
	part1 := checkNormalizationTest(t, bzip2.NewReader(f))
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if part1[r] || (r >= 0xD800 && r <= 0xDFFF) {
			continue
		}
		s := string(r)
		if got := nfc(s); got != s {
			require.Failf(t, "not invariant", "U+%04X: NFC gives %q", r, got)
		}
	}
}

// TestNFCKeepsInvalidBytes: invalid UTF-8 passes through unchanged and
// separates the text around it.
func TestNFCKeepsInvalidBytes(t *testing.T) {
	require.Equal(t, "\u00e9\xff\u00e9", nfc("e\u0301\xffe\u0301"))
	require.Equal(t, "e\xff\u0301", nfc("e\xff\u0301"))
	require.Equal(t, "plain ascii", nfc("plain ascii"))
}

// TestNFCLongMarkRun exercises the sort used for long runs of combining
// marks: "a" followed by 1000 pairs of U+0316 (class 220) and U+0301 (class
// 230). Canonical ordering puts the 220s first; the first U+0301 is then not
// blocked (220 < 230) and composes a into á (U+00E1); every later U+0301 is
// blocked by the one before it (230 is not < 230).
func TestNFCLongMarkRun(t *testing.T) {
	in := "a" + strings.Repeat("\u0316\u0301", 1000)
	want := "\u00e1" + strings.Repeat("\u0316", 1000) + strings.Repeat("\u0301", 999)
	require.Equal(t, want, nfc(in))
}
