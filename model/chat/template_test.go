package chat

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestNewRejectsBadTemplates proves a template that does not compile is an
// error wrapping ErrTemplate, never a panic or a template that renders junk.
func TestNewRejectsBadTemplates(t *testing.T) {
	for _, src := range []string{
		"",
		"  \n",
		"{% for m in messages %}no end",
		"{{ unclosed",
		"{{ 1 + }}",
		"{% nosuchtag %}",
		"{% endfor %}",
	} {
		_, err := New(src, Tokens{})
		require.ErrorIs(t, err, ErrTemplate, "%q", src)
	}
}

// TestRenderErrors proves each way a render fails is its own clear error:
// no messages, a raise_exception (message kept), and a template that fails
// at run time.
func TestRenderErrors(t *testing.T) {
	tpl, err := New("{{ messages[0].content }}", Tokens{})
	require.NoError(t, err)
	_, err = tpl.Render(nil, true)
	require.ErrorIs(t, err, ErrNoMessages)

	tpl, err = New(`{% if messages[0].role != 'user' %}{{ raise_exception('first message must be from the user, not ' + messages[0].role) }}{% endif %}ok`, Tokens{})
	require.NoError(t, err)
	out, err := tpl.Render([]Message{{Role: "user", Content: "hi"}}, false)
	require.NoError(t, err)
	require.Equal(t, "ok", out)
	_, err = tpl.Render([]Message{{Role: "assistant", Content: "hi"}}, false)
	var re *RaiseError
	require.True(t, errors.As(err, &re), "%v", err)
	require.Equal(t, "first message must be from the user, not assistant", re.Message)
	require.Contains(t, err.Error(), "first message must be from the user")

	tpl, err = New(`{{ messages[0].content.nosuchmethod() }}`, Tokens{})
	require.NoError(t, err)
	_, err = tpl.Render([]Message{{Role: "user", Content: "hi"}}, false)
	require.ErrorIs(t, err, ErrRender)

	tpl, err = New(`{{ strftime_now('%Q') }}`, Tokens{})
	require.NoError(t, err)
	_, err = tpl.Render([]Message{{Role: "user"}}, false)
	require.ErrorIs(t, err, ErrRender)
	require.ErrorContains(t, err, "%Q")
}

// TestSpecialTokensAndGenerationPrompt proves bos_token and eos_token are
// defined only when given (as transformers leaves a None token out) and that
// add_generation_prompt reaches the template.
func TestSpecialTokensAndGenerationPrompt(t *testing.T) {
	src := `{{ bos_token if bos_token is defined else 'NOBOS' }}|{{ eos_token if eos_token is defined else 'NOEOS' }}|{{ add_generation_prompt }}|{{ tools is none }}`
	tpl, err := New(src, Tokens{BOS: "<s>", EOS: "</s>"})
	require.NoError(t, err)
	out, err := tpl.Render([]Message{{Role: "user"}}, true)
	require.NoError(t, err)
	require.Equal(t, "<s>|</s>|True|True", out)
	tpl, err = New(src, Tokens{})
	require.NoError(t, err)
	out, err = tpl.Render([]Message{{Role: "user"}}, false)
	require.NoError(t, err)
	require.Equal(t, "NOBOS|NOEOS|False|True", out)
}

// TestStrftime proves strftime_now formats as Python's strftime does (the
// expected strings are Python 3.11's datetime.strftime on glibc) and reads
// the clock given by WithNow.
func TestStrftime(t *testing.T) {
	at := time.Date(2026, time.March, 7, 15, 4, 5, 0, time.UTC)
	for format, want := range map[string]string{
		"%d %b %Y":          "07 Mar 2026",
		"%-d %B %Y":         "7 March 2026",
		"%A, %a %y-%m-%e":   "Saturday, Sat 26-03- 7",
		"%H:%M:%S %I %p %j": "15:04:05 03 PM 066",
		"%w %% %h":          "6 % Mar",
		"plain":             "plain",
	} {
		got, err := strftime(at, format)
		require.NoError(t, err, format)
		require.Equal(t, want, got, format)
	}
	for _, bad := range []string{"%", "%-", "%Q", "%c"} {
		_, err := strftime(at, bad)
		require.Error(t, err, bad)
	}
	tpl, err := New(`{{ strftime_now("%d %b %Y") }}`, Tokens{}, WithNow(func() time.Time { return at }))
	require.NoError(t, err)
	out, err := tpl.Render([]Message{{Role: "user"}}, false)
	require.NoError(t, err)
	require.Equal(t, "07 Mar 2026", out)
}

// TestEndOfTurn proves the end-of-turn marker is found from the template
// itself for each real template family.
func TestEndOfTurn(t *testing.T) {
	cases := map[string]string{
		"smollm2.jinja":      "<|im_end|>\n",
		"qwen2.5.jinja":      "<|im_end|>\n",
		"mistral-nemo.jinja": "</s>",
		"llama3.1.jinja":     "<|eot_id|>",
	}
	for file, want := range cases {
		path := filepath.Join("testdata", "templates", file)
		if _, err := os.Stat(path); err != nil {
			dir := os.Getenv(envTemplates)
			if dir == "" {
				t.Logf("skipping %s: set %s (make test does)", file, envTemplates)
				continue
			}
			path = filepath.Join(dir, file)
		}
		src, err := os.ReadFile(path)
		require.NoError(t, err)
		tpl, err := New(string(src), Tokens{BOS: "<s>", EOS: "</s>"})
		require.NoError(t, err)
		got, err := tpl.EndOfTurn()
		require.NoError(t, err, file)
		require.Equal(t, want, got, file)
	}
	tpl, err := New(`{% for m in messages %}{{ m.role }}{% endfor %}`, Tokens{})
	require.NoError(t, err)
	_, err = tpl.EndOfTurn()
	require.ErrorIs(t, err, ErrRender, "a template that drops the reply")
}

// TestParseTokenizerConfig proves the chat fields are read in every form
// Hugging Face writes them, and bad forms are errors naming the field.
func TestParseTokenizerConfig(t *testing.T) {
	c, err := ParseTokenizerConfig([]byte(`{"chat_template": "T", "bos_token": "<s>", "eos_token": {"content": "</s>", "lstrip": false}}`))
	require.NoError(t, err)
	require.Equal(t, TokenizerConfig{Template: "T", Tokens: Tokens{BOS: "<s>", EOS: "</s>"}}, c)

	c, err = ParseTokenizerConfig([]byte(`{"chat_template": [{"name": "tool_use", "template": "X"}, {"name": "default", "template": "D"}], "bos_token": null, "eos_token": "<|im_end|>"}`))
	require.NoError(t, err)
	require.Equal(t, TokenizerConfig{Template: "D", Tokens: Tokens{EOS: "<|im_end|>"}}, c)

	c, err = ParseTokenizerConfig([]byte(`{"model_max_length": 8}`))
	require.NoError(t, err)
	require.Empty(t, c.Template)

	for _, bad := range []struct{ json, field string }{
		{`{"chat_template": 3}`, "chat_template"},
		{`{"chat_template": [{"name": "rag", "template": "R"}]}`, "chat_template"},
		{`{"bos_token": 1}`, "bos_token"},
		{`{"eos_token": {"id": 2}}`, "eos_token"},
		{`{`, "tokenizer_config.json"},
	} {
		_, err := ParseTokenizerConfig([]byte(bad.json))
		require.ErrorContains(t, err, bad.field, bad.json)
	}
}

// FuzzTemplate proves no template source or message content makes New or
// Render panic.
func FuzzTemplate(f *testing.F) {
	for _, file := range []string{"smollm2.jinja", "qwen2.5.jinja", "mistral-nemo.jinja"} {
		src, err := os.ReadFile(filepath.Join("testdata", "templates", file))
		require.NoError(f, err)
		f.Add(string(src), "hello")
	}
	f.Add("{{ messages[0].content[::-1] | tojson }}{% set ns = namespace(a=1) %}{{ ns.a }}", "ü\x00")
	f.Fuzz(func(t *testing.T, src, content string) {
		tpl, err := New(src, Tokens{BOS: "<s>", EOS: "</s>"})
		if err != nil {
			return
		}
		_, _ = tpl.Render([]Message{{Role: "user", Content: content}, {Role: "assistant", Content: content}}, true)
	})
}

// TestRangeIsBoundedAsInTheSandbox proves range() refuses more than 100000
// items, as transformers' sandboxed Jinja does (MAX_RANGE), instead of
// allocating without bound: a template in a downloaded model file must not be
// able to exhaust the process's memory that way. Smaller ranges work, with
// Python's start/stop/step semantics.
func TestRangeIsBoundedAsInTheSandbox(t *testing.T) {
	tpl, err := New("{% for i in range(100000000000) %}{% endfor %}", Tokens{})
	require.NoError(t, err)
	_, err = tpl.Render([]Message{{Role: "user"}}, false)
	require.ErrorIs(t, err, ErrRender)
	require.ErrorContains(t, err, "100000")

	for src, want := range map[string]string{
		"{{ range(3)|list }}":                                             "[0, 1, 2]",
		"{{ range(2, 5)|join(',') }}":                                     "2,3,4",
		"{{ range(5, 0, -2)|join(',') }}":                                 "5,3,1",
		"{{ range(0)|length }}":                                           "0",
		"{{ range(100000)|length }}":                                      "100000",
		"{{ range(-100000000000, 0, 1000000)|length }}":                   "100000",
		"{{ range(9223372036854775800, 9223372036854775807, 100)|join }}": "9223372036854775800",
		"{{ range(-9223372036854775807, 9223372036854775807, 9223372036854775807)|length }}": "2",
	} {
		tpl, err := New(src, Tokens{})
		require.NoError(t, err, src)
		got, err := tpl.Render([]Message{{Role: "user"}}, false)
		require.NoError(t, err, src)
		require.Equal(t, want, got, src)
	}
	for _, src := range []string{"{{ range(1, 2, 0) }}", "{{ range() }}", "{{ range('a') }}", "{{ range(0, 100001) }}"} {
		tpl, err := New(src, Tokens{})
		require.NoError(t, err, src)
		_, err = tpl.Render([]Message{{Role: "user"}}, false)
		require.ErrorIs(t, err, ErrRender, src)
	}
}
