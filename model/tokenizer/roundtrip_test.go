package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// randomText makes valid UTF-8 text mixing the things tokenizers get wrong:
// whitespace runs of every kind, digits (ASCII and not), contractions, code,
// CJK, combining marks, astral emoji with joiners, and special-token texts.
func randomText(r *rand.Rand, specials []string) string {
	var b strings.Builder
	for n := r.IntN(16); n >= 0; n-- {
		switch r.IntN(10) {
		case 0:
			b.WriteString([]string{" ", "  ", "\n", "\r\n", "\t", " \n\n ", "\u3000", "\u00a0", "\u2028", "\u0085"}[r.IntN(10)])
		case 1:
			for k := r.IntN(8); k >= 0; k-- {
				b.WriteByte(byte('0' + r.IntN(10)))
			}
		case 2:
			b.WriteString([]string{"'s", "'T", "'re", "'VE", "'m", "'ll", "'D", "'", "ſ"}[r.IntN(9)])
		case 3:
			b.WriteString([]string{"func f() {\n\treturn x+1\n}", "a_b", "x[i] = y;", "// ok", "<div>"}[r.IntN(5)])
		case 4:
			if len(specials) > 0 {
				b.WriteString(specials[r.IntN(len(specials))])
			}
		case 5:
			// any code point except surrogates
			c := rune(r.IntN(0x110000))
			if c >= 0xD800 && c <= 0xDFFF {
				c = 'x'
			}
			b.WriteRune(c)
		case 6:
			b.WriteString([]string{"😀", "👍🏽", "👨‍👩‍👧", "🇺🇸", "e\u0301", "\u0301", "中文", "Ωμέγα", "٣٤", "½"}[r.IntN(10)])
		default:
			b.WriteString([]string{"the", " The", " light", "And", " God", " waters", "café", "naïve", "Привет"}[r.IntN(9)])
		}
	}
	return b.String()
}

func roundTripCount() int {
	if testing.Short() || raceEnabled {
		return 300
	}
	return 1500
}

// TestRoundTrip: Decode(Encode(s)) == s for tokenizers whose vocabulary has
// every byte and no normalizer, and == NFC(s) with the NFC normalizer.
func TestRoundTrip(t *testing.T) {
	cases := []struct {
		name     string
		f        fixture
		specials []string
		nfc      bool
	}{
		{"GPT-2", gpt2StyleFixture(), []string{"<|endoftext|>"}, false},
		{"Llama-3", llama3StyleFixture(), []string{"<|begin_of_text|>", "<|eot_id|>"}, false},
		{"Qwen2", qwen2StyleFixture(), []string{"<|im_start|>", "<think>"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tok := c.f.parse(t)
			rng := rand.New(rand.NewPCG(7, uint64(len(c.name))))
			for i := 0; i < roundTripCount(); i++ {
				s := randomText(rng, c.specials)
				want := s
				if c.nfc {
					want = nfc(s)
				}
				idList := tok.Encode(s, false)
				require.Equal(t, want, tok.Decode(idList), "text %q ids %v", s, idList)
				for _, id := range idList {
					require.Less(t, int(id), tok.VocabSize())
				}
			}
		})
	}
}

// TestStreamDecoderMatchesDecode: after every id, what the stream decoder
// has returned plus what it holds back equals Decode of the ids so far, and
// every piece it returns is valid UTF-8.
func TestStreamDecoderMatchesDecode(t *testing.T) {
	tok := llama3StyleFixture().parse(t)
	rng := rand.New(rand.NewPCG(11, 12))
	for i := 0; i < roundTripCount()/3; i++ {
		s := randomText(rng, []string{"<|eot_id|>"})
		idList := tok.Encode(s, true)
		for _, opts := range []DecodeOptions{{}, {SkipSpecial: true}} {
			d := tok.NewStreamDecoderWith(opts)
			var got strings.Builder
			for k, id := range idList {
				piece := d.Add(id)
				require.True(t, utf8.ValidString(piece))
				got.WriteString(piece)
				held := string(appendLossy(nil, d.pending))
				require.Equal(t, tok.DecodeWith(idList[:k+1], opts), got.String()+held, "text %q after %d ids", s, k+1)
			}
			got.WriteString(d.Flush())
			require.Equal(t, tok.DecodeWith(idList, opts), got.String())
		}
	}
}

// TestEncodeIsSafeConcurrently runs encodes on one tokenizer from several
// goroutines (for the race detector and the shared cache) and checks each
// result against a sequential encode.
func TestEncodeIsSafeConcurrently(t *testing.T) {
	tok := gpt2StyleFixture().parse(t)
	rng := rand.New(rand.NewPCG(5, 6))
	texts := make([]string, 64)
	want := make([][]uint32, len(texts))
	for i := range texts {
		texts[i] = randomText(rng, nil)
	}
	fresh := gpt2StyleFixture().parse(t)
	for i, s := range texts {
		want[i] = fresh.Encode(s, false)
	}
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			for k := 0; k < 4; k++ {
				for i, s := range texts {
					got := tok.Encode(s, false)
					if len(got) != len(want[i]) {
						errs <- &Error{Reason: "mismatch on " + s}
						return
					}
					for j := range got {
						if got[j] != want[i][j] {
							errs <- &Error{Reason: "mismatch on " + s}
							return
						}
					}
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		require.NoError(t, <-errs)
	}
}
