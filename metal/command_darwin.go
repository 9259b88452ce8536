package metal

import (
	"fmt"
	"unsafe"

	"github.com/ebitengine/purego/objc"
)

// CommandQueue is an MTLCommandQueue (retained). Command buffers committed
// to one queue run in commit order.
type CommandQueue struct {
	l  *lib
	id objc.ID
}

// CommandBuffer is [queue commandBuffer], retained past its autorelease pool
// (it retains the resources its commands use until it completes).
func (q *CommandQueue) CommandBuffer() (*CommandBuffer, error) {
	l := q.l
	var cb objc.ID
	l.withPool(func() { cb = l.retain(l.send.id(q.id, l.sels[selCommandBuffer])) })
	if cb == 0 {
		return nil, &Error{Call: "commandBuffer", Err: ErrNilResult}
	}
	return &CommandBuffer{l: l, id: cb}, nil
}

// Release releases the queue.
func (q *CommandQueue) Release() { q.l.release(q.id) }

// CommandBuffer is an MTLCommandBuffer.
type CommandBuffer struct {
	l  *lib
	id objc.ID
}

// ComputeEncoder is [commandBuffer computeCommandEncoder], retained; end it
// with EndEncoding before Commit.
func (c *CommandBuffer) ComputeEncoder() (*ComputeEncoder, error) {
	l := c.l
	var enc objc.ID
	l.withPool(func() { enc = l.retain(l.send.id(c.id, l.sels[selComputeCommandEncoder])) })
	if enc == 0 {
		return nil, &Error{Call: "computeCommandEncoder", Err: ErrNilResult}
	}
	return &ComputeEncoder{l: l, id: enc}, nil
}

// OnCompleted adds a completion handler (addCompletedHandler:; call it
// before Commit). Metal runs it on its own thread once the command buffer
// completes or fails; fn gets the final status and, for StatusError, the
// command buffer's error as an *Error in CommandBufferErrorDomain (errors.Is
// with ErrPageFault, ...). fn must not block.
func (c *CommandBuffer) OnCompleted(fn func(Status, error)) {
	l := c.l
	block := objc.NewBlock(func(_ objc.Block, cb objc.ID) {
		var st Status
		var err error
		l.withPool(func() {
			st = Status(l.send.u64(cb, l.sels[selStatus]))
			err = l.fate(cb, st)
		})
		fn(st, err)
	})
	l.send.voidID(c.id, l.sels[selAddCompletedHandler], objc.ID(block))
	block.Release() // Metal copied it
}

// fate is the error of a command buffer whose status is st: nil unless
// StatusError. Callers are inside withPool.
func (l *lib) fate(cb objc.ID, st Status) error {
	if st != StatusError {
		return nil
	}
	if e := l.nsError("command buffer", l.send.id(cb, l.sels[selError])); e != nil {
		return e
	}
	return &Error{Call: "command buffer", Domain: CommandBufferErrorDomain, Code: int64(ErrInternal),
		Description: "status MTLCommandBufferStatusError without an error"}
}

// Commit commits the command buffer to its queue.
func (c *CommandBuffer) Commit() { c.l.send.void(c.id, c.l.sels[selCommit]) }

// Status is the command buffer's status now.
func (c *CommandBuffer) Status() Status { return Status(c.l.send.u64(c.id, c.l.sels[selStatus])) }

// Err is the command buffer's error: nil unless its status is StatusError.
func (c *CommandBuffer) Err() error {
	var err error
	c.l.withPool(func() { err = c.l.fate(c.id, c.Status()) })
	return err
}

// WaitUntilCompleted blocks the calling thread until the command buffer has
// completed or failed (it can block for as long as a hung GPU).
func (c *CommandBuffer) WaitUntilCompleted() { c.l.send.void(c.id, c.l.sels[selWaitUntilCompleted]) }

// GPUTimes are the GPU's start and end of the command buffer's execution,
// in seconds on the host's CFAbsoluteTime clock (0 before it ran).
func (c *CommandBuffer) GPUTimes() (start, end float64) {
	return c.l.send.f64(c.id, c.l.sels[selGPUStartTime]), c.l.send.f64(c.id, c.l.sels[selGPUEndTime])
}

// Release releases the command buffer.
func (c *CommandBuffer) Release() { c.l.release(c.id) }

// ComputeEncoder is an MTLComputeCommandEncoder.
type ComputeEncoder struct {
	l  *lib
	id objc.ID
}

// SetPipeline is setComputePipelineState:.
func (e *ComputeEncoder) SetPipeline(p *ComputePipelineState) {
	e.l.send.voidID(e.id, e.l.sels[selSetComputePipelineState], p.id)
}

// SetBuffer is setBuffer:offset:atIndex: (nil binds no buffer).
func (e *ComputeEncoder) SetBuffer(b *Buffer, offset, index uint64) {
	var id objc.ID
	if b != nil {
		id = b.id
	}
	e.l.send.voidIDU64U64(e.id, e.l.sels[selSetBufferOffsetAtIndex], id, offset, index)
}

// MaxSetBytes is the most setBytes:length:atIndex: takes (Apple: "for data
// smaller than 4 KB").
const MaxSetBytes = 4096

// SetBytes is setBytes:length:atIndex:: Metal copies n bytes at p now.
func (e *ComputeEncoder) SetBytes(p unsafe.Pointer, n, index uint64) error {
	if n == 0 || n > MaxSetBytes {
		return &Error{Call: "setBytes:length:atIndex:", Description: fmt.Sprintf("%d bytes (want 1..%d)", n, MaxSetBytes), Err: ErrInvalidLaunch}
	}
	e.l.send.voidPtrU64U64(e.id, e.l.sels[selSetBytesLengthAtIndex], p, n, index)
	return nil
}

// SetThreadgroupMemoryLength is setThreadgroupMemoryLength:atIndex:. Metal
// wants a multiple of 16 bytes; n is rounded up.
func (e *ComputeEncoder) SetThreadgroupMemoryLength(n, index uint64) {
	e.l.send.voidU64U64(e.id, e.l.sels[selSetThreadgroupMemoryLengthAtIndex], (n+15)&^15, index)
}

// Dispatch is dispatchThreadgroups:threadsPerThreadgroup:. Check it first
// with CheckDispatch: Metal's own validation of an oversized threadgroup is
// an assertion in debug layers and undefined behaviour without them.
func (e *ComputeEncoder) Dispatch(threadgroups, threadsPerThreadgroup Size) {
	e.l.send.voidSizeSize(e.id, e.l.sels[selDispatchThreadgroupsThreadsPerThreadgroup], threadgroups, threadsPerThreadgroup)
}

// EndEncoding is endEncoding.
func (e *ComputeEncoder) EndEncoding() { e.l.send.void(e.id, e.l.sels[selEndEncoding]) }

// Release releases the encoder.
func (e *ComputeEncoder) Release() { e.l.release(e.id) }
