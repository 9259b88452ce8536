package cuda

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCallbackHandlesFireOnceConcurrently proves, by calling the trampolines'
// Go side the way driver threads would (many at once, each handle delivered
// twice), that each registered callback runs exactly once with its own status
// and is removed from the table. Run it under -race.
func TestCallbackHandlesFireOnceConcurrently(t *testing.T) {
	const goroutines, perGoroutine = 16, 64
	hostBefore, streamBefore := hostFuncs.pending(), streamCallbacks.pending()

	var hostRuns, streamRuns [goroutines * perGoroutine]atomic.Int32
	var statuses [goroutines * perGoroutine]atomic.Int32
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perGoroutine {
				k := g*perGoroutine + i
				hh := hostFuncs.add(func() { hostRuns[k].Add(1) })
				sh := streamCallbacks.add(func(c Code) { streamRuns[k].Add(1); statuses[k].Store(int32(c)) })
				status := int32(k % 1000)
				var fire sync.WaitGroup
				for range 2 { // a duplicate delivery must not run the callback twice
					fire.Add(1)
					go func() {
						defer fire.Done()
						hostFuncTrampoline(hh)
						streamCallbackTrampoline(0, status, sh)
					}()
				}
				fire.Wait()
			}
		}()
	}
	wg.Wait()
	for k := range hostRuns {
		require.EqualValues(t, 1, hostRuns[k].Load(), "host func %d", k)
		require.EqualValues(t, 1, streamRuns[k].Load(), "stream callback %d", k)
		require.EqualValues(t, k%1000, statuses[k].Load(), "status of callback %d", k)
	}
	require.Equal(t, hostBefore, hostFuncs.pending())
	require.Equal(t, streamBefore, streamCallbacks.pending())
}

// TestCallbackEnqueueFailureForgetsHandle proves that when the driver refuses
// the enqueue, the handle is removed (no leak) and a stray delivery of it
// does not run the callback.
func TestCallbackEnqueueFailureForgetsHandle(t *testing.T) {
	before := hostFuncs.pending()
	ran := false
	var handle uintptr
	err := hostFuncs.enqueue(func() { ran = true }, func(h uintptr) error {
		handle = h
		require.Equal(t, before+1, hostFuncs.pending(), "registered before the driver sees it")
		return &Error{Call: "cuLaunchHostFunc", Code: ErrIllegalAddress}
	})
	require.ErrorIs(t, err, ErrIllegalAddress)
	require.NotZero(t, handle)
	require.Equal(t, before, hostFuncs.pending())
	hostFuncTrampoline(handle)
	require.False(t, ran)
}

// TestCallbackEnqueueSuccessWaitsForDriver proves a successfully enqueued
// callback stays registered until the driver calls back, then runs once, and
// that handles are distinct and never 0 (0 would read as NULL user data).
func TestCallbackEnqueueSuccessWaitsForDriver(t *testing.T) {
	before := streamCallbacks.pending()
	var got []Code
	var handles []uintptr
	for range 3 {
		require.NoError(t, streamCallbacks.enqueue(func(c Code) { got = append(got, c) }, func(h uintptr) error {
			handles = append(handles, h)
			return nil
		}))
	}
	require.Equal(t, before+3, streamCallbacks.pending())
	require.NotContains(t, handles, uintptr(0))
	require.Len(t, map[uintptr]bool{handles[0]: true, handles[1]: true, handles[2]: true}, 3)
	streamCallbackTrampoline(0, int32(ErrIllegalAddress), handles[1])
	streamCallbackTrampoline(0, int32(Success), handles[0])
	streamCallbackTrampoline(0, int32(Success), handles[2])
	streamCallbackTrampoline(0, int32(Success), handles[2])
	require.Equal(t, []Code{ErrIllegalAddress, Success, Success}, got)
	require.Equal(t, before, streamCallbacks.pending())
}

// TestCallbackUnknownHandleIsIgnored proves a delivery for a handle never
// issued (or NULL user data) does nothing.
func TestCallbackUnknownHandleIsIgnored(t *testing.T) {
	before := hostFuncs.pending()
	hostFuncTrampoline(0)
	hostFuncTrampoline(^uintptr(0))
	streamCallbackTrampoline(0, 0, 0)
	require.Equal(t, before, hostFuncs.pending())
}

// TestNilCallbackRejected proves nil callbacks fail before the driver (and
// before the trampolines) are needed, and register nothing.
func TestNilCallbackRejected(t *testing.T) {
	before := hostFuncs.pending() + streamCallbacks.pending()
	require.ErrorIs(t, LaunchHostFunc(0, nil), ErrInvalidValue)
	require.ErrorIs(t, StreamAddCallback(0, nil), ErrInvalidValue)
	require.Equal(t, before, hostFuncs.pending()+streamCallbacks.pending())
}
