package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/scheduler"
	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/sampling"
)

// apiError is an OpenAI-shaped error with its HTTP status and the metrics
// class it counts under.
type apiError struct {
	Status     int
	Message    string
	Type       string // invalid_request_error, authentication_error, rate_limit_error, server_error
	Param      string // the request field, when one is to blame
	Code       string
	Class      string   // errors_total{class}
	RetryAfter int      // seconds, for 429 and 503
	allow      []string // the methods of a 405
}

func (e *apiError) Error() string { return e.Message }

// errorBody is OpenAI's error shape with one field more: request_id, the
// X-Request-Id of the response, so that an error a user pastes leads to
// its access-log line.
type errorBody struct {
	Error struct {
		Message   string  `json:"message"`
		Type      string  `json:"type"`
		Param     *string `json:"param"`
		Code      string  `json:"code"`
		RequestID string  `json:"request_id"`
	} `json:"error"`
}

func (e *apiError) body(requestID string) errorBody {
	var b errorBody
	b.Error.Message, b.Error.Type, b.Error.Code, b.Error.RequestID = e.Message, e.Type, e.Code, requestID
	if e.Param != "" {
		b.Error.Param = &e.Param
	}
	return b
}

// badRequest is a 400 naming the field.
func badRequest(param, code, format string, args ...any) *apiError {
	msg := fmt.Sprintf(format, args...)
	if param != "" {
		msg = param + ": " + msg
	}
	return &apiError{Status: http.StatusBadRequest, Message: msg, Type: "invalid_request_error", Param: param, Code: code, Class: "bad_request"}
}

// classify maps a scheduler or model error onto the API.
func classify(err error) *apiError {
	var ae *apiError
	var ue *scheduler.UnavailableError
	var ce *model.ContextError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, scheduler.ErrQueueFull):
		return &apiError{Status: http.StatusTooManyRequests, Message: "the request queue is full; retry later", Type: "rate_limit_error", Code: "queue_full", Class: "queue_full", RetryAfter: 1}
	case errors.As(err, &ue):
		code := "unavailable"
		if errors.Is(err, runtime.ErrDeviceLost) || errors.Is(err, runtime.ErrDeviceFault) {
			code = "device_lost"
		}
		return &apiError{Status: http.StatusServiceUnavailable, Message: err.Error(), Type: "server_error", Code: code, Class: code, RetryAfter: 30}
	case errors.Is(err, scheduler.ErrClosed):
		return &apiError{Status: http.StatusServiceUnavailable, Message: "the server is shutting down", Type: "server_error", Code: "shutting_down", Class: "unavailable", RetryAfter: 1}
	case errors.As(err, &ce):
		return badRequest("messages", "context_length_exceeded", "%v", err)
	case errors.As(err, new(*model.UnsupportedOptionError)), errors.As(err, new(*sampling.ParameterError)):
		return classifyOptions(err)
	case errors.Is(err, model.ErrOptions), errors.Is(err, model.ErrTokenID):
		return badRequest("", "invalid_value", "%v", err)
	}
	return &apiError{Status: http.StatusInternalServerError, Message: "generation failed: " + err.Error(), Type: "server_error", Code: "step_failed", Class: errorClass(err)}
}

// errorClass names the runtime's error class of a failed step.
func errorClass(err error) string {
	for _, c := range []struct {
		err  error
		name string
	}{
		{runtime.ErrDeviceLost, "device_lost"},
		{runtime.ErrDeviceFault, "device_fault"},
		{runtime.ErrLaunchRejected, "launch_rejected"},
		{runtime.ErrOutOfMemory, "out_of_memory"},
		{runtime.ErrWatchdog, "watchdog"},
	} {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return "step_failed"
}

// writeError writes e as JSON.
func writeError(w http.ResponseWriter, e *apiError, requestID string) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	writeJSON(w, e.Status, e.body(requestID))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func now() int64 { return time.Now().Unix() }
