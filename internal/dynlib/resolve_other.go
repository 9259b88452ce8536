//go:build !linux

package dynlib

// ResolvedPath returns the name dlopen was given: outside Linux there is no
// /proc/self/maps to read.
func (lib *Library) ResolvedPath(string) string { return lib.Path }
