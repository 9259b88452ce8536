package dynlib

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func libc() string {
	if runtime.GOOS == "darwin" {
		return "/usr/lib/libSystem.B.dylib"
	}
	return "libc.so.6"
}

func TestOpenListsEveryPathTried(t *testing.T) {
	_, err := Open("libnothere", "HIPGO_TEST_NOTHERE", "libnothere.so.2", "/nonexistent/libnothere.so")
	var nf *NotFoundError
	require.ErrorAs(t, err, &nf)
	require.ErrorIs(t, err, ErrNotFound)
	require.Equal(t, []string{"libnothere.so.2", "/nonexistent/libnothere.so"}, []string{nf.Tried[0].Path, nf.Tried[1].Path})
	require.NotEmpty(t, nf.Tried[0].Err, "each attempt keeps dlopen's reason")
	require.Contains(t, err.Error(), "tried libnothere.so.2, /nonexistent/libnothere.so; set HIPGO_TEST_NOTHERE to its path")
}

func TestTheEnvironmentVariableIsTheOnlyPathTried(t *testing.T) {
	t.Setenv("HIPGO_TEST_LIB", "/nonexistent/override.so")
	_, err := Open("libc", "HIPGO_TEST_LIB", libc())
	var nf *NotFoundError
	require.ErrorAs(t, err, &nf, "the override replaces the candidates, even ones that would open")
	require.Len(t, nf.Tried, 1)
	require.Equal(t, "/nonexistent/override.so", nf.Tried[0].Path)
}

func TestBindReportsMissingRequiredSymbolsAndSkipsOptionalOnes(t *testing.T) {
	lib, err := Open("libc", "HIPGO_TEST_UNSET", libc())
	require.NoError(t, err)
	var strlen func(s *byte) uintptr
	var absentOptional func() int32
	var getpidAddr uintptr
	err = lib.Bind([]Func{
		{Names: []string{"strlen_v2_does_not_exist", "strlen"}, Fn: &strlen},
		{Names: []string{"getpid"}, Addr: &getpidAddr},
		{Names: []string{"hipgo_optional_symbol"}, Fn: &absentOptional, Since: "libc 99"},
		{Names: []string{"hipgo_required_symbol"}, Fn: new(func() int32)},
	})
	var ms *MissingSymbolError
	require.ErrorAs(t, err, &ms)
	require.Equal(t, []string{"hipgo_required_symbol"}, ms.Missing, "the optional symbol is not reported")
	require.NotNil(t, strlen, "the first name that exists is bound")
	require.Equal(t, uintptr(5), strlen(&[]byte("hello\x00")[0]))
	require.NotZero(t, getpidAddr)
	require.Nil(t, absentOptional, "a missing optional symbol stays nil")
	require.True(t, lib.Has("strlen"))
	require.False(t, lib.Has("hipgo_required_symbol"))
}

func TestOnceCachesTheFirstResult(t *testing.T) {
	var o Once[int]
	calls := 0
	load := func() (int, error) { calls++; return calls, errors.New("first") }
	v, err := o.Do(load)
	require.Equal(t, 1, v)
	require.EqualError(t, err, "first")
	v, err = o.Do(load)
	require.Equal(t, 1, v)
	require.EqualError(t, err, "first")
	require.Equal(t, 1, calls)
}

func TestResolvedPathNamesTheLoadedFile(t *testing.T) {
	lib, err := Open("libc", "HIPGO_TEST_UNSET", libc())
	require.NoError(t, err)
	p := lib.ResolvedPath("strlen")
	if runtime.GOOS != "linux" {
		require.Equal(t, lib.Path, p)
		return
	}
	require.True(t, strings.HasPrefix(p, "/"), "an absolute path, not the soname: %q", p)
	require.Contains(t, p, "libc")
	require.Equal(t, lib.Path, lib.ResolvedPath("no_such_symbol"), "falls back to the name dlopen was given")
}

// TestConcurrentOpensKeepEachDlopenReason: dlerror is per OS thread, so
// opens from many goroutines at once must each read the reason of their own
// failed dlopen (unlocked, about 1 in 500 came back empty under this load,
// and one could read another goroutine's).
func TestConcurrentOpensKeepEachDlopenReason(t *testing.T) {
	var wg sync.WaitGroup
	bad := make(chan string, 1)
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := fmt.Sprintf("libnothere%d.so", g)
			for range 300 {
				_, err := Open("libnothere", "HIPGO_TEST_NOTHERE", path)
				var nf *NotFoundError
				if !errors.As(err, &nf) || !strings.Contains(nf.Tried[0].Err, path) {
					select {
					case bad <- fmt.Sprintf("%s: %v", path, err):
					default:
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case b := <-bad:
		t.Fatalf("an open lost its own dlopen reason: %s", b)
	default:
	}
}
