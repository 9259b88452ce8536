//go:build !linux

package cpu

import "time"

// threadCPU is unavailable here; benchmarks then report wall time only.
func threadCPU() (time.Duration, bool) { return 0, false }
