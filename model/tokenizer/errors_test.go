package tokenizer

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// mutate returns the llama3Tiny fixture's JSON with one change applied.
func mutate(t *testing.T, change func(doc map[string]any)) []byte {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal(llama3Tiny().json(t), &doc))
	change(doc)
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	return data
}

func model(doc map[string]any) map[string]any { return doc["model"].(map[string]any) }

// TestUnsupportedComponents: a tokenizer with an unknown or unimplemented
// type gets an error that wraps ErrUnsupported and names the JSON field.
func TestUnsupportedComponents(t *testing.T) {
	cases := []struct {
		name   string
		change func(map[string]any)
		field  string
	}{
		{"model type", func(d map[string]any) { model(d)["type"] = "WordPiece" }, "model.type"},
		{"made-up model type", func(d map[string]any) { model(d)["type"] = "Quantum" }, "model.type"},
		{"normalizer", func(d map[string]any) { d["normalizer"] = map[string]any{"type": "Lowercase"} }, "normalizer.type"},
		{"normalizer in a sequence", func(d map[string]any) {
			d["normalizer"] = sequence("normalizers", map[string]any{"type": "NFC"}, map[string]any{"type": "NFKC"})
		}, "normalizer.normalizers[1].type"},
		{"pre-tokenizer", func(d map[string]any) { d["pre_tokenizer"] = map[string]any{"type": "Whitespace"} }, "pre_tokenizer.type"},
		{"pre-tokenizer in a sequence", func(d map[string]any) {
			d["pre_tokenizer"] = sequence("pretokenizers", map[string]any{"type": "Whitespace"})
		}, "pre_tokenizer.pretokenizers[0].type"},
		{"metaspace first after another step", func(d map[string]any) {
			d["pre_tokenizer"] = sequence("pretokenizers", map[string]any{"type": "Digits", "individual_digits": true},
				map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false})
		}, "pre_tokenizer.pretokenizers[1].prepend_scheme"},
		{"replace regex", func(d map[string]any) {
			d["normalizer"] = map[string]any{"type": "Replace", "pattern": map[string]any{"Regex": " {2,}"}, "content": " "}
		}, "normalizer.pattern.Regex"},
		{"regex", func(d map[string]any) {
			d["pre_tokenizer"] = sequence("pretokenizers", splitPre(`\p{L}+|\s+(?!\S)`), byteLevelPre(false, false))
		}, "pre_tokenizer.pretokenizers[0].pattern.Regex"},
		{"post-processor", func(d map[string]any) { d["post_processor"] = map[string]any{"type": "BertProcessing"} }, "post_processor.type"},
		{"decoder", func(d map[string]any) { d["decoder"] = map[string]any{"type": "WordPiece"} }, "decoder.type"},
		{"byte-level decoder in a chain", func(d map[string]any) {
			d["decoder"] = sequence("decoders", byteLevelDecoder, map[string]any{"type": "Fuse"})
		}, "decoder"},
		{"decoder in a sequence", func(d map[string]any) {
			d["decoder"] = sequence("decoders", map[string]any{"type": "Fuse"}, map[string]any{"type": "CTC"})
		}, "decoder.decoders[1].type"},
		{"dropout", func(d map[string]any) { model(d)["dropout"] = 0.1 }, "model.dropout"},
		{"subword prefix", func(d map[string]any) { model(d)["continuing_subword_prefix"] = "##" }, "model.continuing_subword_prefix"},
		{"version", func(d map[string]any) { d["version"] = "2.0" }, "version"},
		{"sparse ids", func(d map[string]any) { model(d)["vocab"].(map[string]any)["far"] = 5_000_000 }, "model.vocab"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(mutate(t, c.change))
			require.ErrorIs(t, err, ErrUnsupported)
			require.NotErrorIs(t, err, ErrInvalid)
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, c.field, e.Field)
		})
	}
}

// TestInvalidFiles: malformed or inconsistent files wrap ErrInvalid, name the
// field, and keep the underlying JSON error reachable.
func TestInvalidFiles(t *testing.T) {
	cases := []struct {
		name   string
		change func(map[string]any)
		field  string
	}{
		{"merge token missing", func(d map[string]any) {
			model(d)["merges"] = []any{[]string{"Ġ", "Ġ"}, []string{"q", "qq"}}
		}, "model.merges[1]"},
		{"merged token missing", func(d map[string]any) { model(d)["merges"] = []any{"q q"} }, "model.merges[0]"},
		{"legacy merge with three parts", func(d map[string]any) { model(d)["merges"] = []any{"a b c"} }, "model.merges[0]"},
		{"no vocab", func(d map[string]any) { delete(model(d), "vocab") }, "model.vocab"},
		{"no merges", func(d map[string]any) { delete(model(d), "merges") }, "model.merges"},
		{"no model", func(d map[string]any) { delete(d, "model") }, "model"},
		{"model without type", func(d map[string]any) { delete(model(d), "type") }, "model"},
		{"unk not in vocab", func(d map[string]any) { model(d)["unk_token"] = "<unk>" }, "model.unk_token"},
		{"negative id", func(d map[string]any) { model(d)["vocab"].(map[string]any)["x"] = -1 }, "model"},
		{"added token without special", func(d map[string]any) {
			delete(d["added_tokens"].([]any)[1].(map[string]any), "special")
		}, "added_tokens[1].special"},
		{"template names a missing token", func(d map[string]any) {
			p := d["post_processor"].(map[string]any)["processors"].([]any)[1].(map[string]any)
			p["special_tokens"] = map[string]any{}
		}, "post_processor.processors[1].single[0]"},
		{"split without behavior", func(d map[string]any) {
			delete(d["pre_tokenizer"].(map[string]any)["pretokenizers"].([]any)[0].(map[string]any), "behavior")
		}, "pre_tokenizer.pretokenizers[0].behavior"},
		{"null in a sequence", func(d map[string]any) { d["pre_tokenizer"] = sequence("pretokenizers", nil) }, "pre_tokenizer.pretokenizers[0]"},
		{"byte level without add_prefix_space", func(d map[string]any) {
			d["pre_tokenizer"] = map[string]any{"type": "ByteLevel", "use_regex": true}
		}, "pre_tokenizer.add_prefix_space"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(mutate(t, c.change))
			require.ErrorIs(t, err, ErrInvalid)
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, c.field, e.Field)
		})
	}

	_, err := Parse([]byte(`{"model": {"type": "BPE", "vocab": {`))
	require.ErrorIs(t, err, ErrInvalid)
	var syntax *json.SyntaxError
	require.ErrorAs(t, err, &syntax, "the JSON error stays reachable")
}

// TestLoadNamesTheFile: Load's errors carry the path, both for an unusable
// file and for one that cannot be read.
func TestLoadNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokenizer.json")
	require.NoError(t, os.WriteFile(path, mutate(t, func(d map[string]any) { model(d)["type"] = "Unigram" }), 0o644))
	_, err := Load(path)
	require.ErrorIs(t, err, ErrUnsupported)
	require.Contains(t, err.Error(), path)
	require.Contains(t, err.Error(), "model.type")
	require.Contains(t, err.Error(), `"Unigram"`)

	_, err = Load(filepath.Join(dir, "missing.json"))
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.Contains(t, err.Error(), "missing.json")

	require.NoError(t, os.WriteFile(path, llama3Tiny().json(t), 0o644))
	tok, err := Load(path)
	require.NoError(t, err)
	require.Equal(t, ids(97), tok.Encode("a", false))
}
