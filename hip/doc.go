// Package hip is a thin, complete, cgo-free binding (purego) of the HIP
// runtime (libamdhip64) as hipgo uses it: loading, devices, memory, streams,
// events, modules, kernel launch and host callbacks. It holds no policy; the
// runtime package above it decides what a failure means.
//
// Every HIP call's status is checked and returned: nil, or an *Error naming
// the call ("hipModuleLaunchKernel: hipErrorInvalidValue (1)") whose Code
// matches the exported sentinels with errors.Is (errors.Is(err,
// hip.ErrIllegalAddress)). The code table is generated from the ROCm 5.2
// header (zcodes.go, go generate) and checked against the library's own
// hipGetErrorName; codes later releases add are in codes_newer.go with the
// release that adds them. Code.Sticky says which codes mean a lost device.
//
// Functions that later releases add (hipLaunchHostFunc in 5.3,
// hipGetDevicePropertiesR0600 in 6.0, hipKernelGetParamInfo in 7.x) are
// bound when present and otherwise return an *UnsupportedError
// (errors.Is(err, errors.ErrUnsupported)). The library is found by Load:
// $HIPGO_HIP_LIBRARY, else libamdhip64.so.7, .so.6, .so.5, .so.
//
// HIP's current device is per OS thread: device-bound calls are made inside
// OnDevice, which locks the goroutine to its thread. Calls the fault monitor
// and the launch path make often (hipModuleLaunchKernel, hipEventRecord,
// hipEventQuery, hipStreamQuery) go through purego.SyscallN on the raw
// address, without reflection; see BenchmarkCallPaths for the difference.
//
// Memory handed to the runtime beyond the duration of a call (async copies,
// kernel arguments) must be pinned host memory from HostMalloc, or Go memory
// pinned with runtime.Pinner; callbacks get integer handles, never Go
// pointers, and run on the runtime's own thread.
package hip
