// Package server is an OpenAI-compatible HTTP API over a model/scheduler
// Scheduler: an http.Handler another Go service can mount.
//
// Start with New, then SetScheduler with a model/scheduler Scheduler over a
// loaded model (scheduler.New(m, scheduler.Config{OnStep: srv.OnStep})),
// and serve the Server as any http.Handler; Drain before shutting down.
// examples/serve and examples/embed are complete programs.
//
// It translates HTTP to the scheduler and back and owns nothing else:
// batching, device ownership and the failure semantics (a failed step
// fails only its requests; a lost device ends them; the failed-step guard)
// are the scheduler's. Endpoints:
//
//	POST /v1/chat/completions   chat, through the model's chat template (or the plain format, see PlainChat)
//	POST /v1/completions        text completion
//	GET  /v1/models             the one model served
//	GET  /v1/models/{id}        that model (404 for others)
//	POST /tokenize              llama-server's: the token ids (and pieces) of a text
//	POST /detokenize            llama-server's: the text of token ids
//	GET  /health/live           200 while the process serves HTTP
//	GET  /health/ready          200 when requests can be served; 503 loading, device lost (with the fault and since when) or guard tripped
//	GET  /metrics               Prometheus text (client_golang)
//	GET  /                      a chat page that streams the reply
//
// Every request passes guard first: security headers, the Host allow-list
// (Options.AllowedHosts: DNS rebinding), the Origin check and CORS
// (Options.CORSOrigins), and OpenAI-shaped 404s and 405s; /v1, /tokenize
// and /detokenize requests then need an API key when Options.APIKeys has
// any and a JSON body, which decode reads strictly (exact key case, no
// duplicates, one value). Drain
// starts a graceful shutdown.
//
// Each request gets an id (the client's X-Request-Id when sane, else a
// random one), sent back as X-Request-Id and in every error body, and one
// access-log line on Options.Logger when it ends.
//
// Both generation endpoints stream with "stream": true as server-sent
// events ending in "data: [DONE]"; with stream_options.include_usage the
// last chunk carries the usage. Errors are OpenAI-shaped
// {"error":{"message","type","param","code","request_id"}}; docs/serve.md
// has the table, and the field policy: every request field is implemented,
// ignored (it does not change the answer) or a 400 unless it asks for
// nothing, and a key that is no field is a 400. The penalties, logit_bias,
// logprobs and response_format (json_object and json_schema, compiled by
// package constrain into the grammar the reply is decoded under) are
// passed to the model where its backend computes them and refused, naming
// the field, where it does not (model.CheckOptions);
// logprobs come back in OpenAI's shapes (chat's content list, completions'
// legacy parallel lists), each token as its tokenizer piece.
package server
