package mlx

import "syscall"

// threadID identifies the calling OS thread (the caller has locked it).
func threadID() uint64 { return uint64(syscall.Gettid()) }
