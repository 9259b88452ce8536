package runtime

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/kernels"
	"github.com/hipgo/hipgo/kernels/msl"
	"github.com/hipgo/hipgo/metal"
	"github.com/hipgo/hipgo/runtime/driver"
)

// TestMetalAddressesFindTheirBuffer: every address inside a buffer (its end
// included, for a zero-length view) finds it with the right offset; the gap
// after it, freed buffers and addresses below the base find nothing, and
// addresses are never handed out twice.
func TestMetalAddressesFindTheirBuffer(t *testing.T) {
	var a metalAddrSpace[string]
	p1 := a.add(100, "one")
	p2 := a.add(1<<20, "two")
	p3 := a.add(1, "three")
	require.EqualValues(t, metalAddrBase, p1)
	require.Greater(t, uint64(p2), uint64(p1)+100+metalAddrAlign-1, "a gap separates buffers")

	for _, c := range []struct {
		p      driver.Ptr
		n      uint64
		buf    string
		off    uint64
		inside bool
	}{
		{p1, 100, "one", 0, true},
		{p1 + 40, 60, "one", 40, true},
		{p1 + 100, 0, "one", 100, true},
		{p1 + 40, 61, "", 0, false},
		{p1 + 101, 0, "", 0, false},
		{p2 - 1, 0, "", 0, false},
		{p2 + 1<<19, 1 << 19, "two", 1 << 19, true},
		{p3, 1, "three", 0, true},
		{p1 - 1, 0, "", 0, false},
		{0, 0, "", 0, false},
	} {
		b, off, ok := a.find(c.p, c.n)
		require.Equal(t, c.inside, ok, "%#x+%d", uint64(c.p), c.n)
		require.Equal(t, c.buf, b)
		require.Equal(t, c.off, off)
	}
	_, ok := a.remove(p2 + 8)
	require.False(t, ok, "only a buffer's start frees it")
	b, ok := a.remove(p2)
	require.True(t, ok)
	require.Equal(t, "two", b)
	_, _, ok = a.find(p2, 0)
	require.False(t, ok, "a freed buffer's addresses are dead")
	p4 := a.add(8, "four")
	require.Greater(t, uint64(p4), uint64(p3), "addresses are not reused")
	b, _, ok = a.find(p3, 1)
	require.True(t, ok)
	require.Equal(t, "three", b)
}

// TestMetalArgsReadWhatStreamPackWrites packs the rejection kernel's
// arguments the way Stream.pack does (from the manifest's MSL kernel info)
// and reads them back by the MSL signature: pointers as addresses, values as
// their bytes, at the buffer index each binds.
func TestMetalArgsReadWhatStreamPackWrites(t *testing.T) {
	image, infos, err := kernels.Load("sampling", kernels.FormatMSL, "")
	require.NoError(t, err)
	sig, err := msl.Parse(image)
	require.NoError(t, err)
	k, ok := sig.Kernel("rejection_f32")
	require.True(t, ok)
	var spec KernelSpec
	for _, ki := range infos {
		if ki.Name == "rejection_f32" {
			spec = specFromInfo(ki)
		}
	}
	require.Len(t, spec.Params, len(k.Args))

	args := []any{DevicePtr(metalAddrBase + 16), uint32(3), uint32(1000), uint32(1024), DevicePtr(metalAddrBase + 1<<20),
		uint32(0xdeadbeef), uint32(7), uint32(32), DevicePtr(metalAddrBase), DevicePtr(metalAddrBase + 64), DevicePtr(0)}
	mem, err := hostAlloc(4096)
	require.NoError(t, err)
	defer func() { require.NoError(t, hostFree(mem)) }()
	s := &Stream{scratch: mem}
	params, err := s.pack(&Kernel{spec: spec}, args)
	require.NoError(t, err)

	got := metalArgs(params, k)
	require.Len(t, got, len(args))
	for i, a := range got {
		require.EqualValues(t, i, a.index)
		switch v := args[i].(type) {
		case DevicePtr:
			require.True(t, a.pointer, "argument %d", i)
			require.EqualValues(t, v, a.addr, "argument %d", i)
		case uint32:
			require.False(t, a.pointer, "argument %d", i)
			require.EqualValues(t, 4, a.size)
			require.Equal(t, v, binary.LittleEndian.Uint32(unsafe.Slice((*byte)(a.value), 4)), "argument %d", i)
		}
	}
	lengths, total := metalThreadgroups(k)
	require.Equal(t, []uint64{4096, 4096, 4096, 4096, 16}, lengths)
	require.EqualValues(t, 16400, total)
	g, _ := sig.Kernel("gumbel_max_f32")
	lengths, _ = metalThreadgroups(g)
	require.Equal(t, []uint64{2048, 2048, 16}, lengths, "Metal wants threadgroup lengths in multiples of 16")
}

// TestMetalForwardModuleBindsLikeTheSamplers: the forward module's MSL, as
// LoadModule hands it to the Metal adapter, gives every kernel the launch
// facts of its .cu twin (its block: 256 threads, 1024 for
// attention_gqa_f32; a larger launch exceeds it), and the arguments the GPU backend passes (matmul_bf16 without a
// bias: a null pointer; attention_f32's f32 scale last) read back at their
// buffer indices, with the threadgroup lengths Metal will set.
func TestMetalForwardModuleBindsLikeTheSamplers(t *testing.T) {
	image, infos, err := kernels.Load("forward", kernels.FormatMSL, "")
	require.NoError(t, err)
	sig, err := msl.Parse(image)
	require.NoError(t, err)
	// Every kernel of the CUDA/HIP source has its MSL twin, no more, with
	// the twin's block size (256 threads; attention_gqa_f32's 1024).
	_, ptxInfos, err := kernels.Load("forward", kernels.FormatPTX, "sm_90")
	require.NoError(t, err)
	var want, got []string
	ptxThreads := map[string]int{}
	for _, ki := range ptxInfos {
		want = append(want, ki.Name)
		ptxThreads[ki.Name] = specFromInfo(ki).MaxThreads
	}
	specs := map[string]KernelSpec{}
	for _, ki := range infos {
		specs[ki.Name] = specFromInfo(ki)
		require.Equal(t, ptxThreads[ki.Name], specs[ki.Name].MaxThreads, ki.Name)
	}
	require.Equal(t, 1024, specs["attention_gqa_f32"].MaxThreads)
	for name := range specs {
		got = append(got, name)
	}
	require.ElementsMatch(t, want, got)
	k, d := &Kernel{spec: specs["matmul_bf16"]}, &Device{}
	require.Empty(t, k.checkShape(d, LaunchConfig{Grid: Dim3{X: 1, Y: 1, Z: 1}, Block: Dim3{X: 256, Y: 1, Z: 1}}))
	require.Contains(t, k.checkShape(d, LaunchConfig{Grid: Dim3{X: 1, Y: 1, Z: 1}, Block: Dim3{X: 512, Y: 1, Z: 1}}), "exceeds the 256 the kernel was built for")

	mem, err := hostAlloc(4096)
	require.NoError(t, err)
	defer func() { require.NoError(t, hostFree(mem)) }()
	s := &Stream{scratch: mem}
	for _, c := range []struct {
		kernel string
		args   []any
		tg     []uint64
	}{
		{"matmul_bf16", []any{DevicePtr(metalAddrBase), DevicePtr(metalAddrBase + 1<<20), DevicePtr(metalAddrBase + 2<<20), DevicePtr(0),
			uint32(1), uint32(2048), uint32(128256), uint32(1)}, []uint64{4352, 4352}},
		{"attention_f32", []any{DevicePtr(metalAddrBase), DevicePtr(metalAddrBase + 64), DevicePtr(metalAddrBase + 128), DevicePtr(metalAddrBase + 192),
			DevicePtr(metalAddrBase + 256), DevicePtr(metalAddrBase + 320), DevicePtr(metalAddrBase + 384),
			uint32(4), uint32(16), uint32(3), uint32(32), uint32(8), uint32(64), uint32(3072), float32(0.125)}, []uint64{1024, 32, 32, 8192}},
		{"silu_mul_f32", []any{DevicePtr(metalAddrBase), DevicePtr(metalAddrBase + 64), uint32(7), uint32(8192)}, nil},
	} {
		mk, ok := sig.Kernel(c.kernel)
		require.True(t, ok, c.kernel)
		params, err := s.pack(&Kernel{spec: specs[c.kernel]}, c.args)
		require.NoError(t, err, c.kernel)
		got := metalArgs(params, mk)
		require.Len(t, got, len(c.args), c.kernel)
		for i, a := range got {
			require.EqualValues(t, i, a.index)
			switch v := c.args[i].(type) {
			case DevicePtr:
				require.True(t, a.pointer, "%s argument %d", c.kernel, i)
				require.EqualValues(t, v, a.addr, "%s argument %d", c.kernel, i)
			case uint32:
				require.False(t, a.pointer, "%s argument %d", c.kernel, i)
				require.Equal(t, v, binary.LittleEndian.Uint32(unsafe.Slice((*byte)(a.value), 4)), "%s argument %d", c.kernel, i)
			case float32:
				require.False(t, a.pointer, "%s argument %d", c.kernel, i)
				require.Equal(t, math.Float32bits(v), binary.LittleEndian.Uint32(unsafe.Slice((*byte)(a.value), 4)), "%s argument %d", c.kernel, i)
			}
		}
		lengths, _ := metalThreadgroups(mk)
		require.Equal(t, c.tg, lengths, c.kernel)
	}
}

// TestMetalErrorsSortIntoTheRuntimesClasses: a command buffer that faulted
// itself or lost the GPU loses the device; a timeout or short memory fails
// only the event; dispatches and arguments the adapter refuses are
// rejections; a missing function is not found.
func TestMetalErrorsSortIntoTheRuntimesClasses(t *testing.T) {
	cbErr := func(c metal.Code) error {
		return fmt.Errorf("stream: %w", &metal.Error{Call: "command buffer", Domain: metal.CommandBufferErrorDomain, Code: int64(c), Description: "x"})
	}
	for _, c := range []struct {
		err  error
		want driver.Class
	}{
		{cbErr(metal.ErrPageFault), driver.Fault},
		{cbErr(metal.ErrInvalidResource), driver.Fault},
		{cbErr(metal.ErrStackOverflow), driver.Fault},
		{cbErr(metal.ErrInternal), driver.Fault},
		{cbErr(metal.ErrAccessRevoked), driver.Fault},
		{cbErr(metal.ErrNotPermitted), driver.Fault},
		{cbErr(metal.ErrDeviceRemoved), driver.Fault},
		{cbErr(metal.Code(99)), driver.Fault},
		{cbErr(metal.ErrTimeout), driver.Other},
		{cbErr(metal.ErrMemoryless), driver.Other},
		{cbErr(metal.ErrOutOfMemory), driver.OutOfMemory},
		{fmt.Errorf("%w: %w", errMetalOutOfMemory, &metal.Error{Call: "newBufferWithLength:options:", Err: metal.ErrNilResult}), driver.OutOfMemory},
		{metal.CheckDispatch(metal.Size{Width: 2048, Height: 1, Depth: 1}, 0, 1024, 0, metal.Limits{}), driver.Rejected},
		{metalArgError("k", 2, "address %#x is inside no live buffer", 42), driver.Rejected},
		{&metal.Error{Call: "newFunctionWithName:", Err: metal.ErrNilResult}, driver.NotFound},
		{&metal.CompileError{Log: "error"}, driver.Other},
		{&metal.Error{Call: "newComputePipelineStateWithFunction:error:", Domain: "CompilerError", Code: 3}, driver.Other},
	} {
		require.Equal(t, c.want, classifyMetal(c.err), "%v", c.err)
	}
	require.Equal(t, "MTLCommandBufferErrorPageFault", faultKind(cbErr(metal.ErrPageFault)), "a fault names its kind for people")
}

// TestMetalCompletionsSettleEventsByTheirCommandBuffers drives a stream's
// completion record as Metal's handlers would, out of order: an event
// lands only when every command buffer up to its end has finished, fails
// with its window's first failure (and only its own window's), a
// notification runs once its work completed well and never after a
// failure, and a wait returns at the failure or the end.
func TestMetalCompletionsSettleEventsByTheirCommandBuffers(t *testing.T) {
	c := newMetalCompletions()
	require.NoError(t, c.query(0, 0), "an event over no command buffer has landed")
	require.ErrorIs(t, c.query(0, 2), driver.ErrNotReady)

	var ran []string
	require.False(t, c.notify(2, func() { ran = append(ran, "through 2") }))
	require.False(t, c.notify(4, func() { ran = append(ran, "through 4") }))

	ready, _ := c.finish(2, nil, 1.0, 1.5)
	require.Empty(t, ready, "2 finished before 1: nothing is through yet")
	require.ErrorIs(t, c.query(0, 2), driver.ErrNotReady)
	require.ErrorIs(t, c.query(1, 2), driver.ErrNotReady, "an event stands for all work before it, so window (1,2] waits for 1 too")
	ready, _ = c.finish(1, nil, 0.5, 0.9)
	for _, fn := range ready {
		fn()
	}
	require.Equal(t, []string{"through 2"}, ran)
	require.NoError(t, c.query(0, 2))

	fault := &metal.Error{Call: "command buffer", Domain: metal.CommandBufferErrorDomain, Code: int64(metal.ErrPageFault)}
	ready, _ = c.finish(3, fault, 2, 2.5)
	require.Empty(t, ready)
	ready, _ = c.finish(4, nil, 3, 3.5)
	require.Empty(t, ready, "a notification whose work failed never runs")
	require.ErrorIs(t, c.query(2, 4), metal.ErrPageFault)
	require.ErrorIs(t, c.query(0, 4), metal.ErrPageFault)
	require.NoError(t, c.query(3, 4), "a later window does not carry an earlier failure")
	require.NoError(t, c.query(0, 2), "nor an earlier window a later one")
	require.False(t, c.notify(4, func() { t.Fatal("ran after a failure") }))
	require.ErrorIs(t, c.wait(4), metal.ErrPageFault)

	d, err := c.elapsed(1, 2)
	require.NoError(t, err)
	require.Equal(t, time.Second, d, "from the first's start (0.5) to the last's end (1.5)")
	d, err = c.elapsed(3, 2)
	require.NoError(t, err)
	require.Zero(t, d)
	_, err = c.elapsed(1, 9)
	require.ErrorIs(t, err, errors.ErrUnsupported)
}

// TestMetalCompletionsFromForeignGoroutines: handlers finishing from many
// goroutines wake a waiter exactly when the last one lands, every due
// notification runs once, and the queue is released once, after the last
// command buffer in flight (run it under -race).
func TestMetalCompletionsFromForeignGoroutines(t *testing.T) {
	const n = 200
	c := newMetalCompletions()
	var runs atomic.Int64
	for i := uint64(1); i <= n; i += 10 {
		require.False(t, c.notify(i, func() { runs.Add(1) }))
	}
	require.False(t, c.releaseAfter(n))
	waited := make(chan error, 1)
	go func() { waited <- c.wait(n) }()
	var releases atomic.Int64
	var wg sync.WaitGroup
	for i := uint64(1); i <= n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ready, release := c.finish(n+1-i, nil, 0, 0)
			for _, fn := range ready {
				fn()
			}
			if release {
				releases.Add(1)
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-waited:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter was not woken")
	}
	require.EqualValues(t, n/10, runs.Load())
	require.EqualValues(t, 1, releases.Load())
	require.NoError(t, c.query(0, n))
	require.True(t, c.notify(n, func() {}), "work already done: the caller runs it")
	require.True(t, c.releaseAfter(n))
}

// TestMetalArgsMarkConstantSpacePointers: a constant-space pointer is bound
// as a buffer but flagged, so its offset can be held to macOS's 256-byte
// alignment; a device pointer and a constant value are not flagged.
func TestMetalArgsMarkConstantSpacePointers(t *testing.T) {
	m, err := msl.Parse([]byte(`kernel void k(constant float* table [[buffer(0)]], device float* out [[buffer(1)]],
		constant uint& n [[buffer(2)]]) {}`))
	require.NoError(t, err)
	addr0, addr1, n := uint64(metalAddrBase+256), uint64(metalAddrBase+4), uint32(9)
	params := []unsafe.Pointer{unsafe.Pointer(&addr0), unsafe.Pointer(&addr1), unsafe.Pointer(&n)}
	got := metalArgs(unsafe.Pointer(&params[0]), m.Kernels[0])
	require.True(t, got[0].pointer)
	require.True(t, got[0].constant)
	require.EqualValues(t, addr0, got[0].addr)
	require.True(t, got[1].pointer)
	require.False(t, got[1].constant)
	require.False(t, got[2].pointer)
	require.False(t, got[2].constant)
	require.Equal(t, n, *(*uint32)(got[2].value))
}
