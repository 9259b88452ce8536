package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/model/tokenizer"
)

// TestRunEncodesAndDecodesLines checks the line protocol on the tiny
// Llama-3-shaped fixture (byte ids, merges "Ġ t" "h e" "Ġt he" -> 258 for
// " the"; <|begin_of_text|> 261, <|eot_id|> 262).
func TestRunEncodesAndDecodesLines(t *testing.T) {
	tok, err := tokenizer.Load("../../../testdata/tiny-llama3.json")
	require.NoError(t, err)

	var out bytes.Buffer
	in := "\"a the\"\n\"\"\n\"<|eot_id|>\\u00e9\"" // no final newline
	require.NoError(t, run(tok, strings.NewReader(in), &out, false, false, false))
	require.Equal(t, "[97,258]\n[]\n[262,195,169]\n", out.String())

	out.Reset()
	require.NoError(t, run(tok, strings.NewReader("\"a\"\n"), &out, true, false, false))
	require.Equal(t, "[261,97]\n", out.String(), "-special adds the template's BOS")

	out.Reset()
	require.NoError(t, run(tok, strings.NewReader("[261,97,258]\n"), &out, false, true, false))
	require.Equal(t, "\"<|begin_of_text|>a the\"\n", out.String())
	out.Reset()
	require.NoError(t, run(tok, strings.NewReader("[261,97,258]\n"), &out, false, true, true))
	require.Equal(t, "\"a the\"\n", out.String())

	err = run(tok, strings.NewReader("\"ok\"\nnot json\n"), &out, false, false, false)
	require.ErrorContains(t, err, "line 2")
}
