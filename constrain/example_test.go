package constrain_test

import (
	"fmt"

	"github.com/hipgo/hipgo/constrain"
)

// A tiny vocabulary decodes under a schema: at each step the mask names
// the tokens that continue a value, and this greedy "model" takes the
// first of them until the value is complete.
func Example() {
	g, err := constrain.CompileSchema([]byte(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}`), true)
	if err != nil {
		panic(err)
	}
	vocab := [][]byte{[]byte("hello"), []byte(`{"`), []byte(`ok`), []byte(`":`), []byte("true"), []byte("}"), []byte(`"`), []byte(" ")}
	m := g.NewMatcher(constrain.NewVocab(vocab))
	var text []byte
	for !m.CanEnd() {
		mask := make([]uint64, 1)
		m.Mask(mask)
		for id := range vocab {
			if mask[0]&(1<<id) != 0 {
				if err := m.Accept(uint32(id)); err != nil {
					panic(err)
				}
				text = append(text, vocab[id]...)
				break
			}
		}
	}
	fmt.Println(string(text))
	// Output: {"ok":true}
}
