//go:build linux || darwin

package runtime

import "syscall"

// hostAlloc returns memory outside the Go heap, for kernel-argument arrays the
// driver reads: the Go garbage collector never moves or scans it, so it may
// hold pointers into itself (cgo's pointer rules forbid that for Go memory).
func hostAlloc(n int) ([]byte, error) {
	return syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
}

func hostFree(b []byte) error { return syscall.Munmap(b) }
