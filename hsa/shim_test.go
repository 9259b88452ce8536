package hsa

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/tools/rocmshim/shimbuild"
)

// TestROCmShimExportsEveryRequiredFunction builds tools/rocmshim and proves
// its libhsa-runtime64 defines every function this package requires.
func TestROCmShimExportsEveryRequiredFunction(t *testing.T) {
	dir := shimbuild.Build(t)
	got := shimbuild.Exports(t, filepath.Join(dir, shimbuild.HSALibrary))
	for _, f := range (&api{}).table() {
		have := false
		for _, n := range f.Names {
			have = have || got[n]
		}
		require.True(t, have || f.Since != "", "the shim's %s lacks %v", shimbuild.HSALibrary, f.Names)
	}
}
