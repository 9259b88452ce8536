package tokenizer_test

import (
	"fmt"
	"log"

	"github.com/hipgo/hipgo/model/tokenizer"
)

// testdata/tiny-llama3.json is a Llama-3-shaped tokenizer.json with a byte
// vocabulary (id = byte value) and five merges: "Ġ t", "h e", "Ġt he",
// "i n", "Ġ a" (ids 256-260), plus <|begin_of_text|> (261) and <|eot_id|>
// (262). "the cat in the hat" splits into "the", " cat", " in", " the",
// " hat", which encode as t he | Ġ c a t | Ġ in | Ġthe | Ġ h a t.
func Example() {
	tok, err := tokenizer.Load("testdata/tiny-llama3.json")
	if err != nil {
		log.Fatal(err)
	}
	ids := tok.Encode("the cat in the hat<|eot_id|>", true)
	fmt.Println(ids)
	fmt.Printf("%q\n", tok.Decode(ids))
	fmt.Printf("%q\n", tok.DecodeWith(ids, tokenizer.DecodeOptions{SkipSpecial: true}))
	fmt.Println(tok.SpecialIDs(), tok.VocabSize())
	// Output:
	// [261 116 257 32 99 97 116 32 259 258 32 104 97 116 262]
	// "<|begin_of_text|>the cat in the hat<|eot_id|>"
	// "the cat in the hat"
	// [261 262] 263
}

// A StreamDecoder prints generated tokens as they come, holding back the
// bytes of a character split across tokens (here the four bytes of 😀).
func ExampleStreamDecoder() {
	tok, err := tokenizer.Load("testdata/tiny-llama3.json")
	if err != nil {
		log.Fatal(err)
	}
	d := tok.NewStreamDecoder()
	for _, id := range tok.Encode("hi 😀!", false) {
		fmt.Printf("%d -> %q\n", id, d.Add(id))
	}
	fmt.Printf("end -> %q\n", d.Flush())
	// Output:
	// 104 -> "h"
	// 105 -> "i"
	// 32 -> " "
	// 240 -> ""
	// 159 -> ""
	// 152 -> ""
	// 128 -> "😀"
	// 33 -> "!"
	// end -> ""
}

// Unsupported components are load errors that name the field.
func ExampleParse_unsupported() {
	_, err := tokenizer.Parse([]byte(`{"model": {"type": "Unigram", "vocab": []}}`))
	fmt.Println(err)
	// Output:
	// tokenizer: model.type: unsupported: model "Unigram" (only "BPE" is implemented)
}
