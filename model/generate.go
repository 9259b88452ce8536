package model

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hipgo/hipgo/constrain"
	"github.com/hipgo/hipgo/sampling"
)

// GenerateOptions control one generation. The zero value generates greedily
// until EOS or the context is full; sampled generation starts from
// DefaultGenerateOptions.
type GenerateOptions struct {
	// MaxTokens caps generated tokens; 0 means no cap but the context length.
	MaxTokens int
	// Temperature 0 is greedy (argmax); otherwise logits are divided by it.
	Temperature float32
	// TopK keeps the k most probable tokens; 0 disables it.
	TopK int
	// TopP keeps the smallest set of tokens whose probability reaches it:
	// 0 < TopP < 1 filters and 1 is off. Any other value is an ErrOptions,
	// 0 included, except at Temperature 0: greedy generation applies no
	// filter, so the zero GenerateOptions stays valid.
	TopP float32
	// MinP keeps tokens at least MinP times as probable as the best; 0 disables it.
	MinP float32
	// Seed keys the random draws: the same seed, prompt and options give the
	// same tokens.
	Seed uint64
	// Stop ends generation when the text contains any of these strings; the
	// stop string itself is not returned or emitted.
	Stop []string

	// LogitBias, PresencePenalty, FrequencyPenalty and RepetitionPenalty
	// change the logits before the filters, the temperature and a greedy
	// argmax, in that order (sampling.Penalties has the definitions). The
	// CPU and MLX backends apply them; the GPU backend, which samples on the
	// device, refuses them with an *UnsupportedOptionError.
	//
	// LogitBias is added to the logit of each token id it names (values in
	// [-100, 100], ids within the vocabulary).
	LogitBias map[uint32]float32
	// PresencePenalty, in [-2, 2], is subtracted from the logit of every
	// token generated so far (OpenAI's presence_penalty; the prompt does not
	// count); 0 is off.
	PresencePenalty float32
	// FrequencyPenalty, in [-2, 2], is subtracted from a token's logit once
	// for each time it was generated so far (OpenAI's frequency_penalty);
	// 0 is off.
	FrequencyPenalty float32
	// RepetitionPenalty divides the positive logits and multiplies the
	// negative ones of every token in the prompt or generated so far
	// (transformers' repetition_penalty): finite and > 0; 1 and 0 (unset)
	// are off.
	RepetitionPenalty float32

	// Logprobs reports each generated token's log-probability
	// (Token.Logprobs, Result.Logprobs, BatchToken.Logprobs) and the
	// TopLogprobs (0..sampling.MaxTopLogprobs) most probable tokens at its
	// place. They are the log-softmax of the logits as the forward pass
	// gives them, before the penalties, the temperature and the filters
	// (the model's distribution, as OpenAI reports logprobs and vLLM does
	// by default), whatever sampled the token. The CPU and MLX backends
	// compute them; the GPU backend, whose logits never leave the device,
	// refuses them with an *UnsupportedOptionError. TopLogprobs needs
	// Logprobs.
	Logprobs    bool
	TopLogprobs int

	// Grammar constrains the generated text to a value it accepts
	// (constrain.CompileSchema, constrain.JSONObject): before each draw
	// the tokens that cannot continue such a value get a logit of -Inf
	// (after the penalties, before the filters and the temperature), and
	// end of sequence is allowed once the value is complete, and then only
	// it. MaxTokens or a stop string can still cut the value short. The
	// CPU and MLX backends apply it; the GPU backend refuses it with an
	// *UnsupportedOptionError (Option "response_format").
	Grammar *constrain.Grammar
}

// TokenLogprobs is a generated token's log-probability and the most
// probable tokens at its place, best first (GenerateOptions.Logprobs).
type TokenLogprobs struct {
	Logprob float32
	Top     []sampling.TokenLogprob
	k       int // how many Top to list
}

// DefaultGenerateOptions are examples/generate's defaults: up to 200
// tokens at temperature 0.8 with top-k 40 and top-p 0.95 (min-p off, seed
// 0).
func DefaultGenerateOptions() GenerateOptions {
	return GenerateOptions{MaxTokens: 200, Temperature: 0.8, TopK: 40, TopP: 0.95}
}

// Validate checks what does not depend on a model: MaxTokens, the stop
// strings, the sampling parameters and the penalties' ranges (a range error
// is a *sampling.ParameterError naming the parameter). Generate and
// Batch.Add call it; a caller can call it before loading a model, and
// Model.CheckOptions adds what depends on the model.
func (o GenerateOptions) Validate() error {
	if o.MaxTokens < 0 {
		return fmt.Errorf("model: MaxTokens %d is negative: %w", o.MaxTokens, ErrOptions)
	}
	for i, s := range o.Stop {
		if s == "" {
			return fmt.Errorf("model: Stop[%d] is empty: %w", i, ErrOptions)
		}
	}
	if _, err := samplingParams(o); err != nil {
		return err
	}
	if err := o.penalties().Validate(0); err != nil {
		return fmt.Errorf("model: %w: %w", ErrOptions, err)
	}
	if o.TopLogprobs < 0 || o.TopLogprobs > sampling.MaxTopLogprobs {
		return fmt.Errorf("model: %w: %w", ErrOptions, &sampling.ParameterError{Name: "top_logprobs", Row: -1, Value: fmt.Sprint(o.TopLogprobs), Rule: fmt.Sprintf("must be in [0, %d]", sampling.MaxTopLogprobs)})
	}
	if o.TopLogprobs > 0 && !o.Logprobs {
		return fmt.Errorf("model: %w: %w", ErrOptions, &sampling.ParameterError{Name: "top_logprobs", Row: -1, Value: fmt.Sprint(o.TopLogprobs), Rule: "needs logprobs"})
	}
	return nil
}

func (o GenerateOptions) penalties() sampling.Penalties {
	return sampling.Penalties{LogitBias: o.LogitBias, Presence: o.PresencePenalty, Frequency: o.FrequencyPenalty, Repetition: o.RepetitionPenalty}
}

// CheckOptions is Validate and what depends on the model: stop strings need
// a tokenizer, logit_bias keys must be token ids of its vocabulary (a
// *sampling.ParameterError), and a penalty, logprobs or a grammar its
// backend cannot apply is an *UnsupportedOptionError naming it and the backend. Generate and
// Batch.Add call it; a server calls it to refuse a request before queueing
// it.
func (m *Model) CheckOptions(opts GenerateOptions) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	if len(opts.Stop) > 0 && m.tok == nil {
		return fmt.Errorf("model: stop strings need a tokenizer: %w", ErrNoTokenizer)
	}
	pen := opts.penalties()
	if err := pen.Validate(m.cfg.VocabSize); err != nil {
		return fmt.Errorf("model: %w: %w", ErrOptions, err)
	}
	if active := pen.Active(); len(active) > 0 && !m.be.samplesOnHost() {
		return &UnsupportedOptionError{Option: active[0], Backend: m.Backend()}
	}
	if opts.Logprobs && !m.be.samplesOnHost() {
		return &UnsupportedOptionError{Option: "logprobs", Backend: m.Backend()}
	}
	if opts.Grammar != nil {
		return m.checkGrammar()
	}
	return nil
}

// Token is a generated token as it is streamed.
type Token struct {
	ID uint32
	// Text is the text released with this token: it can be empty while bytes
	// of an incomplete UTF-8 character or a possible stop string are held
	// back, and then longer. The pieces of all emitted tokens concatenate to
	// Result.Text. An EOS token is emitted only to release held-back text.
	Text string
	// Logprobs is the token's (GenerateOptions.Logprobs), else nil; nil
	// for an EOS token.
	Logprobs *TokenLogprobs
}

// StopReason says why generation ended.
type StopReason string

// Stop reasons.
const (
	StopMaxTokens     StopReason = "max_tokens"     // MaxTokens generated
	StopEOS           StopReason = "eos"            // the model produced an end-of-sequence token (or, in Chat, the end-of-turn token)
	StopString        StopReason = "stop"           // a stop string appeared
	StopContextLength StopReason = "context_length" // the sequence filled the context
	StopCancelled     StopReason = "cancelled"      // ctx ended; Generate returns ctx.Err()
	StopError         StopReason = "error"          // emit or the backend failed; Generate returns the error
)

// Result summarises a generation.
type Result struct {
	Text   string   // generated text, stop string excluded
	Tokens []uint32 // generated token ids, EOS excluded
	// Logprobs are Tokens' (GenerateOptions.Logprobs), else nil.
	Logprobs     []TokenLogprobs
	PromptTokens int
	Reason       StopReason
	// PromptDuration is the prefill time (with the first draw);
	// DecodeDuration the time of the DecodeSteps single-token forward passes
	// that followed (sampling included).
	PromptDuration time.Duration
	DecodeDuration time.Duration
	DecodeSteps    int
}

// PromptTokensPerSecond is the prefill throughput.
func (r Result) PromptTokensPerSecond() float64 {
	return rate(r.PromptTokens, r.PromptDuration)
}

// DecodeTokensPerSecond is the single-token decode throughput.
func (r Result) DecodeTokensPerSecond() float64 { return rate(r.DecodeSteps, r.DecodeDuration) }

func rate(n int, d time.Duration) float64 {
	if n == 0 || d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// ErrNoTokenizer: text generation on a model loaded WithoutTokenizer.
var ErrNoTokenizer = errors.New("model has no tokenizer")

// Generate encodes prompt (with the tokenizer's special tokens), generates,
// and calls emit with each token as it is produced. It returns when a stop
// condition is met; cancelling ctx stops it between tokens or between layers
// of the prefill and returns ctx.Err() with the partial Result. An error from
// emit stops generation and is returned.
func (m *Model) Generate(ctx context.Context, prompt string, opts GenerateOptions, emit func(Token) error) (Result, error) {
	ids, err := m.PromptTokens(prompt)
	if err != nil {
		return Result{Reason: StopError}, fmt.Errorf("model: generate: %w", err)
	}
	return m.generate(ctx, ids, opts, emit, nil)
}

// GenerateTokens is Generate from prompt token ids. Without a tokenizer the
// emitted Text is empty and Stop must be empty.
func (m *Model) GenerateTokens(ctx context.Context, prompt []uint32, opts GenerateOptions, emit func(Token) error) (Result, error) {
	return m.generate(ctx, prompt, opts, emit, nil)
}

func (m *Model) validate(prompt []uint32, opts GenerateOptions) (sampling.Params, error) {
	if err := m.CheckOptions(opts); err != nil {
		return sampling.Params{}, err
	}
	params, err := samplingParams(opts)
	if err != nil {
		return params, err
	}
	if len(prompt) == 0 {
		return params, fmt.Errorf("model: empty prompt (the tokenizer added no BOS token): %w", ErrOptions)
	}
	if len(prompt) > m.ctxLen {
		return params, &ContextError{Tokens: len(prompt), Context: m.ctxLen, What: "prompt"}
	}
	if err := m.checkTokens(prompt); err != nil {
		return params, err
	}
	return params, nil
}

// generate runs one sequence through a Batch of its own; stopIDs end
// generation as EOS does (a chat template's end-of-turn token).
func (m *Model) generate(ctx context.Context, prompt []uint32, opts GenerateOptions, emit func(Token) error, stopIDs []uint32) (Result, error) {
	res := Result{PromptTokens: len(prompt)}
	if _, err := m.validate(prompt, opts); err != nil {
		res.Reason = StopError
		return res, err
	}
	var text strings.Builder  // everything released so far
	var decodeStart time.Time // zero until the first draw is in
	fail := func(err error) (Result, error) {
		var be *BatchError
		if errors.As(err, &be) {
			err = be.Err // one sequence: the cause is the generation's error
		}
		if !decodeStart.IsZero() { // the steps done count toward the decode rate
			res.DecodeDuration = time.Since(decodeStart)
		}
		res.Text = text.String()
		res.Reason = StopError
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			res.Reason = StopCancelled
		}
		return res, err
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}

	batch := m.NewBatch()
	defer batch.Close()
	if _, err := batch.Add(prompt, opts); err != nil {
		return fail(err)
	}
	start := time.Now()
	next, err := batch.Step(ctx) // the prefill and the first draw
	if err != nil {
		return fail(err)
	}
	res.PromptDuration = time.Since(start)

	ts := m.NewTextStream(opts.Stop)
	var lp *TokenLogprobs // the token being released's
	release := func(id uint32, piece string) error {
		text.WriteString(piece)
		if emit == nil {
			return nil
		}
		return emit(Token{ID: id, Text: piece, Logprobs: lp})
	}
	decodeStart = time.Now()
	for {
		id := next[0].ID
		lp = nil
		if m.eos[id] || slices.Contains(stopIDs, id) {
			res.Reason = StopEOS
			rest, found := ts.Finish()
			if found {
				res.Reason = StopString
			}
			if rest != "" {
				if err := release(id, rest); err != nil {
					return fail(err)
				}
			}
			break
		}
		res.Tokens = append(res.Tokens, id)
		if lp = next[0].Logprobs; lp != nil {
			res.Logprobs = append(res.Logprobs, *lp)
		}
		out, found := ts.Add(id)
		full := len(prompt)+len(res.Tokens) >= m.ctxLen
		capped := opts.MaxTokens > 0 && len(res.Tokens) >= opts.MaxTokens
		if !found && (full || capped) {
			// No more tokens will complete a character or a stop string.
			var rest string
			rest, found = ts.Finish()
			out += rest
		}
		if err := release(id, out); err != nil {
			return fail(err)
		}
		if found {
			res.Reason = StopString
			break
		}
		if capped {
			res.Reason = StopMaxTokens
			break
		}
		if full {
			res.Reason = StopContextLength
			break
		}
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		if next, err = batch.Step(ctx); err != nil {
			return fail(err)
		}
		res.DecodeSteps++
	}
	res.DecodeDuration = time.Since(decodeStart)
	res.Text = text.String()
	return res, nil
}
