//go:build !linux

package cuda

import (
	"testing"

	"github.com/hipgo/hipgo/internal/dynlib"
	"github.com/stretchr/testify/require"
)

// TestLoadOffLinuxTriesNothing proves that without a CUDA driver for the OS,
// loading fails with the platform error (a not-found error) even when
// HIPGO_CUDA_LIBRARY names a path.
func TestLoadOffLinuxTriesNothing(t *testing.T) {
	t.Setenv(EnvLibrary, "/nonexistent/libcuda.so.1")
	d, err := loadDriver()
	require.Nil(t, d)
	var pe *UnsupportedPlatformError
	require.ErrorAs(t, err, &pe)
	require.ErrorIs(t, err, dynlib.ErrNotFound)
}
