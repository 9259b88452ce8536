// Package statuscheck proves that the binding packages (hip, hsa, cuda,
// metal, mlx) never discard a status, and that runtime and sampling discard
// one only with a comment saying why: the defect the seed names
// (hipGraphDestroy's result and hipGetLastError's ignored) cannot come back
// unnoticed.
//
// Dir type-checks a package (go/parser, go/types; dependencies from the go
// command's export data, built with CGO_ENABLED=0 for linux/amd64 and, when
// its files differ there, darwin/arm64) and reports every:
//
//   - call used as a statement, deferred, or started with go, whose results
//     include a status: any type implementing error (error, *hip.Error,
//     hip.Code, hsa.Status, ...) or a Code/Status/Result type of a binding
//     package even if it does not;
//   - status assigned to the blank identifier (`_ = f()`, `x, _ := g()`,
//     `_ = err`);
//   - purego.SyscallN call whose first result, the C function's return
//     value, is dropped.
//
// Each finding carries the comment on its line, or on the lines just above
// it (Finding.Why). The bindings may discard nothing; runtime and sampling
// may discard a status only on purpose, with such a comment saying why
// (the package's tests check both).
//
// Writes to strings.Builder and bytes.Buffer (directly or through
// fmt.Fprint*) are exempt: their error is documented to be always nil.
// Test files are not checked. A package that does not type-check is an
// error, never a clean result.
package statuscheck
