package hip

import (
	"errors"
	"testing"
	"time"
	"unsafe"

	"github.com/hipgo/hipgo/hsa"
	"github.com/stretchr/testify/require"
)

// needNoGPU skips tests of the no-device path on a machine where HIP finds
// a device: there these answers do not exist.
func needNoGPU(t *testing.T) {
	t.Helper()
	needLibrary(t)
	if n, err := GetDeviceCount(); err == nil && n > 0 {
		t.Skipf("this machine has %d HIP devices; the no-device path cannot be observed", n)
	}
}

// TestNoDeviceInit proves that without an AMD GPU hipInit's code reaches the
// caller as a Go error: an *Error naming hipInit whose code matches
// ErrInvalidDevice (ROCm 5.2's answer), returned in well under a second.
func TestNoDeviceInit(t *testing.T) {
	needNoGPU(t)
	start := time.Now()
	err := Init()
	elapsed := time.Since(start)
	require.Less(t, elapsed, time.Second)
	var he *Error
	require.ErrorAs(t, err, &he)
	require.Equal(t, "hipInit", he.Call)
	require.ErrorIs(t, err, ErrInvalidDevice)
	require.False(t, he.Sticky())
	t.Logf("real %s: Init() = %q in %v", LibraryPath(), err, elapsed)
}

// TestNoDeviceGetDeviceCount proves hipGetDeviceCount's "no device" reaches
// the caller as errors.Is(err, ErrNoDevice) with a zero count, quickly.
func TestNoDeviceGetDeviceCount(t *testing.T) {
	needNoGPU(t)
	start := time.Now()
	n, err := GetDeviceCount()
	elapsed := time.Since(start)
	require.Less(t, elapsed, time.Second)
	require.Zero(t, n)
	var he *Error
	require.ErrorAs(t, err, &he)
	require.Equal(t, "hipGetDeviceCount", he.Call)
	require.ErrorIs(t, err, ErrNoDevice)
	t.Logf("real %s: GetDeviceCount() = %d, %q in %v", LibraryPath(), n, err, elapsed)
}

// TestNoDeviceCallsFail proves every bound function marshals its arguments
// into the real library and brings its refusal back as an *Error naming
// the C function, without a panic or a hang. The codes are whatever ROCm 5.2
// answers without a device; they are logged, not assumed.
func TestNoDeviceCallsFail(t *testing.T) {
	needNoGPU(t)
	image := []byte("\x7fELF not really a code object")
	var word uint32
	calls := []struct {
		call string
		run  func() error
	}{
		{"hipGetDevice", func() error { _, err := GetDevice(); return err }},
		{"hipSetDevice", func() error { return SetDevice(0) }},
		{"hipDeviceGetAttribute", func() error { _, err := DeviceGetAttribute(AttrWarpSize, 0); return err }},
		{"hipDeviceGetName", func() error { _, err := DeviceGetName(0); return err }},
		{"hipDeviceTotalMem", func() error { _, err := DeviceTotalMem(0); return err }},
		{"hipDeviceSynchronize", DeviceSynchronize},
		{"hipMemGetInfo", func() error { _, _, err := MemGetInfo(); return err }},
		{"hipMalloc", func() error { _, err := Malloc(1 << 20); return err }},
		{"hipMemset", func() error { return Memset(0, 0, 4) }},
		{"hipMemsetD32", func() error { return MemsetD32(0, 0, 1) }},
		{"hipMemsetAsync", func() error { return MemsetAsync(0, 0, 4, 0) }},
		{"hipMemsetD32Async", func() error { return MemsetD32Async(0, 0, 1, 0) }},
		{"hipMemcpyHtoD", func() error { return MemcpyHtoD(0, []byte{1, 2, 3, 4}) }},
		{"hipMemcpyDtoH", func() error { return MemcpyDtoH(make([]byte, 4), 0) }},
		{"hipMemcpyDtoD", func() error { return MemcpyDtoD(0, 0, 4) }},
		{"hipMemcpyHtoDAsync", func() error { return MemcpyHtoDAsync(0, unsafe.Pointer(&word), 4, 0) }},
		{"hipMemcpyDtoHAsync", func() error { return MemcpyDtoHAsync(unsafe.Pointer(&word), 0, 4, 0) }},
		{"hipHostMalloc", func() error { _, err := HostMalloc(4096, HostMallocDefault); return err }},
		{"hipStreamCreateWithFlags", func() error { _, err := StreamCreateWithFlags(StreamNonBlocking); return err }},
		{"hipStreamSynchronize", func() error { return StreamSynchronize(0) }},
		{"hipStreamQuery", func() error { _, err := StreamQuery(0); return err }},
		{"hipEventCreateWithFlags", func() error { _, err := EventCreateWithFlags(EventDisableTiming); return err }},
		{"hipEventRecord", func() error { return EventRecord(0, 0) }},
		{"hipModuleLoadData", func() error { _, err := ModuleLoadData(image); return err }},
		{"hipModuleLaunchKernel", func() error {
			return ModuleLaunchKernel(0, Dim3{1, 1, 1}, Dim3{64, 1, 1}, 0, 0, nil, nil)
		}},
		{"hipStreamAddCallback", func() error { return StreamAddCallback(0, func(Code) {}) }},
		{"hipStreamDestroy", func() error { return StreamDestroy(0) }},
		{"hipEventQuery", func() error { _, err := EventQuery(0); return err }},
		{"hipEventSynchronize", func() error { return EventSynchronize(0) }},
		{"hipEventElapsedTime", func() error { _, err := EventElapsedTime(0, 0); return err }},
		{"hipEventDestroy", func() error { return EventDestroy(0) }},
		{"hipModuleGetFunction", func() error { _, err := ModuleGetFunction(0, "k"); return err }},
		{"hipModuleUnload", func() error { return ModuleUnload(0) }},
		{"hipFree", func() error { return Free(0) }},
		{"hipHostFree", func() error { return HostFree(nil) }},
	}
	for _, c := range calls {
		start := time.Now()
		err := c.run()
		elapsed := time.Since(start)
		var he *Error
		require.ErrorAs(t, err, &he, c.call)
		require.Equal(t, c.call, he.Call)
		require.NotEqual(t, Success, he.Code)
		require.Less(t, elapsed, time.Second, c.call)
		t.Logf("%-26s -> %v", c.call, he.Code)
	}
	// The failed enqueue above left nothing in the callback table.
	require.Zero(t, pendingCallbacks())
	// The image stays pinned only for a module that loaded.
	images.Lock()
	require.Empty(t, images.pins)
	images.Unlock()
}

// TestNoDeviceOnDevice proves OnDevice reports the runtime's refusal and
// hands back no release func.
func TestNoDeviceOnDevice(t *testing.T) {
	needNoGPU(t)
	release, err := OnDevice(0)
	require.Nil(t, release)
	var he *Error
	require.ErrorAs(t, err, &he)
	t.Logf("OnDevice(0) = %v", err)
}

// TestNoDeviceTarget proves DeviceTarget tries each path, in order, against
// the real libraries and reports every reason: HSA cannot initialise
// (HSA_STATUS_ERROR_OUT_OF_RESOURCES on ROCm 5.2), ROCm 5.2 lacks
// hipGetDevicePropertiesR0600, and hipGetDeviceProperties has no device.
func TestNoDeviceTarget(t *testing.T) {
	needNoGPU(t)
	_, err := ArchName(0)
	var ae *ArchError
	require.ErrorAs(t, err, &ae)
	require.Len(t, ae.Tried, 3)
	var hsaErr *hsa.Error
	require.ErrorAs(t, ae.Tried[0], &hsaErr)
	require.Equal(t, "hsa_init", hsaErr.Call)
	major, minor := runtimeMajorMinor(t)
	if major == 5 && minor == 2 {
		require.ErrorIs(t, ae.Tried[0], hsa.ErrOutOfResources)
		require.ErrorIs(t, ae.Tried[1], errors.ErrUnsupported)
		var he *Error
		require.ErrorAs(t, ae.Tried[2], &he)
		require.Equal(t, "hipGetDeviceProperties", he.Call)
	}
	t.Logf("ArchName(0): %v", err)
	_, err = DeviceTarget(-1)
	require.Error(t, err)
}
