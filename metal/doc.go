// Package metal is a thin, cgo-free binding to Apple's Metal framework,
// through github.com/ebitengine/purego and its objc package (darwin only).
//
// It has never run on Apple hardware: everything here builds, vets and
// compiles its tests for darwin/arm64 on Linux, and the platform-neutral
// parts (error codes, the selector table) are tested there; the calls into
// Metal are written from Apple's documentation and wait for someone with a
// Mac to run docs/metal.md.
//
// Contract:
//   - Load opens /System/Library/Frameworks/Metal.framework/Metal once per
//     process (HIPGO_METAL_FRAMEWORK overrides the path) and libobjc, and
//     registers every selector and class the binding uses, so a stripped or
//     missing framework is a typed error at load time (*dynlib.NotFoundError,
//     *dynlib.RejectedError, *dynlib.MissingSymbolError, *MissingClassError), never a crash at the
//     first call. Off darwin Load returns *UnsupportedPlatformError without
//     trying.
//   - Every call that reports failure is checked: a method that fills an
//     NSError** becomes an *Error carrying the call, the error's domain, code
//     and localizedDescription (for newLibraryWithSource a *CompileError with
//     the compiler's log); a method that returns nil without an NSError
//     (newBufferWithLength, newFunctionWithName, newCommandQueue) becomes an
//     *Error wrapping ErrNilResult.
//   - A command buffer's fate (MTLCommandBufferStatus, and for
//     MTLCommandBufferStatusError its NSError in MTLCommandBufferErrorDomain)
//     is a Code; errors.Is matches the Code sentinels (ErrPageFault, ...).
//     Code.Kind sorts the codes into the command buffer's own fault, the
//     device gone, and a transient failure.
//   - Objects the binding returns are retained (+1) and released by their
//     Release method. Every call that can create autoreleased objects runs
//     inside an autorelease pool on a locked OS thread (pools are per thread
//     and goroutines migrate).
//   - Completion handlers (CommandBuffer.OnCompleted) run on Metal's own
//     threads: they must not block. They are Objective-C blocks made by
//     purego/objc, which shares one C callback among every block of a type,
//     so they do not use up purego's callback slots.
//
// Importing it on darwin runs purego/objc's init, which opens
// /usr/lib/libobjc.A.dylib and panics if it cannot: every macOS has it, so
// that is the one failure this binding does not turn into an error.
//
// The package holds no policy: events, fault tracking, device loss and the
// watchdog live in the runtime package above it.
package metal
