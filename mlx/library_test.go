package mlx

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/dynlib"
)

// A library that is not there is a *dynlib.NotFoundError naming the path
// tried and the variable that sets it, not a crash.
func TestLoadWithoutTheLibraryNamesWhatItTried(t *testing.T) {
	t.Setenv(EnvLibrary, "/nonexistent/libmlxc.so")
	_, err := load()
	var nf *dynlib.NotFoundError
	require.ErrorAs(t, err, &nf)
	require.ErrorIs(t, err, dynlib.ErrNotFound)
	require.Contains(t, err.Error(), "/nonexistent/libmlxc.so")
	require.Contains(t, err.Error(), EnvLibrary)
}

// A library without mlx-c's symbols (libc here) is refused at load with the
// missing required symbols named; nothing of it is called, so no handler is
// needed to survive it.
func TestBindRefusesALibraryWithoutMLXSymbols(t *testing.T) {
	dl, err := dynlib.Open("libc", "HIPGO_TEST_UNSET", "libc.so.6")
	if err != nil {
		t.Skipf("no libc.so.6 to stand in for a wrong library: %v", err)
	}
	_, err = bind(dl)
	var ms *dynlib.MissingSymbolError
	require.ErrorAs(t, err, &ms)
	require.Contains(t, ms.Missing, "mlx_set_error_handler")
	require.Contains(t, ms.Missing, "mlx_matmul")
	require.NotContains(t, ms.Missing, "mlx_device_count", "optional symbols are not required")
}

// Each call's error carries the message the handler received on that
// call's own thread: 16 goroutines failing at once never see one another's
// messages, and a later call on a thread does not inherit a stale one.
func TestErrorMessagesStayWithTheirCall(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				msg := fmt.Sprintf("goroutine %d call %d", g, i)
				err := call("mlx_fake", func() int32 {
					c := append([]byte(msg), 0)
					onError(&c[0], 0)
					// Let the other goroutines fail in between, as threads of
					// a real process would: a process-wide slot would now hold
					// someone else's message.
					runtime.Gosched()
					return 1
				})
				var e *Error
				if !errors.As(err, &e) || e.Message != msg || e.Call != "mlx_fake" {
					t.Errorf("got %v, want mlx_fake: %s", err, msg)
					return
				}
			}
		}()
	}
	wg.Wait()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c := []byte("left behind\x00")
	onError(&c[0], 0)
	err := call("mlx_other", func() int32 { return 1 })
	require.EqualError(t, err, "mlx_other: failed without a message")
	require.ErrorIs(t, err, ErrMLX)
	require.NoError(t, call("mlx_ok", func() int32 { return 0 }))
}

// An optional function the library lacks is an *UnsupportedError naming
// the release that adds it, matching errors.ErrUnsupported.
func TestMissingOptionalFunctionNamesItsRelease(t *testing.T) {
	l := &library{dl: &dynlib.Library{Name: libraryName, Path: "/opt/old/libmlxc.so"}}
	err := l.optional(false, "mlx_device_count")
	var u *UnsupportedError
	require.ErrorAs(t, err, &u)
	require.ErrorIs(t, err, errors.ErrUnsupported)
	require.Equal(t, since050, u.Since)
	require.Contains(t, err.Error(), "/opt/old/libmlxc.so")
	require.NoError(t, l.optional(true, "mlx_device_count"))
}
