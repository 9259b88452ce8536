package statuscheck_test

import (
	"fmt"
	"path/filepath"

	"github.com/hipgo/hipgo/internal/statuscheck"
)

// Checking one package: each finding says where, how and which status.
func ExampleDir() {
	findings, err := statuscheck.Dir(filepath.Join("testdata", "darwinonly"))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range findings {
		fmt.Printf("%s:%d: %s %s of %s (%s)\n", filepath.Base(f.Pos.Filename), f.Pos.Line, f.Kind, f.Type, f.Call, f.Config)
	}
	// Output: fixture_darwin.go:8: discarded error of release() (darwin/arm64)
}
