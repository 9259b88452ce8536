package codeobj

import (
	"errors"
	"fmt"
)

// Sentinels for errors.Is. Every error Parse returns is a *FormatError that
// wraps exactly one of them.
var (
	// ErrNotCodeObject: the bytes are not an AMDGPU HSA ELF (wrong magic,
	// class, byte order, OS/ABI or machine).
	ErrNotCodeObject = errors.New("not an AMDGPU HSA code object")
	// ErrUnsupportedVersion: an AMDGPU HSA ELF of a code object version this
	// reader does not handle (v2 and older use a different metadata note).
	ErrUnsupportedVersion = errors.New("unsupported code object version")
	// ErrMalformed: the ELF structure or the metadata is inconsistent or
	// truncated.
	ErrMalformed = errors.New("malformed code object")
	// ErrNoMetadata: a well-formed ELF without an NT_AMDGPU_METADATA note.
	ErrNoMetadata = errors.New("code object has no NT_AMDGPU_METADATA note")
)

// FormatError says what part of the code object was wrong and why.
type FormatError struct {
	// Where names the part: "ELF header", "section 3", "kernel \"k\" arg 2", ...
	Where string
	// Reason is a sentence for a person.
	Reason string
	// Kind is one of the package sentinels.
	Kind error
	// Cause is the underlying error, if any (a *MsgpackError for the note).
	Cause error
}

func (e *FormatError) Error() string {
	s := fmt.Sprintf("codeobj: %s: %s", e.Where, e.Reason)
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Unwrap exposes both the sentinel and the cause to errors.Is/As.
func (e *FormatError) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Kind, e.Cause}
	}
	return []error{e.Kind}
}

func malformed(where, format string, args ...any) error {
	return &FormatError{Where: where, Reason: fmt.Sprintf(format, args...), Kind: ErrMalformed}
}
