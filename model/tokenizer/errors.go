package tokenizer

import (
	"errors"
	"strings"
)

// ErrUnsupported marks a tokenizer.json that uses a component, option or
// pattern this package does not implement.
var ErrUnsupported = errors.New("unsupported")

// ErrInvalid marks a tokenizer.json that is malformed or inconsistent (bad
// JSON, a missing field, a merge whose token is not in the vocabulary).
var ErrInvalid = errors.New("invalid")

// Error says why a tokenizer.json cannot be used. It wraps ErrUnsupported or
// ErrInvalid and, where there is one, the underlying error (from os or
// encoding/json), so errors.Is and errors.As see both.
type Error struct {
	File   string // the file given to Load; empty for Parse
	Field  string // where in the JSON, e.g. "pre_tokenizer.pretokenizers[0].pattern"
	Reason string // what is wrong, for a person
	Kind   error  // ErrUnsupported or ErrInvalid
	Cause  error  // the underlying error, or nil
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("tokenizer: ")
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	if e.Kind != nil {
		b.WriteString(e.Kind.Error())
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	if e.Cause != nil {
		b.WriteString(": ")
		b.WriteString(e.Cause.Error())
	}
	return b.String()
}

// Unwrap lets errors.Is match the kind and errors.As reach the cause.
func (e *Error) Unwrap() []error {
	errs := make([]error, 0, 2)
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	return errs
}

func unsupported(field, reason string) *Error {
	return &Error{Field: field, Reason: reason, Kind: ErrUnsupported}
}

func invalid(field, reason string, cause error) *Error {
	return &Error{Field: field, Reason: reason, Kind: ErrInvalid, Cause: cause}
}
