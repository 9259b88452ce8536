package tokenizer

import (
	"sort"
	"strings"
	"sync"
	"testing"
)

// A textbook byte-level BPE trainer, used to make realistic fixtures
// (a full byte alphabet and a few hundred merges) for the round-trip,
// streaming and reference-comparison tests and the benchmark. The merges it
// learns are not expected values of anything; they only need to be a valid
// merges table.

// trainCorpus is public-domain text (King James Bible, Genesis 1) with some
// code and non-English text mixed in so that merges span multi-byte
// characters too.
const trainCorpus = `In the beginning God created the heaven and the earth.
And the earth was without form, and void; and darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters.
And God said, Let there be light: and there was light.
And God saw the light, that it was good: and God divided the light from the darkness.
And God called the light Day, and the darkness he called Night. And the evening and the morning were the first day.
And God said, Let there be a firmament in the midst of the waters, and let it divide the waters from the waters.
And God made the firmament, and divided the waters which were under the firmament from the waters which were above the firmament: and it was so.
And God called the firmament Heaven. And the evening and the morning were the second day.
func main() { fmt.Println("hello, world") } // it's 2024, isn't it? 1234567890
Привет, мир! Это тест. 你好，世界。日本語のテキスト。 café naïve façade 😀 👍🏽
`

// trainByteLevelBPE learns numMerges merges over the GPT-2 pre-tokenization
// of corpus, merging the most frequent adjacent pair each step (ties broken
// by the smaller pair), and returns a vocabulary of the 256 byte characters
// (id = byte) followed by the merged tokens.
func trainByteLevelBPE(corpus string, numMerges int) (map[string]int, [][2]string) {
	counts := map[string]int{}
	for _, w := range splitWith(gpt2Regex, corpus) {
		counts[bl(w)]++
	}
	type word struct {
		syms  []string
		count int
	}
	var words []word
	for w, c := range counts {
		words = append(words, word{syms: strings.Split(w, ""), count: c})
	}
	sort.Slice(words, func(i, j int) bool { return strings.Join(words[i].syms, "") < strings.Join(words[j].syms, "") })
	vocab := byteVocab()
	var merges [][2]string
	for len(merges) < numMerges {
		pairs := map[[2]string]int{}
		for _, w := range words {
			for i := 0; i+1 < len(w.syms); i++ {
				pairs[[2]string{w.syms[i], w.syms[i+1]}] += w.count
			}
		}
		var best [2]string
		bestN := 0
		for p, n := range pairs {
			if n > bestN || (n == bestN && (p[0] < best[0] || (p[0] == best[0] && p[1] < best[1]))) {
				best, bestN = p, n
			}
		}
		if bestN == 0 {
			break
		}
		merges = append(merges, best)
		merged := best[0] + best[1]
		if _, ok := vocab[merged]; !ok {
			vocab[merged] = len(vocab)
		}
		for wi := range words {
			s := words[wi].syms
			out := s[:0]
			for i := 0; i < len(s); i++ {
				if i+1 < len(s) && s[i] == best[0] && s[i+1] == best[1] {
					out = append(out, merged)
					i++
				} else {
					out = append(out, s[i])
				}
			}
			words[wi].syms = out
		}
	}
	return vocab, merges
}

var (
	trainedOnce   sync.Once
	trainedVocab  map[string]int
	trainedMerges [][2]string
)

// trained returns the fixture vocabulary and merges, trained once.
func trained() (map[string]int, [][2]string) {
	trainedOnce.Do(func() { trainedVocab, trainedMerges = trainByteLevelBPE(trainCorpus, 400) })
	return trainedVocab, trainedMerges
}

// gpt2StyleFixture is a GPT-2-shaped tokenizer on the trained merges.
func gpt2StyleFixture() fixture {
	v, m := trained()
	return fixture{
		vocab: v, merges: m, legacyMerges: true,
		added:         []addedFixture{{content: "<|endoftext|>", special: true, normalized: true}},
		preTokenizer:  byteLevelPre(false, true),
		postProcessor: map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
		decoder:       byteLevelDecoder,
	}
}

// llama3StyleFixture is a Llama-3-shaped tokenizer on the trained merges.
func llama3StyleFixture() fixture {
	v, m := trained()
	bos := len(v)
	return fixture{
		vocab: v, merges: m, ignoreMerges: true,
		added: []addedFixture{
			{content: "<|begin_of_text|>", special: true},
			{content: "<|end_of_text|>", special: true},
			{content: "<|eot_id|>", special: true},
		},
		preTokenizer:  sequence("pretokenizers", splitPre(llama3Pattern), byteLevelPre(false, false)),
		postProcessor: bosTemplate("<|begin_of_text|>", bos),
		decoder:       byteLevelDecoder,
	}
}

// qwen2StyleFixture is a Qwen2-shaped tokenizer (NFC normalizer) on the
// trained merges.
func qwen2StyleFixture() fixture {
	v, m := trained()
	return fixture{
		vocab: v, merges: m,
		added:        []addedFixture{{content: "<|endoftext|>", special: true}, {content: "<|im_start|>", special: true}, {content: "<think>"}},
		normalizer:   map[string]any{"type": "NFC"},
		preTokenizer: sequence("pretokenizers", splitPre(qwen2Pattern), byteLevelPre(false, false)),
		decoder:      byteLevelDecoder,
	}
}

func TestTrainerProducesAValidTable(t *testing.T) {
	v, m := trained()
	if len(m) < 200 || len(v) != 256+len(m) {
		t.Fatalf("trainer made %d merges and %d tokens", len(m), len(v))
	}
	for _, p := range m {
		for _, s := range []string{p[0], p[1], p[0] + p[1]} {
			if _, ok := v[s]; !ok {
				t.Fatalf("merge %q: %q not in vocab", p, s)
			}
		}
	}
}
