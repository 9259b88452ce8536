package codeobj

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse proves that no input makes Parse panic or return an error
// outside the package's sentinels, and that an accepted object is
// self-consistent. Seeds: every shipped code object, truncations of each and
// a few header flips.
func FuzzParse(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("..", "build", "*", "*.hsaco"))
	if len(paths) == 0 {
		f.Fatal("no seed code objects under kernels/build")
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		for _, n := range []int{0, 4, 63, 64, 65, 200, len(b) / 3, len(b) / 2, len(b) - 1} {
			if n <= len(b) {
				f.Add(b[:n])
			}
		}
		for _, i := range []int{8, 16, 32, 40, 48, 58, 60, 62} {
			c := append([]byte(nil), b...)
			c[i] ^= 0xff
			f.Add(c)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			if file != nil {
				t.Fatal("non-nil File with an error")
			}
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error is not a *FormatError: %v", err)
			}
			n := 0
			for _, s := range []error{ErrNotCodeObject, ErrUnsupportedVersion, ErrMalformed, ErrNoMetadata} {
				if errors.Is(err, s) {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("error matches %d sentinels: %v", n, err)
			}
			return
		}
		for _, k := range file.Kernels {
			if k.Name == "" || k.KernargSegmentSize < 0 || int64(k.Descriptor.KernargSize) != int64(k.KernargSegmentSize) {
				t.Fatalf("inconsistent kernel %+v", k)
			}
			for _, a := range k.Args {
				if a.Offset < 0 || a.Size < 0 || a.Offset+a.Size > k.KernargSegmentSize {
					t.Fatalf("argument outside the kernarg segment: %+v", a)
				}
			}
		}
	})
}
