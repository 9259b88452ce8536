package runtime

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/dynlib"
	"github.com/hipgo/hipgo/runtime/driver"
)

// libraryDriver is a backend whose library fails to open with err.
type libraryDriver struct{ err error }

func (d libraryDriver) Kind() driver.Kind               { return "lib" }
func (d libraryDriver) DeviceCount() (int, error)       { return 0, d.err }
func (d libraryDriver) Open(int) (driver.Device, error) { return nil, d.err }

// A vendor library that is there but that dlopen refuses reaches Open's and
// Survey's callers as ErrLibraryRejected with dlopen's reason, never as
// ErrLibraryNotFound; one that is nowhere stays ErrLibraryNotFound.
func TestLibraryRejectedIsToldFromLibraryNotFound(t *testing.T) {
	dir := t.TempDir()
	bogus := filepath.Join(dir, "libvendor.so.1")
	require.NoError(t, os.WriteFile(bogus, []byte(strings.Repeat("not a shared library\n", 64)), 0o644))
	_, rejected := dynlib.Open("libvendor", "HIPGO_TEST_UNSET", bogus)
	_, notFound := dynlib.Open("libvendor", "HIPGO_TEST_UNSET", filepath.Join(dir, "libnothere.so.1"))
	var rj *dynlib.RejectedError
	require.ErrorAs(t, rejected, &rj)
	reason := rj.Tried[0].Err
	require.NotEmpty(t, reason)

	_, err := Open(context.Background(), WithDrivers(libraryDriver{rejected}, libraryDriver{notFound}))
	require.ErrorIs(t, err, ErrNoDevice)
	var oe *OpenError
	require.ErrorAs(t, err, &oe)
	require.ErrorIs(t, oe.Attempts[0].Err, ErrLibraryRejected)
	require.NotErrorIs(t, oe.Attempts[0].Err, ErrLibraryNotFound)
	require.ErrorIs(t, oe.Attempts[1].Err, ErrLibraryNotFound)
	require.NotErrorIs(t, oe.Attempts[1].Err, ErrLibraryRejected)
	require.Contains(t, err.Error(), "library found but could not be opened: ")
	require.Contains(t, err.Error(), reason)

	reps := survey(context.Background(), []driver.Driver{libraryDriver{rejected}, libraryDriver{notFound}})
	require.ErrorIs(t, reps[0].Err, ErrLibraryRejected)
	require.Contains(t, reps[0].Err.Error(), reason)
	require.NotContains(t, reps[0].Err.Error(), "library not found")
	require.ErrorIs(t, reps[1].Err, ErrLibraryNotFound)
	require.Contains(t, reps[1].Err.Error(), "library not found")
}
