// Package cenum reads the enumerations of a C header: enough of C to turn the
// vendor headers (hip_runtime_api.h, hsa.h, hsa_ext_amd.h) into Go tables
// without a C compiler, and to let tests check hand-written constants against
// the installed headers.
//
// It understands comments, preprocessor lines (skipped, so both sides of an
// #if are read), tagged and typedef'd enums with attribute macros before the
// tag, implicit values (previous + 1), and constant expressions built from
// integer literals (with u/l suffixes), earlier enumerators, parentheses,
// unary - and ~, and binary + - << >> | & ^. Anything else is an error that
// names the enumerator, never a guess.
package cenum
