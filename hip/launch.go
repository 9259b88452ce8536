package hip

import (
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/hipgo/hipgo/internal/dynlib"
)

// Dim3 is a grid (in blocks) or block (in threads) size.
type Dim3 struct{ X, Y, Z uint32 }

// Markers of hipModuleLaunchKernel's extra array, which must be exactly
// {LaunchParamBufferPointer, buf, LaunchParamBufferSize, &size,
// LaunchParamEnd}. They are HIP's values: CUDA's END is 0x00, not 0x03, so
// the two bindings keep separate constants.
const (
	LaunchParamBufferPointer uintptr = 0x01 // HIP_LAUNCH_PARAM_BUFFER_POINTER
	LaunchParamBufferSize    uintptr = 0x02 // HIP_LAUNCH_PARAM_BUFFER_SIZE
	LaunchParamEnd           uintptr = 0x03 // HIP_LAUNCH_PARAM_END
)

type launchAPI struct {
	// hipError_t hipModuleLaunchKernel(hipFunction_t f,
	//     unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
	//     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
	//     unsigned int sharedMemBytes, hipStream_t stream,
	//     void** kernelParams, void** extra);
	// Hot: called through its raw address, no reflection.
	hipModuleLaunchKernel uintptr
}

func (a *launchAPI) funcs() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"hipModuleLaunchKernel"}, Addr: &a.hipModuleLaunchKernel},
	}
}

// ModuleLaunchKernel enqueues kernel f on stream s with grid blocks of block
// threads and sharedMem bytes of dynamic LDS.
//
// Arguments go in exactly one of kernelParams and extra:
//
//   - kernelParams is a void*[n]: one pointer per kernel parameter, each to
//     the parameter's value. The runtime copies each value's size from the
//     code object's metadata and never checks the caller's size, so a
//     too-short value is over-read: validate argument packs against the
//     metadata (KernelGetParamInfo or the code object's notes) first.
//   - extra is {LaunchParamBufferPointer, &buf, LaunchParamBufferSize,
//     &size, LaunchParamEnd}, buf being the packed kernarg block.
//
// Memory: both arrays, and everything they point to, must stay valid and
// unmoved for the duration of the call and must not be ordinary Go heap
// memory that C could keep: allocate them with HostMalloc (or another
// allocator outside the Go heap), or pin every Go object involved with a
// runtime.Pinner until this returns. The runtime copies the arguments
// before returning, so they may be reused afterwards.
//
// Synchronous rejections come back here and leave the device usable: grid 0
// gives hipErrorInvalidValue, block 0 hipErrorInvalidConfiguration (9), a
// block over the device maximum or LDS over the limit hipErrorInvalidValue,
// a block over the kernel's launch bounds hipErrorLaunchFailure (719),
// both or neither of kernelParams/extra hipErrorInvalidValue.
func ModuleLaunchKernel(f Function, grid, block Dim3, sharedMem uint32, s Stream, kernelParams, extra unsafe.Pointer) error {
	a, err := get()
	if err != nil {
		return err
	}
	r, _, _ := purego.SyscallN(a.hipModuleLaunchKernel,
		uintptr(f),
		uintptr(grid.X), uintptr(grid.Y), uintptr(grid.Z),
		uintptr(block.X), uintptr(block.Y), uintptr(block.Z),
		uintptr(sharedMem), uintptr(s),
		uintptr(kernelParams), uintptr(extra))
	return check("hipModuleLaunchKernel", Code(int32(r)))
}
