package ptx

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse proves no input makes Parse panic or return an error other than
// a *SyntaxError, and that an accepted module is self-consistent. Seeds: the
// shipped PTX, the handwritten module and truncations of both.
func FuzzParse(f *testing.F) {
	seeds := [][]byte{[]byte(handwritten)}
	paths, _ := filepath.Glob(filepath.Join("..", "build", "testkernels", "*.ptx"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	for _, s := range seeds {
		f.Add(s)
		for _, n := range []int{0, 10, len(s) / 4, len(s) / 2, len(s) - 2} {
			if n >= 0 && n <= len(s) {
				f.Add(s[:n])
			}
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		m, err := Parse(src)
		if err != nil {
			var se *SyntaxError
			if m != nil || !errors.As(err, &se) || !errors.Is(err, ErrMalformed) {
				t.Fatalf("bad error %T %v (module %v)", err, err, m)
			}
			return
		}
		for _, k := range m.Kernels {
			end := 0
			for _, p := range k.Params {
				if p.Offset < end || p.Size < 0 || p.Align < 1 || p.Offset%p.Align != 0 {
					t.Fatalf("kernel %s: bad parameter layout %+v", k.Name, p)
				}
				end = p.Offset + p.Size
			}
			if end != k.ParamBytes || k.StaticShared < 0 || k.StaticShared > maxBytes {
				t.Fatalf("kernel %s: inconsistent sizes", k.Name)
			}
		}
	})
}
