package cuda

import (
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/require"
)

// BenchmarkCtxGetCurrent compares the two purego call paths on the same cheap
// driver call: the raw address through purego.SyscallN (how the hot calls are
// bound) and a purego.RegisterFunc function (reflection per call).
//
// Sub-benchmarks run on goroutines of their own, so each locks the context.
func BenchmarkCtxGetCurrent(b *testing.B) {
	needGPU(b)
	d, err := api()
	require.NoError(b, err)

	b.Run("SyscallN", func(b *testing.B) {
		_, _, unlock := lockGPU(b)
		defer unlock()
		b.ReportAllocs()
		for b.Loop() {
			var c Context
			r, _, _ := purego.SyscallN(d.cuCtxGetCurrent, uintptr(unsafe.Pointer(&c)))
			if result(r) != Success || c == 0 {
				b.Fatalf("cuCtxGetCurrent: %v, ctx %#x", result(r), c)
			}
		}
	})
	b.Run("RegisterFunc", func(b *testing.B) {
		_, _, unlock := lockGPU(b)
		defer unlock()
		var getCurrent func(*Context) Code
		purego.RegisterFunc(&getCurrent, d.cuCtxGetCurrent)
		b.ReportAllocs()
		for b.Loop() {
			var c Context
			if r := getCurrent(&c); r != Success || c == 0 {
				b.Fatalf("cuCtxGetCurrent: %v, ctx %#x", r, c)
			}
		}
	})
}

// BenchmarkContextLockUnlock measures the per-operation cost of the thread
// model: LockOSThread, cuCtxGetCurrent (the context is already current, so
// no cuCtxSetCurrent), UnlockOSThread.
func BenchmarkContextLockUnlock(b *testing.B) {
	_, ctx := needGPU(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := ctx.Lock(); err != nil {
			b.Fatal(err)
		}
		ctx.Unlock()
	}
}

// benchLaunch launches the empty kernel 1×1 on a stream b.N times, with or
// without a Lock/Unlock around each launch, then waits for the stream
// (included: the launches are asynchronous, so the time per launch is the
// issue rate the driver sustains).
func benchLaunch(b *testing.B, lockEach bool) {
	_, ctx := needGPU(b)
	require.NoError(b, ctx.Lock())
	m, unload := testKernels(b)
	f, err := m.Function("empty")
	require.NoError(b, err)
	s, destroy := newStream(b)
	ctx.Unlock()
	defer func() {
		require.NoError(b, ctx.Lock())
		defer ctx.Unlock()
		destroy()
		unload()
	}()

	one := Dim3{1, 1, 1}
	if !lockEach {
		require.NoError(b, ctx.Lock())
		defer ctx.Unlock()
	}
	b.ReportAllocs()
	for b.Loop() {
		if lockEach {
			if err := ctx.Lock(); err != nil {
				b.Fatal(err)
			}
		}
		err := LaunchKernel(f, one, one, 0, s, nil, nil)
		if lockEach {
			ctx.Unlock()
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if lockEach {
		require.NoError(b, ctx.Lock())
		defer ctx.Unlock()
	}
	require.NoError(b, s.Synchronize())
}

// BenchmarkLaunch: one empty 1×1 launch per iteration, each inside its own
// Lock/Unlock (what the runtime layer pays per launch). Compare with a C loop
// of cuLaunchKernel on one stream.
func BenchmarkLaunch(b *testing.B) { benchLaunch(b, true) }

// BenchmarkLaunchLocked: the same launches under one Lock around the loop.
func BenchmarkLaunchLocked(b *testing.B) { benchLaunch(b, false) }
