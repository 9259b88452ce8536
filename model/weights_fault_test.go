package model

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/model/safetensors"
	"github.com/stretchr/testify/require"
)

// TestTruncatedCheckpointIsAnErrorNotACrash proves that weights read in
// place from a file truncated under the model (reads of the lost pages
// fault: SIGBUS) fail the forward pass and the generation with ErrWeights,
// on one thread and on the worker pool, and the process lives on.
func TestTruncatedCheckpointIsAnErrorNotACrash(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("truncating a mapped file loses its pages on Linux")
	}
	spec := modeltest.SmolLMTiny() // bf16: read in place
	spec.NoTokenizer = true
	for _, threads := range []int{1, 2} {
		dir := t.TempDir()
		require.NoError(t, modeltest.Write(dir, spec))
		path := filepath.Join(dir, safetensors.SingleFile)
		m, err := Load(dir, WithoutTokenizer(), WithThreads(threads))
		require.NoError(t, err)
		tokens := testTokens(5, spec.Vocab)
		_, err = m.NewSession().Forward(context.Background(), tokens, false)
		require.NoError(t, err)
		require.NotEmpty(t, fileMappings(t, path), "the weights alias the file")

		require.NoError(t, os.Truncate(path, 0))
		_, err = m.NewSession().Forward(context.Background(), tokens, true)
		require.ErrorIs(t, err, ErrWeights, "threads %d", threads)
		require.ErrorContains(t, err, "truncated")
		res, err := m.GenerateTokens(context.Background(), tokens, GenerateOptions{MaxTokens: 4}, nil)
		require.ErrorIs(t, err, ErrWeights)
		require.Equal(t, StopError, res.Reason)
		runtime.KeepAlive(m)
	}
}
