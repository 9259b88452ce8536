package quant

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAVX2SetCoversEveryBlockType proves the avx2 set replaces the generic
// Go product and decoder of every block type and F16 (F32 and BF16 keep the
// Go loops), so the checks against the reference run the assembly.
func TestAVX2SetCoversEveryBlockType(t *testing.T) {
	avx2, ok := variants["avx2"]
	if !ok {
		t.Skip("this CPU lacks AVX2, FMA or F16C: generic is the only kernel set")
	}
	code := func(f any) uintptr { return reflect.ValueOf(f).Pointer() }
	for _, typ := range allTypes {
		if typ == F32 || typ == BF16 {
			continue
		}
		require.NotEqual(t, code(generic.dot[typ]), code(avx2.dot[typ]), "%v product", typ)
		require.NotEqual(t, code(generic.dequant[typ]), code(avx2.dequant[typ]), "%v decoder", typ)
	}
}
