package mlx

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
