package hsa

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

func needLibrary(t *testing.T) {
	t.Helper()
	err := Load()
	if errors.Is(err, dynlib.ErrNotFound) {
		testenv.NeedHost(t, err)
	}
	require.NoError(t, err)
}

// TestStatusText proves the formats: "NAME (0xhex)", the call prefix, and a
// readable fallback for unknown values.
func TestStatusText(t *testing.T) {
	require.Equal(t, "HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)", ErrOutOfResources.Error())
	require.Equal(t, "hsa_init: HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)", (&Error{Call: "hsa_init", Status: 0x1008}).Error())
	require.Equal(t, "hsa_status(0x1234)", Status(0x1234).Name())
	require.Equal(t, "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION", Status(0x29).Name())
	require.Equal(t, "HSA_STATUS_ERROR_OUT_OF_REGISTERS", Status(45).Name())
	err := fmt.Errorf("probe: %w", &Error{Call: "hsa_iterate_agents", Status: ErrNotInitialized})
	require.ErrorIs(t, err, ErrNotInitialized)
	require.NotErrorIs(t, err, ErrOutOfResources)
	require.NoError(t, check("x", Success))
	require.NoError(t, check("x", InfoBreak))
}

// TestHeaderValues pins the values the design names against the header
// constants generated from them.
func TestHeaderValues(t *testing.T) {
	require.Equal(t, []Status{0x29, 0x2A, 0x2B, 0x1016, 0x1008, 0x100B},
		[]Status{ErrMemoryApertureViolation, ErrIllegalInstruction, ErrMemoryFault, ErrException, ErrOutOfResources, ErrNotInitialized})
}

// TestHeaderStatusesMatchLibrary proves every generated status is one the
// real library knows by the same name: hsa_status_string's text starts with
// the name and a colon.
func TestHeaderStatusesMatchLibrary(t *testing.T) {
	needLibrary(t)
	for _, s := range headerStatuses {
		text, err := StatusString(s.status)
		require.NoError(t, err, s.name)
		require.True(t, strings.HasPrefix(text, s.name+":"), "%s: library says %q", s.name, text)
	}
	t.Logf("hsa_status_string agrees on %d statuses (library %s)", len(headerStatuses), LibraryPath())
}

// TestNewerStatusesOnThisLibrary documents what a library answers for
// statuses added after it: an older one refuses with
// HSA_STATUS_ERROR_INVALID_ARGUMENT (ROCm 5.2 does, logged here), a newer one
// must name it as we do.
func TestNewerStatusesOnThisLibrary(t *testing.T) {
	needLibrary(t)
	for _, s := range newerStatuses {
		text, err := StatusString(s.Status)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidArgument, s.Name)
			t.Logf("hsa_status_string(%#x) = %v (library predates %s, which adds %s)", uint32(s.Status), err, s.Since, s.Name)
			continue
		}
		require.True(t, strings.HasPrefix(text, s.Name+":"), "%s: library says %q", s.Name, text)
	}
}

// TestGeneratedStatusesReproduce proves zcodes.go is exactly what its
// go:generate line produces from the installed headers.
func TestGeneratedStatusesReproduce(t *testing.T) {
	src, err := os.ReadFile("generate.go")
	require.NoError(t, err)
	var args []string
	for _, line := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(line, "//go:generate "); ok {
			args = strings.Fields(rest)
		}
	}
	require.NotEmpty(t, args)
	out := filepath.Join(t.TempDir(), "zcodes.go")
	for i, a := range args {
		if h, ok := strings.CutPrefix(a, "-header="); ok {
			if _, err := os.Stat(h); err != nil {
				testenv.NeedHost(t, err)
			}
		}
		if strings.HasPrefix(a, "-o=") {
			args[i] = "-o=" + out
		}
	}
	cmd := exec.Command(args[0], args[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), "%v: %s", args, stderr.String())
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	committed, err := os.ReadFile("zcodes.go")
	require.NoError(t, err)
	require.Equal(t, string(committed), string(got), "zcodes.go is stale: run go generate")
}

// TestLoadEnvNonexistent proves HIPGO_HSA_LIBRARY replaces the candidates
// and a missing file is a *dynlib.NotFoundError naming that path.
func TestLoadEnvNonexistent(t *testing.T) {
	const bogus = "/nonexistent/hipgo/libhsa-runtime64.so.9"
	t.Setenv(EnvLibrary, bogus)
	_, err := openAPI()
	var nf *dynlib.NotFoundError
	require.ErrorAs(t, err, &nf)
	require.Len(t, nf.Tried, 1)
	require.Equal(t, bogus, nf.Tried[0].Path)
}

// TestLoadWrongLibrary proves a library that is not HSA (libc) is a
// *dynlib.MissingSymbolError, not a panic.
func TestLoadWrongLibrary(t *testing.T) {
	t.Setenv(EnvLibrary, "libc.so.6")
	_, err := openAPI()
	var ms *dynlib.MissingSymbolError
	require.ErrorAs(t, err, &ms)
	require.Contains(t, ms.Missing, "hsa_init")
	require.Contains(t, ms.Missing, "hsa_amd_register_system_event_handler")
}
