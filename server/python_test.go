package server

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/scheduler"
)

// TestPythonOpenAIClient runs testdata/openai_client.py with PyPI's openai
// client (installed by scripts/deps.sh into .cache/pyopenai) against the
// server: completions and chat, whole and streamed, penalties and
// logit_bias (the penalised text must be model.Generate's, passed in
// HIPGO_PENALISED_TEXT), logprobs (parsed into the client's types, greedy
// picking the top-1, streamed equal to whole), structured output
// (json_schema through parse() with a pydantic model, and streamed, and
// each of structuredSchemas, in HIPGO_SCHEMAS, checked for its required
// keys; a refused keyword), /tokenize and /detokenize, and the errors the
// client raises. The script fails on the first wrong answer.
func TestPythonOpenAIClient(t *testing.T) {
	py, err := filepath.Abs("../.cache/pyopenai/bin/python")
	require.NoError(t, err)
	if _, serr := os.Stat(py); serr != nil {
		testenv.NeedHost(t, errors.New("PyPI openai in .cache/pyopenai (scripts/deps.sh installs it): "+serr.Error()))
	}
	ts := start(t, scheduler.Config{}, Options{APIKeys: []string{"k"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ids, err := ts.m.PromptTokens("And God said")
	require.NoError(t, err)
	want, err := ts.m.Generate(ctx, "And God said", model.GenerateOptions{MaxTokens: 16, Temperature: 0.8, TopP: 1, Seed: 7,
		PresencePenalty: 0.5, FrequencyPenalty: 1.5, RepetitionPenalty: 1.3, LogitBias: map[uint32]float32{ids[0]: 4}}, nil)
	require.NoError(t, err)
	cmd := exec.CommandContext(ctx, py, "testdata/openai_client.py")
	schemas := make([]json.RawMessage, len(structuredSchemas))
	for i, s := range structuredSchemas {
		schemas[i] = json.RawMessage(s.schema)
	}
	schemaList, err := json.Marshal(schemas)
	require.NoError(t, err)
	cmd.Env = append(os.Environ(), "HIPGO_BASE_URL="+ts.URL, "HIPGO_PENALISED_TEXT="+want.Text, "HIPGO_SCHEMAS="+string(schemaList), "NO_PROXY=127.0.0.1", "no_proxy=127.0.0.1")
	out, err := cmd.CombinedOutput()
	t.Logf("openai_client.py:\n%s", out)
	require.NoError(t, err)
	require.Contains(t, string(out), "\nok\n")
}
