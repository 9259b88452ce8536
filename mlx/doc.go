// Package mlx binds the MLX C API (ml-explore/mlx-c's libmlxc) with purego:
// no cgo, and no error that ends the process.
//
// mlx-c reports every failure through one process-wide error handler whose
// default prints the message and calls exit(-1). Load therefore installs
// hipgo's handler with mlx_set_error_handler before it makes any other call,
// and every wrapper locks its goroutine to the OS thread for the call,
// clears that thread's message slot, calls, and turns a non-zero status (or
// a null handle) into an *Error carrying MLX's message: the handler runs on
// the thread whose call failed, so concurrent calls on other threads never
// see each other's messages. An error MLX raises on the calling thread only
// when a lazily built graph is evaluated (a compiled kernel that cannot be
// built) reaches the caller of Eval, AsyncEval, Data or String the same way.
// Errors MLX 0.31.2 raises in the kernels it runs on its stream threads end
// the process; docs/mlx.md lists them, and what the binding checks ahead so
// that they become Go errors instead (every array's size against MLX's
// memory limit, TooLargeError).
//
// Evaluation and tracing are serialised by one lock: MLX 0.31.2 is not safe
// for two threads doing either at once. Closures (NewClosure) let MLX call a
// Go Function; Compile traces one and fuses its elementwise ops.
//
// Handles (Array, Stream, Device) are freed explicitly with Free; a
// finalizer only counts the ones a program forgot (Leaked), it never frees
// them behind the caller's back.
//
// Versions: the symbol table (symbols.go) records each C prototype next to
// its binding, checked against the headers of mlx-c v0.4.1, v0.5.0, v0.6.0
// and fba4470 (testdata/mlxc-*.txt). A function some supported release lacks
// is optional and names the release that adds it; calling it on an older
// library returns an *UnsupportedError. HIPGO_MLX_LIBRARY overrides the
// library's path; otherwise libmlxc.so (Linux) or libmlxc.dylib (macOS, also
// under Homebrew's /opt/homebrew/lib and /usr/local/lib) is opened.
package mlx
