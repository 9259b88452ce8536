package mlx

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// ErrMLX is matched (errors.Is) by every *Error.
var ErrMLX = errors.New("mlx error")

// Error is a failed mlx-c call with the message MLX's error handler received.
type Error struct {
	Call    string // the C function, e.g. "mlx_matmul"
	Message string // MLX's message ("" when the call failed without one)
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Call + ": failed without a message"
	}
	return e.Call + ": " + e.Message
}

// Is makes errors.Is(err, ErrMLX) true.
func (e *Error) Is(target error) bool { return target == ErrMLX }

// UnsupportedError says the loaded libmlxc lacks an optional function.
type UnsupportedError struct {
	Func    string // the C function
	Since   string // the mlx-c release that adds it
	Library string // the library that lacks it
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%s is not supported by this libmlxc (%s does not export it; it needs %s)", e.Func, e.Library, e.Since)
}

// Is makes errors.Is(err, errors.ErrUnsupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == errors.ErrUnsupported }

// messages holds the last error message per OS thread. mlx-c calls the
// handler synchronously on the thread whose call failed, and each wrapper
// keeps its goroutine on one OS thread for the call, so the slot of the
// calling thread is the call's message.
var messages = struct {
	sync.Mutex
	byThread map[uint64]string
}{byThread: map[uint64]string{}}

// onError is the Go side of hipgo's mlx_error_handler_func. It must not call
// MLX, and it returns to MLX, which then returns its failure status.
func onError(msg *byte, _ uintptr) {
	tid := threadID()
	m := goString(msg)
	messages.Lock()
	messages.byThread[tid] = m
	messages.Unlock()
}

// takeMessage removes and returns the calling thread's message.
func takeMessage(tid uint64) string {
	messages.Lock()
	defer messages.Unlock()
	m := messages.byThread[tid]
	delete(messages.byThread, tid)
	return m
}

// goString copies a NUL-terminated C string into Go memory ("" for nil).
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}
