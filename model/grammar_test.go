package model

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/constrain"
	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/hipgo/hipgo/model/demo"
)

func validateJSON(t *testing.T, schema, text string) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("schema.json", doc))
	sch, err := c.Compile("schema.json")
	require.NoError(t, err)
	var v any
	require.NoError(t, json.Unmarshal([]byte(text), &v), "%q is not JSON", text)
	require.NoError(t, sch.Validate(v), "%s", text)
}

// TestGrammarConstrainsGenerationOnTheCPU: on the demo model (trained on
// the Bible, which has no JSON in it) a grammar makes greedy and sampled
// generation end, at end of sequence, on JSON that validates against the
// schema, with the emitted pieces adding up to the text; without it the
// same request is prose. The top logprobs are still the model's, from the
// logits before the mask.
func TestGrammarConstrainsGenerationOnTheCPU(t *testing.T) {
	m, err := LoadFS(demo.FS())
	require.NoError(t, err)
	ctx := context.Background()
	const prompt = "User: the person as JSON\nAssistant:"
	for _, schema := range []string{
		`{"type":"object","properties":{"name":{"type":"string","maxLength":12},"age":{"type":"integer","minimum":0,"maximum":120},"tribe":{"enum":["Judah","Levi","Dan"]}},"required":["name","age","tribe"],"additionalProperties":false}`,
		`{"type":"array","items":{"type":"number","minimum":-1,"maximum":1},"minItems":1,"maxItems":3}`,
		`{"anyOf":[{"type":"null"},{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}]}`,
	} {
		g, err := constrain.CompileSchema([]byte(schema), true)
		require.NoError(t, err)
		for _, temp := range []float32{0, 0.9} {
			var emitted strings.Builder
			opts := GenerateOptions{MaxTokens: 200, Temperature: temp, TopP: 1, TopK: 40, Seed: 11, Grammar: g, Logprobs: true, TopLogprobs: 3}
			res, err := m.Generate(ctx, prompt, opts, func(tk Token) error { emitted.WriteString(tk.Text); return nil })
			require.NoError(t, err)
			require.Equal(t, StopEOS, res.Reason, "%q", res.Text)
			require.Equal(t, res.Text, emitted.String())
			validateJSON(t, schema, res.Text)

			free := opts
			free.Grammar = nil
			plain, err := m.Generate(ctx, prompt, free, nil)
			require.NoError(t, err)
			require.False(t, json.Valid([]byte(plain.Text)), "without the grammar: %q", plain.Text)
			require.Equal(t, plain.Logprobs[0].Top, res.Logprobs[0].Top, "the first token's top logprobs are the model's, not the mask's")
		}
	}
}

// TestGrammarsInABatchAreTheirsAlone: sequences under different grammars
// (and one under none) batched together, with and without a prefill
// budget that feeds the prompts in slices, get the tokens each gets alone.
func TestGrammarsInABatchAreTheirsAlone(t *testing.T) {
	m, err := LoadFS(demo.FS())
	require.NoError(t, err)
	grammar := func(schema string) *constrain.Grammar {
		g, err := constrain.CompileSchema([]byte(schema), true)
		require.NoError(t, err)
		return g
	}
	seqs := []promptedSeq{
		{"And God said", GenerateOptions{Grammar: grammar(`{"type":"array","items":{"type":"integer","minimum":0,"maximum":99}}`)}},
		{"In the beginning God created the heaven and the earth.", GenerateOptions{Temperature: 0.8, TopP: 1, Seed: 3, Grammar: grammar(`{"type":"object","properties":{"a":{"type":"string","maxLength":9},"b":{"enum":[1,2,3]}},"required":["a","b"],"additionalProperties":false}`)}},
		{"And the earth was without form", GenerateOptions{Temperature: 0.8, TopP: 1, Seed: 1}},
		{"Let there be light", GenerateOptions{Temperature: 1, TopK: 50, TopP: 1, Seed: 2, Grammar: constrain.JSONObject()}},
	}
	const n = 24
	budgets := []int{0, 3}
	alone, batched := aloneAndBatched(t, m, seqs, n, budgets)
	want := make([][]uint32, len(seqs))
	for i, res := range alone {
		want[i] = res.Tokens
	}
	for k, got := range batched {
		ids := make([][]uint32, len(seqs))
		for i, toks := range got {
			for _, tk := range toks {
				if !m.IsEOS(tk.ID) {
					ids[i] = append(ids[i], tk.ID)
				}
			}
		}
		require.Equal(t, want, ids, "prefill budget %d", budgets[k])
	}
}

// TestGrammarCutByMaxTokensIsAPrefix: MaxTokens ends a constrained value
// early (StopMaxTokens) on a prefix of a value, not a complete one.
func TestGrammarCutByMaxTokensIsAPrefix(t *testing.T) {
	m, err := LoadFS(demo.FS())
	require.NoError(t, err)
	g, err := constrain.CompileSchema([]byte(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a","b"]}`), true)
	require.NoError(t, err)
	res, err := m.Generate(context.Background(), "And God said", GenerateOptions{MaxTokens: 6, Grammar: g}, nil)
	require.NoError(t, err)
	require.Equal(t, StopMaxTokens, res.Reason)
	require.True(t, strings.HasPrefix(strings.TrimLeft(res.Text, " \n\t\r"), "{"), "%q", res.Text)
	require.False(t, g.Accepts([]byte(res.Text)), "%q", res.Text)
}

// TestGPUBackendRefusesAGrammarByName: the GPU backend (the simulated
// device), whose logits never leave the device, refuses a grammar with an
// *UnsupportedOptionError naming response_format, from CheckOptions,
// Generate and Batch.Add alike.
func TestGPUBackendRefusesAGrammarByName(t *testing.T) {
	g, err := LoadFS(demo.FS(), WithDevice(simDevice(t, nil)))
	require.NoError(t, err)
	defer g.Close()
	o := GenerateOptions{Grammar: constrain.JSONObject()}
	var ue *UnsupportedOptionError
	require.True(t, errors.As(g.CheckOptions(o), &ue))
	require.Equal(t, "response_format", ue.Option)
	require.Equal(t, g.Backend(), ue.Backend)
	_, err = g.GenerateTokens(context.Background(), []uint32{1, 2, 3}, o, nil)
	require.True(t, errors.As(err, &ue), "Generate: %v", err)
	b := g.NewBatch()
	defer b.Close()
	_, err = b.Add([]uint32{1, 2, 3}, o)
	require.True(t, errors.As(err, &ue), "Batch.Add: %v", err)
}

// BenchmarkGrammarMask is the per-token cost of the mask at SmolLM2's
// vocabulary (49152 tokens, from the GGUF in .cache): the trie walk from
// a state in an object's key, in a free string, in a bounded number, and
// after a value (where only ',' or '}' continue), and the -Inf pass over
// a logits row.
func BenchmarkGrammarMask(b *testing.B) {
	path := testenv.CacheFile(b, "HIPGO_TEST_SMOLLM2_GGUF", "models/smollm2-135m-instruct-q4_1.gguf")
	m, err := Load(path)
	require.NoError(b, err)
	defer m.Close()
	g, err := constrain.CompileSchema([]byte(`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":150},"tags":{"type":"array","items":{"type":"string"}}},"required":["name","age"],"additionalProperties":false}`), true)
	require.NoError(b, err)
	gv := m.grammarVocab()
	require.Equal(b, 49152, gv.vocab.Size())
	tok := m.Tokenizer()
	row := make([]float32, m.cfg.VocabSize)
	for _, c := range []struct{ name, prefix string }{
		{"key", `{"`},
		{"string", `{"name": "Ada Lov`},
		{"number", `{"name": "Ada", "age": 1`},
		{"after-value", `{"name": "Ada", "age": 36`},
	} {
		sg := m.newSeqGrammar(g)
		for _, id := range tok.Encode(c.prefix, false) {
			require.NoError(b, sg.accept(id), c.prefix)
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				require.NoError(b, sg.apply(row))
			}
			clear(sg.mask)
			b.ReportMetric(float64(sg.m.Mask(sg.mask)), "allowed")
		})
	}
}
