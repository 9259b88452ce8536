//go:build !linux

package hip

import "github.com/hipgo/hipgo/internal/dynlib"

// resolvedPath returns the name dlopen was given: there is no HIP runtime
// outside Linux, so there is nothing to resolve.
func resolvedPath(lib *dynlib.Library, _ string) string { return lib.Path }
