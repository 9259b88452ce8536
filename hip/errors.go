package hip

import (
	"errors"
	"fmt"

	"github.com/hipgo/hipgo/internal/dynlib"
)

// Code is a hipError_t. It is an error in its own right, so the sentinels
// (ErrIllegalAddress, ...) work with errors.Is against any *Error.
type Code int32

// codeName pairs a code with the name hipGetErrorName gives it.
type codeName struct {
	code Code
	name string
}

var codeNames = func() map[Code]string {
	m := make(map[Code]string, len(headerCodes)+len(newerCodes))
	for _, c := range headerCodes {
		m[c.code] = c.name
	}
	for _, c := range newerCodes {
		if _, ok := m[c.Code]; !ok {
			m[c.Code] = c.Name
		}
	}
	return m
}()

// Name returns the C name of the code ("hipErrorInvalidValue"), or
// "hipError(1234)" for a code no header we know defines.
func (c Code) Name() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("hipError(%d)", int32(c))
}

// Error returns "hipErrorInvalidValue (1)".
func (c Code) Error() string { return fmt.Sprintf("%s (%d)", c.Name(), int32(c)) }

// Sticky reports whether the code means the device's context is dead: once a
// call returns it, every later call on that device returns an error too and
// no in-process recovery exists (hipDeviceReset included), so the layer above
// must mark the device lost. The list and why:
//
//   - 700 hipErrorIllegalAddress: a page fault in a kernel.
//   - 719 hipErrorLaunchFailure: a hardware exception or a queue error
//     (illegal instruction, trap) while a kernel ran.
//   - 702 hipErrorLaunchTimeOut: the kernel was killed after a hang, which on
//     AMD means a queue or GPU reset.
//   - 710 hipErrorAssert: a device-side assert traps the queue (CUDA
//     documents the same class as fatal).
//   - 214 hipErrorECCNotCorrectable: an uncorrectable memory error, the
//     hardware-exception class HSA reports as HW_EXCEPTION/ECC.
//
// Where 700 and 719 come from, in current CLR (ROCm/rocm-systems,
// projects/clr): Device::BackendErrorCallBackHandler
// (rocclr/device/rocm/rocdevice.cpp), CLR's own HSA system-event handler,
// records a memory fault as CL_INVALID_MEM_OBJECT and a hardware exception
// as CL_INVALID_OPERATION when HIP_SKIP_ABORT_ON_GPU_ERROR is on (its
// default); from then on HIP_INIT_API and HIP_RETURN (hipamd/src/
// hip_internal.hpp) return ConvertCLErrorIntoHIPError of it, 700 or 719,
// from every entry point: launches, hipEventQuery, hipMemGetInfo and
// hipGetLastError alike. CLR up to ROCm 6.2 (ROCm/clr, tag rocm-6.2.0 and
// its HEAD of 2024-10) has neither: a fault there makes no call fail, and
// queue errors abort the process (see docs/gpu-faults.md).
//
// 719 is also what ihipLaunchKernel_validate (hipamd/src/hip_module.cpp)
// returns, synchronously and with the device fine, for a block larger than
// the kernel's launch bounds. The code cannot tell the two apart, so a 719
// from hipModuleLaunchKernel is sticky here too and the caller probes the
// device (hipMemGetInfo, which also returns the recorded error when the
// device is dead) before it declares it lost; the runtime does that.
//
// Everything else (out of memory, invalid values, not ready, ...) leaves the
// device usable.
func (c Code) Sticky() bool {
	switch c {
	case ErrIllegalAddress, ErrLaunchTimeOut, ErrAssert, ErrLaunchFailure, ErrECCNotCorrectable:
		return true
	}
	return false
}

// Error is a failed HIP call: which function, and the code it returned.
type Error struct {
	Call string
	Code Code
}

// Error returns "hipModuleLaunchKernel: hipErrorInvalidValue (1)".
func (e *Error) Error() string { return e.Call + ": " + e.Code.Error() }

// Unwrap returns the Code, so errors.Is(err, hip.ErrIllegalAddress) works.
func (e *Error) Unwrap() error { return e.Code }

// Sticky is Code.Sticky: whichever call returned the code (see Code.Sticky
// for why a 719 from hipModuleLaunchKernel counts, and how to tell a
// launch-bounds rejection from it).
func (e *Error) Sticky() bool { return e.Code.Sticky() }

// check turns a returned code into nil or an *Error naming the call.
func check(call string, c Code) error {
	if c == Success {
		return nil
	}
	return &Error{Call: call, Code: c}
}

// UnsupportedError says the loaded library lacks an optional function; it
// matches errors.Is(err, errors.ErrUnsupported).
type UnsupportedError struct {
	Func    string // the C function, e.g. "hipKernelGetParamInfo"
	Since   string // the ROCm version that adds it
	Library string // the library that lacks it
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%s is not supported by this ROCm (%s does not export it; it needs %s)", e.Func, e.Library, e.Since)
}

// Is makes errors.Is(err, errors.ErrUnsupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == errors.ErrUnsupported }

type errorsAPI struct {
	// const char* hipGetErrorName(hipError_t hip_error);
	hipGetErrorName func(c Code) string
	// hipError_t hipGetLastError(void);
	hipGetLastError func() Code
	// hipError_t hipPeekAtLastError(void);
	hipPeekAtLastError func() Code
}

func (a *errorsAPI) funcs() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"hipGetErrorName"}, Fn: &a.hipGetErrorName},
		{Names: []string{"hipGetLastError"}, Fn: &a.hipGetLastError},
		{Names: []string{"hipPeekAtLastError"}, Fn: &a.hipPeekAtLastError},
	}
}

// LibraryErrorName asks the loaded library for a code's name
// (hipGetErrorName). Name is the table this package ships; this is the
// library's own answer, for diagnostics and for checking that table.
func LibraryErrorName(c Code) (string, error) {
	a, err := get()
	if err != nil {
		return "", err
	}
	return a.hipGetErrorName(c), nil
}

// GetLastError returns and clears the calling OS thread's last error
// (hipGetLastError). The state is per OS thread and goroutines migrate, so
// it means something only between OnDevice and its release; every binding
// here returns its own status, which is the reliable signal. From ROCm 7.0
// it returns the last real error (not hipSuccess or hipErrorNotReady), as
// CUDA does; after a fault, current CLR returns the recorded error (700 or
// 719, see Code.Sticky) from it as from every call, while CLR up to 6.2 has
// no fault to report. When the library cannot be loaded it returns
// ErrNotInitialized (Load says why).
func GetLastError() Code {
	a, err := get()
	if err != nil {
		return ErrNotInitialized
	}
	return a.hipGetLastError()
}

// PeekAtLastError is GetLastError without clearing it (hipPeekAtLastError).
func PeekAtLastError() Code {
	a, err := get()
	if err != nil {
		return ErrNotInitialized
	}
	return a.hipPeekAtLastError()
}
