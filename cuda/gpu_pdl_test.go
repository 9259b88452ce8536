package cuda

import (
	"encoding/binary"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// pdlPTX holds two kernels for programmatic dependent launch, by hand for
// PTX ISA 7.8 / sm_90 (griddepcontrol needs both):
//
//	spin_then_store(u64 cycles, u32 *p, u32 v): lets dependents launch at
//	    once (griddepcontrol.launch_dependents), busy-waits, then *p = v.
//	copy_word(u32 *src, u32 *dst, u32 wait): *dst = *src, after
//	    griddepcontrol.wait when wait != 0.
const pdlPTX = `.version 7.8
.target sm_90
.address_size 64

.visible .entry spin_then_store(
	.param .u64 sts_cycles,
	.param .u64 sts_p,
	.param .u32 sts_v
)
{
	.reg .pred	%p<2>;
	.reg .b32	%r<2>;
	.reg .b64	%rd<7>;

	griddepcontrol.launch_dependents;
	ld.param.u64	%rd1, [sts_cycles];
	ld.param.u64	%rd5, [sts_p];
	ld.param.u32	%r1, [sts_v];
	mov.u64		%rd2, %clock64;
STS_LOOP:
	mov.u64		%rd3, %clock64;
	sub.s64		%rd4, %rd3, %rd2;
	setp.lt.u64	%p1, %rd4, %rd1;
	@%p1 bra	STS_LOOP;
	cvta.to.global.u64	%rd6, %rd5;
	st.global.u32	[%rd6], %r1;
	ret;
}

.visible .entry copy_word(
	.param .u64 cw_src,
	.param .u64 cw_dst,
	.param .u32 cw_wait
)
{
	.reg .pred	%p<2>;
	.reg .b32	%r<3>;
	.reg .b64	%rd<5>;

	ld.param.u32	%r2, [cw_wait];
	setp.eq.u32	%p1, %r2, 0;
	@%p1 bra	CW_READ;
	griddepcontrol.wait;
CW_READ:
	ld.param.u64	%rd1, [cw_src];
	ld.param.u64	%rd2, [cw_dst];
	cvta.to.global.u64	%rd3, %rd1;
	cvta.to.global.u64	%rd4, %rd2;
	ld.volatile.global.u32	%r1, [%rd3];
	st.global.u32	[%rd4], %r1;
	ret;
}
`

// launchPDL launches f with one block of one thread and the given
// arguments (each pointed to by params), with programmatic stream
// serialization when early is set; the config, its attribute and the
// arguments are pinned for the call.
func launchPDL(t *testing.T, f Function, s Stream, early bool, args ...any) {
	t.Helper()
	params := make([]unsafe.Pointer, len(args))
	var pin runtime.Pinner
	defer pin.Unpin()
	for i, a := range args {
		switch v := a.(type) {
		case uint64:
			params[i] = pinnedCopy(&pin, v)
		case DevicePtr:
			params[i] = pinnedCopy(&pin, v)
		case uint32:
			params[i] = pinnedCopy(&pin, v)
		default:
			t.Fatalf("argument %d: %T", i, a)
		}
	}
	pin.Pin(&params[0])
	attr := &LaunchAttribute{ID: LaunchAttributeProgrammaticStreamSerialization}
	binary.LittleEndian.PutUint32(attr.Value[:], 1)
	cfg := &LaunchConfig{Grid: Dim3{1, 1, 1}, Block: Dim3{1, 1, 1}, Stream: s}
	if early {
		cfg.Attrs, cfg.NumAttrs = unsafe.Pointer(attr), 1
	}
	pin.Pin(attr)
	pin.Pin(cfg)
	require.NoError(t, LaunchKernelEx(cfg, f, unsafe.Pointer(&params[0]), nil))
}

// pinnedCopy returns a pointer to a pinned heap copy of v, for a kernel's
// argument array.
func pinnedCopy[T any](pin *runtime.Pinner, v T) unsafe.Pointer {
	p := &v
	pin.Pin(p)
	return unsafe.Pointer(p)
}

// TestGPUProgrammaticDependentLaunch proves what sampling's Gumbel launch
// relies on: with programmatic stream serialization a kernel starts while
// the kernel ahead of it is still running (it reads a word before the
// kernel ahead stores it), and griddepcontrol.wait in the kernel restores
// the stream's order (it reads the stored word). A plain launch of the
// kernel that does not wait is the control: the stream orders it.
func TestGPUProgrammaticDependentLaunch(t *testing.T) {
	dev, _, unlock := lockGPU(t)
	defer unlock()
	major, _, err := dev.ComputeCapability()
	require.NoError(t, err)
	if major < 9 {
		t.Skipf("programmatic dependent launch needs compute capability 9.0; device 0 has %d.x", major)
	}
	require.True(t, LaunchKernelExSupported(), "a driver for compute capability 9.0 exports cuLaunchKernelEx")
	m, _, err := ModuleLoadDataEx([]byte(pdlPTX))
	require.NoError(t, err)
	defer func() { require.NoError(t, m.Unload()) }()
	spin, err := m.Function("spin_then_store")
	require.NoError(t, err)
	copyWord, err := m.Function("copy_word")
	require.NoError(t, err)
	s, destroy := newStream(t)
	defer destroy()
	src, err := MemAlloc(4)
	require.NoError(t, err)
	defer func() { require.NoError(t, MemFree(src)) }()
	dst, err := MemAlloc(4)
	require.NoError(t, err)
	defer func() { require.NoError(t, MemFree(dst)) }()

	const cycles = uint64(40_000_000) // about 20 ms at 2 GHz
	const stored, before, guard = 0x600D, 0xB0, 0xDEAD
	run := func(early bool, wait uint32) uint32 {
		require.NoError(t, MemsetD32(src, before, 1))
		require.NoError(t, MemsetD32(dst, guard, 1))
		launchPDL(t, spin, s, false, cycles, src, uint32(stored))
		launchPDL(t, copyWord, s, early, src, dst, wait)
		require.NoError(t, s.Synchronize())
		out := make([]byte, 4)
		require.NoError(t, MemcpyDtoH(out, dst))
		return binary.LittleEndian.Uint32(out)
	}
	require.EqualValues(t, before, run(true, 0), "early launch without a wait: read before the store (the kernel started early)")
	require.EqualValues(t, stored, run(true, 1), "early launch with griddepcontrol.wait: read after the store")
	require.EqualValues(t, stored, run(false, 0), "plain launch: the stream orders it")
}
