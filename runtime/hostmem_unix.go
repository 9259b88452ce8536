//go:build linux || darwin

package runtime

import (
	"sync/atomic"
	"syscall"
)

// hostLive is the number of bytes hostAlloc has mapped and hostFree not yet
// unmapped, for leak checks in tests.
var hostLive atomic.Int64

// hostAlloc returns memory outside the Go heap, for kernel-argument arrays the
// driver reads: the Go garbage collector never moves or scans it, so it may
// hold pointers into itself (cgo's pointer rules forbid that for Go memory).
func hostAlloc(n int) ([]byte, error) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err == nil {
		hostLive.Add(int64(len(b)))
	}
	return b, err
}

func hostFree(b []byte) error {
	if err := syscall.Munmap(b); err != nil {
		return err
	}
	hostLive.Add(-int64(len(b)))
	return nil
}
