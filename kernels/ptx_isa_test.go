package kernels

import (
	"io/fs"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// ptxFeatureISA: instructions and qualifiers the kernels use that need a
// later PTX ISA than some shipped .version, with the first ISA that has
// them (the PTX ISA reference). The driver's JIT rejects a module that uses
// one under an older .version, so on those GPUs the module would not load.
var ptxFeatureISA = []struct {
	text string
	isa  float64
}{
	{"createpolicy", 7.4},
	{".L2::cache_hint", 7.4},
	{".L1::no_allocate", 7.4},
	{"griddepcontrol", 7.8},
	{"mbarrier.try_wait", 7.8},
	{"expect_tx", 8.0},
	{"cp.async.bulk", 8.0},
	{"wgmma.", 8.0},
}

// TestShippedPTXUsesOnlyItsISA: every shipped PTX file uses only what its
// own .version has. The sm_80 files are ISA 7.0 (clang-19's default there),
// so the L2 hints of stream_copy16 must not reach them.
func TestShippedPTXUsesOnlyItsISA(t *testing.T) {
	m, err := Manifest()
	require.NoError(t, err)
	checked := 0
	for _, a := range m.Artifacts {
		if a.Format != FormatPTX {
			continue
		}
		b, err := fs.ReadFile(buildFS, "build/"+a.Path)
		require.NoError(t, err)
		isa, err := strconv.ParseFloat(a.PTXVersion, 64)
		require.NoError(t, err, a.Path)
		text := string(b)
		for _, f := range ptxFeatureISA {
			if isa < f.isa {
				require.False(t, strings.Contains(text, f.text), "%s (PTX ISA %s) uses %s, which needs ISA %.1f", a.Path, a.PTXVersion, f.text, f.isa)
			}
		}
		checked++
	}
	require.Positive(t, checked)
}
