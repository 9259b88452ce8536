package dynlib

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/ebitengine/purego"
)

// ErrNotFound is matched (errors.Is) by every *NotFoundError.
var ErrNotFound = errors.New("shared library not found")

// Attempt is one path tried while opening a library, and why it failed.
type Attempt struct {
	Path string
	Err  string
}

// NotFoundError says that no candidate of a library could be opened.
type NotFoundError struct {
	Library string    // the library's short name, e.g. "libamdhip64"
	EnvVar  string    // the variable that overrides the candidates
	Tried   []Attempt // every path tried, in order
}

func (e *NotFoundError) Error() string {
	paths := make([]string, len(e.Tried))
	for i, a := range e.Tried {
		paths[i] = a.Path
	}
	return fmt.Sprintf("%s: library not found (tried %s; set %s to its path)",
		e.Library, strings.Join(paths, ", "), e.EnvVar)
}

// Is makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// Library is an opened shared library. It is never closed: the vendor runtimes
// keep threads and callbacks that point into it for the life of the process.
type Library struct {
	Name   string // short name, e.g. "libcuda"
	Path   string // the path or soname that opened
	handle uintptr
}

// Open tries the path in envVar (when set, and only it), then each candidate
// in order, and returns the first library that opens.
func Open(name, envVar string, candidates ...string) (*Library, error) {
	tries := candidates
	if p := os.Getenv(envVar); p != "" {
		tries = []string{p}
	}
	nf := &NotFoundError{Library: name, EnvVar: envVar}
	for _, path := range tries {
		h, err := dlopen(path)
		if err == nil {
			return &Library{Name: name, Path: path, handle: h}, nil
		}
		nf.Tried = append(nf.Tried, Attempt{Path: path, Err: err.Error()})
	}
	return nil, nf
}

// dlopen is purego.Dlopen on one OS thread: it reads dlerror right after a
// failed dlopen, and dlerror is per thread, so a goroutine moved to another
// thread in between got an empty reason, or another goroutine's.
func dlopen(path string) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
}

// Sym returns the address of a symbol, or an error naming it.
func (l *Library) Sym(name string) (uintptr, error) {
	addr, err := purego.Dlsym(l.handle, name)
	if err != nil || addr == 0 {
		return 0, fmt.Errorf("%s: symbol %s not found", l.Path, name)
	}
	return addr, nil
}

// Has reports whether the library exports a symbol.
func (l *Library) Has(name string) bool {
	_, err := l.Sym(name)
	return err == nil
}

// Once caches the result of opening a library for the life of the process:
// a library that was not found stays not found (the answer would not change
// without a restart, and retrying costs a dlopen per call).
type Once[T any] struct {
	once sync.Once
	val  T
	err  error
}

// Do runs load the first time and returns its result every time.
func (o *Once[T]) Do(load func() (T, error)) (T, error) {
	o.once.Do(func() { o.val, o.err = load() })
	return o.val, o.err
}
