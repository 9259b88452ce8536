package cuda

import (
	"runtime"
	"unsafe"

	"github.com/hipgo/hipgo/internal/dynlib"
)

// DevicePtr is a CUdeviceptr: a 64-bit device address.
type DevicePtr uint64

// HostAllocFlags are the CU_MEMHOSTALLOC_* flags of MemHostAlloc.
type HostAllocFlags uint32

// CU_MEMHOSTALLOC_* values, checked against cuda.h (12.4 vendored copy and
// cudarc's bindgen output for 13.0).
const (
	HostAllocPortable      HostAllocFlags = 0x01
	HostAllocDeviceMap     HostAllocFlags = 0x02
	HostAllocWriteCombined HostAllocFlags = 0x04
)

// memoryAPI: device and pinned host memory, copies and memsets. The _v2
// symbols are the ones cuda.h maps the plain names to (#define cuMemAlloc
// cuMemAlloc_v2, ...); their v1 ancestors take 32-bit sizes and pointers, so
// there is deliberately no fallback to them.
type memoryAPI struct {
	// CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
	cuMemAlloc func(p *DevicePtr, size uintptr) Code
	// CUresult cuMemFree_v2(CUdeviceptr dptr);
	cuMemFree func(p DevicePtr) Code
	// CUresult cuMemGetInfo_v2(size_t *free, size_t *total);
	cuMemGetInfo func(free, total *uintptr) Code
	// CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);
	cuMemcpyHtoD func(dst DevicePtr, src unsafe.Pointer, n uintptr) Code
	// CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);
	cuMemcpyDtoH func(dst unsafe.Pointer, src DevicePtr, n uintptr) Code
	// CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount);
	cuMemcpyDtoD func(dst, src DevicePtr, n uintptr) Code
	// CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream);
	cuMemcpyHtoDAsync func(dst DevicePtr, src unsafe.Pointer, n uintptr, s Stream) Code
	// CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream);
	cuMemcpyDtoHAsync func(dst unsafe.Pointer, src DevicePtr, n uintptr, s Stream) Code
	// CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N);
	cuMemsetD8 func(p DevicePtr, v uint8, n uintptr) Code
	// CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N);
	cuMemsetD32 func(p DevicePtr, v uint32, n uintptr) Code
	// CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream);
	cuMemsetD8Async func(p DevicePtr, v uint8, n uintptr, s Stream) Code
	// CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream);
	cuMemsetD32Async func(p DevicePtr, v uint32, n uintptr, s Stream) Code
	// CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags);
	cuMemHostAlloc func(pp *unsafe.Pointer, size uintptr, flags uint32) Code
	// CUresult cuMemAllocHost_v2(void **pp, size_t bytesize);
	cuMemAllocHost func(pp *unsafe.Pointer, size uintptr) Code
	// CUresult cuMemFreeHost(void *p);
	cuMemFreeHost func(p unsafe.Pointer) Code
}

func (a *memoryAPI) bind() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"cuMemAlloc_v2"}, Fn: &a.cuMemAlloc},
		{Names: []string{"cuMemFree_v2"}, Fn: &a.cuMemFree},
		{Names: []string{"cuMemGetInfo_v2"}, Fn: &a.cuMemGetInfo},
		{Names: []string{"cuMemcpyHtoD_v2"}, Fn: &a.cuMemcpyHtoD},
		{Names: []string{"cuMemcpyDtoH_v2"}, Fn: &a.cuMemcpyDtoH},
		{Names: []string{"cuMemcpyDtoD_v2"}, Fn: &a.cuMemcpyDtoD},
		{Names: []string{"cuMemcpyHtoDAsync_v2"}, Fn: &a.cuMemcpyHtoDAsync},
		{Names: []string{"cuMemcpyDtoHAsync_v2"}, Fn: &a.cuMemcpyDtoHAsync},
		{Names: []string{"cuMemsetD8_v2"}, Fn: &a.cuMemsetD8},
		{Names: []string{"cuMemsetD32_v2"}, Fn: &a.cuMemsetD32},
		// The async memsets never had a _v2 (cuda.h maps them only to _ptsz
		// under per-thread default streams).
		{Names: []string{"cuMemsetD8Async"}, Fn: &a.cuMemsetD8Async},
		{Names: []string{"cuMemsetD32Async"}, Fn: &a.cuMemsetD32Async},
		{Names: []string{"cuMemHostAlloc"}, Fn: &a.cuMemHostAlloc},
		{Names: []string{"cuMemAllocHost_v2"}, Fn: &a.cuMemAllocHost},
		{Names: []string{"cuMemFreeHost"}, Fn: &a.cuMemFreeHost},
	}
}

// MemAlloc allocates size bytes of device memory.
func MemAlloc(size uint64) (DevicePtr, error) {
	d, err := api()
	if err != nil {
		return 0, err
	}
	var p DevicePtr
	if err := check("cuMemAlloc_v2", d.cuMemAlloc(&p, uintptr(size))); err != nil {
		return 0, err
	}
	return p, nil
}

// MemFree frees device memory from MemAlloc.
func MemFree(p DevicePtr) error {
	d, err := api()
	if err != nil {
		return err
	}
	return check("cuMemFree_v2", d.cuMemFree(p))
}

// MemGetInfo returns the free and total device memory of the current context's device.
func MemGetInfo() (free, total uint64, err error) {
	d, err := api()
	if err != nil {
		return 0, 0, err
	}
	var f, t uintptr
	if err := check("cuMemGetInfo_v2", d.cuMemGetInfo(&f, &t)); err != nil {
		return 0, 0, err
	}
	return uint64(f), uint64(t), nil
}

// MemcpyHtoD copies src to device memory at dst and returns once src may be
// reused (a synchronous copy).
func MemcpyHtoD(dst DevicePtr, src []byte) error {
	d, err := api()
	if err != nil {
		return err
	}
	if len(src) == 0 {
		return nil
	}
	c := d.cuMemcpyHtoD(dst, unsafe.Pointer(&src[0]), uintptr(len(src)))
	runtime.KeepAlive(src)
	return check("cuMemcpyHtoD_v2", c)
}

// MemcpyDtoH copies len(dst) bytes from device memory at src into dst.
func MemcpyDtoH(dst []byte, src DevicePtr) error {
	d, err := api()
	if err != nil {
		return err
	}
	if len(dst) == 0 {
		return nil
	}
	c := d.cuMemcpyDtoH(unsafe.Pointer(&dst[0]), src, uintptr(len(dst)))
	runtime.KeepAlive(dst)
	return check("cuMemcpyDtoH_v2", c)
}

// MemcpyDtoD copies n bytes between device buffers.
func MemcpyDtoD(dst, src DevicePtr, n uint64) error {
	d, err := api()
	if err != nil {
		return err
	}
	return check("cuMemcpyDtoD_v2", d.cuMemcpyDtoD(dst, src, uintptr(n)))
}

// MemcpyHtoDAsync enqueues a copy of n bytes from host memory at src on s.
// src must stay valid and unmoved until the stream reaches the copy: use
// memory from MemHostAlloc (which also makes the copy truly asynchronous) or
// Go memory pinned with runtime.Pinner for that long.
func MemcpyHtoDAsync(dst DevicePtr, src unsafe.Pointer, n uint64, s Stream) error {
	d, err := api()
	if err != nil {
		return err
	}
	return check("cuMemcpyHtoDAsync_v2", d.cuMemcpyHtoDAsync(dst, src, uintptr(n), s))
}

// MemcpyDtoHAsync enqueues a copy of n bytes from device memory into host
// memory at dst on s; dst has the same lifetime rule as in MemcpyHtoDAsync.
func MemcpyDtoHAsync(dst unsafe.Pointer, src DevicePtr, n uint64, s Stream) error {
	d, err := api()
	if err != nil {
		return err
	}
	return check("cuMemcpyDtoHAsync_v2", d.cuMemcpyDtoHAsync(dst, src, uintptr(n), s))
}

// MemsetD8 sets n bytes at p to v.
func MemsetD8(p DevicePtr, v uint8, n uint64) error {
	d, err := api()
	if err != nil {
		return err
	}
	return check("cuMemsetD8_v2", d.cuMemsetD8(p, v, uintptr(n)))
}

// MemsetD32 sets n 32-bit words at p (4-byte aligned) to v.
func MemsetD32(p DevicePtr, v uint32, n uint64) error {
	d, err := api()
	if err != nil {
		return err
	}
	return check("cuMemsetD32_v2", d.cuMemsetD32(p, v, uintptr(n)))
}

// MemsetD8Async enqueues MemsetD8 on s.
func MemsetD8Async(p DevicePtr, v uint8, n uint64, s Stream) error {
	d, err := api()
	if err != nil {
		return err
	}
	return check("cuMemsetD8Async", d.cuMemsetD8Async(p, v, uintptr(n), s))
}

// MemsetD32Async enqueues MemsetD32 on s.
func MemsetD32Async(p DevicePtr, v uint32, n uint64, s Stream) error {
	d, err := api()
	if err != nil {
		return err
	}
	return check("cuMemsetD32Async", d.cuMemsetD32Async(p, v, uintptr(n), s))
}

// MemHostAlloc allocates size bytes of page-locked host memory outside the Go
// heap (safe to hand to async copies and as kernel argument storage). Free it
// with MemFreeHost.
func MemHostAlloc(size uint64, flags HostAllocFlags) (unsafe.Pointer, error) {
	d, err := api()
	if err != nil {
		return nil, err
	}
	var p unsafe.Pointer
	if err := check("cuMemHostAlloc", d.cuMemHostAlloc(&p, uintptr(size), uint32(flags))); err != nil {
		return nil, err
	}
	return p, nil
}

// MemAllocHost is MemHostAlloc with no flags (cuMemAllocHost_v2).
func MemAllocHost(size uint64) (unsafe.Pointer, error) {
	d, err := api()
	if err != nil {
		return nil, err
	}
	var p unsafe.Pointer
	if err := check("cuMemAllocHost_v2", d.cuMemAllocHost(&p, uintptr(size))); err != nil {
		return nil, err
	}
	return p, nil
}

// MemFreeHost frees memory from MemHostAlloc or MemAllocHost.
func MemFreeHost(p unsafe.Pointer) error {
	d, err := api()
	if err != nil {
		return err
	}
	return check("cuMemFreeHost", d.cuMemFreeHost(p))
}
