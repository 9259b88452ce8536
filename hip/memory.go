package hip

import (
	"unsafe"

	"github.com/hipgo/hipgo/internal/dynlib"
)

// DevicePtr is a device address (hipDeviceptr_t, or void* from hipMalloc).
type DevicePtr uintptr

// HostMallocFlags are hipHostMalloc's flags.
type HostMallocFlags uint32

const (
	HostMallocDefault       HostMallocFlags = 0x0 // hipHostMallocDefault
	HostMallocPortable      HostMallocFlags = 0x1 // hipHostMallocPortable
	HostMallocMapped        HostMallocFlags = 0x2 // hipHostMallocMapped
	HostMallocWriteCombined HostMallocFlags = 0x4 // hipHostMallocWriteCombined
)

type memoryAPI struct {
	// hipError_t hipMalloc(void** ptr, size_t size);
	hipMalloc func(p *DevicePtr, size uintptr) Code
	// hipError_t hipFree(void* ptr);
	hipFree func(p DevicePtr) Code
	// hipError_t hipMemcpyHtoD(hipDeviceptr_t dst, void* src, size_t sizeBytes);
	hipMemcpyHtoD func(dst DevicePtr, src unsafe.Pointer, n uintptr) Code
	// hipError_t hipMemcpyDtoH(void* dst, hipDeviceptr_t src, size_t sizeBytes);
	hipMemcpyDtoH func(dst unsafe.Pointer, src DevicePtr, n uintptr) Code
	// hipError_t hipMemcpyDtoD(hipDeviceptr_t dst, hipDeviceptr_t src, size_t sizeBytes);
	hipMemcpyDtoD func(dst, src DevicePtr, n uintptr) Code
	// hipError_t hipMemcpyHtoDAsync(hipDeviceptr_t dst, void* src, size_t sizeBytes, hipStream_t stream);
	hipMemcpyHtoDAsync func(dst DevicePtr, src unsafe.Pointer, n uintptr, s Stream) Code
	// hipError_t hipMemcpyDtoHAsync(void* dst, hipDeviceptr_t src, size_t sizeBytes, hipStream_t stream);
	hipMemcpyDtoHAsync func(dst unsafe.Pointer, src DevicePtr, n uintptr, s Stream) Code
	// hipError_t hipMemset(void* dst, int value, size_t sizeBytes);
	hipMemset func(dst DevicePtr, value int32, n uintptr) Code
	// hipError_t hipMemsetD32(hipDeviceptr_t dest, int value, size_t count);
	hipMemsetD32 func(dst DevicePtr, value int32, count uintptr) Code
	// hipError_t hipMemsetAsync(void* dst, int value, size_t sizeBytes, hipStream_t stream);
	hipMemsetAsync func(dst DevicePtr, value int32, n uintptr, s Stream) Code
	// hipError_t hipMemsetD32Async(hipDeviceptr_t dst, int value, size_t count, hipStream_t stream);
	hipMemsetD32Async func(dst DevicePtr, value int32, count uintptr, s Stream) Code
	// hipError_t hipHostMalloc(void** ptr, size_t size, unsigned int flags);
	hipHostMalloc func(p *unsafe.Pointer, size uintptr, flags HostMallocFlags) Code
	// hipError_t hipHostFree(void* ptr);
	hipHostFree func(p unsafe.Pointer) Code
}

func (a *memoryAPI) funcs() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"hipMalloc"}, Fn: &a.hipMalloc},
		{Names: []string{"hipFree"}, Fn: &a.hipFree},
		{Names: []string{"hipMemcpyHtoD"}, Fn: &a.hipMemcpyHtoD},
		{Names: []string{"hipMemcpyDtoH"}, Fn: &a.hipMemcpyDtoH},
		{Names: []string{"hipMemcpyDtoD"}, Fn: &a.hipMemcpyDtoD},
		{Names: []string{"hipMemcpyHtoDAsync"}, Fn: &a.hipMemcpyHtoDAsync},
		{Names: []string{"hipMemcpyDtoHAsync"}, Fn: &a.hipMemcpyDtoHAsync},
		{Names: []string{"hipMemset"}, Fn: &a.hipMemset},
		{Names: []string{"hipMemsetD32"}, Fn: &a.hipMemsetD32},
		{Names: []string{"hipMemsetAsync"}, Fn: &a.hipMemsetAsync},
		{Names: []string{"hipMemsetD32Async"}, Fn: &a.hipMemsetD32Async},
		// ROCm 6.3 deprecates hipHostMalloc for hipExtHostAlloc but still exports it.
		{Names: []string{"hipHostMalloc"}, Fn: &a.hipHostMalloc},
		{Names: []string{"hipHostFree"}, Fn: &a.hipHostFree},
	}
}

// Malloc allocates n bytes on the current device.
func Malloc(n uintptr) (DevicePtr, error) {
	a, err := get()
	if err != nil {
		return 0, err
	}
	var p DevicePtr
	if err := check("hipMalloc", a.hipMalloc(&p, n)); err != nil {
		return 0, err
	}
	return p, nil
}

// Free releases memory from Malloc. Its status is returned like any other:
// after a sticky fault it reports the fault.
func Free(p DevicePtr) error {
	a, err := get()
	if err != nil {
		return err
	}
	return check("hipFree", a.hipFree(p))
}

// MemcpyHtoD copies src to device memory and returns when the copy is done,
// so src may be ordinary Go memory.
func MemcpyHtoD(dst DevicePtr, src []byte) error {
	a, err := get()
	if err != nil {
		return err
	}
	return check("hipMemcpyHtoD", a.hipMemcpyHtoD(dst, unsafe.Pointer(unsafe.SliceData(src)), uintptr(len(src))))
}

// MemcpyDtoH copies len(dst) bytes from device memory into dst and returns
// when the copy is done.
func MemcpyDtoH(dst []byte, src DevicePtr) error {
	a, err := get()
	if err != nil {
		return err
	}
	return check("hipMemcpyDtoH", a.hipMemcpyDtoH(unsafe.Pointer(unsafe.SliceData(dst)), src, uintptr(len(dst))))
}

// MemcpyDtoD copies n bytes between device buffers.
func MemcpyDtoD(dst, src DevicePtr, n uintptr) error {
	a, err := get()
	if err != nil {
		return err
	}
	return check("hipMemcpyDtoD", a.hipMemcpyDtoD(dst, src, n))
}

// MemcpyHtoDAsync enqueues a copy of n bytes from src on stream s. The
// runtime reads src after this returns, so src must be pinned host memory
// from HostMalloc (or memory outside the Go heap) that stays valid until the
// stream has passed the copy; Go heap memory is not allowed here.
func MemcpyHtoDAsync(dst DevicePtr, src unsafe.Pointer, n uintptr, s Stream) error {
	a, err := get()
	if err != nil {
		return err
	}
	return check("hipMemcpyHtoDAsync", a.hipMemcpyHtoDAsync(dst, src, n, s))
}

// MemcpyDtoHAsync enqueues a copy of n bytes into dst on stream s; dst has
// the same requirements as MemcpyHtoDAsync's src.
func MemcpyDtoHAsync(dst unsafe.Pointer, src DevicePtr, n uintptr, s Stream) error {
	a, err := get()
	if err != nil {
		return err
	}
	return check("hipMemcpyDtoHAsync", a.hipMemcpyDtoHAsync(dst, src, n, s))
}

// Memset sets n bytes of device memory to value.
func Memset(dst DevicePtr, value byte, n uintptr) error {
	a, err := get()
	if err != nil {
		return err
	}
	return check("hipMemset", a.hipMemset(dst, int32(value), n))
}

// MemsetD32 sets count 32-bit words of device memory to value.
func MemsetD32(dst DevicePtr, value uint32, count uintptr) error {
	a, err := get()
	if err != nil {
		return err
	}
	return check("hipMemsetD32", a.hipMemsetD32(dst, int32(value), count))
}

// MemsetAsync enqueues Memset on stream s.
func MemsetAsync(dst DevicePtr, value byte, n uintptr, s Stream) error {
	a, err := get()
	if err != nil {
		return err
	}
	return check("hipMemsetAsync", a.hipMemsetAsync(dst, int32(value), n, s))
}

// MemsetD32Async enqueues MemsetD32 on stream s.
func MemsetD32Async(dst DevicePtr, value uint32, count uintptr, s Stream) error {
	a, err := get()
	if err != nil {
		return err
	}
	return check("hipMemsetD32Async", a.hipMemsetD32Async(dst, int32(value), count, s))
}

// HostMalloc allocates n bytes of pinned host memory, outside the Go heap:
// the memory async copies and kernel-argument blocks may use. Release it
// with HostFree.
func HostMalloc(n uintptr, flags HostMallocFlags) (unsafe.Pointer, error) {
	a, err := get()
	if err != nil {
		return nil, err
	}
	var p unsafe.Pointer
	if err := check("hipHostMalloc", a.hipHostMalloc(&p, n, flags)); err != nil {
		return nil, err
	}
	return p, nil
}

// HostFree releases memory from HostMalloc.
func HostFree(p unsafe.Pointer) error {
	a, err := get()
	if err != nil {
		return err
	}
	return check("hipHostFree", a.hipHostFree(p))
}
