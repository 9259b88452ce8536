package model

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hipgo/hipgo/model/chat"
	"github.com/hipgo/hipgo/model/gguf"
	"github.com/hipgo/hipgo/model/internal/cpu"
	"github.com/hipgo/hipgo/model/internal/gpu"
	"github.com/hipgo/hipgo/model/safetensors"
	"github.com/hipgo/hipgo/runtime"
)

// Model is a loaded llama-family model. It is safe for concurrent use: its
// weights are read-only and each generation or Session owns its KV cache.
type Model struct {
	cfg     Config
	be      backend
	tok     textCodec // nil when loaded without a tokenizer
	ctxLen  int
	threads int
	eos     map[uint32]bool
	bytes   int64 // weight memory

	chat       *chat.Template // nil without one
	chatErr    error          // why the checkpoint's template is unusable
	turnEnd    uint32         // the chat template's end-of-turn token
	hasTurnEnd bool
	// cpuReason is why DeviceAuto runs on the CPU; nil otherwise.
	cpuReason error
	gvocab    grammarVocab // constrained decoding's vocabulary, built on first use
}

type options struct {
	progress func(done, total int64)
	threads  int
	ctxLen   int
	format   WeightFormat
	noTok    bool

	chatSource string // WithChatTemplate
	chatTokens chat.Tokens
	chatSet    bool
	dev        *runtime.Device
	mode       string
	kvTokens   int
	kvType     KVCacheType
	// gpuStepTokens replaces the GPU backend's tokens per pass through the
	// layers, and openDevice runtime.Open in the device modes (tests).
	gpuStepTokens int
	openDevice    func(context.Context) (*runtime.Device, error)
	stepFaults    func(step uint64) error // WithStepFaults
	cpuRoundKV    bool                    // the CPU backend rounds its cache to f16 (tests: cpuBackend.roundKV)
}

// Option configures Load and LoadFS.
type Option func(*options)

// WithProgress reports bytes of tensor data read so far and the total while
// the weights load (for a progress bar); it is called from the loading goroutine.
func WithProgress(fn func(done, total int64)) Option { return func(o *options) { o.progress = fn } }

// WithThreads caps the goroutines each parallel loop of this model uses
// (the default and the maximum is GOMAXPROCS, the size of the shared pool).
func WithThreads(n int) Option { return func(o *options) { o.threads = n } }

// WithContextLength caps the tokens a sequence may hold below the config's
// max_position_embeddings (the KV cache grows on demand up to this).
func WithContextLength(n int) Option { return func(o *options) { o.ctxLen = n } }

// WithWeightFormat chooses the in-memory weight format (default WeightsAuto).
func WithWeightFormat(f WeightFormat) Option { return func(o *options) { o.format = f } }

// WithoutTokenizer loads only config.json and the weights; Generate then
// fails, and Sessions take token ids.
func WithoutTokenizer() Option { return func(o *options) { o.noTok = true } }

// TokenizerFile is the tokenizer file Load reads beside the weights.
const TokenizerFile = "tokenizer.json"

// Load reads a model from path: a directory with config.json,
// model.safetensors (or a sharded index) and tokenizer.json, and the chat
// template from chat_template.jinja or tokenizer_config.json when there is
// one; or a GGUF file (config, weights, tokenizer and chat template from its
// metadata and tensors; see LoadGGUF). Weight files are memory-mapped; on
// the CPU the weights kept in the file's dtype are read in place, so the
// file stays mapped while the model is reachable (model/safetensors).
func Load(path string, opts ...Option) (*Model, error) {
	st, err := os.Stat(path)
	if err != nil {
		// Name the path itself, not the config.json it would have held.
		return nil, &ConfigError{File: path, Reason: "no model directory or GGUF file", Err: err}
	}
	if !st.IsDir() {
		if checkpointFile(path) {
			return nil, &ConfigError{File: path, Reason: "is one file of a Hugging Face checkpoint: pass the directory that holds it, " + filepath.Dir(path)}
		}
		return LoadGGUF(path, opts...)
	}
	dir := path
	cfgPath := filepath.Join(dir, ConfigFile)
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		return nil, &ConfigError{File: cfgPath, Reason: "unreadable", Err: err}
	}
	o := buildOptions(opts)
	cfg, err := ParseConfig(cfgPath, data)
	if err != nil {
		return nil, err
	}
	var tok textCodec
	var ct checkpointChat
	if !o.noTok {
		if tok, err = loadTokenizerFile(filepath.Join(dir, TokenizerFile), cfg, cfgPath); err != nil {
			return nil, err
		}
		if ct, err = readChatTemplate(os.DirFS(dir)); err != nil {
			return nil, err
		}
	}
	set, err := safetensors.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	defer set.Close()
	m, err := build(cfg, tok, o, safetensorsSource(cfg, set, o))
	if err != nil {
		return nil, err
	}
	if err := m.useChatTemplate(o, ct); err != nil {
		return nil, err
	}
	return m, nil
}

// checkpointFile says whether path names a file of a Hugging Face
// checkpoint (its weights, config or tokenizer) rather than the checkpoint.
func checkpointFile(path string) bool {
	base := filepath.Base(path)
	return strings.HasSuffix(base, ".safetensors") || base == ConfigFile || base == TokenizerFile ||
		base == TokenizerConfigFile || base == ChatTemplateFile || base == safetensors.IndexFile
}

// LoadGGUF reads a GGUF file (llama.cpp's and ollama's format) of a llama,
// qwen2, qwen3 or gemma3 model: the config from its {arch}.* metadata, the
// tokenizer from tokenizer.ggml.*, the chat template from
// tokenizer.chat_template, and the weights by llama.cpp's tensor names.
// Quantized weights (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K) stay in their block
// format and are decoded inside the matrix products; F16 stays half
// precision the same way, BF16 stays bfloat16 and F32 is used as is.
// WithWeightFormat(WeightsF32) widens everything to float32 instead.
// Errors name the file and the metadata key (*ConfigError) or tensor
// (*TensorError) at fault.
func LoadGGUF(path string, opts ...Option) (*Model, error) {
	o := buildOptions(opts)
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("model: %w: %w", ErrWeights, err)
	}
	defer f.Close()
	cfg, err := configFromGGUF(f)
	if err != nil {
		return nil, err
	}
	var tok textCodec
	var ct checkpointChat
	if !o.noTok {
		t, err := tokenizerFromGGUF(f)
		if err != nil {
			return nil, err
		}
		// Only an explicit {arch}.vocab_size can disagree: without one the
		// token list is the vocab_size.
		arch, _ := f.String("general.architecture")
		if err := checkTokenizerVocab(t, cfg, f.Name()+": tokenizer.ggml.tokens", arch+".vocab_size"); err != nil {
			return nil, err
		}
		tok = hfCodec{t}
		if v, ok := f.Lookup("tokenizer.chat_template"); ok && v.Type() == gguf.TypeString {
			// Tokens left empty: useChatTemplate takes the strings of the
			// file's bos and eos ids.
			ct = checkpointChat{source: v.String(), file: path + ": tokenizer.chat_template"}
		}
	}
	m, err := build(cfg, tok, o, ggufSource(cfg, f, o))
	if err != nil {
		return nil, err
	}
	if err := m.useChatTemplate(o, ct); err != nil {
		return nil, err
	}
	return m, nil
}

// LoadFS is Load over the root of fsys (an embed.FS, say). Tensors are read
// through the files' ReadAt when they have one, without copying whole files.
func LoadFS(fsys fs.FS, opts ...Option) (*Model, error) {
	data, err := fs.ReadFile(fsys, ConfigFile)
	if err != nil {
		return nil, &ConfigError{File: ConfigFile, Reason: "unreadable", Err: err}
	}
	o := buildOptions(opts)
	cfg, err := ParseConfig(ConfigFile, data)
	if err != nil {
		return nil, err
	}
	var tok textCodec
	var ct checkpointChat
	if !o.noTok {
		tdata, err := fs.ReadFile(fsys, TokenizerFile)
		if err != nil {
			return nil, fmt.Errorf("model: %s: %w: %w", TokenizerFile, ErrTokenizer, err)
		}
		if tok, err = parseTokenizer(path.Clean(TokenizerFile), tdata, cfg, ConfigFile); err != nil {
			return nil, err
		}
		if ct, err = readChatTemplate(fsys); err != nil {
			return nil, err
		}
	}
	set, err := safetensors.OpenDirFS(fsys, ".")
	if err != nil {
		return nil, err
	}
	defer set.Close()
	m, err := build(cfg, tok, o, safetensorsSource(cfg, set, o))
	if err != nil {
		return nil, err
	}
	if err := m.useChatTemplate(o, ct); err != nil {
		return nil, err
	}
	return m, nil
}

func buildOptions(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

// weightSource loads a checkpoint's weights for the CPU backend (cpu) or
// in their file's format for upload to a device (gpu).
type weightSource struct {
	cpu func() (*weights, error)
	gpu func() (*gpu.Weights, error)
}

// safetensorsSource reads weights from an open safetensors set.
func safetensorsSource(cfg *Config, set *safetensors.Set, o options) weightSource {
	return weightSource{
		cpu: func() (*weights, error) { return loadWeights(cfg, set, o.format, o.progress) },
		gpu: func() (*gpu.Weights, error) { return loadRawWeights(cfg, set, o.format, o.progress) },
	}
}

// build assembles a model from a parsed config and its weights, on the
// device the options choose.
func build(cfg *Config, tok textCodec, o options, src weightSource) (*Model, error) {
	pool := cpu.Shared()
	threads := o.threads
	if threads <= 0 || threads > pool.Workers() {
		threads = pool.Workers()
	}
	ctxLen := cfg.MaxPositionEmbeddings
	if o.ctxLen < 0 {
		return nil, fmt.Errorf("model: context length %d: %w", o.ctxLen, ErrOptions)
	}
	if o.ctxLen > 0 {
		ctxLen = min(ctxLen, o.ctxLen)
	}
	if o.format != WeightsAuto && o.format != WeightsF32 {
		return nil, fmt.Errorf("model: weight format %d: %w", o.format, ErrOptions)
	}
	if _, err := kvTokens(o, ctxLen); err != nil {
		return nil, err
	}
	if err := checkKVCacheType(o.kvType); err != nil {
		return nil, err
	}
	where, err := choose(o)
	if err != nil {
		return nil, err
	}
	m, err := place(cfg, tok, o, src, where, pool, threads, ctxLen)
	if err != nil {
		return nil, err
	}
	if o.stepFaults != nil {
		m.be = &faultyBackend{backend: m.be, fail: o.stepFaults}
	}
	return m, nil
}

// place builds the model's backend where choose put it.
func place(cfg *Config, tok textCodec, o options, src weightSource, where placement, pool *cpu.Pool, threads, ctxLen int) (*Model, error) {
	m := &Model{cfg: *cfg, tok: tok, ctxLen: ctxLen, threads: threads, eos: map[uint32]bool{}, cpuReason: where.cpuReason}
	for _, id := range cfg.EOSTokenIDs {
		m.eos[uint32(id)] = true
	}
	if where.dev != nil {
		var be *gpuBackend
		var bytes int64
		err := supportedOn("gpu", cfg)
		if err == nil {
			be, bytes, err = buildGPU(cfg, src.gpu, o, where.dev, ctxLen)
		}
		switch {
		case err == nil:
			if where.owned {
				be.closeDev = where.dev.Close
			}
			m.be, m.bytes = be, bytes
			return m, nil
		case where.owned && o.mode == DeviceAuto && !errors.Is(err, ErrWeights):
			// The GPU is there but cannot run this model (no kernels for
			// its arch, out of memory, an architecture the GPU forward
			// lacks): auto says so and uses the CPU.
			m.cpuReason = errors.Join(err, where.dev.Close())
		default:
			if where.owned {
				err = errors.Join(err, where.dev.Close())
			}
			return nil, err
		}
	}
	if where.mlx {
		if err := supportedOn("mlx", cfg); err != nil {
			return nil, err // before the weights are read
		}
	}
	if o.kvType == KVCacheF16 {
		name := "cpu"
		if where.mlx {
			name = "mlx"
		}
		return nil, fmt.Errorf("model: KV cache type f16: the %s backend keeps an f32 cache: %w", name, ErrOptions)
	}
	w, err := src.cpu()
	if err != nil {
		return nil, err
	}
	if where.mlx {
		be, err := newMLXBackend(cfg, w)
		if err != nil {
			return nil, err
		}
		m.be, m.bytes = be, be.bytes
		return m, nil
	}
	cb := newCPUBackend(cfg, w, pool, threads)
	cb.roundKV = o.cpuRoundKV
	m.be = cb
	m.bytes = w.size()
	return m, nil
}

// Backend names where the model runs: "cpu", or "gpu " and the device
// ("gpu cuda:0 NVIDIA H200").
func (m *Model) Backend() string { return m.be.name() }

// CPUReason is why a model loaded with DeviceAuto runs on the CPU (no GPU
// found, with runtime.Open's reasons; or the GPU could not hold the model),
// or nil.
func (m *Model) CPUReason() error { return m.cpuReason }

// Close frees the model's device memory and closes a device the model
// opened itself (WithDeviceMode). Generations must have ended. On the CPU it
// does nothing.
func (m *Model) Close() error { return m.be.close() }

// size is the memory the weights occupy (a tied head counted once).
func (w *weights) size() int64 {
	n := w.embed.Bytes() + int64(len(w.norm))*4
	if !w.tied {
		n += w.lmHead.Bytes()
	}
	for i := range w.layers {
		l := &w.layers[i]
		n += l.qkv.Bytes() + l.o.Bytes() + l.gateUp.Bytes() + l.down.Bytes()
		for _, p := range append(slices.Clone(l.qkvParts), l.gateUpParts...) {
			n += p.Bytes()
		}
		n += 4 * int64(len(l.attnNorm)+len(l.mlpNorm)+len(l.postAttnNorm)+len(l.postMLPNorm)+len(l.qNorm)+len(l.kNorm)+len(l.qkvBias)+len(l.oBias)+len(l.gateUpBias)+len(l.downBias))
	}
	return n
}

// Config returns the model's validated configuration.
func (m *Model) Config() Config { return m.cfg }

// ContextLength is the most tokens one sequence may hold.
func (m *Model) ContextLength() int { return m.ctxLen }

// WeightBytes is the memory the weights occupy.
func (m *Model) WeightBytes() int64 { return m.bytes }

// Threads is the parallelism of each matrix product.
func (m *Model) Threads() int { return m.threads }

// IsEOS reports whether id ends generation (config.json's eos_token_id).
func (m *Model) IsEOS(id uint32) bool { return m.eos[id] }

// Session is one token sequence over a Model: a KV cache that grows as
// tokens are fed. It is for callers that run their own sampling loop. A
// Session is used by one goroutine at a time; many may share a Model.
type Session struct {
	m      *Model
	seq    sequence
	closed bool
}

// NewSession starts an empty sequence that can hold ContextLength tokens.
// Close it to free its KV cache (on the GPU the cache comes from a shared
// pool).
func (m *Model) NewSession() *Session {
	return &Session{m: m, seq: m.be.newSequence(m.ctxLen)}
}

// Close frees the session's KV cache; Forward then fails.
func (s *Session) Close() {
	if !s.closed {
		s.closed = true
		s.seq.release()
	}
}

// Len is the number of tokens fed so far.
func (s *Session) Len() int { return s.seq.len() }

// Forward feeds tokens and returns logits: for every token (len(tokens)
// rows of VocabSize values) when all is set, else for the last token only.
// Cancelling ctx stops between layers with ctx.Err(); the session then holds
// the tokens of the fully processed chunks (a multiple of 64) before it.
func (s *Session) Forward(ctx context.Context, tokens []uint32, all bool) ([]float32, error) {
	if len(tokens) == 0 {
		return nil, fmt.Errorf("model: forward: no tokens: %w", ErrOptions)
	}
	if s.closed {
		return nil, fmt.Errorf("model: forward on a closed session: %w", ErrOptions)
	}
	if err := s.m.checkTokens(tokens); err != nil {
		return nil, err
	}
	if n := s.seq.len() + len(tokens); n > s.m.ctxLen {
		return nil, &ContextError{Tokens: n, Context: s.m.ctxLen, What: "sequence"}
	}
	V := s.m.cfg.VocabSize
	rows := 1
	if all {
		rows = len(tokens)
	}
	logits := make([]float32, rows*V)
	if err := s.seq.forward(ctx, tokens, all, logits); err != nil {
		return nil, err
	}
	return logits, nil
}

func (m *Model) checkTokens(tokens []uint32) error {
	for i, id := range tokens {
		if int64(id) >= int64(m.cfg.VocabSize) {
			return fmt.Errorf("model: token %d (position %d) with vocab_size %d: %w", id, i, m.cfg.VocabSize, ErrTokenID)
		}
	}
	return nil
}
