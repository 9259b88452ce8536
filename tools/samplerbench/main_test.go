package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseShapes(t *testing.T) {
	grid, err := parseShapes("")
	require.NoError(t, err)
	require.Len(t, grid, len(shapesB)*len(shapesV))
	require.Equal(t, [2]int{1, 32000}, grid[0])
	require.Equal(t, [2]int{512, 262144}, grid[len(grid)-1])

	got, err := parseShapes("512x131072,1x7")
	require.NoError(t, err)
	require.Equal(t, [][2]int{{512, 131072}, {1, 7}}, got)

	for _, bad := range []string{"512", "0x5", "5x0", "ax5", "512x131072,"} {
		_, err := parseShapes(bad)
		require.Error(t, err, bad)
	}
}
