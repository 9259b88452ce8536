package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// gpt2Tiny is a byte-level tokenizer (ids = bytes) with five merges, for
// results worked out by hand.
func gpt2Tiny() fixture {
	return fixture{
		vocab: byteVocab("Ġt", "he", "Ġthe", "in", "Ġa", "Ġcat"),
		merges: [][2]string{
			{"Ġ", "t"},   // rank 0 -> 256
			{"h", "e"},   // rank 1 -> 257
			{"Ġt", "he"}, // rank 2 -> 258
			{"i", "n"},   // rank 3 -> 259
			{"Ġ", "a"},   // rank 4 -> 260
		},
		preTokenizer: byteLevelPre(false, true),
		decoder:      byteLevelDecoder,
	}
}

// TestBPEHandDerived: "the cat in the hat" splits into
// "the" " cat" " in" " the" " hat"; then per word:
//   - the:  (h,e) is the only merge            -> t he      = 116 257
//   - Ġcat: (Ġ,c) (c,a) (a,t) have no merge    -> bytes     = 32 99 97 116
//   - Ġin:  (i,n)                              -> Ġ in      = 32 259
//   - Ġthe: (Ġ,t) rank 0, then (h,e) rank 1, then (Ġt,he) rank 2 -> 258
//   - Ġhat: no merge (there is no "Ġ h")       -> 32 104 97 116
//
// "Ġcat" is in the vocabulary but no merge reaches it, so it only appears
// with ignore_merges.
func TestBPEHandDerived(t *testing.T) {
	f := gpt2Tiny()
	tok := f.parse(t)
	want := cat([]int{116, 257}, []int{32, 99, 97, 116}, []int{32, 259}, []int{258}, []int{32, 104, 97, 116})
	require.Equal(t, want, tok.Encode("the cat in the hat", false))

	f.ignoreMerges = true
	tok = f.parse(t)
	want = cat([]int{116, 257}, []int{261}, []int{32, 259}, []int{258}, []int{32, 104, 97, 116})
	require.Equal(t, want, tok.Encode("the cat in the hat", false), "ignore_merges takes a whole word found in the vocabulary")

	f.legacyMerges = true
	f.ignoreMerges = false
	require.Equal(t, cat([]int{258}), f.parse(t).Encode(" the", false), `"a b" merges read like [a, b] pairs`)
}

// TestBPEMergeOrder: lower ranks merge first, and among equal ranks the
// leftmost pair.
func TestBPEMergeOrder(t *testing.T) {
	f := fixture{
		vocab:        byteVocab("bc", "ab", "aa", "aaaa"),
		merges:       [][2]string{{"b", "c"}, {"a", "b"}, {"a", "a"}, {"aa", "aa"}},
		preTokenizer: byteLevelPre(false, false),
	}
	tok := f.parse(t)
	// abc: (b,c) has rank 0 < (a,b) rank 1, so a + bc, never ab + c.
	require.Equal(t, ids('a', 256), tok.Encode("abc", false))
	// aaa: three equal (a,a) pairs; the leftmost merges, the next is stale.
	require.Equal(t, ids(258, 'a'), tok.Encode("aaa", false))
	// aaaa: aa + aa, then (aa,aa).
	require.Equal(t, ids(259), tok.Encode("aaaa", false))
	// aaaaa: aa aa a -> aaaa a.
	require.Equal(t, ids(259, 'a'), tok.Encode("aaaaa", false))
}

// TestBPEUnknownCharacters follows merge_word in `tokenizers`: a character
// missing from the vocabulary is dropped when there is no unk_token, becomes
// the unk token otherwise, and consecutive unknowns fuse into one with
// fuse_unk.
func TestBPEUnknownCharacters(t *testing.T) {
	f := fixture{vocab: map[string]int{"a": 0, "b": 1, "<unk>": 2}, preTokenizer: nil}
	require.Equal(t, ids(0, 1), f.parse(t).Encode("axyb", false))
	f.unk = "<unk>"
	require.Equal(t, ids(0, 2, 2, 1), f.parse(t).Encode("axyb", false))
	f.fuseUnk = true
	require.Equal(t, ids(0, 2, 1, 2), f.parse(t).Encode("axybé", false))
}

// naiveBPE is the textbook algorithm, on strings: merge the adjacent pair
// with the lowest rank, the leftmost among equals, until none is left.
func naiveBPE(ranks map[[2]string]int, syms []string) []string {
	for {
		best, bestRank := -1, 0
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := ranks[[2]string{syms[i], syms[i+1]}]; ok && (best < 0 || r < bestRank) {
				best, bestRank = i, r
			}
		}
		if best < 0 {
			return syms
		}
		merged := syms[best] + syms[best+1]
		syms = append(syms[:best], append([]string{merged}, syms[best+2:]...)...)
	}
}

// TestBPEMatchesNaiveReference compares the priority-queue merge loop with
// the textbook algorithm on random words over a trained merges table.
func TestBPEMatchesNaiveReference(t *testing.T) {
	vocab, merges := trained()
	ranks := map[[2]string]int{}
	for i, m := range merges {
		ranks[m] = i
	}
	tok := gpt2StyleFixture().parse(t)
	pieces := splitWith(gpt2Regex, trainCorpus)
	rng := rand.New(rand.NewPCG(3, 4))
	n := 4000
	if raceEnabled {
		n = 800
	}
	for i := 0; i < n; i++ {
		// Glue random fragments of corpus words so merges meet in new ways.
		var b strings.Builder
		for k := 1 + rng.IntN(4); k > 0; k-- {
			p := pieces[rng.IntN(len(pieces))]
			lo := rng.IntN(len(p))
			b.WriteString(p[lo : lo+1+rng.IntN(len(p)-lo)])
		}
		word := bl(b.String())
		want := []uint32{}
		for _, s := range naiveBPE(ranks, strings.Split(word, "")) {
			want = append(want, uint32(vocab[s]))
		}
		got := tok.model.encode(nil, []byte(word))
		if got == nil {
			got = []uint32{}
		}
		require.Equal(t, want, got, "word %q", word)
	}
}

// TestBPECacheIsBounded proves the word cache never grows past its capacity.
func TestBPECacheIsBounded(t *testing.T) {
	tok := gpt2StyleFixture().parse(t)
	for i := 0; i < cacheCapacity+500; i++ {
		tok.Encode(" w"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+string(rune(0x4e00+i)), false)
	}
	tok.model.cache.mu.RLock()
	defer tok.model.cache.mu.RUnlock()
	require.LessOrEqual(t, len(tok.model.cache.m), cacheCapacity)
}
