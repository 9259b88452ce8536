package hip

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestParsePCIAddress proves the form hipDeviceGetPCIBusId writes parses
// back, and that anything else is an error rather than a zero address.
func TestParsePCIAddress(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want PCIAddress
		ok   bool
	}{
		{"0000:c1:00.0", PCIAddress{Bus: 0xc1}, true},
		{"0001:03:1f.7", PCIAddress{Domain: 1, Bus: 3, Device: 0x1f, Function: 7}, true},
		{"", PCIAddress{}, false},
		{"c1:00.0", PCIAddress{}, false},
		{"0000:100:00.0", PCIAddress{}, false}, // bus over 8 bits
		{"0000:c1:20.0", PCIAddress{}, false},  // device over 5 bits
		{"0000:c1:00.8", PCIAddress{}, false},  // function over 3 bits
	} {
		got, err := ParsePCIAddress(tc.in)
		if !tc.ok {
			require.ErrorIs(t, err, ErrInvalidValue, "%q", tc.in)
			continue
		}
		require.NoError(t, err, "%q", tc.in)
		require.Equal(t, tc.want, got)
		require.Equal(t, tc.in, got.String())
	}
}
