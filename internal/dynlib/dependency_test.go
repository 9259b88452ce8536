package dynlib

import (
	"bytes"
	"debug/elf"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// withMissingDependency copies the system's libm.so.6 into a temporary
// directory with its DT_NEEDED libc.so.6 renamed to a library that exists
// nowhere: a real shared object whose only fault is a dependency the loader
// cannot find (what a libmlxc.so installed without its run path to
// libmlx.so is).
func withMissingDependency(t *testing.T) (path, dep string) {
	t.Helper()
	lib, err := Open("libm", "HIPGO_TEST_UNSET", "libm.so.6")
	require.NoError(t, err)
	src := lib.ResolvedPath("cos")
	require.True(t, filepath.IsAbs(src), "libm.so.6 resolved to %q", src)
	data, err := os.ReadFile(src)
	require.NoError(t, err)
	f, err := elf.NewFile(bytes.NewReader(data))
	require.NoError(t, err)
	needed, err := f.ImportedLibraries()
	require.NoError(t, err)
	require.Contains(t, needed, "libc.so.6")
	dynstr := f.Section(".dynstr")
	require.NotNil(t, dynstr)
	strs := data[dynstr.Offset : dynstr.Offset+dynstr.Size]
	i := bytes.Index(strs, []byte("\x00libc.so.6\x00"))
	require.GreaterOrEqual(t, i, 0)
	dep = "libhg0.so" // no longer than the name it overwrites, with its NUL
	require.LessOrEqual(t, len(dep), len("libc.so.6"))
	copy(strs[i+1:], dep+"\x00")
	path = filepath.Join(t.TempDir(), "libtop.so")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path, dep
}

// A library that is there but needs one the loader cannot find is a
// *RejectedError that names the missing dependency and says where the
// loader looks (LD_LIBRARY_PATH, or a run path), instead of only "set
// HIPGO_X to a working copy": that was the advice for libmlxc.so installed
// without its run path to libmlx.so.
func TestAMissingDependencyIsNamedWithTheSearchPath(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the test library is a patched copy of glibc's libm.so.6 (Linux only)")
	}
	path, dep := withMissingDependency(t)
	_, err := Open("libtop", "HIPGO_TEST_UNSET", path)
	var rj *RejectedError
	require.ErrorAs(t, err, &rj)
	require.True(t, rj.Tried[0].Found)
	require.Equal(t, dep, rj.Tried[0].MissingDependency, "dlopen said %q", rj.Tried[0].Err)
	msg := err.Error()
	require.Contains(t, msg, "it needs "+dep+", which the dynamic loader did not find")
	require.Contains(t, msg, "LD_LIBRARY_PATH")
	require.NotContains(t, msg, "working copy", "the library is fine: the advice is about its dependency")
	t.Log(msg)
}

// missingDependency reads each loader's message; a reason about the file
// itself names no dependency.
func TestMissingDependencyReadsTheLoadersMessage(t *testing.T) {
	for _, c := range []struct {
		path, reason, dep string
	}{
		{"libmlxc.so", "libmlx.so: cannot open shared object file: No such file or directory", "libmlx.so"},                                                                                                                                                                  // glibc
		{"/opt/lib/libmlxc.so", "libmlx.so: cannot open shared object file: No such file or directory", "libmlx.so"},                                                                                                                                                         // glibc, a path
		{"libmlxc.so", "Error loading shared library libmlx.so: No such file or directory (needed by /opt/lib/libmlxc.so)", "libmlx.so"},                                                                                                                                     // musl
		{"/opt/homebrew/lib/libmlxc.dylib", "dlopen(/opt/homebrew/lib/libmlxc.dylib, 0x0009): Library not loaded: @rpath/libmlx.dylib\n  Referenced from: <UUID> /opt/homebrew/lib/libmlxc.dylib\n  Reason: tried: '/x/libmlx.dylib' (no such file)", "@rpath/libmlx.dylib"}, // dyld
		{"libmlxc.so", "libmlxc.so: cannot open shared object file: No such file or directory", ""},
		{"/opt/lib/libmlxc.so", "/opt/lib/libmlxc.so: cannot open shared object file: No such file or directory", ""},
		{"/opt/lib/libmlxc.so", "/opt/lib/libmlxc.so: invalid ELF header", ""},
		{"/opt/lib/libmlxc.so", "/opt/lib/libmlxc.so: undefined symbol: mlx_foo", ""},
	} {
		require.Equal(t, c.dep, missingDependency(c.path, c.reason), c.reason)
	}
}
