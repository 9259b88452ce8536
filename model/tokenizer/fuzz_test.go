package tokenizer

import (
	"os"
	"testing"
	"unicode/utf8"
)

// FuzzParse feeds corrupt tokenizer.json files to Parse: it must return an
// error or a tokenizer, never panic or allocate without bound, and a
// tokenizer it returns must encode and decode without panicking.
func FuzzParse(f *testing.F) {
	tiny, err := os.ReadFile("testdata/tiny-llama3.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(tiny)
	f.Add(tiny[:len(tiny)/2])
	for _, fx := range []fixture{llama3Tiny(), gpt2Tiny(), {vocab: map[string]int{"a": 0, "b": 1, "ab": 2}, merges: [][2]string{{"a", "b"}}, legacyMerges: true}} {
		f.Add(fx.json(f))
	}
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"added_tokens":[{"id":0,"content":"a","single_word":true,"lstrip":true,"rstrip":true,"normalized":true,"special":true}],"normalizer":{"type":"Sequence","normalizers":[{"type":"NFC"}]}}`))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":16777215},"merges":[]}}`))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{},"merges":[["a"]]}}`))
	f.Add([]byte(`{"pre_tokenizer":{"type":"Split","pattern":{"String":"x"},"behavior":"MergedWithNext","invert":true},"model":{"type":"BPE","vocab":{"x":0,"y":1},"merges":[]}}`))
	f.Add(spmDoc(f, "<unk>", "x", "xé", "<0xC3>", "<0xA9>"))
	f.Add([]byte(`{"normalizer":{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},{"type":"Replace","pattern":{"String":" "},"content":"▁"}]},"pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true},"decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":1},{"type":"Metaspace","replacement":"▁"}]},"model":{"type":"BPE","byte_fallback":true,"vocab":{"▁":0,"a":1,"<0x41>":2},"merges":[]}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := Parse(data)
		if err != nil {
			if tok != nil {
				t.Fatal("tokenizer and error both returned")
			}
			return
		}
		for _, s := range []string{"", "a", "hello world<|eot_id|>", " \n\t 123 'S x", "é😀\xff"} {
			ids := tok.Encode(s, true)
			_ = tok.Decode(ids)
			_ = tok.DecodeWith(ids, DecodeOptions{SkipSpecial: true})
			d := tok.NewStreamDecoder()
			for _, id := range ids {
				d.Add(id)
			}
			d.Flush()
		}
		_ = tok.Decode([]uint32{0, 1, 1 << 31})
	})
}

// FuzzEncode: on a Llama-3-shaped tokenizer with every byte in its
// vocabulary, any text encodes without panicking, every id is in range, and
// valid UTF-8 round-trips through Decode and through the stream decoder.
func FuzzEncode(f *testing.F) {
	tok := llama3StyleFixture().parse(f)
	for _, s := range []string{"", "Hello, world!", "a  \n\n  b", "it's IT'S ſ'll", "1234567", "<|begin_of_text|>x<|eot_id|>", "😀👍🏽\u3000\u0085", "\xff\xe3\x80", "e\u0301"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s, false)
		for _, id := range ids {
			if int(id) >= tok.VocabSize() {
				t.Fatalf("id %d out of range", id)
			}
		}
		got := tok.Decode(ids)
		if !utf8.ValidString(got) {
			t.Fatalf("Decode returned invalid UTF-8 %q", got)
		}
		if utf8.ValidString(s) && got != s {
			t.Fatalf("round trip: %q -> %v -> %q", s, ids, got)
		}
		d := tok.NewStreamDecoder()
		streamed := ""
		for _, id := range ids {
			streamed += d.Add(id)
		}
		streamed += d.Flush()
		if streamed != got {
			t.Fatalf("stream %q != decode %q", streamed, got)
		}
	})
}
