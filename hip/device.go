package hip

import (
	"bytes"
	"unsafe"

	"github.com/hipgo/hipgo/internal/dynlib"
)

// Attribute is a hipDeviceAttribute_t for DeviceGetAttribute.
//
// HIP numbers these differently from CUDA (CUDA's compute-capability major
// is 75, HIP's 23). The values below were checked against the ROCm 5.2,
// 6.0 and 6.3 headers with clang-19 (they are equal in all three), and
// TestAttributeIDsMatchHeader checks them against the installed header on
// every run. A future header that renumbers them would fail that test; the
// remedy would be a table per major version chosen by RuntimeVersion. The
// arch-name attributes (10003/10004) are not offered: ROCm 6 turned them
// into unused slots, see ArchName.
type Attribute int32

const (
	AttrClockRate                        Attribute = 5     // hipDeviceAttributeClockRate, kHz
	AttrIntegrated                       Attribute = 16    // hipDeviceAttributeIntegrated
	AttrL2CacheSize                      Attribute = 19    // hipDeviceAttributeL2CacheSize, bytes
	AttrComputeCapabilityMajor           Attribute = 23    // hipDeviceAttributeComputeCapabilityMajor
	AttrMaxBlockDimX                     Attribute = 26    // hipDeviceAttributeMaxBlockDimX
	AttrMaxBlockDimY                     Attribute = 27    // hipDeviceAttributeMaxBlockDimY
	AttrMaxBlockDimZ                     Attribute = 28    // hipDeviceAttributeMaxBlockDimZ
	AttrMaxGridDimX                      Attribute = 29    // hipDeviceAttributeMaxGridDimX
	AttrMaxGridDimY                      Attribute = 30    // hipDeviceAttributeMaxGridDimY
	AttrMaxGridDimZ                      Attribute = 31    // hipDeviceAttributeMaxGridDimZ
	AttrMaxThreadsPerBlock               Attribute = 56    // hipDeviceAttributeMaxThreadsPerBlock
	AttrComputeCapabilityMinor           Attribute = 61    // hipDeviceAttributeComputeCapabilityMinor
	AttrMultiprocessorCount              Attribute = 63    // hipDeviceAttributeMultiprocessorCount
	AttrMaxSharedMemoryPerBlock          Attribute = 74    // hipDeviceAttributeMaxSharedMemoryPerBlock, bytes
	AttrWarpSize                         Attribute = 87    // hipDeviceAttributeWarpSize
	AttrMaxSharedMemoryPerMultiprocessor Attribute = 10002 // hipDeviceAttributeMaxSharedMemoryPerMultiprocessor, bytes
	AttrAsicRevision                     Attribute = 10012 // hipDeviceAttributeAsicRevision
)

type deviceAPI struct {
	// hipError_t hipGetDeviceCount(int* count);
	hipGetDeviceCount func(n *int32) Code
	// hipError_t hipGetDevice(int* deviceId);
	hipGetDevice func(id *int32) Code
	// hipError_t hipSetDevice(int deviceId);
	hipSetDevice func(id int32) Code
	// hipError_t hipDeviceGetAttribute(int* pi, hipDeviceAttribute_t attr, int deviceId);
	hipDeviceGetAttribute func(v *int32, attr Attribute, id int32) Code
	// hipError_t hipDeviceGetName(char* name, int len, hipDevice_t device);
	hipDeviceGetName func(name unsafe.Pointer, n int32, dev int32) Code
	// hipError_t hipDeviceTotalMem(size_t* bytes, hipDevice_t device);
	hipDeviceTotalMem func(bytes *uintptr, dev int32) Code
	// hipError_t hipDeviceSynchronize(void);
	hipDeviceSynchronize func() Code
	// hipError_t hipMemGetInfo(size_t* free, size_t* total);
	hipMemGetInfo func(free, total *uintptr) Code
}

func (a *deviceAPI) funcs() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"hipGetDeviceCount"}, Fn: &a.hipGetDeviceCount},
		{Names: []string{"hipGetDevice"}, Fn: &a.hipGetDevice},
		{Names: []string{"hipSetDevice"}, Fn: &a.hipSetDevice},
		{Names: []string{"hipDeviceGetAttribute"}, Fn: &a.hipDeviceGetAttribute},
		{Names: []string{"hipDeviceGetName"}, Fn: &a.hipDeviceGetName},
		{Names: []string{"hipDeviceTotalMem"}, Fn: &a.hipDeviceTotalMem},
		{Names: []string{"hipDeviceSynchronize"}, Fn: &a.hipDeviceSynchronize},
		{Names: []string{"hipMemGetInfo"}, Fn: &a.hipMemGetInfo},
	}
}

// GetDeviceCount returns the number of visible devices. With no AMD GPU,
// ROCm returns hipErrorNoDevice (100), which comes back as an *Error with
// errors.Is(err, ErrNoDevice), not as a count of zero.
func GetDeviceCount() (int, error) {
	a, err := get()
	if err != nil {
		return 0, err
	}
	var n int32
	if err := check("hipGetDeviceCount", a.hipGetDeviceCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// GetDevice returns the calling OS thread's current device. Use OnDevice
// rather than calling it directly: the goroutine may move to another thread.
func GetDevice() (int, error) {
	a, err := get()
	if err != nil {
		return 0, err
	}
	var id int32
	if err := check("hipGetDevice", a.hipGetDevice(&id)); err != nil {
		return 0, err
	}
	return int(id), nil
}

// SetDevice sets the calling OS thread's current device; see OnDevice.
func SetDevice(ordinal int) error {
	a, err := get()
	if err != nil {
		return err
	}
	return check("hipSetDevice", a.hipSetDevice(int32(ordinal)))
}

// DeviceGetAttribute returns an integer attribute of a device by ordinal.
// It does not depend on the current device.
func DeviceGetAttribute(attr Attribute, ordinal int) (int, error) {
	a, err := get()
	if err != nil {
		return 0, err
	}
	var v int32
	if err := check("hipDeviceGetAttribute", a.hipDeviceGetAttribute(&v, attr, int32(ordinal))); err != nil {
		return 0, err
	}
	return int(v), nil
}

// DeviceGetName returns the marketing name of a device ("AMD Instinct
// MI210"). In HIP a hipDevice_t is the ordinal, so no hipDeviceGet is needed.
func DeviceGetName(ordinal int) (string, error) {
	a, err := get()
	if err != nil {
		return "", err
	}
	var buf [256]byte
	if err := check("hipDeviceGetName", a.hipDeviceGetName(unsafe.Pointer(&buf[0]), int32(len(buf)), int32(ordinal))); err != nil {
		return "", err
	}
	if i := bytes.IndexByte(buf[:], 0); i >= 0 {
		return string(buf[:i]), nil
	}
	return string(buf[:]), nil
}

// DeviceTotalMem returns a device's memory in bytes (hipDeviceTotalMem; the
// TotalGlobalMem attribute is an int and overflows above 2 GiB).
func DeviceTotalMem(ordinal int) (uint64, error) {
	a, err := get()
	if err != nil {
		return 0, err
	}
	var n uintptr
	if err := check("hipDeviceTotalMem", a.hipDeviceTotalMem(&n, int32(ordinal))); err != nil {
		return 0, err
	}
	return uint64(n), nil
}

// DeviceSynchronize waits for all work on the current device. After a
// sticky fault it returns that fault; it may also hang (anchors §2.3), so
// the layer above calls it only where it can afford to wait.
func DeviceSynchronize() error {
	a, err := get()
	if err != nil {
		return err
	}
	return check("hipDeviceSynchronize", a.hipDeviceSynchronize())
}

// MemGetInfo returns the free and total memory of the current device.
func MemGetInfo() (free, total uint64, err error) {
	a, err := get()
	if err != nil {
		return 0, 0, err
	}
	var f, t uintptr
	if err := check("hipMemGetInfo", a.hipMemGetInfo(&f, &t)); err != nil {
		return 0, 0, err
	}
	return uint64(f), uint64(t), nil
}
