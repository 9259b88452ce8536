package cuda

import (
	"encoding/binary"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/testenv"
)

// sharedProbeStatic is probe_static's size.
const sharedProbeStatic = 8192

// launchSharedProbe launches shared_probe with n bytes of dynamic shared
// memory, one thread.
func launchSharedProbe(f Function, s Stream, out DevicePtr, n uint32) error {
	args := &struct {
		p DevicePtr
		n uint32
	}{out, n}
	params := &[2]unsafe.Pointer{unsafe.Pointer(&args.p), unsafe.Pointer(&args.n)}
	var pin runtime.Pinner
	pin.Pin(args)
	pin.Pin(params)
	defer pin.Unpin()
	return LaunchKernel(f, Dim3{1, 1, 1}, Dim3{1, 1, 1}, n, s, unsafe.Pointer(&params[0]), nil)
}

// TestGPUDynamicSharedOverTheDefaultNeedsTheAttribute proves on the device
// what the runtime relies on: a kernel's static shared memory is its
// FuncSharedSizeBytes; a launch whose static plus dynamic shared memory
// passes 48 KiB is CUDA_ERROR_INVALID_VALUE (not sticky) until
// SetAttribute(FuncMaxDynamicSharedSizeBytes) covers it, and then runs with
// the memory really there; and the attribute cannot be raised so that
// static plus dynamic passes MaxSharedMemoryPerBlockOptin.
func TestGPUDynamicSharedOverTheDefaultNeedsTheAttribute(t *testing.T) {
	dev, _, unlock := lockGPU(t)
	defer unlock()
	optin, err := dev.Attribute(MaxSharedMemoryPerBlockOptin)
	require.NoError(t, err)
	require.Greater(t, optin, 48<<10, "sm_80 and later opt in past 48 KiB")
	m, info, err := ModuleLoadDataEx([]byte(testenv.SharedProbePTX))
	require.NoError(t, err, "JIT log: %s", info)
	defer func() { require.NoError(t, m.Unload()) }()
	f, err := m.Function("shared_probe")
	require.NoError(t, err)
	static, err := f.Attribute(FuncSharedSizeBytes)
	require.NoError(t, err)
	require.Equal(t, sharedProbeStatic, static)
	def, err := f.Attribute(FuncMaxDynamicSharedSizeBytes)
	require.NoError(t, err)
	t.Logf("opt-in maximum %d bytes per block; shared_probe: %d static, dynamic limit %d before any raise", optin, static, def)

	s, destroy := newStream(t)
	defer destroy()
	out, err := MemAlloc(8)
	require.NoError(t, err)
	defer func() { require.NoError(t, MemFree(out)) }()
	run := func(n uint32) {
		t.Helper()
		require.NoError(t, MemsetD32(out, 0, 2))
		require.NoError(t, launchSharedProbe(f, s, out, n))
		require.NoError(t, s.Synchronize())
		host := make([]byte, 8)
		require.NoError(t, MemcpyDtoH(host, out))
		require.Equal(t, n, binary.LittleEndian.Uint32(host[0:]), "the last word of %d bytes of dynamic shared memory", n)
		require.Equal(t, ^n, binary.LittleEndian.Uint32(host[4:]), "the static array")
	}

	run(48<<10 - sharedProbeStatic) // exactly 48 KiB in all: no attribute needed
	const dyn = 100 << 10
	err = launchSharedProbe(f, s, out, dyn)
	require.ErrorIs(t, err, ErrInvalidValue, "over 48 KiB without the attribute")
	var e *Error
	require.ErrorAs(t, err, &e)
	require.False(t, e.Sticky())

	require.NoError(t, f.SetAttribute(FuncMaxDynamicSharedSizeBytes, dyn))
	got, err := f.Attribute(FuncMaxDynamicSharedSizeBytes)
	require.NoError(t, err)
	require.Equal(t, dyn, got)
	run(dyn)

	err = f.SetAttribute(FuncMaxDynamicSharedSizeBytes, optin-static+16)
	require.ErrorIs(t, err, ErrInvalidValue, "static plus dynamic over the opt-in maximum")
	require.NoError(t, f.SetAttribute(FuncMaxDynamicSharedSizeBytes, optin-static))
	run(uint32(optin - static))
}
