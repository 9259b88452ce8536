package chat

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"` // "system", "user", "assistant" (or "tool", where the template knows it)
	Content string `json:"content"`
}

// Tokens are the special token strings a template sees as bos_token and
// eos_token. An empty one is left undefined, as transformers leaves out a
// tokenizer's None token.
type Tokens struct {
	BOS string
	EOS string
}

// Errors. A template that does not compile wraps ErrTemplate; one that fails
// while rendering (an undefined method, a type error) wraps ErrRender; a
// template that calls raise_exception returns a *RaiseError.
var (
	ErrTemplate   = errors.New("chat: bad template")
	ErrRender     = errors.New("chat: template failed")
	ErrNoMessages = errors.New("chat: no messages")
)

// RaiseError is a template's raise_exception: the template refused the
// conversation (roles that do not alternate, say) with Message.
type RaiseError struct{ Message string }

func (e *RaiseError) Error() string { return "chat: template refused the conversation: " + e.Message }

// Template is a compiled chat template. It is safe for concurrent use.
type Template struct {
	src  string
	tok  Tokens
	prog *jinja.Template
	now  func() time.Time
}

// Option configures New.
type Option func(*Template)

// WithNow sets the clock strftime_now reads (default time.Now), for
// reproducible renderings of templates that print today's date.
func WithNow(now func() time.Time) Option { return func(t *Template) { t.now = now } }

// New compiles a template source with the special tokens it may print.
func New(source string, tok Tokens, opts ...Option) (*Template, error) {
	if strings.TrimSpace(source) == "" {
		return nil, fmt.Errorf("%w: the template is empty", ErrTemplate)
	}
	prog, err := compile(source)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTemplate, err)
	}
	t := &Template{src: source, tok: tok, prog: prog, now: time.Now}
	for _, o := range opts {
		o(t)
	}
	return t, nil
}

// compile guards against a panic in the renderer's parser: library code
// here must turn any bad input into an error.
func compile(source string) (prog *jinja.Template, err error) {
	defer func() {
		if r := recover(); r != nil {
			prog, err = nil, fmt.Errorf("parser panicked: %v", r)
		}
	}()
	return jinja.Compile(source)
}

// maxRange is the most items range() makes, the limit (MAX_RANGE) of the
// sandboxed Jinja transformers renders templates in. The library's own range
// has none, so range(10**11) in a model file would exhaust memory.
const maxRange = 100000

// boundedRange is Python's range(stop) / range(start, stop[, step]) as a
// list, refusing more than maxRange items before allocating them.
func boundedRange(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	var n [3]int64
	for i, a := range args {
		if i >= 3 || !a.IsInt() {
			return jinja.Undefined(), errors.New("range takes one to three integers")
		}
		n[i] = a.AsInt()
	}
	start, stop, step := int64(0), n[0], int64(1)
	switch len(args) {
	case 0:
		return jinja.Undefined(), errors.New("range takes one to three integers")
	case 2, 3:
		start, stop = n[0], n[1]
		if len(args) == 3 {
			step = n[2]
		}
	}
	if step == 0 {
		return jinja.Undefined(), errors.New("range() arg 3 must not be zero")
	}
	// The exact item count, ceil((stop-start)/step) when positive, in big
	// integers so neither the span nor the count can overflow.
	span := new(big.Int).Sub(big.NewInt(stop), big.NewInt(start))
	st := big.NewInt(step)
	if step < 0 {
		span.Neg(span)
		st.Neg(st)
	}
	count := int64(0)
	if span.Sign() > 0 {
		c := new(big.Int).Add(span, new(big.Int).Sub(st, big.NewInt(1)))
		c.Quo(c, st)
		if !c.IsInt64() || c.Int64() > maxRange {
			return jinja.Undefined(), fmt.Errorf("range too big: %s items (the sandbox allows %d)", c, maxRange)
		}
		count = c.Int64()
	}
	items := make([]jinja.Value, count)
	v := start
	for i := range items {
		if i > 0 {
			v += step // every emitted value lies in [start, stop): no overflow
		}
		items[i] = jinja.NewInt(v)
	}
	return jinja.NewList(items), nil
}

// Source is the template text.
func (t *Template) Source() string { return t.src }

// Tokens are the special tokens the template sees.
func (t *Template) Tokens() Tokens { return t.tok }

// Render formats messages as the model's prompt text. With
// addGenerationPrompt the text ends with the header of an assistant turn,
// ready for the model to write the reply.
func (t *Template) Render(messages []Message, addGenerationPrompt bool) (string, error) {
	if len(messages) == 0 {
		return "", ErrNoMessages
	}
	return t.render(messages, addGenerationPrompt)
}

func (t *Template) render(messages []Message, addGenerationPrompt bool) (out string, err error) {
	msgs := make([]jinja.Value, len(messages))
	for i, m := range messages {
		d := jinja.NewDict()
		d.AsDict().Set("role", jinja.NewString(m.Role))
		d.AsDict().Set("content", jinja.NewString(m.Content))
		msgs[i] = d
	}
	var raised *RaiseError
	vars := map[string]jinja.Value{
		"messages":              jinja.NewList(msgs),
		"add_generation_prompt": jinja.NewBool(addGenerationPrompt),
		"tools":                 jinja.None(),
		"documents":             jinja.None(),
		"strftime_now": jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) != 1 || !args[0].IsString() {
				return jinja.Undefined(), errors.New("strftime_now takes one format string")
			}
			s, err := strftime(t.now(), args[0].AsString())
			if err != nil {
				return jinja.Undefined(), err
			}
			return jinja.NewString(s), nil
		}),
		"range": jinja.NewCallable("range", boundedRange),
		"raise_exception": jinja.NewCallable("raise_exception", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			msg := ""
			switch {
			case len(args) == 0:
			case args[0].IsString():
				msg = args[0].AsString()
			default:
				msg = args[0].String()
			}
			raised = &RaiseError{Message: msg}
			return jinja.Undefined(), raised
		}),
	}
	if t.tok.BOS != "" {
		vars["bos_token"] = jinja.NewString(t.tok.BOS)
	}
	if t.tok.EOS != "" {
		vars["eos_token"] = jinja.NewString(t.tok.EOS)
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("%w: the renderer panicked: %v", ErrRender, r)
		}
	}()
	out, err = t.prog.RenderValues(vars)
	if err != nil {
		// The library returns a callable's error as it is today; keep the
		// typed error even if a later version wraps it as text.
		if raised != nil {
			return "", raised
		}
		return "", fmt.Errorf("%w: %w", ErrRender, err)
	}
	return out, nil
}
