package cuda

import "github.com/hipgo/hipgo/internal/dynlib"

// Device is a CUdevice: an ordinal-derived handle from DeviceGet.
type Device int32

// Attribute is a CUdevice_attribute for Device.Attribute.
type Attribute int32

// CUdevice_attribute values, checked against cuda.h 13.0 (NVIDIA/cuda-python
// cydriver.pxd.in 13.0.0 and cudarc's bindgen output for cuda-13000; both agree).
const (
	MaxThreadsPerBlock               Attribute = 1
	MaxBlockDimX                     Attribute = 2
	MaxBlockDimY                     Attribute = 3
	MaxBlockDimZ                     Attribute = 4
	MaxGridDimX                      Attribute = 5
	MaxGridDimY                      Attribute = 6
	MaxGridDimZ                      Attribute = 7
	MaxSharedMemoryPerBlock          Attribute = 8
	TotalConstantMemory              Attribute = 9
	WarpSize                         Attribute = 10
	MaxPitch                         Attribute = 11
	MaxRegistersPerBlock             Attribute = 12
	ClockRate                        Attribute = 13 // kHz
	TextureAlignment                 Attribute = 14
	MultiprocessorCount              Attribute = 16
	KernelExecTimeout                Attribute = 17
	Integrated                       Attribute = 18
	CanMapHostMemory                 Attribute = 19
	ComputeMode                      Attribute = 20
	ConcurrentKernels                Attribute = 31
	EccEnabled                       Attribute = 32
	PciBusID                         Attribute = 33
	PciDeviceID                      Attribute = 34
	MemoryClockRate                  Attribute = 36 // kHz
	GlobalMemoryBusWidth             Attribute = 37 // bits
	L2CacheSize                      Attribute = 38 // bytes
	MaxThreadsPerMultiprocessor      Attribute = 39
	AsyncEngineCount                 Attribute = 40
	UnifiedAddressing                Attribute = 41
	PciDomainID                      Attribute = 50
	ComputeCapabilityMajor           Attribute = 75
	ComputeCapabilityMinor           Attribute = 76
	MaxSharedMemoryPerMultiprocessor Attribute = 81
	MaxRegistersPerMultiprocessor    Attribute = 82
	ManagedMemory                    Attribute = 83
	CooperativeLaunch                Attribute = 95
	MaxSharedMemoryPerBlockOptin     Attribute = 97
	MaxBlocksPerMultiprocessor       Attribute = 106
	MaxPersistingL2CacheSize         Attribute = 108
	ReservedSharedMemoryPerBlock     Attribute = 111
	MemoryPoolsSupported             Attribute = 115
)

// deviceAPI: device enumeration and properties.
type deviceAPI struct {
	// CUresult cuDeviceGetCount(int *count);
	cuDeviceGetCount func(n *int32) Code
	// CUresult cuDeviceGet(CUdevice *device, int ordinal);
	cuDeviceGet func(dev *Device, ordinal int32) Code
	// CUresult cuDeviceGetName(char *name, int len, CUdevice dev);
	cuDeviceGetName func(name *byte, n int32, dev Device) Code
	// CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev);
	cuDeviceGetAttribute func(v *int32, a Attribute, dev Device) Code
	// CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev);
	cuDeviceTotalMem func(bytes *uintptr, dev Device) Code
}

func (a *deviceAPI) bind() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"cuDeviceGetCount"}, Fn: &a.cuDeviceGetCount},
		{Names: []string{"cuDeviceGet"}, Fn: &a.cuDeviceGet},
		{Names: []string{"cuDeviceGetName"}, Fn: &a.cuDeviceGetName},
		{Names: []string{"cuDeviceGetAttribute"}, Fn: &a.cuDeviceGetAttribute},
		// cuda.h: #define cuDeviceTotalMem cuDeviceTotalMem_v2 (the v1 symbol
		// returns a 32-bit size).
		{Names: []string{"cuDeviceTotalMem_v2"}, Fn: &a.cuDeviceTotalMem},
	}
}

// DeviceCount returns the number of CUDA devices (after Init).
func DeviceCount() (int, error) {
	d, err := api()
	if err != nil {
		return 0, err
	}
	var n int32
	if err := check("cuDeviceGetCount", d.cuDeviceGetCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// DeviceGet returns the device with the given ordinal, 0 ≤ ordinal < DeviceCount.
func DeviceGet(ordinal int) (Device, error) {
	d, err := api()
	if err != nil {
		return 0, err
	}
	var dev Device
	if err := check("cuDeviceGet", d.cuDeviceGet(&dev, int32(ordinal))); err != nil {
		return 0, err
	}
	return dev, nil
}

// Name returns the device's marketing name, e.g. "NVIDIA H200".
func (dev Device) Name() (string, error) {
	d, err := api()
	if err != nil {
		return "", err
	}
	buf := make([]byte, 256)
	if err := check("cuDeviceGetName", d.cuDeviceGetName(&buf[0], int32(len(buf)), dev)); err != nil {
		return "", err
	}
	return bufString(buf), nil
}

// Attribute returns one device attribute.
func (dev Device) Attribute(a Attribute) (int, error) {
	d, err := api()
	if err != nil {
		return 0, err
	}
	var v int32
	if err := check("cuDeviceGetAttribute", d.cuDeviceGetAttribute(&v, a, dev)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// TotalMem returns the device's memory in bytes.
func (dev Device) TotalMem() (uint64, error) {
	d, err := api()
	if err != nil {
		return 0, err
	}
	var n uintptr
	if err := check("cuDeviceTotalMem_v2", d.cuDeviceTotalMem(&n, dev)); err != nil {
		return 0, err
	}
	return uint64(n), nil
}

// ComputeCapability returns the device's compute capability, e.g. 9, 0 for
// sm_90, read from the device attributes (no struct layouts involved).
func (dev Device) ComputeCapability() (major, minor int, err error) {
	if major, err = dev.Attribute(ComputeCapabilityMajor); err != nil {
		return 0, 0, err
	}
	if minor, err = dev.Attribute(ComputeCapabilityMinor); err != nil {
		return 0, 0, err
	}
	return major, minor, nil
}
