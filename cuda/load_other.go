//go:build !linux

package cuda

import (
	"runtime"

	"github.com/hipgo/hipgo/internal/dynlib"
)

// openLibrary does not try anything: the CUDA driver exists for linux (and
// Windows, which this binding does not cover); NVIDIA dropped macOS.
func openLibrary() (*dynlib.Library, error) {
	return nil, &UnsupportedPlatformError{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
}
