// Package cuda is a thin, cgo-free binding to the NVIDIA CUDA driver API
// (libcuda), loaded at run time with purego.
//
// Contract:
//   - Load opens libcuda once per process (HIPGO_CUDA_LIBRARY overrides the
//     candidates libcuda.so.1 and libcuda.so) and binds every entry point, so a
//     library that is missing or too old is a typed error at load time
//     (*dynlib.NotFoundError, *dynlib.RejectedError,
//     *dynlib.MissingSymbolError), never a panic at the
//     first call. Off linux there is no CUDA: Load returns
//     *UnsupportedPlatformError without trying.
//   - Every CUresult is checked. A failure is an *Error naming the C call and
//     the Code; errors.Is matches the Code sentinels (ErrIllegalAddress, ...).
//     Code.Sticky reports the codes after which the process must restart.
//   - CUDA contexts are current per OS thread and goroutines migrate. Every
//     call that needs a context (memory, streams, events, modules, launches)
//     must run between Context.Lock and Context.Unlock on one goroutine.
//   - Memory handed to the driver past the call (kernel argument arrays during
//     LaunchKernel, host buffers of async copies until the stream reaches them)
//     must be pinned (runtime.Pinner) or allocated outside the Go heap.
//   - Host callbacks (LaunchHostFunc, StreamAddCallback) run on driver threads:
//     they must not block or call CUDA.
//
// The package holds no policy: fault tracking, waiting and device-lost state
// live in the runtime package above it.
//
// Enum values, symbol names and signatures were checked against the CUDA 13.0
// headers as published in public generated bindings (NVIDIA/cuda-python
// cydriver.pxd.in "generated with version 13.0.0"; bindgen output of cuda.h
// 13.0 in chelsea0x3b/cudarc) and a vendored cuda.h 12.4 (triton-lang/triton,
// third_party/nvidia/backend/include/cuda.h) for the _v2 #define list and the
// documentation of each CUresult.
package cuda
