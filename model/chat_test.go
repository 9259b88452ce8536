package model

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hipgo/hipgo/model/chat"
	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/stretchr/testify/require"
)

// smolTemplate is SmolLM2-135M-Instruct's real chat template.
func smolTemplate(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("chat/testdata/templates/smollm2.jinja")
	require.NoError(t, err)
	return string(src)
}

// chatSpec is a tiny model whose tokenizer has SmolLM2's chat markers and
// whose tokenizer_config.json carries SmolLM2's template.
func chatSpec(t *testing.T) modeltest.Spec {
	s := modeltest.SmolLMTiny()
	s.ChatTokens = []string{"<|im_start|>", "<|im_end|>"}
	s.ChatTemplate = smolTemplate(t)
	return s
}

// recordingBackend is scriptBackend that also keeps the prompt the first
// forward pass was given.
type recordingBackend struct {
	scriptBackend
	prompt []uint32
}

func (b *recordingBackend) newSequence(int) sequence {
	return &recordingSeq{scriptSeq{b: &b.scriptBackend}, b}
}

type recordingSeq struct {
	scriptSeq
	rb *recordingBackend
}

func (s *recordingSeq) forward(ctx context.Context, tokens []uint32, all bool, logits []float32) error {
	if s.step == 0 {
		s.rb.prompt = append([]uint32(nil), tokens...)
	}
	return s.scriptSeq.forward(ctx, tokens, all, logits)
}

// TestLoadFindsChatTemplate proves Load takes the template and its special
// tokens from tokenizer_config.json, lets chat_template.jinja win over it (as
// transformers does), and finds the end-of-turn token from the template and
// the tokenizer (<|im_end|> here, which config.json does not list as EOS).
func TestLoadFindsChatTemplate(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, modeltest.Write(dir, chatSpec(t)))
	m, err := Load(dir)
	require.NoError(t, err)
	tpl := m.ChatTemplate()
	require.NotNil(t, tpl)
	require.Equal(t, smolTemplate(t), tpl.Source())
	require.Equal(t, chat.Tokens{BOS: modeltest.EndOfText, EOS: modeltest.EndOfText}, tpl.Tokens())
	imEnd, ok := m.Tokenizer().TokenID("<|im_end|>")
	require.True(t, ok)
	id, ok := m.EndOfTurnID()
	require.True(t, ok)
	require.Equal(t, imEnd, id)
	require.False(t, m.IsEOS(imEnd), "the stop comes from the template, not config.json")

	require.NoError(t, os.WriteFile(filepath.Join(dir, ChatTemplateFile), []byte("{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}"), 0o644))
	m, err = Load(dir)
	require.NoError(t, err)
	require.Contains(t, m.ChatTemplate().Source(), "eos_token")
	id, ok = m.EndOfTurnID()
	require.True(t, ok)
	eos, _ := m.Tokenizer().TokenID(modeltest.EndOfText)
	require.Equal(t, eos, id)

	// A template whose reply is followed by plain text falls back to its eos_token.
	m, err = Load(dir, WithChatTemplate("{% for m in messages %}{{ m.content }}\n{% endfor %}", chat.Tokens{EOS: "<|im_end|>"}))
	require.NoError(t, err)
	id, ok = m.EndOfTurnID()
	require.True(t, ok)
	require.Equal(t, imEnd, id)

	// LoadFS reads the same files.
	m, err = LoadFS(specFS(t, chatSpec(t)))
	require.NoError(t, err)
	require.Equal(t, smolTemplate(t), m.ChatTemplate().Source())
}

// TestChatRendersEncodesAndStopsAtEndOfTurn proves Chat feeds the model the
// template's rendering with add_generation_prompt, encoded without extra
// special tokens, and ends the reply at the end-of-turn token with the text
// before it, where plain Generate (whose only EOS is config.json's) would
// have gone on.
func TestChatRendersEncodesAndStopsAtEndOfTurn(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, modeltest.Write(dir, chatSpec(t)))
	m, err := Load(dir)
	require.NoError(t, err)
	tok := m.Tokenizer()
	imEnd, _ := tok.TokenID("<|im_end|>")
	script := append(append(tok.Encode("Paris.", false), imEnd), tok.Encode(" and more", false)...)
	rb := &recordingBackend{scriptBackend: scriptBackend{vocab: m.cfg.VocabSize, script: script}}
	m.be = rb

	msgs := []chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "What is the capital of France?"}}
	var streamed strings.Builder
	res, err := m.Chat(context.Background(), msgs, GenerateOptions{MaxTokens: 20}, func(tk Token) error {
		streamed.WriteString(tk.Text)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, "Paris.", res.Text)
	require.Equal(t, "Paris.", streamed.String())
	require.Equal(t, StopEOS, res.Reason)
	want := "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
	require.Equal(t, tok.Encode(want, false), rb.prompt)
	require.Equal(t, len(rb.prompt), res.PromptTokens)
	start, _ := tok.TokenID("<|im_start|>")
	require.Equal(t, start, rb.prompt[0], "the markers are encoded as their special tokens")

	rb.script = script
	res, err = m.Generate(context.Background(), "x", GenerateOptions{MaxTokens: len(script)}, nil)
	require.NoError(t, err)
	require.Equal(t, "Paris. and more", res.Text, "Generate does not stop at the end-of-turn token")
}

// TestChatErrors proves each way chat can fail is a clear error that loses
// nothing: no template, a checkpoint template that does not compile (the
// model still loads and generates), a bad WithChatTemplate (the load fails),
// a template's raise_exception, no messages, no tokenizer, and a malformed
// tokenizer_config.json.
func TestChatErrors(t *testing.T) {
	ctx := context.Background()
	msgs := []chat.Message{{Role: "user", Content: "hi"}}
	dir := t.TempDir()
	plain := modeltest.SmolLMTiny()
	require.NoError(t, modeltest.Write(dir, plain))
	m, err := Load(dir)
	require.NoError(t, err)
	require.Nil(t, m.ChatTemplate())
	require.NoError(t, m.ChatTemplateError(), "a plain model carries no template: nothing failed")
	_, err = m.Chat(ctx, msgs, GenerateOptions{MaxTokens: 1}, nil)
	require.ErrorIs(t, err, ErrNoChatTemplate)

	bad := chatSpec(t)
	bad.ChatTemplate = "{% for m in messages %}"
	require.NoError(t, modeltest.Write(dir, bad))
	m, err = Load(dir)
	require.NoError(t, err)
	_, err = m.Generate(ctx, "hi", GenerateOptions{MaxTokens: 1}, nil)
	require.NoError(t, err)
	_, err = m.Chat(ctx, msgs, GenerateOptions{MaxTokens: 1}, nil)
	require.ErrorIs(t, err, ErrNoChatTemplate)
	require.ErrorIs(t, err, chat.ErrTemplate)
	require.ErrorContains(t, err, TokenizerConfigFile)
	require.ErrorIs(t, m.ChatTemplateError(), chat.ErrTemplate)
	require.ErrorContains(t, m.ChatTemplateError(), TokenizerConfigFile)

	_, err = Load(dir, WithChatTemplate("{{ oops", chat.Tokens{}))
	require.ErrorIs(t, err, chat.ErrTemplate)

	m, err = Load(dir, WithChatTemplate("{{ raise_exception('only one user turn, got ' ~ messages|length) }}", chat.Tokens{}))
	require.NoError(t, err)
	_, err = m.Chat(ctx, append(msgs, msgs...), GenerateOptions{MaxTokens: 1}, nil)
	var re *chat.RaiseError
	require.True(t, errors.As(err, &re), "%v", err)
	require.Equal(t, "only one user turn, got 2", re.Message)
	_, err = m.Chat(ctx, nil, GenerateOptions{MaxTokens: 1}, nil)
	require.ErrorIs(t, err, chat.ErrNoMessages)

	m, err = Load(dir, WithoutTokenizer())
	require.NoError(t, err)
	_, err = m.Chat(ctx, msgs, GenerateOptions{MaxTokens: 1}, nil)
	require.ErrorIs(t, err, ErrNoTokenizer)

	require.NoError(t, os.WriteFile(filepath.Join(dir, TokenizerConfigFile), []byte(`{"chat_template": 7}`), 0o644))
	_, err = Load(dir)
	require.ErrorIs(t, err, ErrTokenizer)
	require.ErrorContains(t, err, "chat_template")
}
