package hip

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"unsafe"

	"github.com/hipgo/hipgo/hsa"
	"github.com/hipgo/hipgo/internal/dynlib"
)

// hipDeviceProp_t changed layout in ROCm 6.0. The header routes
// hipGetDeviceProperties to hipGetDevicePropertiesR0600, but the unversioned
// exported symbol still fills the old (R0000) layout (ROCm/ROCm#2728). The
// offsets of gcnArchName[256] were checked with clang-19 offsetof against the
// ROCm 5.2 header (396, sizeof 792; also TestR0000OffsetMatchesHeader) and
// the ROCm 6.0 header (1160, sizeof 1472).
const (
	gcnArchNameOffsetR0000 = 396
	gcnArchNameOffsetR0600 = 1160
	gcnArchNameSize        = 256
	// propsBufferSize is far larger than either layout, so a runtime that
	// writes a newer, bigger struct into it still stays inside the buffer.
	propsBufferSize = 8192
	r0600Since      = "ROCm 6.0"
)

type archAPI struct {
	// hipError_t hipGetDevicePropertiesR0600(hipDeviceProp_tR0600* prop, int deviceId);
	// Optional: exported from ROCm 6.0 (symbol version hip_6.0).
	hipGetDevicePropertiesR0600 func(prop unsafe.Pointer, id int32) Code
	// hipError_t hipGetDeviceProperties(hipDeviceProp_t* prop, int deviceId);
	// The unversioned export, R0000 layout in every release so far. Declared
	// optional so a release that drops it still loads.
	hipGetDeviceProperties func(prop unsafe.Pointer, id int32) Code
}

func (a *archAPI) funcs() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"hipGetDevicePropertiesR0600"}, Fn: &a.hipGetDevicePropertiesR0600, Since: r0600Since},
		{Names: []string{"hipGetDeviceProperties"}, Fn: &a.hipGetDeviceProperties, Since: "ROCm 1.x (R0000 layout)"},
	}
}

// Target is a device's AMDGPU target.
type Target struct {
	Arch   string // the processor, e.g. "gfx90a": what code objects are built for
	ID     string // the full target id with features, e.g. "gfx90a:sramecc+:xnack-"
	Source string // where it was read: "hsa", "hipGetDevicePropertiesR0600" or "hipGetDeviceProperties"
}

// ErrBadTargetID is matched (errors.Is) when a string is not an AMDGPU
// target id, e.g. because it was read at the wrong offset.
var ErrBadTargetID = errors.New("hip: not an AMDGPU target id")

// ParseTargetID splits "gfx90a:sramecc+:xnack-" into its processor and
// feature settings. Features are name, name+ or name-.
func ParseTargetID(s string) (Target, error) {
	arch, feats, hasFeats := strings.Cut(s, ":")
	if !strings.HasPrefix(arch, "gfx") || len(arch) < 4 || !isLowerAlnum(arch[3:]) {
		return Target{}, fmt.Errorf("%w: %q", ErrBadTargetID, s)
	}
	if hasFeats {
		for _, f := range strings.Split(feats, ":") {
			name := strings.TrimRight(f, "+-")
			if name == "" || len(f)-len(name) > 1 || !isLowerAlnum(name) {
				return Target{}, fmt.Errorf("%w: %q (feature %q)", ErrBadTargetID, s, f)
			}
		}
	}
	return Target{Arch: arch, ID: s}, nil
}

func isLowerAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// targetFromProps reads gcnArchName from a hipDeviceProp_t image at offset.
func targetFromProps(props []byte, offset int) (Target, error) {
	if offset < 0 || offset+gcnArchNameSize > len(props) {
		return Target{}, fmt.Errorf("hip: device properties of %d bytes have no gcnArchName at byte %d", len(props), offset)
	}
	field := props[offset : offset+gcnArchNameSize]
	n := bytes.IndexByte(field, 0)
	if n < 0 {
		return Target{}, fmt.Errorf("%w: gcnArchName at byte %d is not NUL-terminated", ErrBadTargetID, offset)
	}
	return ParseTargetID(string(field[:n]))
}

// ArchError says that no method could read a device's arch; Tried holds one
// error per method, in the order tried.
type ArchError struct {
	Ordinal int
	Tried   []error
}

func (e *ArchError) Error() string {
	parts := make([]string, len(e.Tried))
	for i, err := range e.Tried {
		parts[i] = err.Error()
	}
	return fmt.Sprintf("hip: cannot read the arch of device %d: %s", e.Ordinal, strings.Join(parts, "; "))
}

// Unwrap lets errors.Is/As see every attempt's error.
func (e *ArchError) Unwrap() []error { return e.Tried }

// ArchName returns a device's processor name ("gfx90a"), the key for
// picking a code object. See DeviceTarget for how it is read.
func ArchName(ordinal int) (string, error) {
	t, err := DeviceTarget(ordinal)
	if err != nil {
		return "", err
	}
	return t.Arch, nil
}

// DeviceTarget reads a device's target without trusting one struct layout.
// It tries, in order:
//
//  1. the HSA agent list (hsa.Agents, HSA_AGENT_INFO_NAME), mapping HIP's
//     ordinal to the ordinal-th GPU agent, which is how CLR enumerates
//     devices. It is used only when HIP_VISIBLE_DEVICES and
//     CUDA_VISIBLE_DEVICES are unset (they renumber HIP's devices, not
//     HSA's) and the GPU agent count equals hipGetDeviceCount.
//     ROCR_VISIBLE_DEVICES filters both alike. HSA gives the processor
//     only, so ID equals Arch.
//  2. hipGetDevicePropertiesR0600 (ROCm ≥ 6.0) into a zeroed, pinned buffer
//     of 8 KiB, reading gcnArchName at byte 1160.
//  3. the unversioned hipGetDeviceProperties, whose R0000 layout has
//     gcnArchName at byte 396, only when the runtime's version is below 6.0
//     (a newer runtime is expected to have taken path 2).
//
// A string read from a struct must parse as a target id, so a wrong layout
// gives an error rather than a garbage arch. When every path fails the error
// is an *ArchError holding each path's reason.
func DeviceTarget(ordinal int) (Target, error) {
	a, err := get()
	if err != nil {
		return Target{}, err
	}
	if ordinal < 0 {
		return Target{}, fmt.Errorf("hip: DeviceTarget: negative device ordinal %d", ordinal)
	}
	var tried []error
	t, err := targetFromHSA(ordinal)
	if err == nil {
		return t, nil
	}
	tried = append(tried, fmt.Errorf("hsa agents: %w", err))

	if a.hipGetDevicePropertiesR0600 == nil {
		tried = append(tried, &UnsupportedError{Func: "hipGetDevicePropertiesR0600", Since: r0600Since, Library: a.path})
	} else if t, err := a.targetFromProps("hipGetDevicePropertiesR0600", a.hipGetDevicePropertiesR0600, gcnArchNameOffsetR0600, ordinal); err == nil {
		return t, nil
	} else {
		tried = append(tried, err)
	}

	switch v, err := RuntimeVersion(); {
	case err != nil:
		tried = append(tried, fmt.Errorf("hipGetDeviceProperties: runtime version unknown, R0000 layout not assumed: %w", err))
	case v >= 60_000_000:
		tried = append(tried, fmt.Errorf("hipGetDeviceProperties: not used with runtime %d (≥ 6.0), whose layout may differ", v))
	case a.hipGetDeviceProperties == nil:
		tried = append(tried, &UnsupportedError{Func: "hipGetDeviceProperties", Since: "ROCm ≤ 5", Library: a.path})
	default:
		t, err := a.targetFromProps("hipGetDeviceProperties", a.hipGetDeviceProperties, gcnArchNameOffsetR0000, ordinal)
		if err == nil {
			return t, nil
		}
		tried = append(tried, err)
	}
	return Target{}, &ArchError{Ordinal: ordinal, Tried: tried}
}

func (a *api) targetFromProps(call string, fn func(unsafe.Pointer, int32) Code, offset, ordinal int) (Target, error) {
	buf := make([]byte, propsBufferSize)
	var pin runtime.Pinner
	pin.Pin(&buf[0])
	defer pin.Unpin()
	if err := check(call, fn(unsafe.Pointer(&buf[0]), int32(ordinal))); err != nil {
		return Target{}, err
	}
	t, err := targetFromProps(buf, offset)
	if err != nil {
		return Target{}, fmt.Errorf("%s: %w", call, err)
	}
	t.Source = call
	return t, nil
}

// targetFromHSA implements path 1 of DeviceTarget.
func targetFromHSA(ordinal int) (t Target, err error) {
	for _, v := range []string{"HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"} {
		if s, ok := os.LookupEnv(v); ok {
			return Target{}, fmt.Errorf("%s=%q renumbers HIP devices, so HIP ordinals cannot be mapped to HSA agents", v, s)
		}
	}
	if err := hsa.Init(); err != nil {
		return Target{}, err
	}
	defer func() {
		if e := hsa.ShutDown(); e != nil {
			err = errors.Join(err, e)
			t = Target{}
		}
	}()
	agents, err := hsa.Agents()
	if err != nil {
		return Target{}, err
	}
	var gpus []hsa.Agent
	for _, ag := range agents {
		if ag.DeviceType() == hsa.DeviceGPU {
			gpus = append(gpus, ag)
		}
	}
	n, err := GetDeviceCount()
	if err != nil {
		return Target{}, err
	}
	if n != len(gpus) {
		return Target{}, fmt.Errorf("HSA lists %d GPU agents but HIP %d devices, so ordinals cannot be mapped", len(gpus), n)
	}
	if ordinal >= len(gpus) {
		return Target{}, fmt.Errorf("device %d of %d: %w", ordinal, n, ErrInvalidDevice)
	}
	t, err = ParseTargetID(gpus[ordinal].Name())
	if err != nil {
		return Target{}, err
	}
	t.Source = "hsa"
	return t, nil
}
