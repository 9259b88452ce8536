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
}

func (a *launchAPI) bind() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"cuLaunchKernel"}, Addr: &a.cuLaunchKernel},
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
