package safetensors

import (
	"errors"
	"fmt"
)

// Kinds of failure; a *Error wraps exactly one of them.
var (
	// ErrHeader: the header is malformed (length, JSON, dtype, shape or offsets).
	ErrHeader = errors.New("corrupt safetensors header")
	// ErrTruncated: the file is shorter than its header says.
	ErrTruncated = errors.New("truncated safetensors file")
	// ErrNotFound: no tensor of that name.
	ErrNotFound = errors.New("tensor not found")
	// ErrDType: the tensor's dtype cannot be converted as asked.
	ErrDType = errors.New("unsupported tensor dtype")
	// ErrIndex: a sharded checkpoint's index file is malformed.
	ErrIndex = errors.New("corrupt safetensors index")
	// ErrIO: reading the underlying file failed.
	ErrIO = errors.New("safetensors read failed")
)

// Error describes one failure in one file (and tensor, if any).
type Error struct {
	File   string // file name as given to Open, NewReader or OpenFS
	Tensor string // tensor name; empty for whole-file problems
	Kind   error  // one of the Err* kinds above
	Detail string // what exactly was wrong
	Err    error  // underlying cause, if any (an I/O error)
}

func (e *Error) Error() string {
	s := "safetensors: " + e.File
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

func errorf(file, tensor string, kind error, format string, args ...any) *Error {
	return &Error{File: file, Tensor: tensor, Kind: kind, Detail: fmt.Sprintf(format, args...)}
}
