//go:build linux || darwin

package cpu

import (
	"bytes"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// goid is the calling goroutine's id, from its stack header.
func goid() uint64 {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	buf = bytes.TrimPrefix(buf, []byte("goroutine "))
	id, _ := strconv.ParseUint(string(buf[:bytes.IndexByte(buf, ' ')]), 10, 64)
	return id
}

// TestForChunksHandsAHelpersFaultToItsCaller proves a memory fault in a
// loop body run by one of the pool's workers (here a read of an
// inaccessible page; in the model, weights read in place from a file
// truncated under it) does not end the process: ForChunks raises the same
// fault in its caller once every range is done, where the caller can
// recover it; and the pool keeps working.
func TestForChunksHandsAHelpersFaultToItsCaller(t *testing.T) {
	page, err := syscall.Mmap(-1, 0, 4096, syscall.PROT_NONE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(t, err)
	defer syscall.Munmap(page)

	p := NewPool(4)
	caller := goid()
	var done, helped atomic.Int32
	var got any
	func() {
		defer func() { got = recover() }()
		p.ForChunks(64, 64, 1, func(_, lo, hi int) {
			time.Sleep(100 * time.Microsecond) // let the helpers take ranges
			if goid() != caller {
				helped.Add(1)
				faultSink = page[lo] // faults: PROT_NONE
			}
			done.Add(int32(hi - lo))
		})
	}()
	require.Positive(t, helped.Load(), "no range ran on a helper")
	require.NotNil(t, got, "the helper's fault reached the caller")
	f, ok := got.(interface{ Addr() uintptr })
	require.True(t, ok, "a memory fault, with its address: %v", got)
	require.GreaterOrEqual(t, f.Addr(), unsafeAddr(page), "the fault is in the page")
	require.Less(t, f.Addr(), unsafeAddr(page)+4096, "the fault is in the page")

	// The caller's own faults, with SetPanicOnFault, are recoverable too.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	func() {
		defer func() { got = recover() }()
		p.ForChunks(1, 1, 1, func(_, lo, _ int) { faultSink = page[lo] })
	}()
	_, ok = got.(interface{ Addr() uintptr })
	require.True(t, ok, "%v", got)

	// The workers still run loops.
	var sum atomic.Int64
	p.For(1000, 8, 1, func(lo, hi int) { sum.Add(int64(hi - lo)) })
	require.EqualValues(t, 1000, sum.Load())
}
