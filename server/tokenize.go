package server

import (
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/tokenizer"
)

// The tokenizer routes take llama-server's shapes (its tools/server
// README), so that clients written for it work unchanged.

type tokenizeRequest struct {
	Model        string  `json:"model"`
	Content      *string `json:"content"`
	AddSpecial   bool    `json:"add_special"`
	ParseSpecial *bool   `json:"parse_special"`
	WithPieces   bool    `json:"with_pieces"`
}

// tokenPiece is a token with its piece: a string when the piece is valid
// UTF-8, else its bytes as numbers (llama-server's with_pieces).
type tokenPiece struct {
	ID    uint32 `json:"id"`
	Piece any    `json:"piece"`
}

type tokenizeResponse struct {
	Tokens any `json:"tokens"` // []uint32, or []tokenPiece with with_pieces
}

type detokenizeRequest struct {
	Model  string  `json:"model"`
	Tokens []int64 `json:"tokens"`
}

type detokenizeResponse struct {
	Content string `json:"content"`
}

// tokenizer is the served model's tokenizer, or the error of a server that
// cannot tokenize (loading, a model without one) or of a request for
// another model.
func (s *Server) tokenizer(name string) (*model.Model, *tokenizer.Tokenizer, *apiError) {
	if name != "" && name != s.opts.ModelName {
		return nil, nil, &apiError{Status: http.StatusBadRequest, Message: fmt.Sprintf("model: %q is not served here (this server serves %q)", name, s.opts.ModelName),
			Type: "invalid_request_error", Param: "model", Code: "model_not_found", Class: "bad_request"}
	}
	sch := s.sched.Load()
	if sch == nil {
		return nil, nil, &apiError{Status: http.StatusServiceUnavailable, Message: "the model is loading", Type: "server_error", Code: "loading", Class: "loading", RetryAfter: 5}
	}
	m := sch.Status().Model
	tok := m.Tokenizer()
	if tok == nil {
		return nil, nil, &apiError{Status: http.StatusNotImplemented, Message: "the model was loaded without a tokenizer", Type: "server_error", Code: "no_tokenizer", Class: "no_tokenizer"}
	}
	return m, tok, nil
}

// tokenize is POST /tokenize: content's token ids (with add_special, the
// special tokens the tokenizer's template adds, such as BOS), each with its
// piece when with_pieces is set. Special tokens written in the text are
// always recognised (llama-server's parse_special, whose default is true).
func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) *apiError {
	var req tokenizeRequest
	if e := decode(r, &req); e != nil {
		return e
	}
	if req.Content == nil {
		return badRequest("content", "invalid_value", "the text to tokenize is required")
	}
	if req.ParseSpecial != nil && !*req.ParseSpecial {
		return badRequest("parse_special", "unsupported_value", "special tokens written in the text are always recognised (only true)")
	}
	_, tok, e := s.tokenizer(req.Model)
	if e != nil {
		return e
	}
	ids := tok.Encode(*req.Content, req.AddSpecial)
	if !req.WithPieces {
		if ids == nil {
			ids = []uint32{}
		}
		writeJSON(w, http.StatusOK, tokenizeResponse{Tokens: ids})
		return nil
	}
	pieces := make([]tokenPiece, len(ids))
	for i, id := range ids {
		b, _ := tok.Piece(id)
		pieces[i] = tokenPiece{ID: id, Piece: pieceValue(b)}
	}
	writeJSON(w, http.StatusOK, tokenizeResponse{Tokens: pieces})
	return nil
}

// pieceValue is b as llama-server writes a piece: a string when it is valid
// UTF-8, else the byte values.
func pieceValue(b []byte) any {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]int, len(b))
	for i, c := range b {
		out[i] = int(c)
	}
	return out
}

// detokenize is POST /detokenize: the text of the token ids, special tokens
// included (as llama-server gives it). An id outside the model's vocabulary
// is a 400 naming it.
func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) *apiError {
	var req detokenizeRequest
	if e := decode(r, &req); e != nil {
		return e
	}
	if req.Tokens == nil {
		return badRequest("tokens", "invalid_value", "the token ids to detokenize are required")
	}
	m, tok, e := s.tokenizer(req.Model)
	if e != nil {
		return e
	}
	vocab := int64(m.Config().VocabSize)
	ids := make([]uint32, len(req.Tokens))
	for i, id := range req.Tokens {
		if id < 0 || id >= vocab {
			return badRequest(fmt.Sprintf("tokens[%d]", i), "invalid_value", "token id %d is outside the vocabulary (0 to %d)", id, vocab-1)
		}
		ids[i] = uint32(id)
	}
	writeJSON(w, http.StatusOK, detokenizeResponse{Content: tok.Decode(ids)})
	return nil
}
