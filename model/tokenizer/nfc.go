package tokenizer

//go:generate go run ./internal/cmd/nfcgen -ucd /usr/share/unicode -o nfc_tables.go

import (
	"slices"
	"unicode"
	"unicode/utf8"
)

// NFC (Unicode Normalization Form C, UAX #15) for the NFC normalizer that
// Qwen2 tokenizers use. golang.org/x/text is not a dependency of this module,
// so the tables in nfc_tables.go are generated from the Unicode Character
// Database by internal/cmd/nfcgen, and the algorithm is written out here:
// full canonical decomposition, canonical ordering, canonical composition.

type nfcDecomposition struct{ r, first, second rune } // second is 0 for a singleton

type nfcCombiningClass struct {
	lo, hi rune
	ccc    uint8
}

type nfcComposition struct{ first, second, r rune }

// Hangul syllables decompose and compose by arithmetic (Unicode §3.12).
const (
	hangulSBase  = 0xAC00
	hangulLBase  = 0x1100
	hangulVBase  = 0x1161
	hangulTBase  = 0x11A7
	hangulLCount = 19
	hangulVCount = 21
	hangulTCount = 28
	hangulNCount = hangulVCount * hangulTCount
	hangulSCount = hangulLCount * hangulNCount
)

func combiningClass(r rune) uint8 {
	if r < 0x300 {
		return 0
	}
	i, found := slices.BinarySearchFunc(nfcCombiningClasses[:], r, func(c nfcCombiningClass, r rune) int {
		switch {
		case c.hi < r:
			return -1
		case c.lo > r:
			return 1
		}
		return 0
	})
	if !found {
		return 0
	}
	return nfcCombiningClasses[i].ccc
}

// appendDecomposed appends the full canonical decomposition of r.
func appendDecomposed(dst []rune, r rune) []rune {
	if s := r - hangulSBase; s >= 0 && s < hangulSCount {
		dst = append(dst, hangulLBase+s/hangulNCount, hangulVBase+(s%hangulNCount)/hangulTCount)
		if t := s % hangulTCount; t != 0 {
			dst = append(dst, hangulTBase+t)
		}
		return dst
	}
	i, found := slices.BinarySearchFunc(nfcDecompositions[:], r, func(d nfcDecomposition, r rune) int {
		return int(d.r - r)
	})
	if !found {
		return append(dst, r)
	}
	d := nfcDecompositions[i]
	dst = appendDecomposed(dst, d.first)
	if d.second != 0 {
		dst = appendDecomposed(dst, d.second)
	}
	return dst
}

// compose returns the primary composite of a and b, if there is one.
func compose(a, b rune) (rune, bool) {
	if l := a - hangulLBase; l >= 0 && l < hangulLCount {
		if v := b - hangulVBase; v >= 0 && v < hangulVCount {
			return hangulSBase + (l*hangulVCount+v)*hangulTCount, true
		}
		return 0, false
	}
	if s := a - hangulSBase; s >= 0 && s < hangulSCount && s%hangulTCount == 0 {
		if t := b - hangulTBase; t > 0 && t < hangulTCount {
			return a + t, true
		}
		return 0, false
	}
	i, found := slices.BinarySearchFunc(nfcCompositions[:], [2]rune{a, b}, func(c nfcComposition, k [2]rune) int {
		if c.first != k[0] {
			return int(c.first - k[0])
		}
		return int(c.second - k[1])
	})
	if !found {
		return 0, false
	}
	return nfcCompositions[i].r, true
}

// nfc returns s in Normalization Form C. Invalid UTF-8 bytes are kept as they
// are and act as boundaries (the text on each side is normalized on its own).
func nfc(s string) string {
	if isNFCQuick(s) {
		return s
	}
	out := make([]byte, 0, len(s)+8)
	var buf []rune
	for start := 0; start < len(s); {
		end := start
		for end < len(s) {
			r, n := utf8.DecodeRuneInString(s[end:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			end += n
		}
		buf = nfcRunes(buf[:0], s[start:end])
		for _, r := range buf {
			out = utf8.AppendRune(out, r)
		}
		if end < len(s) {
			out = append(out, s[end]) // the invalid byte
			end++
		}
		start = end
	}
	return string(out)
}

// isNFCQuick reports whether s has no character that NFC could change or
// that could change a neighbour; such text is its own NFC.
func isNFCQuick(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r >= 0x300 && unicode.Is(nfcUnstable, r) {
			return false
		}
		i += n
	}
	return true
}

// nfcRunes appends the NFC of valid UTF-8 text s to dst.
func nfcRunes(dst []rune, s string) []rune {
	start := len(dst)
	for _, r := range s {
		dst = appendDecomposed(dst, r)
	}
	d := dst[start:]

	cls := make([]uint8, len(d))
	for i, r := range d {
		cls[i] = combiningClass(r)
	}

	// Canonical ordering: stable-sort each run of non-starters by class.
	for i := 0; i < len(d); {
		if cls[i] == 0 {
			i++
			continue
		}
		j := i + 1
		for j < len(d) && cls[j] != 0 {
			j++
		}
		sortByClass(d[i:j], cls[i:j])
		i = j
	}

	// Canonical composition: a character joins the last starter unless a
	// character between them is a starter or has a class at least its own.
	out := d[:0]
	starter := -1
	var lastClass uint8
	for i, r := range d {
		c := cls[i]
		if starter >= 0 {
			adjacent := starter == len(out)-1
			if adjacent || (lastClass != 0 && lastClass < c) {
				if comp, ok := compose(out[starter], r); ok {
					out[starter] = comp
					continue
				}
			}
		}
		if c == 0 {
			starter = len(out)
		}
		lastClass = c
		out = append(out, r)
	}
	return dst[:start+len(out)]
}

// sortByClass stable-sorts a run of non-starters by combining class:
// insertion sort for the usual short runs, a key sort for long ones so that
// adversarial text (thousands of marks on one letter) stays O(n log n).
func sortByClass(r []rune, c []uint8) {
	if len(r) <= 16 {
		for i := 1; i < len(r); i++ {
			for j := i; j > 0 && c[j-1] > c[j]; j-- {
				r[j-1], r[j] = r[j], r[j-1]
				c[j-1], c[j] = c[j], c[j-1]
			}
		}
		return
	}
	// Key: class, then position (for stability), then the rune (21 bits).
	keys := make([]uint64, len(r))
	for i := range r {
		keys[i] = uint64(c[i])<<56 | uint64(i)<<21 | uint64(r[i])
	}
	slices.Sort(keys)
	for i, k := range keys {
		r[i] = rune(k & (1<<21 - 1))
		c[i] = uint8(k >> 56)
	}
}
