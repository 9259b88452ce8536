package cuda

import (
	"fmt"
	"strings"

	"github.com/hipgo/hipgo/internal/dynlib"
)

// Code is a CUresult. Every non-success value is an error; the constants
// below are the sentinels errors.Is matches.
type Code int32

// CUresult values of cuda.h for CUDA 13.0 (CUDA_VERSION 13000), every
// enumerator of cudaError_enum. Checked against NVIDIA/cuda-python
// cydriver.pxd.in ("generated with version 13.0.0") and the bindgen output of
// cuda.h 13.0 in chelsea0x3b/cudarc; testdata/curesult_cuda13000.txt holds the
// mechanically extracted list the tests compare with. CUDA 13.1 adds
// CUDA_ERROR_STREAM_DETACHED (917), which is not part of 13.0.
const (
	Success                         Code = 0
	ErrInvalidValue                 Code = 1
	ErrOutOfMemory                  Code = 2
	ErrNotInitialized               Code = 3
	ErrDeinitialized                Code = 4
	ErrProfilerDisabled             Code = 5
	ErrProfilerNotInitialized       Code = 6 // deprecated since CUDA 5.0
	ErrProfilerAlreadyStarted       Code = 7 // deprecated since CUDA 5.0
	ErrProfilerAlreadyStopped       Code = 8 // deprecated since CUDA 5.0
	ErrStubLibrary                  Code = 34
	ErrCallRequiresNewerDriver      Code = 36 // new in the 13.0 header
	ErrDeviceUnavailable            Code = 46
	ErrNoDevice                     Code = 100
	ErrInvalidDevice                Code = 101
	ErrDeviceNotLicensed            Code = 102
	ErrInvalidImage                 Code = 200
	ErrInvalidContext               Code = 201
	ErrContextAlreadyCurrent        Code = 202 // deprecated since CUDA 3.2
	ErrMapFailed                    Code = 205
	ErrUnmapFailed                  Code = 206
	ErrArrayIsMapped                Code = 207
	ErrAlreadyMapped                Code = 208
	ErrNoBinaryForGpu               Code = 209
	ErrAlreadyAcquired              Code = 210
	ErrNotMapped                    Code = 211
	ErrNotMappedAsArray             Code = 212
	ErrNotMappedAsPointer           Code = 213
	ErrEccUncorrectable             Code = 214
	ErrUnsupportedLimit             Code = 215
	ErrContextAlreadyInUse          Code = 216
	ErrPeerAccessUnsupported        Code = 217
	ErrInvalidPtx                   Code = 218
	ErrInvalidGraphicsContext       Code = 219
	ErrNvlinkUncorrectable          Code = 220
	ErrJitCompilerNotFound          Code = 221
	ErrUnsupportedPtxVersion        Code = 222
	ErrJitCompilationDisabled       Code = 223
	ErrUnsupportedExecAffinity      Code = 224
	ErrUnsupportedDevsideSync       Code = 225
	ErrContained                    Code = 226
	ErrInvalidSource                Code = 300
	ErrFileNotFound                 Code = 301
	ErrSharedObjectSymbolNotFound   Code = 302
	ErrSharedObjectInitFailed       Code = 303
	ErrOperatingSystem              Code = 304
	ErrInvalidHandle                Code = 400
	ErrIllegalState                 Code = 401
	ErrLossyQuery                   Code = 402
	ErrNotFound                     Code = 500
	ErrNotReady                     Code = 600
	ErrIllegalAddress               Code = 700
	ErrLaunchOutOfResources         Code = 701
	ErrLaunchTimeout                Code = 702
	ErrLaunchIncompatibleTexturing  Code = 703
	ErrPeerAccessAlreadyEnabled     Code = 704
	ErrPeerAccessNotEnabled         Code = 705
	ErrPrimaryContextActive         Code = 708
	ErrContextIsDestroyed           Code = 709
	ErrAssert                       Code = 710
	ErrTooManyPeers                 Code = 711
	ErrHostMemoryAlreadyRegistered  Code = 712
	ErrHostMemoryNotRegistered      Code = 713
	ErrHardwareStackError           Code = 714
	ErrIllegalInstruction           Code = 715
	ErrMisalignedAddress            Code = 716
	ErrInvalidAddressSpace          Code = 717
	ErrInvalidPc                    Code = 718
	ErrLaunchFailed                 Code = 719
	ErrCooperativeLaunchTooLarge    Code = 720
	ErrTensorMemoryLeak             Code = 721
	ErrNotPermitted                 Code = 800
	ErrNotSupported                 Code = 801
	ErrSystemNotReady               Code = 802
	ErrSystemDriverMismatch         Code = 803
	ErrCompatNotSupportedOnDevice   Code = 804
	ErrMpsConnectionFailed          Code = 805
	ErrMpsRpcFailure                Code = 806
	ErrMpsServerNotReady            Code = 807
	ErrMpsMaxClientsReached         Code = 808
	ErrMpsMaxConnectionsReached     Code = 809
	ErrMpsClientTerminated          Code = 810
	ErrCdpNotSupported              Code = 811
	ErrCdpVersionMismatch           Code = 812
	ErrStreamCaptureUnsupported     Code = 900
	ErrStreamCaptureInvalidated     Code = 901
	ErrStreamCaptureMerge           Code = 902
	ErrStreamCaptureUnmatched       Code = 903
	ErrStreamCaptureUnjoined        Code = 904
	ErrStreamCaptureIsolation       Code = 905
	ErrStreamCaptureImplicit        Code = 906
	ErrCapturedEvent                Code = 907
	ErrStreamCaptureWrongThread     Code = 908
	ErrTimeout                      Code = 909
	ErrGraphExecUpdateFailure       Code = 910
	ErrExternalDevice               Code = 911
	ErrInvalidClusterSize           Code = 912
	ErrFunctionNotLoaded            Code = 913
	ErrInvalidResourceType          Code = 914
	ErrInvalidResourceConfiguration Code = 915
	ErrKeyRotation                  Code = 916
	ErrUnknown                      Code = 999
)

// codeTable maps each Code to the enumerator name cuda.h gives it, in header
// order. Written once from the CUDA 13.0 header; TestCodeTableMatchesHeader
// compares it with testdata and TestGPUErrorNamesMatchDriver with the driver's
// own cuGetErrorName.
var codeTable = []struct {
	code Code
	name string
}{
	{Success, "CUDA_SUCCESS"},
	{ErrInvalidValue, "CUDA_ERROR_INVALID_VALUE"},
	{ErrOutOfMemory, "CUDA_ERROR_OUT_OF_MEMORY"},
	{ErrNotInitialized, "CUDA_ERROR_NOT_INITIALIZED"},
	{ErrDeinitialized, "CUDA_ERROR_DEINITIALIZED"},
	{ErrProfilerDisabled, "CUDA_ERROR_PROFILER_DISABLED"},
	{ErrProfilerNotInitialized, "CUDA_ERROR_PROFILER_NOT_INITIALIZED"},
	{ErrProfilerAlreadyStarted, "CUDA_ERROR_PROFILER_ALREADY_STARTED"},
	{ErrProfilerAlreadyStopped, "CUDA_ERROR_PROFILER_ALREADY_STOPPED"},
	{ErrStubLibrary, "CUDA_ERROR_STUB_LIBRARY"},
	{ErrCallRequiresNewerDriver, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER"},
	{ErrDeviceUnavailable, "CUDA_ERROR_DEVICE_UNAVAILABLE"},
	{ErrNoDevice, "CUDA_ERROR_NO_DEVICE"},
	{ErrInvalidDevice, "CUDA_ERROR_INVALID_DEVICE"},
	{ErrDeviceNotLicensed, "CUDA_ERROR_DEVICE_NOT_LICENSED"},
	{ErrInvalidImage, "CUDA_ERROR_INVALID_IMAGE"},
	{ErrInvalidContext, "CUDA_ERROR_INVALID_CONTEXT"},
	{ErrContextAlreadyCurrent, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT"},
	{ErrMapFailed, "CUDA_ERROR_MAP_FAILED"},
	{ErrUnmapFailed, "CUDA_ERROR_UNMAP_FAILED"},
	{ErrArrayIsMapped, "CUDA_ERROR_ARRAY_IS_MAPPED"},
	{ErrAlreadyMapped, "CUDA_ERROR_ALREADY_MAPPED"},
	{ErrNoBinaryForGpu, "CUDA_ERROR_NO_BINARY_FOR_GPU"},
	{ErrAlreadyAcquired, "CUDA_ERROR_ALREADY_ACQUIRED"},
	{ErrNotMapped, "CUDA_ERROR_NOT_MAPPED"},
	{ErrNotMappedAsArray, "CUDA_ERROR_NOT_MAPPED_AS_ARRAY"},
	{ErrNotMappedAsPointer, "CUDA_ERROR_NOT_MAPPED_AS_POINTER"},
	{ErrEccUncorrectable, "CUDA_ERROR_ECC_UNCORRECTABLE"},
	{ErrUnsupportedLimit, "CUDA_ERROR_UNSUPPORTED_LIMIT"},
	{ErrContextAlreadyInUse, "CUDA_ERROR_CONTEXT_ALREADY_IN_USE"},
	{ErrPeerAccessUnsupported, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"},
	{ErrInvalidPtx, "CUDA_ERROR_INVALID_PTX"},
	{ErrInvalidGraphicsContext, "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT"},
	{ErrNvlinkUncorrectable, "CUDA_ERROR_NVLINK_UNCORRECTABLE"},
	{ErrJitCompilerNotFound, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND"},
	{ErrUnsupportedPtxVersion, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"},
	{ErrJitCompilationDisabled, "CUDA_ERROR_JIT_COMPILATION_DISABLED"},
	{ErrUnsupportedExecAffinity, "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY"},
	{ErrUnsupportedDevsideSync, "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC"},
	{ErrContained, "CUDA_ERROR_CONTAINED"},
	{ErrInvalidSource, "CUDA_ERROR_INVALID_SOURCE"},
	{ErrFileNotFound, "CUDA_ERROR_FILE_NOT_FOUND"},
	{ErrSharedObjectSymbolNotFound, "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND"},
	{ErrSharedObjectInitFailed, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED"},
	{ErrOperatingSystem, "CUDA_ERROR_OPERATING_SYSTEM"},
	{ErrInvalidHandle, "CUDA_ERROR_INVALID_HANDLE"},
	{ErrIllegalState, "CUDA_ERROR_ILLEGAL_STATE"},
	{ErrLossyQuery, "CUDA_ERROR_LOSSY_QUERY"},
	{ErrNotFound, "CUDA_ERROR_NOT_FOUND"},
	{ErrNotReady, "CUDA_ERROR_NOT_READY"},
	{ErrIllegalAddress, "CUDA_ERROR_ILLEGAL_ADDRESS"},
	{ErrLaunchOutOfResources, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"},
	{ErrLaunchTimeout, "CUDA_ERROR_LAUNCH_TIMEOUT"},
	{ErrLaunchIncompatibleTexturing, "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING"},
	{ErrPeerAccessAlreadyEnabled, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED"},
	{ErrPeerAccessNotEnabled, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED"},
	{ErrPrimaryContextActive, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE"},
	{ErrContextIsDestroyed, "CUDA_ERROR_CONTEXT_IS_DESTROYED"},
	{ErrAssert, "CUDA_ERROR_ASSERT"},
	{ErrTooManyPeers, "CUDA_ERROR_TOO_MANY_PEERS"},
	{ErrHostMemoryAlreadyRegistered, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"},
	{ErrHostMemoryNotRegistered, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"},
	{ErrHardwareStackError, "CUDA_ERROR_HARDWARE_STACK_ERROR"},
	{ErrIllegalInstruction, "CUDA_ERROR_ILLEGAL_INSTRUCTION"},
	{ErrMisalignedAddress, "CUDA_ERROR_MISALIGNED_ADDRESS"},
	{ErrInvalidAddressSpace, "CUDA_ERROR_INVALID_ADDRESS_SPACE"},
	{ErrInvalidPc, "CUDA_ERROR_INVALID_PC"},
	{ErrLaunchFailed, "CUDA_ERROR_LAUNCH_FAILED"},
	{ErrCooperativeLaunchTooLarge, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"},
	{ErrTensorMemoryLeak, "CUDA_ERROR_TENSOR_MEMORY_LEAK"},
	{ErrNotPermitted, "CUDA_ERROR_NOT_PERMITTED"},
	{ErrNotSupported, "CUDA_ERROR_NOT_SUPPORTED"},
	{ErrSystemNotReady, "CUDA_ERROR_SYSTEM_NOT_READY"},
	{ErrSystemDriverMismatch, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
	{ErrCompatNotSupportedOnDevice, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"},
	{ErrMpsConnectionFailed, "CUDA_ERROR_MPS_CONNECTION_FAILED"},
	{ErrMpsRpcFailure, "CUDA_ERROR_MPS_RPC_FAILURE"},
	{ErrMpsServerNotReady, "CUDA_ERROR_MPS_SERVER_NOT_READY"},
	{ErrMpsMaxClientsReached, "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED"},
	{ErrMpsMaxConnectionsReached, "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED"},
	{ErrMpsClientTerminated, "CUDA_ERROR_MPS_CLIENT_TERMINATED"},
	{ErrCdpNotSupported, "CUDA_ERROR_CDP_NOT_SUPPORTED"},
	{ErrCdpVersionMismatch, "CUDA_ERROR_CDP_VERSION_MISMATCH"},
	{ErrStreamCaptureUnsupported, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"},
	{ErrStreamCaptureInvalidated, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"},
	{ErrStreamCaptureMerge, "CUDA_ERROR_STREAM_CAPTURE_MERGE"},
	{ErrStreamCaptureUnmatched, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED"},
	{ErrStreamCaptureUnjoined, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED"},
	{ErrStreamCaptureIsolation, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION"},
	{ErrStreamCaptureImplicit, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"},
	{ErrCapturedEvent, "CUDA_ERROR_CAPTURED_EVENT"},
	{ErrStreamCaptureWrongThread, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD"},
	{ErrTimeout, "CUDA_ERROR_TIMEOUT"},
	{ErrGraphExecUpdateFailure, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE"},
	{ErrExternalDevice, "CUDA_ERROR_EXTERNAL_DEVICE"},
	{ErrInvalidClusterSize, "CUDA_ERROR_INVALID_CLUSTER_SIZE"},
	{ErrFunctionNotLoaded, "CUDA_ERROR_FUNCTION_NOT_LOADED"},
	{ErrInvalidResourceType, "CUDA_ERROR_INVALID_RESOURCE_TYPE"},
	{ErrInvalidResourceConfiguration, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION"},
	{ErrKeyRotation, "CUDA_ERROR_KEY_ROTATION"},
	{ErrUnknown, "CUDA_ERROR_UNKNOWN"},
}

var codeNames = func() map[Code]string {
	m := make(map[Code]string, len(codeTable))
	for _, e := range codeTable {
		m[e.code] = e.name
	}
	return m
}()

// Name returns the cuda.h enumerator name, e.g. "CUDA_ERROR_INVALID_VALUE",
// or "CUresult(N)" for a value the CUDA 13.0 header does not list.
func (c Code) Name() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("CUresult(%d)", int32(c))
}

// Known reports whether c is listed in the CUDA 13.0 header.
func (c Code) Known() bool {
	_, ok := codeNames[c]
	return ok
}

// Error formats c as "CUDA_ERROR_INVALID_VALUE (1)"; a value the header does
// not list reads "CUresult(N)".
func (c Code) Error() string {
	if !c.Known() {
		return c.Name()
	}
	return fmt.Sprintf("%s (%d)", c.Name(), int32(c))
}

// Sticky reports whether c leaves the process's CUDA state unusable, so that
// every later call returns the same error and only a process restart
// recovers. The set is what cuda.h documents: "This leaves the process in an
// inconsistent state and any further CUDA work will return the same error.
// To continue using CUDA, the process must be terminated and relaunched" for
// 226 CONTAINED, 700 ILLEGAL_ADDRESS, 702 LAUNCH_TIMEOUT, 714 through 719,
// 721 TENSOR_MEMORY_LEAK and 911 EXTERNAL_DEVICE; "the process must be
// terminated and relaunched" for 810 MPS_CLIENT_TERMINATED; and "the context
// cannot be used anymore, and must be destroyed" for 710 ASSERT (on the
// primary context that is the process's context; anchors.md §3 measured that
// a re-retained primary context stays failed).
func (c Code) Sticky() bool {
	switch c {
	case ErrContained, ErrIllegalAddress, ErrLaunchTimeout, ErrAssert,
		ErrHardwareStackError, ErrIllegalInstruction, ErrMisalignedAddress,
		ErrInvalidAddressSpace, ErrInvalidPc, ErrLaunchFailed,
		ErrTensorMemoryLeak, ErrMpsClientTerminated, ErrExternalDevice:
		return true
	}
	return false
}

// Error is a failed driver call: which C function, and what it returned.
type Error struct {
	Call string // the C function, e.g. "cuLaunchKernel"
	Code Code
	Log  string // the JIT error log of a failed module load, else empty
}

// Error formats e as "cuLaunchKernel: CUDA_ERROR_INVALID_VALUE (1)", followed
// by the JIT log when there is one.
func (e *Error) Error() string {
	s := e.Call + ": " + e.Code.Error()
	if log := strings.TrimRight(e.Log, "\x00\n "); log != "" {
		s += ": JIT log:\n" + log
	}
	return s
}

// Unwrap returns the Code, so errors.Is(err, cuda.ErrIllegalAddress) works.
func (e *Error) Unwrap() error { return e.Code }

// Sticky reports whether the failure leaves the process's CUDA state
// unusable (see Code.Sticky).
func (e *Error) Sticky() bool { return e.Code.Sticky() }

// UnavailableError says that the loaded libcuda lacks an optional entry point.
// It matches ErrNotSupported under errors.Is.
type UnavailableError struct {
	Symbol string // e.g. "cuFuncGetParamInfo"
	Since  string // the first driver that exports it, e.g. "CUDA 12.4"
	Path   string // the library that lacks it
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("cuda: %s is not exported by %s (needs a %s driver or newer)", e.Symbol, e.Path, e.Since)
}

// Is makes errors.Is(err, ErrNotSupported) true.
func (e *UnavailableError) Is(target error) bool { return target == error(ErrNotSupported) }

// UnsupportedPlatformError is what Load returns where CUDA cannot exist (every
// OS but linux). It matches dynlib.ErrNotFound under errors.Is, like a library
// that was looked for and not found.
type UnsupportedPlatformError struct {
	GOOS, GOARCH string
}

func (e *UnsupportedPlatformError) Error() string {
	return fmt.Sprintf("%s: no CUDA driver exists for %s/%s (nothing was tried; %s is ignored)",
		libraryName, e.GOOS, e.GOARCH, EnvLibrary)
}

// Is makes errors.Is(err, dynlib.ErrNotFound) true.
func (e *UnsupportedPlatformError) Is(target error) bool { return target == dynlib.ErrNotFound }

// errorAPI: error-name queries. Neither needs cuInit or a context.
type errorAPI struct {
	// CUresult cuGetErrorName(CUresult error, const char **pStr);
	cuGetErrorName func(c Code, s **byte) Code
	// CUresult cuGetErrorString(CUresult error, const char **pStr);
	cuGetErrorString func(c Code, s **byte) Code
}

func (a *errorAPI) bind() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"cuGetErrorName"}, Fn: &a.cuGetErrorName},
		{Names: []string{"cuGetErrorString"}, Fn: &a.cuGetErrorString},
	}
}

// ErrorName returns the driver's own name for c (cuGetErrorName). A code the
// driver does not know is an *Error with ErrInvalidValue.
func ErrorName(c Code) (string, error) {
	d, err := api()
	if err != nil {
		return "", err
	}
	var s *byte
	if err := check("cuGetErrorName", d.cuGetErrorName(c, &s)); err != nil {
		return "", err
	}
	return goString(s), nil
}

// ErrorString returns the driver's description of c (cuGetErrorString).
func ErrorString(c Code) (string, error) {
	d, err := api()
	if err != nil {
		return "", err
	}
	var s *byte
	if err := check("cuGetErrorString", d.cuGetErrorString(c, &s)); err != nil {
		return "", err
	}
	return goString(s), nil
}
