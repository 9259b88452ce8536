package metal

import (
	"unsafe"

	"github.com/ebitengine/purego/objc"
)

// Buffer is an MTLBuffer in shared storage (retained): Contents is memory the
// CPU reads and writes directly, and the GPU sees those writes in command
// buffers committed afterwards.
type Buffer struct {
	l        *lib
	id       objc.ID
	contents unsafe.Pointer
	length   uint64
}

// Contents is the buffer's CPU address.
func (b *Buffer) Contents() unsafe.Pointer { return b.contents }

// Length is the buffer's size in bytes.
func (b *Buffer) Length() uint64 { return b.length }

// Release releases the buffer. Command buffers that use it retain it until
// they complete, so releasing a buffer queued work still reads is safe.
func (b *Buffer) Release() { b.l.release(b.id) }
