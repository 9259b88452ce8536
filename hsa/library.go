package hsa

import (
	"slices"

	"github.com/hipgo/hipgo/internal/dynlib"
)

// EnvLibrary names the variable that overrides where libhsa-runtime64 is
// looked for: when set, only that path is tried.
const EnvLibrary = "HIPGO_HSA_LIBRARY"

// libraryCandidates: the soname has been .so.1 in every ROCm release.
var libraryCandidates = []string{"libhsa-runtime64.so.1", "libhsa-runtime64.so"}

type api struct {
	lib  *dynlib.Library
	path string
	errorsAPI
	initAPI
	agentAPI
	eventAPI
}

func openAPI() (*api, error) {
	lib, err := dynlib.Open("libhsa-runtime64", EnvLibrary, libraryCandidates...)
	if err != nil {
		return nil, err
	}
	a := &api{lib: lib}
	if err := lib.Bind(a.table()); err != nil {
		return nil, err
	}
	a.path = lib.ResolvedPath("hsa_init")
	return a, nil
}

// table lists every function this package binds.
func (a *api) table() []dynlib.Func {
	return slices.Concat(a.errorsAPI.funcs(), a.initAPI.funcs(), a.agentAPI.funcs(), a.eventAPI.funcs())
}

var loaded dynlib.Once[*api]

func get() (*api, error) { return loaded.Do(openAPI) }

// Load opens libhsa-runtime64 and binds every function this package uses.
// It is idempotent and keeps its first result for the life of the process;
// failures are a *dynlib.NotFoundError (every path tried), a
// *dynlib.RejectedError (a file dlopen refused, with its reason) or a
// *dynlib.MissingSymbolError.
//
// libamdhip64 links libhsa-runtime64.so.1 by the same soname, and dlopen
// returns the already-loaded instance for it (both are opened RTLD_GLOBAL),
// so HIP and this package share one HSA runtime: one agent list, one
// hsa_init reference count, one list of system-event handlers.
func Load() error {
	_, err := get()
	return err
}

// LibraryPath returns the file libhsa-runtime64 was loaded from, or "" when
// Load failed.
func LibraryPath() string {
	a, err := get()
	if err != nil {
		return ""
	}
	return a.path
}
