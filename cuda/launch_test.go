package cuda

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestLaunchConfigLayout proves LaunchConfig and LaunchAttribute have
// cuda.h's layout on 64-bit hosts: CUlaunchConfig is 7 unsigned ints, the
// stream at 32 (after 4 bytes of padding), the attribute pointer at 40 and
// numAttrs at 48, 56 bytes in all; CUlaunchAttribute is the 4-byte id, 4
// bytes of padding and the 64-byte value union.
func TestLaunchConfigLayout(t *testing.T) {
	var c LaunchConfig
	require.EqualValues(t, 56, unsafe.Sizeof(c))
	require.EqualValues(t, 0, unsafe.Offsetof(c.Grid))
	require.EqualValues(t, 12, unsafe.Offsetof(c.Block))
	require.EqualValues(t, 24, unsafe.Offsetof(c.SharedMem))
	require.EqualValues(t, 32, unsafe.Offsetof(c.Stream))
	require.EqualValues(t, 40, unsafe.Offsetof(c.Attrs))
	require.EqualValues(t, 48, unsafe.Offsetof(c.NumAttrs))
	var a LaunchAttribute
	require.EqualValues(t, 72, unsafe.Sizeof(a))
	require.EqualValues(t, 8, unsafe.Offsetof(a.Value))
}
