package gguf

import (
	"errors"
	"fmt"
)

// Kinds of failure; a *Error wraps exactly one of them.
var (
	// ErrFormat: not a GGUF file, an unsupported version, or a malformed
	// header (bad value type, string, count, alignment or dimensions).
	ErrFormat = errors.New("malformed GGUF file")
	// ErrTruncated: the file ends before its header or a tensor does.
	ErrTruncated = errors.New("truncated GGUF file")
	// ErrType: a tensor's ggml type is unknown, or a metadata value does not
	// have the type its reader asked for.
	ErrType = errors.New("unsupported GGUF type")
	// ErrLayout: tensor data is misaligned or overlaps another tensor.
	ErrLayout = errors.New("bad GGUF tensor layout")
	// ErrNotFound: no tensor or metadata key of that name.
	ErrNotFound = errors.New("not found in GGUF file")
	// ErrIO: reading the underlying file failed.
	ErrIO = errors.New("GGUF read failed")
)

// Error describes one failure in one file, naming the metadata key or the
// tensor at fault where there is one.
type Error struct {
	File   string // file name as given to Open, NewReader or FromBytes
	Field  string // metadata key (or header field such as "tensor_count")
	Tensor string // tensor name
	Kind   error  // one of the Err* kinds above
	Detail string
	Err    error // underlying cause, if any
}

func (e *Error) Error() string {
	s := "gguf: " + e.File
	if e.Field != "" {
		s += fmt.Sprintf(": %s", e.Field)
	}
	if e.Tensor != "" {
		s += fmt.Sprintf(": tensor %q", e.Tensor)
	}
	s += ": " + e.Kind.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap lets errors.Is match both the kind and an underlying cause.
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Kind, e.Err}
	}
	return []error{e.Kind}
}
