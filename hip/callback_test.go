package hip

import (
	"testing"

	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/require"
)

// TestCallbackTrampolinesOneShot proves the C-callable trampolines route a
// handle to its Go func exactly once: invoked through their C addresses
// (as the runtime would), a second call with the same handle does nothing,
// and the table is empty afterwards.
func TestCallbackTrampolinesOneShot(t *testing.T) {
	initTrampolines()
	require.NotZero(t, trampolines.streamCB)
	require.NotZero(t, trampolines.hostFn)

	var statuses []Code
	h := register(func(c Code) { statuses = append(statuses, c) })
	// hipStreamCallback_t(stream, status, userData); HIP passes hipSuccess.
	purego.SyscallN(trampolines.streamCB, 0, uintptr(Success), h)
	purego.SyscallN(trampolines.streamCB, 0, uintptr(Success), h)
	require.Equal(t, []Code{Success}, statuses)

	// The status argument is passed through as the C int it is, sign included.
	h = register(func(c Code) { statuses = append(statuses, c) })
	minus1 := int32(-1)
	purego.SyscallN(trampolines.streamCB, 0, uintptr(uint32(minus1)), h)
	require.Equal(t, []Code{Success, -1}, statuses)

	ran := 0
	h = register(func() { ran++ })
	purego.SyscallN(trampolines.hostFn, h)
	purego.SyscallN(trampolines.hostFn, h)
	require.Equal(t, 1, ran)

	// A handle of the wrong kind or an unknown one is ignored, not a panic.
	h = register(func() { ran++ })
	purego.SyscallN(trampolines.streamCB, 0, 0, h)
	purego.SyscallN(trampolines.hostFn, 1<<40)
	require.Equal(t, 1, ran)
	require.Zero(t, pendingCallbacks())
}

// TestCallbackNil proves a nil func is refused before anything is enqueued.
func TestCallbackNil(t *testing.T) {
	require.ErrorIs(t, StreamAddCallback(0, nil), errNilCallback)
	require.ErrorIs(t, LaunchHostFunc(0, nil), errNilCallback)
}
