package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/demo"
	"github.com/hipgo/hipgo/model/scheduler"
	"github.com/hipgo/hipgo/server"
)

// Serve the OpenAI API from a Go program: New gives the http.Handler,
// a scheduler over the loaded model makes it ready (until SetScheduler it
// answers 503 "loading"), and any http.Server or mux serves it
// (examples/embed mounts it under /llm/ beside its own routes).
func ExampleNew() {
	m, err := model.LoadFS(demo.FS(), model.WithDeviceMode(model.DeviceCPU))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	srv := server.New(server.Options{ModelName: "hipgo-demo"})
	sch := scheduler.New(m, scheduler.Config{OnStep: srv.OnStep})
	defer sch.Close()
	srv.SetScheduler(sch)

	ts := httptest.NewServer(srv) // a real program: http.ListenAndServe(addr, srv)
	defer ts.Close()
	resp, err := http.Post(ts.URL+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"hipgo-demo","prompt":"And God said","max_tokens":12,"temperature":0}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.StatusCode, out.Choices[0].FinishReason, out.Usage.CompletionTokens)
	// Output: 200 length 12
}
