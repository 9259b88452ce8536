package simgpu

import (
	"encoding/binary"
	"time"

	"github.com/hipgo/hipgo/runtime/driver"
)

// Standard simulated kernels, named after the real test kernels
// (kernels/src/testkernels.cu) so tests read the same on both.
var (
	// FillU32 (p u32*, value u32, n u32) writes value to p[0:n].
	FillU32 = KernelDef{Name: "fill_u32", ParamSizes: []int{8, 4, 4}, Run: func(d *Device, _, _ driver.Dim3, a []uint64, _ <-chan struct{}) error {
		b, err := d.Bytes(driver.Ptr(a[0]), a[2]*4)
		if err != nil {
			return err
		}
		for i := uint64(0); i < a[2]; i++ {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(a[1]))
		}
		return nil
	}}
	// OOBWriteU32 (p u32*, value u32, byteOffset u64) writes past the buffer:
	// the simulated illegal address, a sticky fault.
	OOBWriteU32 = KernelDef{Name: "oob_write_u32", ParamSizes: []int{8, 4, 8}, Run: func(d *Device, _, _ driver.Dim3, a []uint64, _ <-chan struct{}) error {
		b, err := d.Bytes(driver.Ptr(a[0]+a[2]), 4)
		if err != nil {
			return err
		}
		binary.LittleEndian.PutUint32(b, uint32(a[1]))
		return nil
	}}
	// SpinNs (ns u64, out u32*) runs for ns nanoseconds, then writes 1.
	SpinNs = KernelDef{Name: "spin_ns", ParamSizes: []int{8, 8}, Run: func(d *Device, _, _ driver.Dim3, a []uint64, stop <-chan struct{}) error {
		select {
		case <-time.After(time.Duration(a[0])):
		case <-stop:
			return nil
		}
		b, err := d.Bytes(driver.Ptr(a[1]), 4)
		if err != nil {
			return err
		}
		binary.LittleEndian.PutUint32(b, 1)
		return nil
	}}
	// Empty does nothing.
	Empty = KernelDef{Name: "empty", Run: func(*Device, driver.Dim3, driver.Dim3, []uint64, <-chan struct{}) error { return nil }}
)
