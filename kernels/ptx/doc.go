// Package ptx reads the module-level facts of NVPTX assembly (the .ptx files
// the CUDA driver JIT-compiles at cuModuleLoadData) in pure Go: .version,
// .target, .address_size, and for each .entry its parameter list (type,
// size and alignment, including `.param .align N .b8 x[M]` byte arrays, with
// their offsets in the parameter buffer), its .maxntid/.reqntid/
// .minnctapersm/.maxnreg directives, and the static .shared memory it uses,
// found by following the names its body (and the .func bodies it calls)
// refers to. The hipgo runtime uses this to check launches on drivers without
// cuFuncGetParamInfo.
//
// Instruction bodies are not parsed, only scanned for names. Input is
// untrusted: sizes are bounded, parsing never panics, and malformed text is a
// *SyntaxError (errors.Is(err, ErrMalformed)) naming the line.
package ptx
