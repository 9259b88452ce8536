package hip

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/tools/rocmshim/shimbuild"
)

// TestROCmShimExportsEveryRequiredFunction builds tools/rocmshim and proves
// its libamdhip64 defines every function this package requires, and lists
// the optional ones it lacks, so the shim cannot fall behind the bindings.
func TestROCmShimExportsEveryRequiredFunction(t *testing.T) {
	dir := shimbuild.Build(t)
	got := shimbuild.Exports(t, filepath.Join(dir, shimbuild.HIPLibrary))
	for _, f := range (&api{}).table() {
		have := false
		for _, n := range f.Names {
			have = have || got[n]
		}
		if f.Since == "" {
			require.True(t, have, "the shim's %s lacks %v", shimbuild.HIPLibrary, f.Names)
		} else if !have {
			t.Logf("optional %v (%s) not in the shim", f.Names, f.Since)
		}
	}
}
