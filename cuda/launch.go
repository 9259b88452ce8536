package cuda

import (
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/hipgo/hipgo/internal/dynlib"
)

// Dim3 is a grid or block shape.
type Dim3 struct{ X, Y, Z uint32 }

// Markers of the extra argument of LaunchKernel, the CUDA values of
// CU_LAUNCH_PARAM_* ((void*)0x00, 0x01, 0x02 in cuda.h; checked against
// cudarc's bindgen output, CU_LAUNCH_PARAM_*_AS_INT). They are CUDA's own and
// deliberately not shared with HIP's HIP_LAUNCH_PARAM_* values.
const (
	LaunchParamEnd           uintptr = 0x00
	LaunchParamBufferPointer uintptr = 0x01
	LaunchParamBufferSize    uintptr = 0x02
)

// launchAPI: kernel launch, a hot call made through purego.SyscallN.
type launchAPI struct {
	// CUresult cuLaunchKernel(CUfunction f,
	//     unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
	//     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
	//     unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra);
	cuLaunchKernel uintptr
	// Optional (driver 12.0+):
	// CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
	//     void **kernelParams, void **extra);
	cuLaunchKernelEx uintptr
}

const (
	launchKernelExSymbol = "cuLaunchKernelEx"
	launchKernelExSince  = "CUDA 12.0"
)

func (a *launchAPI) bind() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"cuLaunchKernel"}, Addr: &a.cuLaunchKernel},
		{Names: []string{launchKernelExSymbol}, Addr: &a.cuLaunchKernelEx, Since: launchKernelExSince},
	}
}

// LaunchKernel enqueues f on s with the given grid and block shapes and
// dynamic shared memory bytes.
//
// params is the kernel's void** argument array (one pointer per parameter,
// each pointing at the value), or nil; extra is the alternative
// LaunchParamBufferPointer/LaunchParamBufferSize/LaunchParamEnd array, or nil.
// The driver reads both during the call only, but it reads them as C memory:
// the caller guarantees that they, and every value they point to, are pinned
// (runtime.Pinner) or outside the Go heap (MemHostAlloc) until LaunchKernel
// returns.
//
// A launch the driver rejects synchronously (a block larger than the device
// allows, too much shared memory, bad arguments) returns an *Error and leaves
// the context usable; faults during execution surface later, on stream and
// event queries.
func LaunchKernel(f Function, grid, block Dim3, sharedMem uint32, s Stream, params unsafe.Pointer, extra unsafe.Pointer) error {
	d, err := api()
	if err != nil {
		return err
	}
	r, _, _ := purego.SyscallN(d.cuLaunchKernel,
		uintptr(f),
		uintptr(grid.X), uintptr(grid.Y), uintptr(grid.Z),
		uintptr(block.X), uintptr(block.Y), uintptr(block.Z),
		uintptr(sharedMem), uintptr(s),
		uintptr(params), uintptr(extra))
	return check("cuLaunchKernel", result(r))
}

// LaunchAttributeID is a CUlaunchAttributeID.
type LaunchAttributeID uint32

// LaunchAttributeProgrammaticStreamSerialization
// (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, 6 in cuda.h): with
// a non-zero value, the kernel may start before the kernel ahead of it on the
// stream has finished, once that kernel's blocks have all executed
// griddepcontrol.launch_dependents or exited (programmatic dependent launch,
// compute capability 9.0 and later). The kernel must execute
// griddepcontrol.wait before it touches memory the kernel ahead writes or
// reads; the wait returns once that kernel has finished and its writes are
// visible.
const LaunchAttributeProgrammaticStreamSerialization LaunchAttributeID = 6

// LaunchAttribute is CUlaunchAttribute: an id, 4 bytes of padding and a
// 64-byte value union (72 bytes). The value's first 4 bytes are the int of
// the boolean attributes.
type LaunchAttribute struct {
	ID    LaunchAttributeID
	_     [4]byte
	Value [64]byte
}

// LaunchConfig is CUlaunchConfig (56 bytes): the shapes, dynamic shared
// memory, stream and an array of NumAttrs attributes at Attrs.
type LaunchConfig struct {
	Grid, Block Dim3
	SharedMem   uint32
	_           [4]byte
	Stream      Stream
	Attrs       unsafe.Pointer // *LaunchAttribute, the first of NumAttrs
	NumAttrs    uint32
	_           [4]byte
}

// LaunchKernelExSupported reports whether the loaded driver exports
// cuLaunchKernelEx (driver 12.0 and later).
func LaunchKernelExSupported() bool {
	d, err := api()
	return err == nil && d.cuLaunchKernelEx != 0
}

// LaunchKernelEx enqueues f as cfg describes, with its attributes
// (cuLaunchKernelEx). params and extra are LaunchKernel's. The driver reads
// cfg, its attributes, params and extra as C memory during the call: the
// caller keeps all of them pinned or outside the Go heap until it returns.
// Without the entry point it is an *UnavailableError (errors.Is
// ErrNotSupported).
func LaunchKernelEx(cfg *LaunchConfig, f Function, params, extra unsafe.Pointer) error {
	d, err := api()
	if err != nil {
		return err
	}
	if d.cuLaunchKernelEx == 0 {
		return &UnavailableError{Symbol: launchKernelExSymbol, Since: launchKernelExSince, Path: d.lib.Path}
	}
	r, _, _ := purego.SyscallN(d.cuLaunchKernelEx,
		uintptr(unsafe.Pointer(cfg)), uintptr(f), uintptr(params), uintptr(extra))
	return check(launchKernelExSymbol, result(r))
}
