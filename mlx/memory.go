package mlx

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync/atomic"
)

// ActiveMemory is the bytes MLX's allocator holds for live arrays (its cache
// of freed buffers not included).
func ActiveMemory() (uint64, error) {
	l, err := api()
	if err != nil {
		return 0, err
	}
	var n uintptr
	err = call("mlx_get_active_memory", func() int32 { return l.activeMemory(&n) })
	return uint64(n), err
}

// CacheMemory is the bytes of freed buffers MLX keeps for reuse.
func CacheMemory() (uint64, error) {
	l, err := api()
	if err != nil {
		return 0, err
	}
	var n uintptr
	err = call("mlx_get_cache_memory", func() int32 { return l.cacheMemory(&n) })
	return uint64(n), err
}

// ClearCache returns MLX's cache of freed buffers to the system.
func ClearCache() error {
	l, err := api()
	if err != nil {
		return err
	}
	return call("mlx_clear_cache", l.clearCache)
}

// limit caches MLX's memory limit for the size check every op makes
// (0: not read yet). SetMemoryLimit updates it.
var limit atomic.Uint64

// MemoryLimit is MLX's memory limit in bytes: on the CPU backend 0.8 of the
// machine's memory, on Metal 1.5 times the GPU's recommended working set.
// The binding refuses any single array larger than it (see TooLargeError).
func MemoryLimit() (uint64, error) {
	if n := limit.Load(); n != 0 {
		return n, nil
	}
	l, err := api()
	if err != nil {
		return 0, err
	}
	var n uintptr
	if err := call("mlx_get_memory_limit", func() int32 { return l.memoryLimit(&n) }); err != nil {
		return 0, err
	}
	limit.Store(uint64(n))
	return uint64(n), nil
}

// SetMemoryLimit sets MLX's memory limit and returns the previous one. On
// the CPU backend MLX only paces evaluation by it (it never refuses an
// allocation); the binding's size check follows it.
func SetMemoryLimit(bytes uint64) (uint64, error) {
	l, err := api()
	if err != nil {
		return 0, err
	}
	if bytes == 0 || uint64(uintptr(bytes)) != bytes {
		return 0, fmt.Errorf("mlx: SetMemoryLimit: %d bytes", bytes)
	}
	var prev uintptr
	if err := call("mlx_set_memory_limit", func() int32 { return l.setMemLimit(&prev, uintptr(bytes)) }); err != nil {
		return 0, err
	}
	limit.Store(bytes)
	return uint64(prev), nil
}

// ErrTooLarge is matched (errors.Is) by every *TooLargeError.
var ErrTooLarge = errors.New("mlx: array larger than MLX's memory limit")

// TooLargeError is an array the binding refuses to make: its bytes exceed
// MLX's memory limit, or its size overflows 64 bits. MLX 0.31.2's CPU
// allocator does not fail such an allocation: it hands the kernel a null
// buffer and the process dies of SIGSEGV when the graph is evaluated, so
// the binding refuses it when the graph is built.
type TooLargeError struct {
	Call     string // the op, e.g. "mlx_add"
	Shape    []int
	DType    DType
	Bytes    uint64 // 0 when Overflow
	Overflow bool
	Limit    uint64
}

func (e *TooLargeError) Error() string {
	size := fmt.Sprintf("%d bytes (%.1f GiB)", e.Bytes, float64(e.Bytes)/(1<<30))
	if e.Overflow {
		size = "more than 2^64 bytes"
	}
	return fmt.Sprintf("mlx: %s: the result %v %s takes %s, more than MLX's memory limit of %d bytes (SetMemoryLimit changes it)",
		e.Call, e.Shape, e.DType, size, e.Limit)
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// checkSize refuses an array of shape and dtype larger than the limit.
func checkSize(name string, shape []int, dtype DType) error {
	lim, err := MemoryLimit()
	if err != nil {
		return err
	}
	bytes, overflow := uint64(dtype.Size()), false
	for _, d := range shape {
		hi, lo := bits.Mul64(bytes, uint64(d))
		if hi != 0 {
			overflow = true
			break
		}
		bytes = lo
	}
	if !overflow && bytes <= lim {
		return nil
	}
	if overflow {
		bytes = 0
	}
	return &TooLargeError{Call: name, Shape: slices.Clone(shape), DType: dtype, Bytes: bytes, Overflow: overflow, Limit: lim}
}
