package constrain

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"math/rand/v2"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/model/demo"
	"github.com/hipgo/hipgo/model/tokenizer"
)

// walkSchemas are schemas the random walks draw values of.
var walkSchemas = []string{
	`{"type":"object"}`,
	`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":150},"tags":{"type":"array","items":{"enum":["a","b","c"]},"maxItems":3}},"required":["name","age"],"additionalProperties":false}`,
	`{"type":"array","items":{"type":"number","exclusiveMinimum":-1.5,"maximum":2.25},"minItems":2,"maxItems":4}`,
	`{"anyOf":[{"type":"object","properties":{"kind":{"const":"circle"},"r":{"type":"number","minimum":0}},"required":["kind","r"],"additionalProperties":false},{"type":"object","properties":{"kind":{"const":"square"},"side":{"type":"integer","minimum":1,"maximum":9}},"required":["kind","side"],"additionalProperties":false}]}`,
	`{"$ref":"#/$defs/t","$defs":{"t":{"type":"object","properties":{"v":{"type":["integer","null"]},"kids":{"type":"array","items":{"$ref":"#/$defs/t"},"maxItems":2}},"required":["v"],"additionalProperties":false}}}`,
	`{"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"null"}},"additionalProperties":{"type":"string"}}`,
	`{"type":"object","properties":{"s":{"type":"string","minLength":1,"maxLength":5},"t":{"type":["string","null"],"maxLength":2}},"required":["s","t"],"additionalProperties":false}`,
}

// next lists the bytes st takes and the states they lead to.
func next(st *State) ([]int, []State) {
	var cs []int
	var sts []State
	var scratch []frame
	for c := range 256 {
		var dst State
		scratch = advance(st, c, &dst, scratch)
		if !dst.empty() {
			cs = append(cs, c)
			sts = append(sts, dst)
		}
	}
	return cs, sts
}

// randomText walks g from its start, one accepted byte at a time, leaning
// more and more on closing bytes so that most walks end; it fails the test
// on a state that takes no byte and cannot end (a dead end).
func randomText(t *testing.T, g *Grammar, rng *rand.Rand, limit int) ([]byte, State, bool) {
	st := g.start()
	var out []byte
	var scratch []frame
	for len(out) < limit {
		end := st.canEnd(&scratch)
		cs, sts := next(&st)
		require.True(t, end || len(cs) > 0, "dead end after %q", out)
		if end && (len(cs) == 0 || rng.IntN(4) == 0) {
			return out, st, true
		}
		w := make([]int, len(cs))
		total := 0
		for i, c := range cs {
			w[i] = 1
			if bytes.IndexByte([]byte(`"}],:0123456789tfn`), byte(c)) >= 0 {
				w[i] = 10 + len(out)
			}
			total += w[i]
		}
		r := rng.IntN(total)
		i := 0
		for r >= w[i] {
			r -= w[i]
			i++
		}
		out = append(out, byte(cs[i]))
		st = sts[i]
	}
	return out, st, false
}

// TestRandomValuesOfTheGrammarValidateAgainstTheSchema: texts drawn byte
// by byte from what the recognizer allows never reach a dead end, and each
// complete one is JSON that santhosh-tekuri/jsonschema validates against
// the schema.
func TestRandomValuesOfTheGrammarValidateAgainstTheSchema(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i, s := range walkSchemas {
		g := compile(t, s, true)
		sch := validator(t, s)
		done := 0
		for range 60 {
			text, _, ok := randomText(t, g, rng, 600)
			if !ok {
				continue
			}
			done++
			var v any
			require.NoError(t, json.Unmarshal(text, &v), "schema %d: %q", i, text)
			require.NoError(t, sch.Validate(v), "schema %d: %s", i, text)
		}
		require.Greater(t, done, 20, "schema %d: most walks end", i)
	}
}

func validator(t *testing.T, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(schema)))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("schema.json", doc))
	sch, err := c.Compile("schema.json")
	require.NoError(t, err)
	return sch
}

// demoVocab is the demo model's vocabulary as Vocab takes it: each token's
// bytes, none for special tokens.
func demoVocab(t testing.TB) [][]byte {
	data, err := fs.ReadFile(demo.FS(), "tokenizer.json")
	require.NoError(t, err)
	tok, err := tokenizer.Parse(data)
	require.NoError(t, err)
	out := make([][]byte, tok.VocabSize())
	for id := range out {
		out[id], _ = tok.TextBytes(uint32(id))
	}
	return out
}

// TestTrieMaskEqualsBruteForce: at random states of every walk schema, the
// tokens Mask allows by walking the trie are exactly those whose bytes the
// recognizer takes one by one from that state, over the demo vocabulary
// and, since a vocabulary trained on the Bible holds few JSON tokens, the
// 1- to 6-byte pieces of random values of the schemas.
func TestTrieMaskEqualsBruteForce(t *testing.T) {
	tokens := demoVocab(t)
	rng := rand.New(rand.NewPCG(3, 4))
	seen := map[string]bool{}
	for _, s := range walkSchemas {
		g := compile(t, s, true)
		for range 10 {
			text, _, _ := randomText(t, g, rng, 300)
			for i := range text {
				for n := 1; n <= 6 && i+n <= len(text); n++ {
					if p := string(text[i : i+n]); !seen[p] {
						seen[p] = true
						tokens = append(tokens, []byte(p))
					}
				}
			}
		}
	}
	v := NewVocab(tokens)
	states := 0
	for _, s := range walkSchemas {
		g := compile(t, s, true)
		for range 8 {
			_, st, _ := randomText(t, g, rng, 5+rng.IntN(60))
			m := g.NewMatcher(v)
			m.st = st
			mask := make([]uint64, (len(tokens)+63)/64)
			n := m.Mask(mask)
			want := make([]uint64, len(mask))
			wantN := 0
			var scratch []frame
			for id, b := range tokens {
				if len(b) == 0 {
					continue
				}
				cur := st
				ok := true
				for _, c := range b {
					var nx State
					scratch = advance(&cur, int(c), &nx, scratch)
					if nx.empty() {
						ok = false
						break
					}
					cur = nx
				}
				if ok {
					want[id/64] |= 1 << (id % 64)
					wantN++
				}
			}
			require.Equal(t, want, mask)
			require.Equal(t, wantN, n)
			if n == 0 { // only end of sequence is left
				require.True(t, m.CanEnd())
			}
			states++
		}
	}
	require.Equal(t, 8*len(walkSchemas), states)
}

// TestMatcherAcceptFollowsTheMask: a matcher fed only allowed tokens
// accepts each, refuses a token the mask leaves out, and ends on a value
// the grammar accepts.
func TestMatcherAcceptFollowsTheMask(t *testing.T) {
	tokens := demoVocab(t)
	v := NewVocab(tokens)
	g := compile(t, walkSchemas[1], true)
	m := g.NewMatcher(v)
	rng := rand.New(rand.NewPCG(5, 6))
	var text []byte
	mask := make([]uint64, (len(tokens)+63)/64)
	for steps := 0; !m.CanEnd(); steps++ {
		require.Less(t, steps, 2000)
		clear(mask)
		require.Greater(t, m.Mask(mask), 0)
		var allowed, refused []uint32
		for id := range tokens {
			if mask[id/64]&(1<<(id%64)) != 0 {
				allowed = append(allowed, uint32(id))
			} else if len(tokens[id]) > 0 {
				refused = append(refused, uint32(id))
			}
		}
		if len(refused) > 0 {
			require.Error(t, m.Accept(refused[rng.IntN(len(refused))]))
		}
		// Prefer short tokens that close things, so the walk ends.
		id := allowed[rng.IntN(len(allowed))]
		for _, a := range allowed {
			if bytes.ContainsAny(tokens[a], `"}]`) && rng.IntN(3) == 0 {
				id = a
				break
			}
		}
		require.NoError(t, m.Accept(id))
		text = append(text, tokens[id]...)
	}
	require.True(t, g.Accepts(text), "%s", text)
}
