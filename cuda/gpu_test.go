package cuda

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/stretchr/testify/require"
)

// testPTX holds the test kernels, written by hand for PTX ISA 7.8 / sm_80
// (JIT-compiled by the driver for the device at hand).
//
//	fill(u32 *p, u32 v, u32 n): p[i] = v + i for every i < n, one thread each.
//	empty():                    does nothing (launch-overhead benchmarks).
//	spin(u64 cycles):           busy-waits that many SM clock cycles.
const testPTX = `.version 7.8
.target sm_80
.address_size 64

.visible .entry fill(
	.param .u64 fill_p,
	.param .u32 fill_v,
	.param .u32 fill_n
)
{
	.reg .pred	%p<2>;
	.reg .b32	%r<8>;
	.reg .b64	%rd<5>;

	ld.param.u64	%rd1, [fill_p];
	ld.param.u32	%r1, [fill_v];
	ld.param.u32	%r2, [fill_n];
	mov.u32		%r3, %ctaid.x;
	mov.u32		%r4, %ntid.x;
	mov.u32		%r5, %tid.x;
	mad.lo.u32	%r6, %r3, %r4, %r5;
	setp.ge.u32	%p1, %r6, %r2;
	@%p1 bra	FILL_DONE;
	cvta.to.global.u64	%rd2, %rd1;
	mul.wide.u32	%rd3, %r6, 4;
	add.s64		%rd4, %rd2, %rd3;
	add.u32		%r7, %r6, %r1;
	st.global.u32	[%rd4], %r7;
FILL_DONE:
	ret;
}

.visible .entry empty()
{
	ret;
}

.visible .entry spin(
	.param .u64 spin_cycles
)
{
	.reg .pred	%p<2>;
	.reg .b64	%rd<5>;

	ld.param.u64	%rd1, [spin_cycles];
	mov.u64		%rd2, %clock64;
SPIN_LOOP:
	mov.u64		%rd3, %clock64;
	sub.s64		%rd4, %rd3, %rd2;
	setp.lt.u64	%p1, %rd4, %rd1;
	@%p1 bra	SPIN_LOOP;
	ret;
}
`

// brokenPTX must fail the JIT with a log line about the bogus instruction.
const brokenPTX = `.version 7.8
.target sm_80
.address_size 64

.visible .entry broken()
{
	not_an_instruction.u32 %r1;
	ret;
}
`

// gpu is the device every GPU test shares: device 0 and its primary
// context, retained once per test binary and released by TestMain.
var gpu struct {
	once sync.Once
	dev  Device
	ctx  Context
	err  error
}

func openGPU() (Device, Context, error) {
	if err := Load(); err != nil {
		return 0, 0, fmt.Errorf("load libcuda: %w", err)
	}
	if err := Init(); err != nil {
		return 0, 0, err
	}
	n, err := DeviceCount()
	if err != nil {
		return 0, 0, err
	}
	if n == 0 {
		return 0, 0, errors.New("cuInit succeeded but cuDeviceGetCount found no device")
	}
	dev, err := DeviceGet(0)
	if err != nil {
		return 0, 0, err
	}
	ctx, err := dev.PrimaryCtxRetain()
	if err != nil {
		return 0, 0, err
	}
	return dev, ctx, nil
}

// needGPU returns device 0 and its primary context, or skips (fails under
// HIPGO_REQUIRE_GPU=1) with the reason the GPU is unusable.
func needGPU(tb testing.TB) (Device, Context) {
	tb.Helper()
	gpu.once.Do(func() { gpu.dev, gpu.ctx, gpu.err = openGPU() })
	testenv.NeedGPU(tb, gpu.err)
	return gpu.dev, gpu.ctx
}

func TestMain(m *testing.M) {
	code := m.Run()
	if gpu.ctx != 0 {
		if err := gpu.dev.PrimaryCtxRelease(); err != nil {
			fmt.Fprintln(os.Stderr, "release primary context:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// lockGPU locks the test's goroutine to the shared context; the returned
// function undoes it (defer it).
func lockGPU(tb testing.TB) (Device, Context, func()) {
	tb.Helper()
	dev, ctx := needGPU(tb)
	require.NoError(tb, ctx.Lock())
	return dev, ctx, ctx.Unlock
}

// testKernels loads testPTX; the caller defers the returned unload.
func testKernels(tb testing.TB) (Module, func()) {
	tb.Helper()
	m, info, err := ModuleLoadDataEx([]byte(testPTX))
	require.NoError(tb, err)
	if info != "" {
		tb.Logf("JIT info log: %s", info)
	}
	return m, func() { require.NoError(tb, m.Unload()) }
}

func newStream(tb testing.TB) (Stream, func()) {
	tb.Helper()
	s, err := StreamCreate(StreamNonBlocking)
	require.NoError(tb, err)
	return s, func() { require.NoError(tb, s.Destroy()) }
}

// launchFill launches fill over n elements through kernelParams, with the
// argument values and the pointer array pinned for the call.
func launchFill(f Function, s Stream, block Dim3, p DevicePtr, v, n uint32) error {
	args := &struct {
		p    DevicePtr
		v, n uint32
	}{p, v, n}
	params := &[3]unsafe.Pointer{unsafe.Pointer(&args.p), unsafe.Pointer(&args.v), unsafe.Pointer(&args.n)}
	var pin runtime.Pinner
	pin.Pin(args)
	pin.Pin(params)
	defer pin.Unpin()
	grid := Dim3{X: (n + block.X - 1) / block.X, Y: 1, Z: 1}
	return LaunchKernel(f, grid, block, 0, s, unsafe.Pointer(&params[0]), nil)
}

// checkFill reads count words at p and checks that the first n are v+i and
// the rest hold guard.
func checkFill(t *testing.T, p DevicePtr, v, n, count, guard uint32) {
	t.Helper()
	host := make([]byte, 4*count)
	require.NoError(t, MemcpyDtoH(host, p))
	bad := 0
	for i := range count {
		got := binary.LittleEndian.Uint32(host[4*i:])
		want := guard
		if i < n {
			want = v + i
		}
		if got != want {
			if bad < 5 {
				t.Errorf("element %d = %#x, want %#x", i, got, want)
			}
			bad++
		}
	}
	require.Zero(t, bad, "%d of %d elements wrong", bad, count)
}

// TestGPUDeviceAttributes proves the device queries return plausible values
// (not hard-coded to the H200) and logs them.
func TestGPUDeviceAttributes(t *testing.T) {
	dev, ctx, unlock := lockGPU(t)
	defer unlock()

	ver, err := DriverVersion()
	require.NoError(t, err)
	require.GreaterOrEqual(t, ver, 12000)
	name, err := dev.Name()
	require.NoError(t, err)
	require.NotEmpty(t, name)
	major, minor, err := dev.ComputeCapability()
	require.NoError(t, err)
	require.GreaterOrEqual(t, major, 5)
	sms, err := dev.Attribute(MultiprocessorCount)
	require.NoError(t, err)
	require.Positive(t, sms)
	warp, err := dev.Attribute(WarpSize)
	require.NoError(t, err)
	require.Equal(t, 32, warp)
	maxThreads, err := dev.Attribute(MaxThreadsPerBlock)
	require.NoError(t, err)
	require.GreaterOrEqual(t, maxThreads, 512)
	total, err := dev.TotalMem()
	require.NoError(t, err)
	require.Greater(t, total, uint64(1<<30))
	free, total2, err := MemGetInfo()
	require.NoError(t, err)
	require.Equal(t, total, total2)
	require.LessOrEqual(t, free, total)

	cur, err := CurrentContext()
	require.NoError(t, err)
	require.Equal(t, ctx, cur, "Lock made the primary context current")
	ctxDev, err := CtxGetDevice()
	require.NoError(t, err)
	require.Equal(t, dev, ctxDev)
	flags, active, err := dev.PrimaryCtxState()
	require.NoError(t, err)
	require.True(t, active)

	t.Logf("library %s, driver %d, device %d %q, sm_%d%d, %d SMs, warp %d, %d threads/block, %d MiB (%d MiB free), primary ctx flags %#x",
		LibraryPath(), ver, dev, name, major, minor, sms, warp, maxThreads, total>>20, free>>20, flags)
	for _, a := range []struct {
		name string
		attr Attribute
	}{
		{"MaxBlockDimX", MaxBlockDimX}, {"MaxGridDimX", MaxGridDimX}, {"MaxGridDimY", MaxGridDimY},
		{"MaxSharedMemoryPerBlock", MaxSharedMemoryPerBlock}, {"MaxSharedMemoryPerBlockOptin", MaxSharedMemoryPerBlockOptin},
		{"ClockRate kHz", ClockRate}, {"MemoryClockRate kHz", MemoryClockRate}, {"GlobalMemoryBusWidth", GlobalMemoryBusWidth},
		{"L2CacheSize", L2CacheSize}, {"MaxThreadsPerMultiprocessor", MaxThreadsPerMultiprocessor},
		{"PciBusID", PciBusID}, {"ManagedMemory", ManagedMemory}, {"MemoryPoolsSupported", MemoryPoolsSupported},
	} {
		v, err := dev.Attribute(a.attr)
		if err != nil {
			t.Logf("attribute %s (%d): %v", a.name, a.attr, err)
			continue
		}
		t.Logf("attribute %s (%d) = %d", a.name, a.attr, v)
	}
	_, err = dev.Attribute(Attribute(100000))
	require.ErrorIs(t, err, ErrInvalidValue, "an unknown attribute is rejected")
}

// TestGPUMemoryRoundTrip proves 256 MiB of random bytes survive HtoD, DtoD
// and DtoH, and that memsets and pinned-host async copies land where asked.
func TestGPUMemoryRoundTrip(t *testing.T) {
	_, _, unlock := lockGPU(t)
	defer unlock()
	const size = 256 << 20

	src := make([]byte, size)
	rng := rand.New(rand.NewPCG(0x5eed, uint64(time.Now().UnixNano())))
	for i := 0; i < size; i += 8 {
		binary.LittleEndian.PutUint64(src[i:], rng.Uint64())
	}
	a, err := MemAlloc(size)
	require.NoError(t, err)
	defer func() { require.NoError(t, MemFree(a)) }()
	b, err := MemAlloc(size)
	require.NoError(t, err)
	defer func() { require.NoError(t, MemFree(b)) }()
	require.NotEqual(t, a, b)

	start := time.Now()
	require.NoError(t, MemcpyHtoD(a, src))
	htod := time.Since(start)
	require.NoError(t, MemsetD8(b, 0, size))
	start = time.Now()
	require.NoError(t, MemcpyDtoD(b, a, size))
	require.NoError(t, CtxSynchronize())
	dtod := time.Since(start)
	dst := make([]byte, size)
	start = time.Now()
	require.NoError(t, MemcpyDtoH(dst, b))
	dtoh := time.Since(start)
	require.True(t, bytes.Equal(src, dst), "256 MiB round trip differs")
	gbps := func(d time.Duration) float64 { return float64(size) / d.Seconds() / 1e9 }
	t.Logf("256 MiB: HtoD %v (%.1f GB/s pageable), DtoD %v, DtoH %v (%.1f GB/s pageable)",
		htod, gbps(htod), dtod, dtoh, gbps(dtoh))

	// Memsets on a sub-range: only the range changes.
	require.NoError(t, MemsetD32(b+16, 0xA5A5F00D, 4))
	require.NoError(t, MemsetD8(b+40, 0x7E, 3))
	head := make([]byte, 64)
	require.NoError(t, MemcpyDtoH(head, b))
	want := bytes.Clone(src[:64])
	for i := range 4 {
		binary.LittleEndian.PutUint32(want[16+4*i:], 0xA5A5F00D)
	}
	copy(want[40:43], []byte{0x7E, 0x7E, 0x7E})
	require.Equal(t, want, head)

	// Async copies through page-locked host memory, and async memsets.
	s, destroy := newStream(t)
	defer destroy()
	const small = 1 << 20
	pinned, err := MemHostAlloc(small, HostAllocPortable)
	require.NoError(t, err)
	defer func() { require.NoError(t, MemFreeHost(pinned)) }()
	staging, err := MemAllocHost(small)
	require.NoError(t, err)
	defer func() { require.NoError(t, MemFreeHost(staging)) }()
	in := unsafe.Slice((*byte)(pinned), small)
	out := unsafe.Slice((*byte)(staging), small)
	copy(in, src[:small])
	require.NoError(t, MemcpyHtoDAsync(a, pinned, small, s))
	require.NoError(t, MemsetD32Async(a, 0x01020304, 2, s))
	require.NoError(t, MemsetD8Async(a+8, 0xFF, 1, s))
	require.NoError(t, MemcpyDtoHAsync(staging, a, small, s))
	require.NoError(t, s.Synchronize())
	want = bytes.Clone(src[:small])
	binary.LittleEndian.PutUint32(want[0:], 0x01020304)
	binary.LittleEndian.PutUint32(want[4:], 0x01020304)
	want[8] = 0xFF
	require.True(t, bytes.Equal(want, out), "async round trip through pinned memory differs")
}

// TestGPUModuleLaunchFill proves a hand-written PTX kernel loads, reports its
// attributes, and writes every element when launched through kernelParams
// and through the extra buffer, and not one element past n.
func TestGPUModuleLaunchFill(t *testing.T) {
	_, _, unlock := lockGPU(t)
	defer unlock()
	m, unload := testKernels(t)
	defer unload()
	f, err := m.Function("fill")
	require.NoError(t, err)
	maxThreads, err := f.Attribute(FuncMaxThreadsPerBlock)
	require.NoError(t, err)
	require.GreaterOrEqual(t, maxThreads, 256)
	regs, err := f.Attribute(FuncNumRegs)
	require.NoError(t, err)
	ptxVer, err := f.Attribute(FuncPtxVersion)
	require.NoError(t, err)
	require.Positive(t, ptxVer)
	binVer, err := f.Attribute(FuncBinaryVersion)
	require.NoError(t, err)
	t.Logf("fill: %d max threads/block, %d registers, PTX version attribute %d, binary version %d", maxThreads, regs, ptxVer, binVer)

	s, destroy := newStream(t)
	defer destroy()
	const n, count, guard = 1<<20 + 123, 1<<20 + 256, 0xDEADBEEF // n is not a multiple of the block
	p, err := MemAlloc(4 * count)
	require.NoError(t, err)
	defer func() { require.NoError(t, MemFree(p)) }()

	require.NoError(t, MemsetD32(p, guard, count))
	require.NoError(t, launchFill(f, s, Dim3{256, 1, 1}, p, 1000, n))
	require.NoError(t, s.Synchronize())
	checkFill(t, p, 1000, n, count, guard)

	// The same launch through extra: one buffer laid out as the parameters
	// are, (0,8) (8,4) (12,4).
	require.NoError(t, MemsetD32(p, guard, count))
	buf := &[16]byte{}
	binary.LittleEndian.PutUint64(buf[0:], uint64(p))
	binary.LittleEndian.PutUint32(buf[8:], 7)
	binary.LittleEndian.PutUint32(buf[12:], n-100)
	size := new(uintptr)
	*size = uintptr(len(buf))
	extra := &[5]uintptr{LaunchParamBufferPointer, uintptr(unsafe.Pointer(buf)), LaunchParamBufferSize, uintptr(unsafe.Pointer(size)), LaunchParamEnd}
	var pin runtime.Pinner
	pin.Pin(buf)
	pin.Pin(size)
	pin.Pin(extra)
	err = LaunchKernel(f, Dim3{(n + 127) / 128, 1, 1}, Dim3{128, 1, 1}, 0, s, nil, unsafe.Pointer(&extra[0]))
	pin.Unpin()
	require.NoError(t, err)
	require.NoError(t, s.Synchronize())
	checkFill(t, p, 7, n-100, count, guard)

	done, err := s.Query()
	require.NoError(t, err)
	require.True(t, done)
}

// TestGPUMissingKernel proves a name the module lacks is CUDA_ERROR_NOT_FOUND
// and the error names the kernel.
func TestGPUMissingKernel(t *testing.T) {
	_, _, unlock := lockGPU(t)
	defer unlock()
	m, unload := testKernels(t)
	defer unload()
	_, err := m.Function("no_such_kernel")
	require.ErrorIs(t, err, ErrNotFound)
	require.Contains(t, err.Error(), "no_such_kernel")
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "cuModuleGetFunction", e.Call)
	t.Logf("missing kernel: %v", err)
}

// TestGPUInvalidPTXCarriesJITLog proves a JIT failure is
// CUDA_ERROR_INVALID_PTX and the error carries the compiler's log.
func TestGPUInvalidPTXCarriesJITLog(t *testing.T) {
	_, _, unlock := lockGPU(t)
	defer unlock()
	m, err := ModuleLoadData([]byte(brokenPTX))
	require.Zero(t, m)
	require.ErrorIs(t, err, ErrInvalidPtx)
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "cuModuleLoadDataEx", e.Call)
	require.NotEmpty(t, e.Log, "the JIT error log reached the error")
	require.Contains(t, err.Error(), e.Log)
	t.Logf("JIT failure: %v", err)
}

// TestGPUParamInfo proves cuFuncGetParamInfo reports fill's layout (u64,
// u32, u32 at (0,8) (8,4) (12,4)), that probing stops at the first index past
// the end, and that a kernel without parameters has none.
func TestGPUParamInfo(t *testing.T) {
	_, _, unlock := lockGPU(t)
	defer unlock()
	if !ParamInfoSupported() {
		ver, err := DriverVersion()
		testenv.NeedGPU(t, fmt.Errorf("driver %d (err %v) lacks cuFuncGetParamInfo (needs 12.4)", ver, err))
	}
	m, unload := testKernels(t)
	defer unload()
	f, err := m.Function("fill")
	require.NoError(t, err)
	ps, err := f.Params()
	require.NoError(t, err)
	require.Equal(t, []Param{{0, 8}, {8, 4}, {12, 4}}, ps)
	_, err = f.ParamInfo(3)
	require.ErrorIs(t, err, ErrInvalidValue)
	e, err := m.Function("empty")
	require.NoError(t, err)
	ps, err = e.Params()
	require.NoError(t, err)
	require.Empty(t, ps)
	t.Logf("fill params %v", []Param{{0, 8}, {8, 4}, {12, 4}})
}

// TestGPUOversizedBlockRejected proves a block above the device limit is
// rejected synchronously as CUDA_ERROR_INVALID_VALUE from cuLaunchKernel, is
// not sticky, and the next launch on the same stream works.
func TestGPUOversizedBlockRejected(t *testing.T) {
	dev, _, unlock := lockGPU(t)
	defer unlock()
	m, unload := testKernels(t)
	defer unload()
	f, err := m.Function("fill")
	require.NoError(t, err)
	s, destroy := newStream(t)
	defer destroy()
	const n = 4096
	p, err := MemAlloc(4 * n)
	require.NoError(t, err)
	defer func() { require.NoError(t, MemFree(p)) }()

	limit, err := dev.Attribute(MaxThreadsPerBlock)
	require.NoError(t, err)
	require.Less(t, limit, 2048)
	err = launchFill(f, s, Dim3{2048, 1, 1}, p, 1, n)
	require.ErrorIs(t, err, ErrInvalidValue)
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "cuLaunchKernel", e.Call)
	require.Equal(t, "CUDA_ERROR_INVALID_VALUE", e.Code.Name())
	require.False(t, e.Code.Sticky())
	t.Logf("block 2048 > %d: %v", limit, err)

	require.NoError(t, launchFill(f, s, Dim3{1024, 1, 1}, p, 42, n))
	require.NoError(t, s.Synchronize())
	checkFill(t, p, 42, n, n, 0)
}

// TestGPUQueriesReportPending proves Stream.Query and Event.Query answer
// (false, nil) while a kernel runs and (true, nil) once it finished.
func TestGPUQueriesReportPending(t *testing.T) {
	_, _, unlock := lockGPU(t)
	defer unlock()
	m, unload := testKernels(t)
	defer unload()
	spin, err := m.Function("spin")
	require.NoError(t, err)
	s, destroy := newStream(t)
	defer destroy()
	ev, err := EventCreate(EventDisableTiming)
	require.NoError(t, err)
	defer func() { require.NoError(t, ev.Destroy()) }()

	cycles := new(uint64)
	*cycles = 200_000_000 // about 0.1 s at 2 GHz, longer at idle clocks
	params := &[1]unsafe.Pointer{unsafe.Pointer(cycles)}
	var pin runtime.Pinner
	pin.Pin(cycles)
	pin.Pin(params)
	err = LaunchKernel(spin, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, s, unsafe.Pointer(&params[0]), nil)
	pin.Unpin()
	require.NoError(t, err)
	require.NoError(t, ev.Record(s))
	sdone, serr := s.Query()
	edone, eerr := ev.Query()
	require.NoError(t, serr)
	require.NoError(t, eerr)
	require.False(t, sdone, "stream busy with spin")
	require.False(t, edone, "event behind spin")
	start := time.Now()
	require.NoError(t, ev.Synchronize())
	t.Logf("spin finished %v after the queries", time.Since(start))
	sdone, serr = s.Query()
	edone, eerr = ev.Query()
	require.NoError(t, serr)
	require.NoError(t, eerr)
	require.True(t, sdone)
	require.True(t, edone)
}

// TestGPUEventElapsedTime proves timing events measure a positive time
// around a launch, and that an event without timing cannot be timed.
func TestGPUEventElapsedTime(t *testing.T) {
	_, _, unlock := lockGPU(t)
	defer unlock()
	m, unload := testKernels(t)
	defer unload()
	f, err := m.Function("fill")
	require.NoError(t, err)
	s, destroy := newStream(t)
	defer destroy()
	const n = 64 << 20
	p, err := MemAlloc(4 * n)
	require.NoError(t, err)
	defer func() { require.NoError(t, MemFree(p)) }()
	start, err := EventCreate(EventDefault)
	require.NoError(t, err)
	defer func() { require.NoError(t, start.Destroy()) }()
	end, err := EventCreate(EventBlockingSync)
	require.NoError(t, err)
	defer func() { require.NoError(t, end.Destroy()) }()
	untimed, err := EventCreate(EventDisableTiming)
	require.NoError(t, err)
	defer func() { require.NoError(t, untimed.Destroy()) }()

	require.NoError(t, start.Record(s))
	require.NoError(t, launchFill(f, s, Dim3{256, 1, 1}, p, 3, n))
	require.NoError(t, end.Record(s))
	require.NoError(t, untimed.Record(s))
	require.NoError(t, end.Synchronize())
	require.NoError(t, untimed.Synchronize())
	ms, err := EventElapsedTime(start, end)
	require.NoError(t, err)
	require.Greater(t, ms, float32(0))
	t.Logf("fill of %d MiB: %.3f ms (%.0f GB/s written)", 4*n>>20, ms, 4*n/(float64(ms)/1e3)/1e9)
	_, err = EventElapsedTime(start, untimed)
	var e *Error
	require.ErrorAs(t, err, &e, "an event created with EventDisableTiming cannot be timed")
	t.Logf("timing an untimed event: %v", err)
}

// TestGPUErrorNamesMatchDriver proves every code of the table has the name
// the driver's cuGetErrorName gives it, reports codes the driver does not
// know, and logs codes the driver knows that the 13.0 header does not.
func TestGPUErrorNamesMatchDriver(t *testing.T) {
	needGPU(t)
	ver, err := DriverVersion()
	require.NoError(t, err)
	agree := 0
	var unknown []string
	for _, e := range codeTable {
		name, err := ErrorName(e.code)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidValue, "%s", e.name)
			unknown = append(unknown, e.code.Error())
			continue
		}
		if name != e.name {
			t.Errorf("code %d: table says %s, driver says %s", e.code, e.name, name)
			continue
		}
		desc, err := ErrorString(e.code)
		require.NoError(t, err, "%s", e.name)
		require.NotEmpty(t, desc, "%s", e.name)
		agree++
	}
	var extra []string
	for c := Code(0); c < 1100; c++ {
		if c.Known() {
			continue
		}
		if name, err := ErrorName(c); err == nil {
			extra = append(extra, fmt.Sprintf("%s=%d", name, c))
		}
	}
	t.Logf("cuGetErrorName agrees on %d codes (driver %d)", agree, ver)
	if len(extra) > 0 {
		t.Logf("driver knows codes the CUDA 13.0 header lacks: %v", extra)
	}
	if len(unknown) > 0 {
		msg := fmt.Sprintf("driver %d does not know %d table codes: %v", ver, len(unknown), unknown)
		if ver >= 13000 {
			t.Error(msg) // a 13.0 driver must know every code of the 13.0 header
		} else {
			t.Log(msg)
		}
	}
	desc, err := ErrorString(ErrIllegalAddress)
	require.NoError(t, err)
	t.Logf("cuGetErrorString(700) = %q", desc)
}
