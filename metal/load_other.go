//go:build !darwin

package metal

import "runtime"

// Load reports that Metal exists only on macOS, without trying anything.
func Load() error { return &UnsupportedPlatformError{GOOS: runtime.GOOS} }
