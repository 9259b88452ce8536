package model

import (
	"errors"
	"fmt"
	"strings"
)

// Error kinds; the typed errors below wrap one of them for errors.Is.
var (
	// ErrConfig: config.json is malformed or describes something unsupported.
	ErrConfig = errors.New("invalid model config")
	// ErrWeights: a tensor is missing or has the wrong shape or dtype.
	ErrWeights = errors.New("invalid model weights")
	// ErrContextLength: a prompt (or prompt plus generation) does not fit the context.
	ErrContextLength = errors.New("exceeds the context length")
	// ErrOptions: generation options are out of range.
	ErrOptions = errors.New("invalid generation options")
	// ErrTokenizer: tokenizer.json could not be loaded.
	ErrTokenizer = errors.New("invalid tokenizer")
	// ErrTokenID: a token id is outside the model's vocabulary.
	ErrTokenID = errors.New("token id outside the vocabulary")
	// ErrBackend: the backend asked for cannot compute the model yet.
	ErrBackend = errors.New("model not supported on this backend")
	// ErrUnsupportedOption: a generation option the model's backend cannot
	// apply.
	ErrUnsupportedOption = errors.New("generation option not supported on this backend")
)

// UnsupportedOptionError is a generation option the model's backend cannot
// apply (a penalty or logprobs on the GPU backend, which samples on the
// device, has no penalty or logprob kernels and keeps the logits there). It
// is returned before any work, never ignored.
type UnsupportedOptionError struct {
	Option  string // the parameter's name, as sampling.ParameterError names it: "logit_bias", "presence_penalty", ..., "logprobs"
	Backend string // Model.Backend()
}

func (e *UnsupportedOptionError) Error() string {
	return fmt.Sprintf("model: %s is not supported on the %s backend (it samples on the device, where penalties, logprobs and grammars are not applied yet); the CPU backend applies it", e.Option, e.Backend)
}

func (e *UnsupportedOptionError) Unwrap() error { return ErrUnsupportedOption }

// ConfigError names the file and field of a bad config value.
type ConfigError struct {
	File   string // "config.json" or its path
	Field  string // JSON key, e.g. "num_key_value_heads" or "rope_scaling.factor"
	Reason string
	Err    error // underlying JSON error, if any
}

func (e *ConfigError) Error() string {
	s := "model: " + e.File
	if e.Field != "" {
		s += ": " + e.Field
	}
	s += ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *ConfigError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrConfig, e.Err}
	}
	return []error{ErrConfig}
}

// TensorError names the checkpoint file and tensor that disagree with the
// config, with the expected and actual shapes. For a missing tensor File
// lists every weight file searched.
type TensorError struct {
	File   string
	Tensor string
	Want   []int
	Got    []int
	Reason string
	Err    error
}

func (e *TensorError) Error() string {
	s := "model: "
	if e.File != "" {
		s += e.File + ": "
	}
	s += fmt.Sprintf("tensor %q: %s", e.Tensor, e.Reason)
	if e.Want != nil {
		s += fmt.Sprintf(" (want shape %v", e.Want)
		if e.Got != nil {
			s += fmt.Sprintf(", got %v", e.Got)
		}
		s += ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *TensorError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrWeights, e.Err}
	}
	return []error{ErrWeights}
}

// BackendError reports a model whose forward pass the backend asked for
// does not compute yet: the architecture and what the backend lacks for
// it. The CPU backend computes every supported architecture.
type BackendError struct {
	Backend      string // "gpu" or "mlx"
	Architecture Architecture
	Missing      []string // the computations the backend lacks
}

func (e *BackendError) Error() string {
	return fmt.Sprintf("model: %s needs %s, which the %s backend does not compute yet; the cpu device runs it",
		e.Architecture, strings.Join(e.Missing, " and "), e.Backend)
}

func (e *BackendError) Unwrap() error { return ErrBackend }

// ContextError reports a sequence that does not fit the context.
type ContextError struct {
	Tokens  int // tokens the request needs
	Context int // tokens the session holds
	What    string
}

func (e *ContextError) Error() string {
	return fmt.Sprintf("model: %s of %d tokens exceeds the context length of %d", e.What, e.Tokens, e.Context)
}

func (e *ContextError) Unwrap() error { return ErrContextLength }
