//go:build !linux && !darwin

package mlx

// threadID has no per-thread answer here; Load refuses such platforms.
func threadID() uint64 { return 0 }
