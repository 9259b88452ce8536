//go:build !darwin

package runtime

import (
	"errors"
	goruntime "runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/metal"
	"github.com/hipgo/hipgo/runtime/driver"
)

// TestMetalIsUnsupportedOffMacOS: off macOS, Open with the Metal backend
// reports it unsupported on this platform, loads nothing, and the error is
// typed (errors.Is metal.ErrUnsupportedPlatform) and says which OS this is.
func TestMetalIsUnsupportedOffMacOS(t *testing.T) {
	_, err := Open(t.Context(), WithBackend(driver.Metal))
	var oe *OpenError
	require.ErrorAs(t, err, &oe)
	require.ErrorIs(t, err, ErrNoDevice)
	require.Len(t, oe.Attempts, 1)
	require.Equal(t, driver.Metal, oe.Attempts[0].Backend)
	require.True(t, errors.Is(oe.Attempts[0].Err, metal.ErrUnsupportedPlatform), "%v", oe.Attempts[0].Err)
	require.EqualError(t, oe.Attempts[0].Err, "metal: only on macOS (this is "+goruntime.GOOS+")")
	require.Contains(t, err.Error(), "[metal: metal: only on macOS (this is "+goruntime.GOOS+")]")
}
