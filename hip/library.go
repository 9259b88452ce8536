package hip

import (
	"slices"

	"github.com/hipgo/hipgo/internal/dynlib"
)

// EnvLibrary names the variable that overrides where libamdhip64 is looked
// for: when set, only that path is tried.
const EnvLibrary = "HIPGO_HIP_LIBRARY"

// libraryCandidates are tried in order: the newest ROCm first. Debian's
// runtime package ships only the versioned soname; the bare name comes with
// the -dev package or a ROCm install's symlinks.
var libraryCandidates = []string{
	"libamdhip64.so.7",
	"libamdhip64.so.6",
	"libamdhip64.so.5",
	"libamdhip64.so",
}

// api is the bound library: one embedded struct per family of calls, each
// declared with its C signatures in the file of that family.
type api struct {
	lib  *dynlib.Library
	path string // the file the library was loaded from
	errorsAPI
	initAPI
	deviceAPI
	identityAPI
	archAPI
	memoryAPI
	streamAPI
	eventAPI
	moduleAPI
	launchAPI
	callbackAPI
	graphAPI
}

// openAPI opens and binds the library. It reads EnvLibrary (through
// dynlib.Open) on every call; Load caches its first result.
func openAPI() (*api, error) {
	lib, err := dynlib.Open("libamdhip64", EnvLibrary, libraryCandidates...)
	if err != nil {
		return nil, err
	}
	a := &api{lib: lib}
	if err := lib.Bind(a.table()); err != nil {
		return nil, err
	}
	a.path = lib.ResolvedPath("hipInit")
	return a, nil
}

// table lists every function this package binds, each family's in turn.
func (a *api) table() []dynlib.Func {
	return slices.Concat(
		a.errorsAPI.funcs(), a.initAPI.funcs(), a.deviceAPI.funcs(), a.identityAPI.funcs(), a.archAPI.funcs(),
		a.memoryAPI.funcs(), a.streamAPI.funcs(), a.eventAPI.funcs(), a.moduleAPI.funcs(),
		a.launchAPI.funcs(), a.callbackAPI.funcs(), a.graphAPI.funcs(),
	)
}

var loaded dynlib.Once[*api]

func get() (*api, error) { return loaded.Do(openAPI) }

// Load opens libamdhip64 and binds every function this package uses. It is
// idempotent and cheap after the first call, whose result (success or
// failure) it keeps for the life of the process. It returns a
// *dynlib.NotFoundError listing every path tried when no candidate opens
// (errors.Is(err, dynlib.ErrNotFound)), a *dynlib.RejectedError with
// dlopen's reason when a candidate exists but does not open, or a
// *dynlib.MissingSymbolError when
// the library lacks a required function. Every other function calls it, so
// calling it first is only needed to tell "no library" from other failures.
func Load() error {
	_, err := get()
	return err
}

// LibraryPath returns the file libamdhip64 was loaded from (resolved through
// the process's mappings on Linux, so a soname becomes a full path), or ""
// when Load failed.
func LibraryPath() string {
	a, err := get()
	if err != nil {
		return ""
	}
	return a.path
}
