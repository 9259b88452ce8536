package model

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/hipgo/hipgo/model/chat"
)

// Files Load reads a chat template from, beside tokenizer.json. Newer
// transformers save the template as ChatTemplateFile, which then wins over
// TokenizerConfigFile's chat_template (as it does in transformers).
const (
	TokenizerConfigFile = "tokenizer_config.json"
	ChatTemplateFile    = "chat_template.jinja"
)

// ErrNoChatTemplate: Chat on a model whose checkpoint carries no chat
// template (a base model), or one that could not be compiled.
var ErrNoChatTemplate = errors.New("model has no chat template")

// WithChatTemplate gives the chat template to use instead of the one the
// checkpoint carries, with the special tokens it may print (zero Tokens: the
// tokenizer's strings for config.json's bos_token_id and first
// eos_token_id). A template that does not compile fails the load.
func WithChatTemplate(source string, tok chat.Tokens) Option {
	return func(o *options) { o.chatSource, o.chatTokens, o.chatSet = source, tok, true }
}

// checkpointChat is a chat template found in a checkpoint.
type checkpointChat struct {
	source string
	tokens chat.Tokens
	file   string // where it was found, for errors
}

// readChatTemplate finds the template of a Hugging Face checkpoint: in
// chat_template.jinja, else in tokenizer_config.json, whose bos_token and
// eos_token it takes in either case. Neither file is required.
func readChatTemplate(fsys fs.FS) (checkpointChat, error) {
	var c checkpointChat
	data, err := fs.ReadFile(fsys, TokenizerConfigFile)
	switch {
	case err == nil:
		tc, err := chat.ParseTokenizerConfig(data)
		if err != nil {
			return c, fmt.Errorf("model: %w: %w", ErrTokenizer, err)
		}
		c = checkpointChat{source: tc.Template, tokens: tc.Tokens, file: TokenizerConfigFile}
	case !errors.Is(err, fs.ErrNotExist):
		return c, fmt.Errorf("model: %s: %w: %w", TokenizerConfigFile, ErrTokenizer, err)
	}
	data, err = fs.ReadFile(fsys, ChatTemplateFile)
	switch {
	case err == nil:
		c.source, c.file = string(data), ChatTemplateFile
	case !errors.Is(err, fs.ErrNotExist):
		return c, fmt.Errorf("model: %s: %w: %w", ChatTemplateFile, ErrTokenizer, err)
	}
	return c, nil
}

// useChatTemplate attaches the chat template: WithChatTemplate's when given,
// else found (what Load read from the checkpoint directory; the GGUF loader
// passes tokenizer.chat_template with the strings of its bos and eos token
// ids). A checkpoint's template that does not compile does not fail the
// load: plain generation still works, and Chat returns the compile error.
// It also finds the end-of-turn token (see endOfTurnID).
func (m *Model) useChatTemplate(o options, found checkpointChat) error {
	if m.tok == nil {
		return nil
	}
	src, tok, file := found.source, found.tokens, found.file
	if o.chatSet {
		src, tok, file = o.chatSource, o.chatTokens, "WithChatTemplate"
	}
	if src == "" {
		return nil
	}
	if tok == (chat.Tokens{}) {
		tok = m.configTokens()
	}
	t, err := chat.New(src, tok)
	if err != nil {
		err = fmt.Errorf("model: %s: %w", file, err)
		if o.chatSet {
			return err
		}
		m.chatErr = err
		return nil
	}
	m.chat = t
	m.turnEnd, m.hasTurnEnd = m.endOfTurnID(t)
	return nil
}

// configTokens are the strings of config.json's bos and first eos token.
func (m *Model) configTokens() chat.Tokens {
	var tok chat.Tokens
	st, ok := m.tok.(specialTokens)
	if !ok {
		return tok
	}
	if m.cfg.BOSTokenID >= 0 {
		tok.BOS, _ = st.Token(uint32(m.cfg.BOSTokenID))
	}
	if len(m.cfg.EOSTokenIDs) > 0 {
		tok.EOS, _ = st.Token(uint32(m.cfg.EOSTokenIDs[0]))
	}
	return tok
}

// specialTokens is what finding the end-of-turn token needs from a
// tokenizer (the tokenizer package's *Tokenizer has it).
type specialTokens interface {
	SpecialIDs() []uint32
	Token(id uint32) (string, bool)
	TokenID(tok string) (uint32, bool)
}

// endOfTurnID finds the token that ends an assistant's reply: the longest
// special token that starts what the template writes after a reply
// (<|im_end|>, <|eot_id|>, </s>), else the template's eos_token. Reading it
// from the template and the tokenizer avoids a table of model families.
func (m *Model) endOfTurnID(t *chat.Template) (uint32, bool) {
	st, ok := m.tok.(specialTokens)
	if !ok {
		return 0, false
	}
	if after, err := t.EndOfTurn(); err == nil {
		best, bestLen := uint32(0), 0
		for _, id := range st.SpecialIDs() {
			s, _ := st.Token(id)
			if len(s) > bestLen && strings.HasPrefix(after, s) {
				best, bestLen = id, len(s)
			}
		}
		if bestLen > 0 {
			return best, true
		}
	}
	if eos := t.Tokens().EOS; eos != "" {
		return st.TokenID(eos)
	}
	return 0, false
}

// ChatTemplate is the model's chat template, or nil when it has none.
func (m *Model) ChatTemplate() *chat.Template { return m.chat }

// ChatTemplateError is why the checkpoint's chat template is unusable (its
// compile error, naming the file it came from), or nil when the model has a
// template or carries none. Chat and ChatPrompt return it wrapped in
// ErrNoChatTemplate.
func (m *Model) ChatTemplateError() error { return m.chatErr }

// EndOfTurnID is the token that ends an assistant's reply under the chat
// template, when one was found; Chat stops there as at EOS.
func (m *Model) EndOfTurnID() (uint32, bool) { return m.turnEnd, m.hasTurnEnd }

// Chat renders messages with the chat template (ending with the assistant
// header: add_generation_prompt), encodes the text without adding special
// tokens (the template writes them, as transformers' apply_chat_template
// does), and generates the reply as Generate does, stopping also at the
// end-of-turn token. Result.Text is the reply alone; special tokens are not
// part of the text.
func (m *Model) Chat(ctx context.Context, messages []chat.Message, opts GenerateOptions, emit func(Token) error) (Result, error) {
	prompt, err := m.ChatPrompt(messages)
	if err != nil {
		return Result{Reason: StopError}, fmt.Errorf("model: chat: %w", err)
	}
	var stop []uint32
	if m.hasTurnEnd {
		stop = []uint32{m.turnEnd}
	}
	return m.generate(ctx, prompt, opts, emit, stop)
}
