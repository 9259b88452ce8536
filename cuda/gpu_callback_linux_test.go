//go:build linux

package cuda

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestGPUCallbacksRunOnDriverThread proves both callback kinds arrive in Go
// within 1 s, on a driver thread (another OS thread than the caller's locked
// one), with status Success for the stream callback, and leave nothing
// registered behind.
func TestGPUCallbacksRunOnDriverThread(t *testing.T) {
	_, _, unlock := lockGPU(t)
	defer unlock()
	s, destroy := newStream(t)
	defer destroy()
	callerTid := syscall.Gettid() // stable: the goroutine is locked to its thread
	hostBefore, streamBefore := hostFuncs.pending(), streamCallbacks.pending()

	hostTid := make(chan int, 1)
	type delivery struct {
		tid    int
		status Code
	}
	streamDone := make(chan delivery, 1)
	start := time.Now()
	require.NoError(t, LaunchHostFunc(s, func() { hostTid <- syscall.Gettid() }))
	require.NoError(t, StreamAddCallback(s, func(status Code) { streamDone <- delivery{syscall.Gettid(), status} }))

	select {
	case tid := <-hostTid:
		require.NotEqual(t, callerTid, tid, "host func ran on the caller's thread")
		t.Logf("cuLaunchHostFunc callback after %v on thread %d (caller %d)", time.Since(start), tid, callerTid)
	case <-time.After(time.Second):
		t.Fatal("cuLaunchHostFunc callback did not arrive within 1 s")
	}
	select {
	case d := <-streamDone:
		require.NotEqual(t, callerTid, d.tid, "stream callback ran on the caller's thread")
		require.Equal(t, Success, d.status)
		t.Logf("cuStreamAddCallback callback after %v on thread %d, status %v", time.Since(start), d.tid, d.status)
	case <-time.After(time.Second):
		t.Fatal("cuStreamAddCallback callback did not arrive within 1 s")
	}
	require.NoError(t, s.Synchronize())
	require.Equal(t, hostBefore, hostFuncs.pending())
	require.Equal(t, streamBefore, streamCallbacks.pending())
}
