package mlx

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/ebitengine/purego"
	"github.com/hipgo/hipgo/internal/dynlib"
)

// EnvLibrary names the environment variable whose value, when set, is the
// only path Load tries.
const EnvLibrary = "HIPGO_MLX_LIBRARY"

const libraryName = "libmlxc"

// candidates are the paths Load tries without EnvLibrary, per platform.
func candidates() []string {
	switch runtime.GOOS {
	case "darwin":
		return []string{"libmlxc.dylib", "/opt/homebrew/lib/libmlxc.dylib", "/usr/local/lib/libmlxc.dylib"}
	case "linux":
		return []string{"libmlxc.so", "/usr/local/lib/libmlxc.so"}
	}
	return nil
}

// UnsupportedPlatformError says libmlxc is not loaded on this platform.
type UnsupportedPlatformError struct{ GOOS string }

func (e *UnsupportedPlatformError) Error() string {
	return fmt.Sprintf("mlx: not supported on %s (Linux and macOS only)", e.GOOS)
}

// Is makes errors.Is(err, errors.ErrUnsupported) true.
func (e *UnsupportedPlatformError) Is(target error) bool { return target == errors.ErrUnsupported }

var (
	loadOnce dynlib.Once[*library]
	current  atomic.Pointer[library]
)

// Load opens libmlxc, binds its symbols and installs hipgo's error handler
// before any other MLX call. It is idempotent: the first result, success or
// failure, is kept for the life of the process. A missing library is a
// *dynlib.NotFoundError naming every path tried, one dlopen refuses a
// *dynlib.RejectedError with its reason (a libmlxc whose libmlx cannot be
// found names it and suggests LD_LIBRARY_PATH); one without a required
// symbol is a *dynlib.MissingSymbolError.
func Load() error {
	l, err := loadOnce.Do(func() (*library, error) { return load() })
	if err != nil {
		return err
	}
	current.Store(l)
	return nil
}

// LibraryPath returns the path Load opened, or "" before a successful Load.
func LibraryPath() string {
	if l := current.Load(); l != nil {
		return l.dl.Path
	}
	return ""
}

func load() (*library, error) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		return nil, &UnsupportedPlatformError{GOOS: runtime.GOOS}
	}
	dl, err := dynlib.Open(libraryName, EnvLibrary, candidates()...)
	if err != nil {
		return nil, err
	}
	return bind(dl)
}

// bind resolves the table and installs the error handler. Nothing else in
// libmlxc runs before the handler is in place: a failure before it would
// exit the process.
func bind(dl *dynlib.Library) (*library, error) {
	l := &library{dl: dl}
	if err := dl.Bind(l.table()); err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if threadID() == 0 {
		return nil, fmt.Errorf("mlx: cannot identify OS threads on %s/%s, so MLX's error messages could not be told apart", runtime.GOOS, runtime.GOARCH)
	}
	handler, err := errorTrampoline()
	if err != nil {
		return nil, err
	}
	l.setErrorHandler(handler, 0, 0)
	return l, nil
}

// The one error-handler trampoline, made once per process: purego can make
// only about 2000 callbacks and never frees them.
var trampoline struct {
	addr uintptr
	err  error
	done atomic.Bool
}

func errorTrampoline() (addr uintptr, err error) {
	if trampoline.done.Load() {
		return trampoline.addr, trampoline.err
	}
	defer func() {
		// purego panics where it cannot make callbacks; report it instead.
		if r := recover(); r != nil {
			err = fmt.Errorf("mlx: cannot create the error handler trampoline: %v", r)
		}
		trampoline.addr, trampoline.err = addr, err
		trampoline.done.Store(true)
	}()
	return purego.NewCallback(onError), nil
}

// api returns the loaded library, loading it on first use.
func api() (*library, error) {
	if l := current.Load(); l != nil {
		return l, nil
	}
	if err := Load(); err != nil {
		return nil, err
	}
	return current.Load(), nil
}

// call runs one mlx-c call that returns a status: on the calling OS thread,
// with that thread's message slot cleared first, so a non-zero status is
// returned as an *Error with exactly this call's message.
func call(name string, f func() int32) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := threadID()
	takeMessage(tid)
	if rc := f(); rc != 0 {
		return &Error{Call: name, Message: takeMessage(tid)}
	}
	return nil
}

// serial is held by every call that evaluates a graph or traces a
// Function. MLX 0.31.2 is not safe for that from two threads at once: the
// CPU backend keeps one command encoder per stream in a static map that
// eval fills and mutates without a lock (cpu::get_command_encoder,
// CommandEncoder::dispatch), and tracing sets a process-wide flag
// (detail::InTracing::trace_stack) that changes how other threads' arrays
// evaluate. owner is the thread holding it, so that a call a Function makes
// while MLX traces it (on the thread that holds serial) does not deadlock.
var serial struct {
	mu    sync.Mutex
	owner atomic.Uint64
}

// callSerial is call holding serial.
func callSerial(name string, f func() int32) error {
	return call(name, func() int32 {
		if tid := threadID(); serial.owner.Load() != tid {
			serial.mu.Lock()
			serial.owner.Store(tid)
			defer func() {
				serial.owner.Store(0)
				serial.mu.Unlock()
			}()
		}
		return f()
	})
}

// callHandle runs one mlx-c call that returns a handle by value: a zero
// handle is the failure, with this call's message.
func callHandle(name string, f func() uintptr) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := threadID()
	takeMessage(tid)
	h := f()
	if h == 0 {
		return 0, &Error{Call: name, Message: takeMessage(tid)}
	}
	return h, nil
}

// optional reports a missing optional function as an *UnsupportedError.
func (l *library) optional(present bool, name string) error {
	if present {
		return nil
	}
	for _, s := range l.table() {
		if s.Names[0] == name {
			return &UnsupportedError{Func: name, Since: s.Since, Library: l.dl.Path}
		}
	}
	return &UnsupportedError{Func: name, Library: l.dl.Path}
}
