package hip

import (
	"syscall"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/require"
)

// TestCallbackFromForeignThread proves the host-function trampoline works
// when C calls it on a thread Go did not create, which is where ROCr's
// completion thread calls it: libc's pthread_create starts the trampoline
// (hipHostFn_t has the shape of a start routine) with the handle as its
// argument.
func TestCallbackFromForeignThread(t *testing.T) {
	libc, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	require.NoError(t, err)
	var pthreadCreate func(tid *uint64, attr unsafe.Pointer, start, arg uintptr) int32
	var pthreadJoin func(tid uint64, ret unsafe.Pointer) int32
	purego.RegisterLibFunc(&pthreadCreate, libc, "pthread_create")
	purego.RegisterLibFunc(&pthreadJoin, libc, "pthread_join")

	initTrampolines()
	done := make(chan int, 1)
	h := register(func() { done <- syscall.Gettid() })
	var tid uint64
	require.Zero(t, pthreadCreate(&tid, nil, trampolines.hostFn, h))
	require.Zero(t, pthreadJoin(tid, nil))
	select {
	case callbackTID := <-done:
		require.NotEqual(t, syscall.Gettid(), callbackTID)
		t.Logf("callback ran on foreign thread %d", callbackTID)
	default:
		t.Fatal("the callback did not run")
	}
	require.Zero(t, pendingCallbacks())
}
