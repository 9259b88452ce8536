package cuda

import (
	"errors"
	"sync/atomic"

	"github.com/hipgo/hipgo/internal/dynlib"
)

// EnvLibrary names the environment variable whose value, when set, is the
// only path Load tries.
const EnvLibrary = "HIPGO_CUDA_LIBRARY"

// libraryName is the short name used in load errors.
const libraryName = "libcuda"

// ErrNotLoaded is returned by every call made before Load succeeded.
var ErrNotLoaded = errors.New("cuda: libcuda is not loaded (call cuda.Load first)")

// driver is one opened libcuda with its bound entry points. Each family of
// calls keeps its own part, next to the wrappers that use it.
type driver struct {
	lib *dynlib.Library
	initAPI
	errorAPI
	deviceAPI
	contextAPI
	memoryAPI
	streamAPI
	eventAPI
	moduleAPI
	launchAPI
	callbackAPI
	graphAPI
}

// table lists every symbol the binding needs, family by family.
func (d *driver) table() []dynlib.Func {
	var t []dynlib.Func
	t = append(t, d.initAPI.bind()...)
	t = append(t, d.errorAPI.bind()...)
	t = append(t, d.deviceAPI.bind()...)
	t = append(t, d.contextAPI.bind()...)
	t = append(t, d.memoryAPI.bind()...)
	t = append(t, d.streamAPI.bind()...)
	t = append(t, d.eventAPI.bind()...)
	t = append(t, d.moduleAPI.bind()...)
	t = append(t, d.launchAPI.bind()...)
	t = append(t, d.callbackAPI.bind()...)
	t = append(t, d.graphAPI.bind()...)
	return t
}

var (
	loadOnce dynlib.Once[*driver]
	// current is set once Load succeeds; an atomic pointer keeps a call racing
	// with Load on another goroutine free of data races.
	current atomic.Pointer[driver]
)

// Load opens libcuda and binds every entry point. It is idempotent: the first
// result, success or failure, is cached for the life of the process.
//
// A missing library is a *dynlib.NotFoundError that lists every path tried,
// one that exists but dlopen refuses a *dynlib.RejectedError with dlopen's
// reason; a library without a required symbol is a *dynlib.MissingSymbolError. Off linux
// it is an *UnsupportedPlatformError and nothing is opened. Load does not call
// cuInit; Init does.
func Load() error {
	d, err := loadOnce.Do(loadDriver)
	if err != nil {
		return err
	}
	current.Store(d)
	return nil
}

// LibraryPath returns the path or soname that Load opened, or "" before a
// successful Load.
func LibraryPath() string {
	if d := current.Load(); d != nil {
		return d.lib.Path
	}
	return ""
}

// loadDriver opens and binds a fresh driver without touching the process-wide
// cache, so tests can load other libraries (or none) side by side.
func loadDriver() (*driver, error) {
	lib, err := openLibrary()
	if err != nil {
		return nil, err
	}
	d := &driver{lib: lib}
	if err := lib.Bind(d.table()); err != nil {
		return nil, err
	}
	return d, nil
}

// api returns the loaded driver, or ErrNotLoaded.
func api() (*driver, error) {
	if d := current.Load(); d != nil {
		return d, nil
	}
	return nil, ErrNotLoaded
}

// check turns a CUresult into nil or an *Error naming the call.
func check(call string, c Code) error {
	if c == Success {
		return nil
	}
	return &Error{Call: call, Code: c}
}

// result reads a CUresult from a raw SyscallN return: the C enum is 32 bits
// wide and the upper half of the register is undefined, so it is truncated.
func result(r1 uintptr) Code { return Code(int32(uint32(r1))) }
