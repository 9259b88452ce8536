package server

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/chat"
	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/model/scheduler"
)

// TestChatWithATemplateThatDoesNotCompileIsAnError: a checkpoint whose
// chat template does not compile gets a 501 on chat naming the compile
// error, not a reply in the plain chat format (which the server keeps for
// models that have no template); text completions are still served.
func TestChatWithATemplateThatDoesNotCompileIsAnError(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, modeltest.Write(dir, modeltest.SmolLMTiny()))
	require.NoError(t, os.WriteFile(filepath.Join(dir, model.ChatTemplateFile), []byte("{% for m in messages %}{{ m.content }}"), 0o644))
	m, err := model.Load(dir)
	require.NoError(t, err)
	require.ErrorIs(t, m.ChatTemplateError(), chat.ErrTemplate)
	srv := New(Options{ModelName: "tiny"})
	sch := scheduler.New(m, scheduler.Config{OnStep: srv.OnStep})
	srv.SetScheduler(sch)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { sch.Close(); ts.Close() })

	resp, body := send(t, "POST", ts.URL+"/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"Hi"}],"max_tokens":2}`, map[string]string{"Content-Type": "application/json"})
	e := requireError(t, resp, body, http.StatusNotImplemented, "chat_template_error")
	require.Contains(t, e.Error.Message, model.ChatTemplateFile)
	resp, body = send(t, "POST", ts.URL+"/v1/completions", `{"model":"tiny","prompt":"Hi","max_tokens":2}`, map[string]string{"Content-Type": "application/json"})
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
}
