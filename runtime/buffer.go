package runtime

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/hipgo/hipgo/runtime/driver"
)

// DevicePtr is a device address, as a kernel argument.
type DevicePtr uint64

// Buffer is device memory. Copies to and from it are synchronous with respect
// to the host but not ordered with streams: wait for the event of the work
// that writes a buffer before reading it back.
type Buffer struct {
	dev   *Device
	ptr   driver.Ptr
	size  uint64
	freed atomic.Bool
}

// Alloc allocates bytes of device memory. An allocation the device cannot
// satisfy is an *OutOfMemoryError and leaves the device usable.
func (d *Device) Alloc(bytes int) (*Buffer, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("%s: alloc of %d bytes: %w", d.label, bytes, ErrInvalidArgument)
	}
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.leave()
	p, err := d.drv.Alloc(uint64(bytes))
	if err != nil {
		err = d.fail("alloc", "", err)
		if oom, ok := err.(*OutOfMemoryError); ok {
			oom.Requested = uint64(bytes)
			oom.Free, oom.Total, _ = d.drv.MemInfo() // best effort: only decorates the message
		}
		return nil, err
	}
	return &Buffer{dev: d, ptr: p, size: uint64(bytes)}, nil
}

// Ptr is the buffer's device address.
func (b *Buffer) Ptr() DevicePtr { return DevicePtr(b.ptr) }

// At is the device address offset bytes into the buffer.
func (b *Buffer) At(offset int) DevicePtr { return DevicePtr(uint64(b.ptr) + uint64(offset)) }

// Size is the buffer's size in bytes.
func (b *Buffer) Size() int { return int(b.size) }

// Device is the buffer's device.
func (b *Buffer) Device() *Device { return b.dev }

// Free releases the buffer. A second Free is an error wrapping ErrClosed.
func (b *Buffer) Free() error {
	if !b.freed.CompareAndSwap(false, true) {
		return fmt.Errorf("buffer freed twice: %w", ErrClosed)
	}
	if err := b.dev.enter(); err != nil {
		return err
	}
	defer b.dev.leave()
	if err := b.dev.drv.Free(b.ptr); err != nil {
		return b.dev.fail("free", "", err)
	}
	return nil
}

func (b *Buffer) check(offset, n uint64) error {
	if b.freed.Load() {
		return fmt.Errorf("buffer used after Free: %w", ErrClosed)
	}
	if offset > b.size || n > b.size-offset {
		return fmt.Errorf("copy of %d bytes at offset %d overruns a %d-byte buffer: %w", n, offset, b.size, ErrInvalidArgument)
	}
	return nil
}

// Write copies src into the buffer at offset bytes. It returns once the
// bytes are in device memory, so work enqueued afterwards on any stream
// reads them (CUDA: the copy's DMA is waited for, cudaDevice.CopyHtoD;
// ROCm: hipMemcpyHtoD is taken to return complete, not checked on AMD
// hardware). It does not wait for kernels queued on the runtime's streams:
// overwriting a buffer that queued work still reads is the caller's race.
func (b *Buffer) Write(offset int, src []byte) error {
	if offset < 0 {
		return fmt.Errorf("negative offset %d: %w", offset, ErrInvalidArgument)
	}
	if err := b.check(uint64(offset), uint64(len(src))); err != nil {
		return err
	}
	if err := b.dev.enter(); err != nil || len(src) == 0 {
		if err == nil {
			b.dev.leave()
		}
		return err
	}
	defer b.dev.leave()
	if err := b.dev.drv.CopyHtoD(b.ptr+driver.Ptr(offset), unsafe.Pointer(&src[0]), uint64(len(src))); err != nil {
		return b.dev.fail("copy to device", "", err)
	}
	return nil
}

// Read copies len(dst) bytes from the buffer at offset into dst.
func (b *Buffer) Read(offset int, dst []byte) error {
	if offset < 0 {
		return fmt.Errorf("negative offset %d: %w", offset, ErrInvalidArgument)
	}
	if err := b.check(uint64(offset), uint64(len(dst))); err != nil {
		return err
	}
	if err := b.dev.enter(); err != nil || len(dst) == 0 {
		if err == nil {
			b.dev.leave()
		}
		return err
	}
	defer b.dev.leave()
	if err := b.dev.drv.CopyDtoH(unsafe.Pointer(&dst[0]), b.ptr+driver.Ptr(offset), uint64(len(dst))); err != nil {
		return b.dev.fail("copy to host", "", err)
	}
	return nil
}

// Scalar is the element types Upload and Download copy.
type Scalar interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~float32 | ~float64
}

func asBytes[T Scalar](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// Upload copies src to the start of b.
func Upload[T Scalar](b *Buffer, src []T) error { return b.Write(0, asBytes(src)) }

// Download copies the start of b into dst.
func Download[T Scalar](b *Buffer, dst []T) error { return b.Read(0, asBytes(dst)) }
