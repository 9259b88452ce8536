package dynlib

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/ebitengine/purego"
)

// ErrNotFound is matched (errors.Is) by every *NotFoundError.
var ErrNotFound = errors.New("shared library not found")

// ErrRejected is matched (errors.Is) by every *RejectedError: a file was
// there but dlopen refused it; it does not match ErrNotFound.
var ErrRejected = errors.New("shared library found but could not be opened")

// Attempt is one path tried while opening a library, and why it failed.
type Attempt struct {
	Path string
	Err  string // dlopen's reason (dlerror)
	// Found: a file was there and dlopen refused it (not a shared library,
	// another architecture, unreadable, a dependency missing); false when
	// there was nothing to open.
	Found bool
	// MissingDependency is the library the file needs that the dynamic
	// loader could not find (e.g. libmlx.so for libmlxc.so), when that is
	// why dlopen refused it.
	MissingDependency string
}

// NotFoundError says that no candidate of a library could be opened, and
// none of them was there.
type NotFoundError struct {
	Library string    // the library's short name, e.g. "libamdhip64"
	EnvVar  string    // the variable that overrides the candidates
	Tried   []Attempt // every path tried, in order
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s: library not found (tried %s; set %s to its path)",
		e.Library, triedPaths(e.Tried), e.EnvVar)
}

// Is makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// RejectedError says that no candidate of a library could be opened, and at
// least one was there but dlopen refused it: a broken or foreign install, not
// a missing one. Its message carries dlopen's reason for each refused file.
type RejectedError struct {
	Library string    // the library's short name, e.g. "libcuda"
	EnvVar  string    // the variable that overrides the candidates
	Tried   []Attempt // every path tried, in order; Found marks the refused ones
}

func (e *RejectedError) Error() string {
	var reasons, deps []string
	for _, a := range e.Tried {
		if !a.Found {
			continue
		}
		if a.MissingDependency != "" && !slices.Contains(deps, a.MissingDependency) {
			deps = append(deps, a.MissingDependency)
		}
		r := a.Err
		switch {
		case r == "":
			r = a.Path + ": dlopen gave no reason"
		case !strings.Contains(r, a.Path):
			r = a.Path + ": " + r
		}
		reasons = append(reasons, r)
	}
	if len(deps) > 0 {
		return fmt.Sprintf("%s: library found but could not be opened: %s (tried %s): it needs %s, which the dynamic loader did not find: "+
			"add the directory that holds it to %s before the process starts, or give %s a run path (RPATH) to it",
			e.Library, strings.Join(reasons, "; "), triedPaths(e.Tried), strings.Join(deps, " and "), searchPathVar(), e.Library)
	}
	return fmt.Sprintf("%s: library found but could not be opened: %s (tried %s; set %s to the path of a working copy)",
		e.Library, strings.Join(reasons, "; "), triedPaths(e.Tried), e.EnvVar)
}

// searchPathVar is the variable the platform's dynamic loader searches for
// a library's dependencies.
func searchPathVar() string {
	if runtime.GOOS == "darwin" {
		return "DYLD_LIBRARY_PATH"
	}
	return "LD_LIBRARY_PATH"
}

// missingDependency is the dependency a dlopen of path could not find, read
// from the loader's reason, or "" when the reason is about something else:
// glibc "DEP: cannot open shared object file: No such file or directory"
// (DEP not the file itself), musl "Error loading shared library DEP: No
// such file or directory (needed by PATH)", dyld "dlopen(PATH, 0x0009):
// Library not loaded: DEP".
func missingDependency(path, reason string) string {
	if _, after, ok := strings.Cut(reason, "Library not loaded: "); ok {
		dep, _, _ := strings.Cut(after, "\n")
		return strings.TrimSpace(dep)
	}
	if strings.Contains(reason, "(needed by ") {
		if _, after, ok := strings.Cut(reason, "Error loading shared library "); ok {
			dep, _, _ := strings.Cut(after, ":")
			return dep
		}
	}
	if dep, ok := strings.CutSuffix(reason, ": cannot open shared object file: No such file or directory"); ok &&
		dep != path && dep != filepath.Base(path) && !strings.Contains(dep, ": ") {
		return dep
	}
	return ""
}

// Is makes errors.Is(err, ErrRejected) true.
func (e *RejectedError) Is(target error) bool { return target == ErrRejected }

func triedPaths(tried []Attempt) string {
	paths := make([]string, len(tried))
	for i, a := range tried {
		paths[i] = a.Path
	}
	return strings.Join(paths, ", ")
}

// missing reports whether a dlopen of path that failed with reason found
// nothing to open, as opposed to a file it refused.
func missing(path, reason string) bool {
	if strings.ContainsRune(path, '/') {
		_, err := os.Stat(path)
		return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
	}
	// A bare name is searched for by the loader, and only its message tells
	// whether it found a file: "no such file" about the name itself (glibc
	// "NAME: cannot open shared object file: No such file or directory",
	// musl "Error loading shared library NAME: No such file or directory",
	// dyld "dlopen(NAME, 0x0009): tried: ... (no such file)"). About another
	// name, it is a dependency of a file it found that is missing. For a
	// file it refused, glibc names the file it found ("/dir/NAME: invalid
	// ELF header").
	if reason == "" {
		return true // no reason to tell by: as before reasons were kept
	}
	r, p := strings.ToLower(reason), strings.ToLower(path)
	if !strings.Contains(r, "no such file") || strings.Contains(r, "needed by") || strings.Contains(r, "not loaded") {
		return false
	}
	return strings.HasPrefix(r, p+":") || strings.Contains(r, "library "+p+":") || strings.HasPrefix(r, "dlopen("+p+",")
}

// Library is an opened shared library. It is never closed: the vendor runtimes
// keep threads and callbacks that point into it for the life of the process.
type Library struct {
	Name   string // short name, e.g. "libcuda"
	Path   string // the path or soname that opened
	handle uintptr
}

// Open tries the path in envVar (when set, and only it), then each candidate
// in order, and returns the first library that opens. When none does, the
// error is a *RejectedError if any candidate was there (dlopen refused it),
// else a *NotFoundError.
func Open(name, envVar string, candidates ...string) (*Library, error) {
	tries := candidates
	if p := os.Getenv(envVar); p != "" {
		tries = []string{p}
	}
	var tried []Attempt
	found := false
	for _, path := range tries {
		h, err := dlopen(path)
		if err == nil {
			return &Library{Name: name, Path: path, handle: h}, nil
		}
		a := Attempt{Path: path, Err: err.Error()}
		a.Found = !missing(path, a.Err)
		if a.Found {
			a.MissingDependency = missingDependency(path, a.Err)
		}
		found = found || a.Found
		tried = append(tried, a)
	}
	if found {
		return nil, &RejectedError{Library: name, EnvVar: envVar, Tried: tried}
	}
	return nil, &NotFoundError{Library: name, EnvVar: envVar, Tried: tried}
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
