package dynlib

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// notALibrary writes a text file named like a shared library, long enough
// that glibc reads a whole ELF header from it ("invalid ELF header", not
// "file too short").
func notALibrary(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("this is not a shared library\n", 64)), 0o644))
	return path
}

// A file that is there but that dlopen refuses is a *RejectedError that
// keeps dlopen's reason, never "library not found", and errors.Is tells it
// from a missing library.
func TestAFileDlopenRefusesIsRejectedWithItsReason(t *testing.T) {
	path := notALibrary(t, "libcuda.so.1")
	t.Setenv("HIPGO_TEST_REJECTED", path)
	_, err := Open("libcuda", "HIPGO_TEST_REJECTED", "libcuda.so.1")
	var rj *RejectedError
	require.ErrorAs(t, err, &rj)
	require.ErrorIs(t, err, ErrRejected)
	require.NotErrorIs(t, err, ErrNotFound)
	require.Len(t, rj.Tried, 1)
	require.Equal(t, path, rj.Tried[0].Path)
	require.True(t, rj.Tried[0].Found)
	require.NotEmpty(t, rj.Tried[0].Err)
	msg := err.Error()
	require.NotContains(t, msg, "library not found")
	require.Contains(t, msg, "libcuda: library found but could not be opened: ")
	require.Contains(t, msg, rj.Tried[0].Err, "dlopen's own reason")
	require.Contains(t, msg, path)
	require.Contains(t, msg, "set HIPGO_TEST_REJECTED")
	if runtime.GOOS == "linux" {
		require.Contains(t, msg, "invalid ELF header")
	}
}

// Among candidates some missing and one refused, the refused one makes it a
// *RejectedError; its reason is given, the missing ones are only listed.
func TestARefusedCandidateAmongMissingOnesIsRejected(t *testing.T) {
	missingPath := filepath.Join(t.TempDir(), "libfake.so.2")
	refused := notALibrary(t, "libfake.so.1")
	_, err := Open("libfake", "HIPGO_TEST_UNSET", missingPath, refused)
	var rj *RejectedError
	require.ErrorAs(t, err, &rj)
	require.False(t, rj.Tried[0].Found)
	require.True(t, rj.Tried[1].Found)
	require.Contains(t, err.Error(), "tried "+missingPath+", "+refused+";")
	require.Contains(t, err.Error(), rj.Tried[1].Err)
	require.NotContains(t, err.Error(), rj.Tried[0].Err, "a missing candidate's reason is not a refusal")
}

// A path with nothing there (or under a file, not a directory) is still
// "library not found", not a rejection.
func TestAPathWithNothingThereIsStillNotFound(t *testing.T) {
	dir := t.TempDir()
	notDir := notALibrary(t, "plain")
	for _, path := range []string{filepath.Join(dir, "libcuda.so.1"), filepath.Join(notDir, "libcuda.so.1")} {
		_, err := Open("libcuda", "HIPGO_TEST_UNSET", path)
		var nf *NotFoundError
		require.ErrorAs(t, err, &nf, path)
		require.ErrorIs(t, err, ErrNotFound)
		require.NotErrorIs(t, err, ErrRejected)
		require.False(t, nf.Tried[0].Found)
		require.Contains(t, err.Error(), "libcuda: library not found (tried "+path+"; ")
	}
}

// For a bare name the loader searched for, only its message tells a file it
// found and refused from nothing found.
func TestMissingReadsTheLoadersMessageForABareName(t *testing.T) {
	for _, c := range []struct {
		reason  string
		missing bool
	}{
		{"libcuda.so.1: cannot open shared object file: No such file or directory", true},                         // glibc
		{"Error loading shared library libcuda.so.1: No such file or directory", true},                            // musl
		{"dlopen(libcuda.so.1, 0x0009): tried: 'libcuda.so.1' (no such file), '/usr/lib/x' (no such file)", true}, // dyld
		{"", true}, // no reason to tell by
		{"/opt/cuda/lib/libcuda.so.1: invalid ELF header", false},
		{"/opt/cuda/lib/libcuda.so.1: file too short", false},
		{"libcuda.so.1: cannot dynamically load position-independent executable", false},
		{"/opt/cuda/lib/libcuda.so.1: wrong ELF class: ELFCLASS32", false},
		{"libdep.so: cannot open shared object file: No such file or directory", false},                            // glibc: a dependency
		{"Error loading shared library libdep.so: No such file or directory (needed by /opt/libcuda.so.1)", false}, // musl: a dependency
	} {
		require.Equal(t, c.missing, missing("libcuda.so.1", c.reason), c.reason)
	}
}
