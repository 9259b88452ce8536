//go:build linux || darwin

package safetensors

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps path read-only; ok is false on platforms without mmapFile
// (mmap_other.go), where Open reads through golang.org/x/exp/mmap instead.
func mapFile(path string) (m *Mapping, ok bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, true, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, true, err
	}
	size := st.Size()
	if size == 0 {
		return newMapping(nil), true, nil // mmap refuses length 0
	}
	if size < 0 || size != int64(int(size)) {
		return nil, true, fmt.Errorf("mmap: file %q is too large (%d bytes)", path, size)
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, true, err
	}
	return newMapping(data), true, nil
}

func munmap(data []byte) error { return syscall.Munmap(data) }
