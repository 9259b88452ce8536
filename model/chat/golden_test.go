package chat

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The Llama 3.1 and 3.2 and Gemma 3 templates are fetched by scripts/deps.sh
// into .cache/chat_templates (their licences ask more than we commit to); the
// Makefile points this variable there, so CI runs them. The others are
// committed in testdata/templates.
const envTemplates = "HIPGO_TEST_CHAT_TEMPLATES"

type conversation struct {
	Messages            []Message `json:"messages"`
	AddGenerationPrompt bool      `json:"add_generation_prompt"`
}

type goldenFile struct {
	Template       string  `json:"template"`
	TemplateSHA256 string  `json:"template_sha256"`
	BOS            *string `json:"bos_token"`
	EOS            *string `json:"eos_token"`
	Now            string  `json:"now"`
	Cases          []struct {
		Rendered *string `json:"rendered"`
		Error    string  `json:"error"`
	} `json:"cases"`
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, v), path)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestRendersLikeTransformers proves Render is byte-identical to
// transformers' apply_chat_template (testdata/gen_golden.py) on 50 varied
// conversations (system prompt or not, one to eight turns, unicode, empty
// content, whitespace that Llama's template trims, template syntax and
// special markers inside content, tool turns, add_generation_prompt both
// ways) for the real SmolLM2-135M-Instruct (from its GGUF), Qwen2.5-Instruct, Qwen3,
// Llama 3.1 and 3.2 Instruct (strftime_now at a frozen instant), Mistral
// Nemo, Gemma 3 and Mistral Small 3.2 ([INST], strftime_now) templates, and
// that where the template raised an exception (on roles out of order, or
// Mistral Small's on tool turns without a tool_call_id) Render returns a
// *RaiseError with the same message.
func TestRendersLikeTransformers(t *testing.T) {
	var convs []conversation
	readJSON(t, "testdata/conversations.json", &convs)
	require.Len(t, convs, 50)
	for _, name := range []string{"smollm2", "qwen2.5", "qwen3", "llama3.1", "llama3.2", "mistral-nemo", "gemma3", "mistral-small-3.2"} {
		t.Run(name, func(t *testing.T) {
			var g goldenFile
			readJSON(t, "testdata/golden-"+name+".json", &g)
			require.Len(t, g.Cases, len(convs))
			path := filepath.Join("testdata", "templates", g.Template)
			if _, err := os.Stat(path); err != nil {
				dir := os.Getenv(envTemplates)
				if dir == "" {
					t.Skipf("%s is fetched by scripts/deps.sh: set %s to its directory (make test does)", g.Template, envTemplates)
				}
				path = filepath.Join(dir, g.Template)
			}
			src, err := os.ReadFile(path)
			require.NoError(t, err)
			sum := sha256.Sum256(src)
			require.Equal(t, g.TemplateSHA256, hex.EncodeToString(sum[:]), "%s is not the template the golden file was made from", path)
			now, err := time.Parse("2006-01-02T15:04:05", g.Now)
			require.NoError(t, err)
			tpl, err := New(string(src), Tokens{BOS: deref(g.BOS), EOS: deref(g.EOS)}, WithNow(func() time.Time { return now }))
			require.NoError(t, err)
			raised := 0
			for i, c := range convs {
				got, err := tpl.Render(c.Messages, c.AddGenerationPrompt)
				want := g.Cases[i]
				if want.Rendered == nil {
					raised++
					var re *RaiseError
					require.True(t, errors.As(err, &re), "conversation %d: want raise_exception(%q), got %v", i, want.Error, err)
					require.Equal(t, want.Error, re.Message, "conversation %d", i)
					continue
				}
				require.NoError(t, err, "conversation %d", i)
				require.Equal(t, *want.Rendered, got, "conversation %d", i)
			}
			t.Logf("%s: %d conversations byte-identical to transformers (%d raised the same exception)", name, len(convs), raised)
		})
	}
}
