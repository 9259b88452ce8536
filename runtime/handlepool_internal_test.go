package runtime

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHandlePoolRecyclesUpToItsBound(t *testing.T) {
	var p handlePool[uintptr]
	require.Zero(t, p.get(), "empty pool: the zero handle tells the caller to create one")
	for i := 1; i <= handlePoolMax; i++ {
		require.True(t, p.put(uintptr(i)))
	}
	require.False(t, p.put(handlePoolMax+1), "beyond the bound the caller destroys the handle")
	require.Equal(t, uintptr(handlePoolMax), p.get(), "last in, first out")
	require.Len(t, p.drain(), handlePoolMax-1)
	require.Zero(t, p.get())
}
