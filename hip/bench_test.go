package hip

import (
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/require"
)

// BenchmarkCallPaths compares the two ways this package calls C, on real
// library functions that work without a GPU: purego.RegisterFunc (a
// reflect-built Go func, used for most bindings) against purego.SyscallN on
// the raw address (used for the hot calls: hipModuleLaunchKernel,
// hipEventRecord, hipEventQuery, hipStreamQuery).
//
// hipGetErrorName is a table lookup inside the library (~0.1 µs), so its
// numbers are the binding's own overhead. hipPeekAtLastError and
// hipGetDeviceCount enter HIP's API prologue, which without a GPU retries
// HSA initialisation on every call, so there the library's time dominates.
func BenchmarkCallPaths(b *testing.B) {
	if err := Load(); err != nil {
		b.Skipf("libamdhip64 not loadable: %v", err)
	}
	a, err := get()
	require.NoError(b, err)
	sym := func(name string) uintptr {
		addr, err := a.lib.Sym(name)
		require.NoError(b, err)
		return addr
	}
	nameAddr, peekAddr, countAddr := sym("hipGetErrorName"), sym("hipPeekAtLastError"), sym("hipGetDeviceCount")
	var name func(Code) uintptr // const char*, not copied, to time the call alone
	purego.RegisterFunc(&name, nameAddr)
	var peek func() Code
	purego.RegisterFunc(&peek, peekAddr)
	var count func(*int32) Code
	purego.RegisterFunc(&count, countAddr)

	b.Run("RegisterFunc/hipGetErrorName", func(b *testing.B) {
		for b.Loop() {
			_ = name(ErrIllegalAddress)
		}
	})
	b.Run("SyscallN/hipGetErrorName", func(b *testing.B) {
		for b.Loop() {
			purego.SyscallN(nameAddr, uintptr(ErrIllegalAddress))
		}
	})
	b.Run("RegisterFunc/hipPeekAtLastError", func(b *testing.B) {
		for b.Loop() {
			_ = peek()
		}
	})
	b.Run("SyscallN/hipPeekAtLastError", func(b *testing.B) {
		for b.Loop() {
			purego.SyscallN(peekAddr)
		}
	})
	b.Run("RegisterFunc/hipGetDeviceCount", func(b *testing.B) {
		var n int32
		for b.Loop() {
			_ = count(&n)
		}
	})
	b.Run("SyscallN/hipGetDeviceCount", func(b *testing.B) {
		var n int32
		for b.Loop() {
			purego.SyscallN(countAddr, uintptr(unsafe.Pointer(&n)))
		}
	})
}

// BenchmarkOnDevice measures the per-call cost of the threading model (lock
// the OS thread, hipGetDevice, no hipSetDevice when already current, unlock)
// on device 0. It needs a GPU: without one hipGetDevice fails.
func BenchmarkOnDevice(b *testing.B) {
	if err := Init(); err != nil {
		b.Skipf("no usable GPU: %v", err)
	}
	for b.Loop() {
		release, err := OnDevice(0)
		if err != nil {
			b.Fatal(err)
		}
		release()
	}
}
