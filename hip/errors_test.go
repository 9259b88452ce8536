package hip

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hipgo/hipgo/internal/dynlib"
	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/stretchr/testify/require"
)

// needLibrary loads the real libamdhip64, skipping (or failing in CI) when
// the host package is missing.
func needLibrary(t *testing.T) {
	t.Helper()
	err := Load()
	if errors.Is(err, dynlib.ErrNotFound) {
		testenv.NeedHost(t, err)
	}
	require.NoError(t, err)
}

// runtimeMajorMinor returns the loaded runtime's version.
func runtimeMajorMinor(t *testing.T) (int, int) {
	t.Helper()
	v, err := RuntimeVersion()
	require.NoError(t, err)
	major, minor, _ := SplitVersion(v)
	return major, minor
}

// TestErrorText proves the formats the design fixes: a Code prints as
// "name (number)", an *Error prefixes the call, and unknown codes still
// print something that names the number.
func TestErrorText(t *testing.T) {
	require.Equal(t, "hipErrorInvalidValue (1)", ErrInvalidValue.Error())
	require.Equal(t, "hipModuleLaunchKernel: hipErrorInvalidValue (1)",
		(&Error{Call: "hipModuleLaunchKernel", Code: ErrInvalidValue}).Error())
	require.Equal(t, "hipError(1234)", Code(1234).Name())
	require.Equal(t, "hipError(-5) (-5)", Code(-5).Error())
	// A deprecated alias prints with the canonical name.
	require.Equal(t, "hipErrorOutOfMemory", ErrMemoryAllocation.Name())
	// A newer code is known even though the 5.2 header lacks it.
	require.Equal(t, "hipErrorInvalidTexture (912)", ErrInvalidTexture.Error())
}

// TestErrorsIsAs proves a wrapped *Error matches its sentinel and only it,
// and can be recovered with errors.As.
func TestErrorsIsAs(t *testing.T) {
	err := fmt.Errorf("launch sampler: %w", &Error{Call: "hipStreamSynchronize", Code: ErrIllegalAddress})
	require.ErrorIs(t, err, ErrIllegalAddress)
	require.NotErrorIs(t, err, ErrInvalidValue)
	var he *Error
	require.ErrorAs(t, err, &he)
	require.Equal(t, "hipStreamSynchronize", he.Call)
	require.Equal(t, Code(700), he.Code)
	require.Nil(t, check("hipInit", Success))
}

// TestSticky proves which codes mark the device lost. A 719 from the launch
// call itself is sticky too: current CLR returns the recorded GPU error from
// every entry point (HIP_INIT_API), hipModuleLaunchKernel included, so the
// code alone cannot tell it from the launch-bounds rejection (the runtime
// probes the device to tell).
func TestSticky(t *testing.T) {
	for _, c := range []struct {
		code   Code
		sticky bool
	}{
		{700, true}, {702, true}, {710, true}, {719, true}, {214, true},
		{0, false}, {1, false}, {2, false}, {9, false}, {100, false}, {101, false},
		{209, false}, {500, false}, {600, false}, {801, false}, {999, false},
	} {
		require.Equal(t, c.sticky, c.code.Sticky(), "code %d", c.code)
	}
	require.True(t, (&Error{Call: "hipModuleLaunchKernel", Code: ErrLaunchFailure}).Sticky())
	require.True(t, (&Error{Call: "hipStreamSynchronize", Code: ErrLaunchFailure}).Sticky())
	require.True(t, (&Error{Call: "hipModuleLaunchKernel", Code: ErrIllegalAddress}).Sticky())
}

// TestHeaderCodesMatchLibrary proves the generated table agrees with the
// real library: hipGetErrorName returns our name for every code of the
// header.
func TestHeaderCodesMatchLibrary(t *testing.T) {
	needLibrary(t)
	for _, c := range headerCodes {
		got, err := LibraryErrorName(c.code)
		require.NoError(t, err)
		require.Equal(t, c.name, got, "code %d", c.code)
		require.Equal(t, c.name, c.code.Name())
	}
	major, minor := runtimeMajorMinor(t)
	t.Logf("hipGetErrorName agrees on %d codes (ROCm %d.%d library %s)", len(headerCodes), major, minor, LibraryPath())
}

// TestNewerCodesOnThisLibrary documents what a library answers for codes
// added after it: a release older than the one that adds a code calls it
// hipErrorUnknown (ROCm 5.2 does, checked here), a release that has it
// must agree with our name.
func TestNewerCodesOnThisLibrary(t *testing.T) {
	needLibrary(t)
	major, minor := runtimeMajorMinor(t)
	for _, c := range newerCodes {
		got, err := LibraryErrorName(c.Code)
		require.NoError(t, err)
		older := major < c.SinceMajor || (major == c.SinceMajor && minor < c.SinceMinor)
		switch {
		case older:
			require.Equal(t, "hipErrorUnknown", got, "code %d on ROCm %d.%d (added in %s)", c.Code, major, minor, c.Since)
		case c.Exact:
			require.Equal(t, c.Name, got, "code %d on ROCm %d.%d", c.Code, major, minor)
		default:
			require.Contains(t, []string{c.Name, "hipErrorUnknown"}, got, "code %d on ROCm %d.%d", c.Code, major, minor)
		}
		t.Logf("ROCm %d.%d hipGetErrorName(%d) = %s (ours: %s, added in %s)", major, minor, c.Code, got, c.Name, c.Since)
	}
}

// TestGeneratedCodesReproduce proves zcodes.go is exactly what its
// go:generate line produces from the installed header: it runs that line
// with the output redirected to a temporary file.
func TestGeneratedCodesReproduce(t *testing.T) {
	runGenerateDirective(t, "generate.go", "zcodes.go")
}

// runGenerateDirective runs the //go:generate line of file with its -o
// replaced by a temporary file, and requires the result to equal want.
func runGenerateDirective(t *testing.T, file, want string) {
	t.Helper()
	src, err := os.ReadFile(file)
	require.NoError(t, err)
	var args []string
	for _, line := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(line, "//go:generate "); ok {
			args = strings.Fields(rest)
		}
	}
	require.NotEmpty(t, args, "no go:generate line in %s", file)
	for _, a := range args {
		if h, ok := strings.CutPrefix(a, "-header="); ok {
			if _, err := os.Stat(h); err != nil {
				testenv.NeedHost(t, err)
			}
		}
	}
	out := filepath.Join(t.TempDir(), want)
	replaced := false
	for i, a := range args {
		if strings.HasPrefix(a, "-o=") {
			args[i] = "-o=" + out
			replaced = true
		}
	}
	require.True(t, replaced, "go:generate line has no -o=")
	cmd := exec.Command(args[0], args[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), "%v: %s", args, stderr.String())
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	committed, err := os.ReadFile(want)
	require.NoError(t, err)
	require.Equal(t, string(committed), string(got), "%s is stale: run go generate", want)
}
