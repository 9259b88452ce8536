//go:build linux

package cuda

import "github.com/hipgo/hipgo/internal/dynlib"

// libraryCandidates are tried in order when EnvLibrary is unset. libcuda.so.1
// is the driver's soname; libcuda.so exists only where a development symlink
// was installed, so it comes second.
var libraryCandidates = []string{"libcuda.so.1", "libcuda.so"}

// openLibrary opens libcuda, honouring EnvLibrary.
func openLibrary() (*dynlib.Library, error) {
	return dynlib.Open(libraryName, EnvLibrary, libraryCandidates...)
}
