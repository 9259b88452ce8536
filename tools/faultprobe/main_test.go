package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// Under -json, standard output is one JSON document and nothing else, even
// when there is no GPU to probe; the human-readable lines go to stderr.
func TestJSONOutputIsOneDocumentWithoutAGPU(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), true, &out, &errb)
	var rep report
	dec := json.NewDecoder(&out)
	require.NoError(t, dec.Decode(&rep), "stdout: %q", out.String())
	require.False(t, dec.More(), "stdout holds more than one document: %q", out.String())
	if rep.NoGPU == "" {
		// A GPU was found and probed; the GPU suite checks that run's classes.
		require.NotEmpty(t, rep.Results)
		return
	}
	require.Equal(t, 0, code)
	require.True(t, rep.OK)
	require.Empty(t, rep.Results)
	require.Contains(t, errb.String(), "no GPU here")
}
