// Package dynlib opens vendor shared libraries at run time with purego and binds
// their symbols, so that no package in hipgo needs cgo.
//
// It knows nothing about any vendor: the bindings (hip, hsa, cuda) give it the
// candidate file names, the environment variable that overrides them, and a table
// of the symbols they need. A library that is nowhere is a *NotFoundError
// naming every path tried; one that is there but that dlopen refuses is a
// *RejectedError that keeps dlopen's reason (and, when the reason is a
// dependency the loader could not find, names it and the loader's search
// path variable); a required symbol that is missing
// is a *MissingSymbolError at load time, never a panic at the first call.
// Symbols that only newer library versions export are declared optional, with
// the version that adds them, and read as absent.
package dynlib
