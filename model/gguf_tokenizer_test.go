package model

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/hipgo/hipgo/model/gguf"
	"github.com/hipgo/hipgo/model/tokenizer"
	"github.com/stretchr/testify/require"
)

// ggufTokenizerFrom writes the tokenizer.ggml.* metadata that
// convert_hf_to_gguf.py writes for a tokenizer.json (tokens by id, merges,
// control tokens for special added tokens), with pre as tokenizer.ggml.pre.
func ggufTokenizerFrom(t *testing.T, path, pre string, addBOS bool, bos int) *gguf.File {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var j struct {
		Model struct {
			Vocab  map[string]int    `json:"vocab"`
			Merges []json.RawMessage `json:"merges"`
		} `json:"model"`
		Added []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens"`
	}
	require.NoError(t, json.Unmarshal(data, &j))
	n := 0
	for _, id := range j.Model.Vocab {
		n = max(n, id+1)
	}
	for _, a := range j.Added {
		n = max(n, a.ID+1)
	}
	tokens := make([]string, n)
	types := make([]int32, n)
	for tok, id := range j.Model.Vocab {
		tokens[id], types[id] = tok, 1
	}
	for _, a := range j.Added {
		tokens[a.ID], types[a.ID] = a.Content, ggufTokenUserDefined
		if a.Special {
			types[a.ID] = ggufTokenControl
		}
	}
	merges := make([]string, len(j.Model.Merges))
	for i, m := range j.Model.Merges {
		var s string
		if json.Unmarshal(m, &s) != nil {
			var pair []string
			require.NoError(t, json.Unmarshal(m, &pair))
			s = pair[0] + " " + pair[1]
		}
		merges[i] = s
	}
	var kv []gguf.KV
	for k, v := range map[string]any{"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": pre, "tokenizer.ggml.tokens": tokens,
		"tokenizer.ggml.token_type": types, "tokenizer.ggml.merges": merges, "tokenizer.ggml.add_bos_token": addBOS,
		"tokenizer.ggml.bos_token_id": uint32(bos)} {
		val, err := gguf.ValueOf(v)
		require.NoError(t, err)
		kv = append(kv, gguf.KV{Key: k, Value: val})
	}
	var buf bytes.Buffer
	require.NoError(t, gguf.Write(&buf, kv, nil))
	f, err := gguf.FromBytes("tok.gguf", buf.Bytes())
	require.NoError(t, err)
	return f
}

// TestGGUFTokenizerMatchesTokenizerJSON proves the tokenizer built from
// tokenizer.ggml.* with llama.cpp's pre-tokenizer names "llama-bpe" (Llama
// 3) and "qwen2" encodes 500 varied strings (model/tokenizer's golden
// strings) exactly as the real tokenizer.json it was converted from.
func TestGGUFTokenizerMatchesTokenizerJSON(t *testing.T) {
	for _, c := range []struct{ env, rel, pre string }{
		{"HIPGO_TEST_LLAMA3_TOKENIZER", "tokenizers/llama3/tokenizer.json", "llama-bpe"},
		{"HIPGO_TEST_QWEN3_TOKENIZER", "tokenizers/qwen3/tokenizer.json", "qwen2"},
	} {
		t.Run(c.pre, func(t *testing.T) {
			path := testenv.CacheFile(t, c.env, c.rel)
			want, err := tokenizer.Load(path)
			require.NoError(t, err)
			got, err := tokenizerFromGGUF(ggufTokenizerFrom(t, path, c.pre, false, 0))
			require.NoError(t, err)
			require.Equal(t, want.VocabSize(), got.VocabSize())
			f, err := os.Open("tokenizer/testdata/golden-strings.jsonl")
			require.NoError(t, err)
			defer f.Close()
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<20)
			n := 0
			for sc.Scan() {
				var s string
				require.NoError(t, json.Unmarshal(sc.Bytes(), &s))
				s += "<|im_start|><|begin_of_text|>" // special tokens split out where the vocabulary has them
				require.Equal(t, want.Encode(s, true), got.Encode(s, true), "%q", s)
				n++
			}
			require.NoError(t, sc.Err())
			require.Greater(t, n, 400)
		})
	}
}

func TestGGUFTokenizerAddsBOS(t *testing.T) {
	path := testenv.CacheFile(t, "HIPGO_TEST_LLAMA3_TOKENIZER", "tokenizers/llama3/tokenizer.json")
	got, err := tokenizerFromGGUF(ggufTokenizerFrom(t, path, "llama-bpe", true, 128000))
	require.NoError(t, err)
	ids := got.Encode("Hello", true)
	require.Equal(t, uint32(128000), ids[0])
	require.Equal(t, ids[1:], got.Encode("Hello", false))
}
