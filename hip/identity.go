package hip

import (
	"bytes"
	"fmt"
	"unsafe"

	"github.com/hipgo/hipgo/internal/dynlib"
)

// PCIAddress is where a device sits on the PCI bus. It identifies a device
// across libraries and across the renumbering HIP_VISIBLE_DEVICES,
// CUDA_VISIBLE_DEVICES and ROCR_VISIBLE_DEVICES do to ordinals.
type PCIAddress struct {
	Domain   uint32
	Bus      uint8
	Device   uint8
	Function uint8
}

// String returns "0000:c1:00.0", the form hipDeviceGetPCIBusId writes.
func (p PCIAddress) String() string {
	return fmt.Sprintf("%04x:%02x:%02x.%x", p.Domain, p.Bus, p.Device, p.Function)
}

// ParsePCIAddress reads "dddd:bb:dd.f" (hex fields, as hipDeviceGetPCIBusId
// and lspci write them).
func ParsePCIAddress(s string) (PCIAddress, error) {
	var p PCIAddress
	var dom, bus, dev, fn uint32
	n, err := fmt.Sscanf(s, "%x:%x:%x.%x", &dom, &bus, &dev, &fn)
	if err != nil || n != 4 || bus > 0xff || dev > 0x1f || fn > 7 {
		return PCIAddress{}, fmt.Errorf("hip: %q is not a PCI address dddd:bb:dd.f: %w", s, ErrInvalidValue)
	}
	p.Domain, p.Bus, p.Device, p.Function = dom, uint8(bus), uint8(dev), uint8(fn)
	return p, nil
}

type identityAPI struct {
	// hipError_t hipDeviceGetPCIBusId(char* pciBusId, int len, int device);
	// (exported since ROCm 4.2, symbol version hip_4.2)
	hipDeviceGetPCIBusId func(buf unsafe.Pointer, n int32, dev int32) Code
	// hipError_t hipDeviceGetUuid(hipUUID* uuid, hipDevice_t device);
	// (exported since ROCm 5.1, symbol version hip_5.1)
	hipDeviceGetUuid func(uuid *[16]byte, dev int32) Code
}

func (a *identityAPI) funcs() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"hipDeviceGetPCIBusId"}, Fn: &a.hipDeviceGetPCIBusId},
		{Names: []string{"hipDeviceGetUuid"}, Fn: &a.hipDeviceGetUuid},
	}
}

// DevicePCIAddress returns a device's PCI address (hipDeviceGetPCIBusId).
// CLR writes the function as 0 whatever it is (hipDeviceGetPCIBusId in
// hipamd/src/hip_device_runtime.cpp prints "%04x:%02x:%02x.0" from the
// device properties), so compare domain, bus and device only.
func DevicePCIAddress(ordinal int) (PCIAddress, error) {
	a, err := get()
	if err != nil {
		return PCIAddress{}, err
	}
	var buf [64]byte // CLR needs more than 12 bytes
	if err := check("hipDeviceGetPCIBusId", a.hipDeviceGetPCIBusId(unsafe.Pointer(&buf[0]), int32(len(buf)), int32(ordinal))); err != nil {
		return PCIAddress{}, err
	}
	s := buf[:]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return ParsePCIAddress(string(s))
}

// DeviceUUID returns a device's hipUUID (hipDeviceGetUuid). CLR fills its 16
// bytes with the 16 characters that follow "GPU-" in the HSA agent's
// HSA_AMD_AGENT_INFO_UUID (roc::Device::create, rocclr/device/rocm/
// rocdevice.cpp), so string(uuid[:]) compares with that string's tail. A GPU
// without a unique id has "GPU-XX" there, and then the UUID identifies
// nothing.
func DeviceUUID(ordinal int) ([16]byte, error) {
	a, err := get()
	if err != nil {
		return [16]byte{}, err
	}
	var u [16]byte
	if err := check("hipDeviceGetUuid", a.hipDeviceGetUuid(&u, int32(ordinal))); err != nil {
		return [16]byte{}, err
	}
	return u, nil
}
