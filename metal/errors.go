package metal

import (
	"errors"
	"fmt"
)

// Code is an MTLCommandBufferError code (MTLCommandBufferErrorDomain). Every
// value but CodeNone is an error; the constants are the sentinels errors.Is
// matches through *Error.
type Code int64

// MTLCommandBufferError values (MTLCommandBuffer.h; 5 and 6 are unused).
// Blacklisted (4) was renamed AccessRevoked in macOS 12; DeviceRemoved is
// deprecated on Apple silicon but still reported by eGPUs on Intel Macs.
const (
	CodeNone           Code = 0
	ErrInternal        Code = 1
	ErrTimeout         Code = 2
	ErrPageFault       Code = 3
	ErrAccessRevoked   Code = 4
	ErrNotPermitted    Code = 7
	ErrOutOfMemory     Code = 8
	ErrInvalidResource Code = 9
	ErrMemoryless      Code = 10
	ErrDeviceRemoved   Code = 11
	ErrStackOverflow   Code = 12
)

// codeTable names each Code as MTLCommandBuffer.h does, in header order.
var codeTable = []struct {
	code Code
	name string
	kind FaultKind
}{
	{CodeNone, "MTLCommandBufferErrorNone", NotAFault},
	{ErrInternal, "MTLCommandBufferErrorInternal", DeviceGone},
	{ErrTimeout, "MTLCommandBufferErrorTimeout", Transient},
	{ErrPageFault, "MTLCommandBufferErrorPageFault", OwnFault},
	{ErrAccessRevoked, "MTLCommandBufferErrorAccessRevoked", DeviceGone},
	{ErrNotPermitted, "MTLCommandBufferErrorNotPermitted", DeviceGone},
	{ErrOutOfMemory, "MTLCommandBufferErrorOutOfMemory", Transient},
	{ErrInvalidResource, "MTLCommandBufferErrorInvalidResource", OwnFault},
	{ErrMemoryless, "MTLCommandBufferErrorMemoryless", Transient},
	{ErrDeviceRemoved, "MTLCommandBufferErrorDeviceRemoved", DeviceGone},
	{ErrStackOverflow, "MTLCommandBufferErrorStackOverflow", OwnFault},
}

// FaultKind sorts command-buffer error codes by what they say about the
// device.
type FaultKind int

const (
	// NotAFault: CodeNone, or a code this binding does not know.
	NotAFault FaultKind = iota
	// OwnFault: the command buffer itself did something the GPU could not
	// service (a page fault from an out-of-bounds access, a resource freed
	// while in use, a stack overflow). The work's results are garbage.
	OwnFault
	// DeviceGone: the process lost the GPU (access revoked after too many
	// hangs, not permitted, removed) or Metal failed internally.
	DeviceGone
	// Transient: the command buffer was stopped without being at fault in a
	// way that poisons the device: the system's GPU timeout (a long or hung
	// command buffer, or a victim of another's hang or of a GPU recovery),
	// memory that was short at the time. Running it again can succeed.
	Transient
)

func (k FaultKind) String() string {
	switch k {
	case OwnFault:
		return "GPU fault"
	case DeviceGone:
		return "device gone"
	case Transient:
		return "transient"
	}
	return "not a fault"
}

// Name is the header's name for the code, or "MTLCommandBufferError(n)".
func (c Code) Name() string {
	for _, e := range codeTable {
		if e.code == c {
			return e.name
		}
	}
	return fmt.Sprintf("MTLCommandBufferError(%d)", int64(c))
}

// Kind says what the code means for the device.
func (c Code) Kind() FaultKind {
	for _, e := range codeTable {
		if e.code == c {
			return e.kind
		}
	}
	// An unknown code from a newer macOS: the command buffer failed for a
	// reason this binding cannot judge, so it is treated as the device's
	// (the safe side: the runtime stops using it).
	if c != CodeNone {
		return DeviceGone
	}
	return NotAFault
}

func (c Code) Error() string { return fmt.Sprintf("%s (%d)", c.Name(), int64(c)) }

// Status is an MTLCommandBufferStatus.
type Status uint64

// MTLCommandBufferStatus values.
const (
	StatusNotEnqueued Status = 0
	StatusEnqueued    Status = 1
	StatusCommitted   Status = 2
	StatusScheduled   Status = 3
	StatusCompleted   Status = 4
	StatusError       Status = 5
)

func (s Status) String() string {
	switch s {
	case StatusNotEnqueued:
		return "MTLCommandBufferStatusNotEnqueued"
	case StatusEnqueued:
		return "MTLCommandBufferStatusEnqueued"
	case StatusCommitted:
		return "MTLCommandBufferStatusCommitted"
	case StatusScheduled:
		return "MTLCommandBufferStatusScheduled"
	case StatusCompleted:
		return "MTLCommandBufferStatusCompleted"
	case StatusError:
		return "MTLCommandBufferStatusError"
	}
	return fmt.Sprintf("MTLCommandBufferStatus(%d)", uint64(s))
}

// Done reports whether the command buffer has finished, well or not.
func (s Status) Done() bool { return s == StatusCompleted || s == StatusError }

// CommandBufferErrorDomain is MTLCommandBufferErrorDomain's value.
const CommandBufferErrorDomain = "MTLCommandBufferErrorDomain"

// Sentinels for errors that are not command-buffer codes.
var (
	// ErrNilResult: a method returned nil without an NSError
	// (newBufferWithLength: when memory is short, newFunctionWithName: for a
	// name the library lacks, MTLCreateSystemDefaultDevice without a GPU).
	ErrNilResult = errors.New("returned nil")
	// ErrNoDevice: MTLCreateSystemDefaultDevice returned nil.
	ErrNoDevice = errors.New("no Metal device")
	// ErrCompile: newLibraryWithSource failed (see *CompileError).
	ErrCompile = errors.New("MSL compilation failed")
	// ErrInvalidLaunch: a dispatch refused before it reached Metal (more
	// threads than the pipeline takes, too much threadgroup memory).
	ErrInvalidLaunch = errors.New("invalid dispatch")
	// ErrUnsupportedPlatform is matched by *UnsupportedPlatformError.
	ErrUnsupportedPlatform = errors.New("Metal is only on macOS")
)

// Error is a failed Metal call. Domain, Code and Description come from its
// NSError when it had one; for command buffers Code is an MTLCommandBufferError
// code, and errors.Is(err, ErrPageFault) works.
type Error struct {
	Call        string // the selector or function, e.g. "newComputePipelineStateWithFunction:error:"
	Domain      string // NSError domain, "" without an NSError
	Code        int64  // NSError code
	Description string // localizedDescription
	Err         error  // ErrNilResult, a sentinel, or nil
}

func (e *Error) Error() string {
	switch {
	case e.Domain == CommandBufferErrorDomain:
		return fmt.Sprintf("%s: %s: %s", e.Call, Code(e.Code), e.Description)
	case e.Domain != "":
		return fmt.Sprintf("%s: %s error %d: %s", e.Call, e.Domain, e.Code, e.Description)
	case e.Description != "" && e.Err != nil:
		return fmt.Sprintf("%s: %v: %s", e.Call, e.Err, e.Description)
	case e.Err != nil:
		return fmt.Sprintf("%s: %v", e.Call, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Call, e.Description)
}

// Unwrap exposes the command-buffer Code (for errors.Is against the Code
// sentinels) or the sentinel.
func (e *Error) Unwrap() []error {
	var out []error
	if e.Domain == CommandBufferErrorDomain {
		out = append(out, Code(e.Code))
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// CommandBufferCode is the MTLCommandBufferError code of err, if err is a
// command buffer's failure.
func CommandBufferCode(err error) (Code, bool) {
	var me *Error
	if errors.As(err, &me) && me.Domain == CommandBufferErrorDomain {
		return Code(me.Code), true
	}
	return CodeNone, false
}

// CompileError is an MSL source newLibraryWithSource:options:error: refused;
// Log is the compiler's output (the NSError's localizedDescription), with
// file:line:column diagnostics.
type CompileError struct {
	Code int64
	Log  string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("newLibraryWithSource:options:error: MSL compilation failed (MTLLibraryError %d):\n%s", e.Code, e.Log)
}
func (e *CompileError) Is(target error) bool { return target == ErrCompile }

// MissingClassError: the framework loaded but lacks an Objective-C class the
// binding uses (a very old or stripped macOS).
type MissingClassError struct{ Class string }

func (e *MissingClassError) Error() string {
	return fmt.Sprintf("metal: Objective-C class %s not found (macOS too old, or Metal stripped)", e.Class)
}

// UnsupportedPlatformError is Load's answer off macOS.
type UnsupportedPlatformError struct{ GOOS string }

func (e *UnsupportedPlatformError) Error() string {
	return fmt.Sprintf("metal: only on macOS (this is %s)", e.GOOS)
}
func (e *UnsupportedPlatformError) Is(target error) bool { return target == ErrUnsupportedPlatform }
