package server

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hipgo/hipgo/constrain"
	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/chat"
	"github.com/hipgo/hipgo/model/scheduler"
	"github.com/hipgo/hipgo/sampling"
)

// maxStops is the OpenAI API's limit on stop strings.
const maxStops = 4

// options validates the fields both endpoints share and maps them onto
// model.GenerateOptions; the sampling ranges are sampling.Params.Validate's
// and sampling.Penalties.Validate's, and m.CheckOptions refuses what m's
// backend cannot apply (a 400 unsupported_value naming the field).
func (s *Server) options(m *model.Model, c *common, lp logprobRequest, g *constrain.Grammar, maxTokens *int, maxTokensField string, defaultMax int) (model.GenerateOptions, *apiError) {
	o := model.GenerateOptions{Logprobs: lp.on, TopLogprobs: lp.top, Grammar: g}
	if c.Model != "" && c.Model != s.opts.ModelName {
		return o, &apiError{Status: http.StatusBadRequest, Message: fmt.Sprintf("model: %q is not served here (this server serves %q)", c.Model, s.opts.ModelName),
			Type: "invalid_request_error", Param: "model", Code: "model_not_found", Class: "bad_request"}
	}
	if c.N != nil && *c.N != 1 {
		return o, badRequest("n", "unsupported_value", "only n = 1 is supported, got %d", *c.N)
	}
	p := sampling.Params{Temperature: 1, TopP: 1}
	if c.Temperature != nil {
		p.Temperature = float32(*c.Temperature)
		if *c.Temperature > 2 { // the OpenAI API's range
			return o, badRequest("temperature", "invalid_value", "%g must be in [0, 2]", *c.Temperature)
		}
	}
	if c.TopP != nil {
		p.TopP = float32(*c.TopP)
	}
	if c.TopK != nil {
		p.TopK = *c.TopK
	}
	if c.MinP != nil {
		p.MinP = float32(*c.MinP)
	}
	if err := p.Validate(); err != nil {
		var pe *sampling.ParameterError
		if errors.As(err, &pe) {
			return o, badRequest(pe.Name, "invalid_value", "%s %s", pe.Value, pe.Rule)
		}
		return o, badRequest("", "invalid_value", "%v", err)
	}
	o.Temperature, o.TopK, o.TopP, o.MinP = p.Temperature, p.TopK, p.TopP, p.MinP
	if e := penalties(c, &o); e != nil {
		return o, e
	}
	if e := classifyOptions(m.CheckOptions(o)); e != nil {
		return o, e
	}
	if maxTokens == nil {
		maxTokens = c.MaxTokens
		maxTokensField = "max_tokens"
	}
	o.MaxTokens = defaultMax
	if defaultMax == 0 {
		o.MaxTokens = s.opts.DefaultMaxTokens // 0: to the end of the context (fits)
	}
	if maxTokens != nil {
		if *maxTokens < 1 {
			return o, badRequest(maxTokensField, "invalid_value", "%d must be at least 1", *maxTokens)
		}
		o.MaxTokens = *maxTokens
	}
	if len(c.Stop) > maxStops {
		return o, badRequest("stop", "invalid_value", "at most %d stop strings, got %d", maxStops, len(c.Stop))
	}
	for i, st := range c.Stop {
		if st == "" {
			return o, badRequest("stop", "invalid_value", "stop string %d is empty", i)
		}
	}
	o.Stop = c.Stop
	if c.Seed != nil {
		o.Seed = uint64(*c.Seed)
	} else {
		var b [8]byte
		_, _ = rand.Read(b[:])
		o.Seed = binary.LittleEndian.Uint64(b[:])
	}
	return o, nil
}

// penalties maps logit_bias and the penalties onto o. Their ranges are
// checked by model.CheckOptions, but for what only JSON has: a key that is
// no token id, a repetition penalty of 0 (which the model reads as unset).
func penalties(c *common, o *model.GenerateOptions) *apiError {
	if c.PresencePenalty != nil {
		o.PresencePenalty = float32(*c.PresencePenalty)
	}
	if c.FrequencyPenalty != nil {
		o.FrequencyPenalty = float32(*c.FrequencyPenalty)
	}
	if r := c.RepetitionPenalty; r != nil {
		if !(*r > 0) {
			return badRequest("repetition_penalty", "invalid_value", "%g must be > 0 (1 = off)", *r)
		}
		o.RepetitionPenalty = float32(*r)
	}
	if len(c.LogitBias) > 0 {
		o.LogitBias = make(map[uint32]float32, len(c.LogitBias))
		for _, k := range slices.Sorted(maps.Keys(c.LogitBias)) {
			id, err := strconv.ParseUint(k, 10, 32)
			if err != nil {
				return badRequest("logit_bias", "invalid_value", "key %q is not a token id (a decimal integer)", k)
			}
			o.LogitBias[uint32(id)] = float32(c.LogitBias[k])
		}
	}
	return nil
}

// classifyOptions maps model.CheckOptions' errors onto 400s naming the
// field: a range error is invalid_value, an option the backend cannot
// apply unsupported_value.
func classifyOptions(err error) *apiError {
	var pe *sampling.ParameterError
	var ue *model.UnsupportedOptionError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ue):
		return badRequest(ue.Option, "unsupported_value", "not supported on this server's %s backend, which samples on the device, where penalties, logprobs and constrained decoding are not applied yet (the CPU backend applies them)", ue.Backend)
	case errors.As(err, &pe):
		return badRequest(pe.Name, "invalid_value", "%s %s", pe.Value, pe.Rule)
	}
	return classify(err)
}

// scheduler returns the scheduler, or the 503 of a loading server.
func (s *Server) scheduler() (*scheduler.Scheduler, *apiError) {
	if s.draining.Load() {
		return nil, &apiError{Status: http.StatusServiceUnavailable, Message: "the server is shutting down", Type: "server_error", Code: "shutting_down", Class: "unavailable", RetryAfter: 1}
	}
	sch := s.sched.Load()
	if sch == nil {
		return nil, &apiError{Status: http.StatusServiceUnavailable, Message: "the model is loading", Type: "server_error", Code: "loading", Class: "loading", RetryAfter: 5}
	}
	return sch, nil
}

// fits checks the context limit: the prompt, and the prompt with max_tokens.
func fits(m *model.Model, prompt []uint32, o *model.GenerateOptions, promptField, maxField string, explicitMax bool) *apiError {
	ctx := m.ContextLength()
	if len(prompt) >= ctx {
		return badRequest(promptField, "context_length_exceeded", "the prompt is %d tokens and the context length is %d", len(prompt), ctx)
	}
	room := ctx - len(prompt)
	if o.MaxTokens > room {
		if explicitMax {
			return badRequest(maxField, "context_length_exceeded", "%d tokens do not fit: the prompt is %d tokens of a context of %d, leaving %d", o.MaxTokens, len(prompt), ctx, room)
		}
		o.MaxTokens = room
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = room
	}
	return nil
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) *apiError {
	var req chatRequest
	if e := decode(r, &req); e != nil {
		return e
	}
	sch, e := s.scheduler()
	if e != nil {
		return e
	}
	field := "max_tokens"
	if req.MaxCompletionTokens != nil {
		field = "max_completion_tokens"
	}
	var lp logprobRequest
	if req.Logprobs != nil {
		lp.on = *req.Logprobs
	}
	if k := req.TopLogprobs; k != nil && (lp.on || *k != 0) {
		if !lp.on {
			return badRequest("top_logprobs", "invalid_value", "top_logprobs needs logprobs: true")
		}
		lp.top = *k
	}
	g, e := responseFormat(req.ResponseFormat)
	if e != nil {
		return e
	}
	m := sch.Status().Model
	opts, e := s.options(m, &req.common, lp, g, req.MaxCompletionTokens, field, 0)
	if e != nil {
		return e
	}
	if e := refuse(chatRefusals(&req)...); e != nil {
		return e
	}
	if len(req.Messages) == 0 {
		return badRequest("messages", "invalid_value", "at least one message is required")
	}
	msgs := make([]chat.Message, len(req.Messages))
	for i, m := range req.Messages {
		switch m.Role {
		case "system", "developer", "user", "assistant":
		default:
			return badRequest(fmt.Sprintf("messages[%d].role", i), "invalid_value", "role %q is not system, developer, user or assistant", m.Role)
		}
		if e := refuse(messageRefusals(fmt.Sprintf("messages[%d]", i), &m)...); e != nil {
			return e
		}
		role := m.Role
		if role == "developer" {
			role = "system"
		}
		msgs[i] = chat.Message{Role: role, Content: string(m.Content)}
	}
	var prompt []uint32
	var stopIDs []uint32
	if m.ChatTemplate() != nil {
		var err error
		if prompt, err = m.ChatPrompt(msgs); err != nil {
			return badRequest("messages", "invalid_value", "the chat template refused them: %v", err)
		}
		if id, ok := m.EndOfTurnID(); ok {
			stopIDs = []uint32{id}
		}
	} else if terr := m.ChatTemplateError(); terr != nil {
		// The checkpoint has a chat template that does not compile: the
		// plain format would answer in a format the model was not trained
		// on, without a word of why.
		return &apiError{Status: http.StatusNotImplemented, Message: "the model's chat template does not compile, so chat is not served (text completions are): " + terr.Error(),
			Type: "server_error", Code: "chat_template_error", Class: "chat_template_error"}
	} else {
		var err error
		if prompt, err = m.PromptTokens(PlainChat(msgs)); err != nil {
			return classify(err)
		}
		opts.Stop = append(opts.Stop, PlainChatStop)
	}
	if e := fits(m, prompt, &opts, "messages", field, req.MaxCompletionTokens != nil || req.MaxTokens != nil); e != nil {
		return e
	}
	return s.run(w, r, sch, scheduler.Request{Prompt: prompt, Options: opts, StopIDs: stopIDs}, req.Stream, req.StreamOptions, true)
}

// PlainChat is the chat format for a model without a chat template (the
// embedded demo model): each message on its own line as "Role: content"
// (System, User, Assistant), then "Assistant:" for the reply, which stops
// at PlainChatStop (the next user turn) as well as at end of sequence.
func PlainChat(msgs []chat.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		role := strings.ToUpper(m.Role[:1]) + m.Role[1:]
		fmt.Fprintf(&b, "%s: %s\n", role, m.Content)
	}
	b.WriteString("Assistant:")
	return b.String()
}

// PlainChatStop ends a reply in the plain chat format.
const PlainChatStop = "\nUser:"

func (s *Server) completions(w http.ResponseWriter, r *http.Request) *apiError {
	var req completionRequest
	if e := decode(r, &req); e != nil {
		return e
	}
	sch, e := s.scheduler()
	if e != nil {
		return e
	}
	var lp logprobRequest
	if n := req.Logprobs; n != nil {
		if *n < 0 || *n > sampling.MaxTopLogprobs {
			return badRequest("logprobs", "invalid_value", "%d must be in [0, %d]", *n, sampling.MaxTopLogprobs)
		}
		lp = logprobRequest{on: true, top: *n}
	}
	m := sch.Status().Model
	opts, e := s.options(m, &req.common, lp, nil, nil, "max_tokens", 16) // the API's default
	if e != nil {
		return e
	}
	if e := refuse(completionRefusals(&req)...); e != nil {
		return e
	}
	var prompt string
	var one []string
	switch {
	case len(req.Prompt) == 0 || string(req.Prompt) == "null":
		return badRequest("prompt", "invalid_value", "a prompt is required")
	case json.Unmarshal(req.Prompt, &prompt) == nil:
	case json.Unmarshal(req.Prompt, &one) == nil && len(one) == 1:
		prompt = one[0]
	default:
		return badRequest("prompt", "invalid_value", "one prompt string is supported (a string, or an array of one string)")
	}
	ids, err := m.PromptTokens(prompt)
	if err != nil {
		return classify(err)
	}
	if e := fits(m, ids, &opts, "prompt", "max_tokens", req.MaxTokens != nil); e != nil {
		return e
	}
	return s.run(w, r, sch, scheduler.Request{Prompt: ids, Options: opts}, req.Stream, req.StreamOptions, false)
}

// logprobRequest is what a request asks of logprobs: on, and how many top
// logprobs a token lists.
type logprobRequest struct {
	on  bool
	top int
}

// run submits the request and writes the answer, whole or streamed.
func (s *Server) run(w http.ResponseWriter, r *http.Request, sch *scheduler.Scheduler, req scheduler.Request, stream bool, so *streamOptions, isChat bool) *apiError {
	start := time.Now()
	st, err := sch.Submit(r.Context(), req)
	if err != nil {
		return classify(err)
	}
	id := map[bool]string{true: "chatcmpl-", false: "cmpl-"}[isChat] + rand.Text()
	ent := entryOf(r)
	created := now()
	var lpw *logprobWriter // nil: no logprobs asked
	if req.Options.Logprobs {
		lpw = &logprobWriter{tok: sch.Status().Model.Tokenizer()}
	}
	chatLP := func(lps []scheduler.Logprob) *chatLogprobs {
		if lpw == nil {
			return nil
		}
		return lpw.chat(lps)
	}
	compLP := func(lps []scheduler.Logprob) *completionLogprobs {
		if lpw == nil {
			return nil
		}
		return lpw.completion(lps)
	}
	if !stream {
		var text strings.Builder
		var lps []scheduler.Logprob
		var end scheduler.Chunk
		for range math.MaxInt32 {
			end = st.Next()
			text.WriteString(end.Text)
			lps = append(lps, end.Logprobs...)
			if end.Done {
				break
			}
		}
		s.observe(st, start, end.Err)
		ent.generated(s.opts.ModelName, st)
		if end.Err != nil {
			if errors.Is(end.Err, context.Canceled) || errors.Is(end.Err, context.DeadlineExceeded) {
				s.metrics.errors.WithLabelValues("cancelled").Inc()
				ent.err = cancelled
				return nil // the client is gone
			}
			return classify(end.Err)
		}
		u := usageOf(st)
		finish := string(end.Finish)
		if isChat {
			writeJSON(w, http.StatusOK, chatResponse{ID: id, Object: "chat.completion", Created: created, Model: s.opts.ModelName, SystemFingerprint: "hipgo",
				Choices: []chatChoice{{Message: &wireMessage{Role: "assistant", Content: text.String()}, FinishReason: &finish, Logprobs: chatLP(lps)}}, Usage: &u})
		} else {
			writeJSON(w, http.StatusOK, completionResponse{ID: id, Object: "text_completion", Created: created, Model: s.opts.ModelName, SystemFingerprint: "hipgo",
				Choices: []completionChoice{{Text: text.String(), FinishReason: &finish, Logprobs: compLP(lps)}}, Usage: &u})
		}
		return nil
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	// chunk is a streamed choice; lps (the logprobs of the tokens since
	// the last chunk) are written only when there are some.
	chunk := func(text string, lps []scheduler.Logprob, role string, finish *string) any {
		if isChat {
			var l *chatLogprobs
			if len(lps) > 0 {
				l = chatLP(lps)
			}
			return chatResponse{ID: id, Object: "chat.completion.chunk", Created: created, Model: s.opts.ModelName, SystemFingerprint: "hipgo",
				Choices: []chatChoice{{Delta: &wireMessage{Role: role, Content: text}, FinishReason: finish, Logprobs: l}}}
		}
		var l *completionLogprobs
		if len(lps) > 0 {
			l = compLP(lps)
		}
		return completionResponse{ID: id, Object: "text_completion", Created: created, Model: s.opts.ModelName, SystemFingerprint: "hipgo",
			Choices: []completionChoice{{Text: text, FinishReason: finish, Logprobs: l}}}
	}
	if isChat {
		if err := send(chunk("", nil, "assistant", nil)); err != nil {
			ent.err = cancelled
			return nil // the client is gone; its context ends the generation
		}
	}
	for range math.MaxInt32 {
		c := st.Next()
		if c.Text != "" || len(c.Logprobs) > 0 {
			if err := send(chunk(c.Text, c.Logprobs, "", nil)); err != nil {
				s.observe(st, start, err)
				ent.generated(s.opts.ModelName, st)
				ent.err = cancelled
				return nil
			}
		}
		if !c.Done {
			continue
		}
		s.observe(st, start, c.Err)
		ent.generated(s.opts.ModelName, st)
		if c.Err != nil {
			if errors.Is(c.Err, context.Canceled) || errors.Is(c.Err, context.DeadlineExceeded) {
				s.metrics.errors.WithLabelValues("cancelled").Inc()
				ent.err = cancelled
				return nil
			}
			// The status is sent; an error event ends the stream (the
			// OpenAI clients raise it), without [DONE].
			e := classify(c.Err)
			s.metrics.errors.WithLabelValues(e.Class).Inc()
			ent.err = e
			_ = send(e.body(ent.id))
			return nil
		}
		finish := string(c.Finish)
		_ = send(chunk("", nil, "", &finish))
		if so != nil && so.IncludeUsage {
			u := usageOf(st)
			if isChat {
				_ = send(chatResponse{ID: id, Object: "chat.completion.chunk", Created: created, Model: s.opts.ModelName, SystemFingerprint: "hipgo", Choices: []chatChoice{}, Usage: &u})
			} else {
				_ = send(completionResponse{ID: id, Object: "text_completion", Created: created, Model: s.opts.ModelName, SystemFingerprint: "hipgo", Choices: []completionChoice{}, Usage: &u})
			}
		}
		_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	return nil
}

func usageOf(st *scheduler.Stream) usage {
	u := st.Usage()
	return usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}
}
