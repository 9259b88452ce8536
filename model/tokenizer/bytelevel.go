package tokenizer

import (
	"unicode/utf8"
)

// GPT-2's byte-to-unicode table: every byte gets a printable character so
// that BPE tokens are readable strings. Printable Latin-1 bytes map to
// themselves; the other 68 bytes map, in byte order, to U+0100 onwards.
var (
	byteRune [256]rune       // byte -> character
	byteUTF8 [256]string     // byte -> that character's UTF-8
	runeByte [256 + 68]int16 // character -> byte, -1 if not in the table
)

func init() {
	printable := func(b int) bool {
		return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
	}
	for i := range runeByte {
		runeByte[i] = -1
	}
	n := rune(0)
	for b := 0; b < 256; b++ {
		r := rune(b)
		if !printable(b) {
			r = 256 + n
			n++
		}
		byteRune[b] = r
		byteUTF8[b] = string(r)
		runeByte[r] = int16(b)
	}
}

// appendByteLevel appends the byte-level form of s (each byte replaced by its
// table character) to dst.
func appendByteLevel(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= '!' && c <= '~' {
			dst = append(dst, c)
			continue
		}
		dst = append(dst, byteUTF8[c]...)
	}
	return dst
}

// appendTokenBytes appends the raw bytes a ByteLevel decoder produces for one
// token: each character mapped back through the table, or, as in `tokenizers`,
// the token's own UTF-8 when any character is outside the table (added tokens
// such as "\n" written literally).
func appendTokenBytes(dst []byte, tok string) []byte {
	start := len(dst)
	for _, r := range tok {
		if r < 0 || int(r) >= len(runeByte) || runeByte[r] < 0 {
			return append(dst[:start], tok...)
		}
		dst = append(dst, byte(runeByte[r]))
	}
	return dst
}

// utf8Seq classifies the UTF-8 sequence at the start of b (len(b) > 0): n is
// the number of bytes it covers; ok reports a complete valid character;
// truncated reports a valid prefix cut short by the end of b. When neither,
// b[:n] is a maximal invalid subpart that becomes one U+FFFD.
func utf8Seq(b []byte) (n int, ok, truncated bool) {
	c := b[0]
	if c < utf8.RuneSelf {
		return 1, true, false
	}
	var size int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		size = 2
	case c == 0xE0:
		size, lo = 3, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		size = 3
	case c == 0xED:
		size, hi = 3, 0x9F
	case c == 0xF0:
		size, lo = 4, 0x90
	case c >= 0xF1 && c <= 0xF3:
		size = 4
	case c == 0xF4:
		size, hi = 4, 0x8F
	default:
		return 1, false, false
	}
	for i := 1; i < size; i++ {
		if i >= len(b) {
			return i, false, true
		}
		if b[i] < lo || b[i] > hi {
			return i, false, false
		}
		lo, hi = 0x80, 0xBF
	}
	return size, true, false
}

// appendLossy appends b to dst as valid UTF-8, replacing each maximal invalid
// subpart with U+FFFD, which is what Rust's String::from_utf8_lossy (and so
// the ByteLevel decoder of `tokenizers`) does. Go's own conversions differ:
// they replace every invalid byte separately.
func appendLossy(dst, b []byte) []byte {
	if utf8.Valid(b) {
		return append(dst, b...)
	}
	for len(b) > 0 {
		n, ok, _ := utf8Seq(b)
		if ok {
			dst = append(dst, b[:n]...)
		} else {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		}
		b = b[n:]
	}
	return dst
}

// completeLen returns how much of b can be decoded now: all of it except a
// trailing valid prefix of a character that later bytes may complete.
func completeLen(b []byte) int {
	i := 0
	for i < len(b) {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		n, _, truncated := utf8Seq(b[i:])
		if truncated {
			return i
		}
		i += n
	}
	return i
}
