package safetensors

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync/atomic"
)

// Mapping is a whole file mapped read-only into memory (Open, on Linux and
// macOS). File.Mapped lends out tensors' bytes in place; the memory is
// outside the Go heap, so nothing the garbage collector sees keeps it
// alive except the *Mapping itself:
//
//   - while nothing has been lent, File.Close unmaps the file at once;
//   - once something has, Close only stops the File's reads, and the file
//     stays mapped until the *Mapping is unreachable (a runtime cleanup
//     unmaps it then). Whoever keeps lent bytes must keep the *Mapping
//     reachable for as long.
//
// The mapping is read-only: writing to lent bytes faults (SIGSEGV), and so
// does reading them after the file shrank on disk (SIGBUS).
type Mapping struct {
	data    []byte
	lent    atomic.Bool
	closed  atomic.Bool
	cleanup runtime.Cleanup
}

// newMapping takes ownership of data, a mapping made by mmapFile: it is
// unmapped by Close (nothing lent) or once the Mapping is unreachable.
func newMapping(data []byte) *Mapping {
	m := &Mapping{data: data}
	if len(data) > 0 {
		m.cleanup = runtime.AddCleanup(m, func(d []byte) { _ = munmap(d) }, data)
	}
	return m
}

// ReadAt copies from the mapping; it fails after Close.
func (m *Mapping) ReadAt(p []byte, off int64) (int, error) {
	if m.closed.Load() {
		return 0, errors.New("mmap: closed")
	}
	if off < 0 || off > int64(len(m.data)) {
		return 0, fmt.Errorf("mmap: invalid ReadAt offset %d", off)
	}
	n := copy(p, m.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// lend returns data[off:off+n] in place; from now on the memory lives as
// long as m is reachable.
func (m *Mapping) lend(off, n int64) ([]byte, error) {
	if m.closed.Load() {
		return nil, errors.New("mmap: closed")
	}
	m.lent.Store(true)
	return m.data[off : off+n : off+n], nil
}

// Close ends reads through m. It unmaps the file unless bytes were lent, in
// which case the runtime cleanup does when m becomes unreachable.
func (m *Mapping) Close() error {
	if m.closed.Swap(true) || m.lent.Load() || len(m.data) == 0 {
		return nil
	}
	m.cleanup.Stop()
	data := m.data
	m.data = nil
	return munmap(data)
}
