package runtime

// Platform-neutral parts of the Metal adapter (backend_metal_darwin.go), so
// that Linux tests check them: the device address space that stands in for
// pointers, the reading of a launch's arguments by the kernel's MSL
// signature, and the sorting of Metal's errors.

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
	"unsafe"

	"github.com/hipgo/hipgo/kernels/msl"
	"github.com/hipgo/hipgo/metal"
	"github.com/hipgo/hipgo/runtime/driver"
)

// Metal has no device pointers the host can hand a kernel: a buffer is bound
// by object (setBuffer:offset:atIndex:). The adapter gives every buffer a
// range of made-up addresses instead, so the runtime's Buffer.Ptr, At and
// DevicePtr arguments work as on CUDA and ROCm; a pointer argument is looked
// up here and bound as (buffer, offset). Addresses start at 2^44, are never
// reused, and ranges are separated by a 64 KiB gap, so an address one past a
// buffer's end belongs to no buffer.
const (
	metalAddrBase  = 1 << 44
	metalAddrAlign = 64 << 10
)

type metalRegion[B any] struct {
	start, size uint64
	buf         B
}

// metalAddrSpace maps made-up addresses to buffers. Callers serialise.
type metalAddrSpace[B any] struct {
	next    uint64
	regions []metalRegion[B] // sorted by start
}

// add reserves size bytes of addresses for buf.
func (a *metalAddrSpace[B]) add(size uint64, buf B) driver.Ptr {
	if a.next == 0 {
		a.next = metalAddrBase
	}
	start := a.next
	a.next += (size+metalAddrAlign-1)/metalAddrAlign*metalAddrAlign + metalAddrAlign
	a.regions = append(a.regions, metalRegion[B]{start: start, size: size, buf: buf}) // starts only grow
	return driver.Ptr(start)
}

// remove forgets the buffer that starts at p.
func (a *metalAddrSpace[B]) remove(p driver.Ptr) (B, bool) {
	i := sort.Search(len(a.regions), func(i int) bool { return a.regions[i].start >= uint64(p) })
	if i == len(a.regions) || a.regions[i].start != uint64(p) {
		var zero B
		return zero, false
	}
	b := a.regions[i].buf
	a.regions = append(a.regions[:i], a.regions[i+1:]...)
	return b, true
}

// find returns the buffer holding [p, p+n) and p's offset in it.
func (a *metalAddrSpace[B]) find(p driver.Ptr, n uint64) (B, uint64, bool) {
	addr := uint64(p)
	i := sort.Search(len(a.regions), func(i int) bool { return a.regions[i].start > addr }) - 1
	var zero B
	if i < 0 {
		return zero, 0, false
	}
	r := a.regions[i]
	off := addr - r.start
	if off > r.size || n > r.size-off {
		return zero, 0, false
	}
	return r.buf, off, true
}

// errMetalArgument: a launch argument the adapter cannot bind (a pointer
// into no live buffer, a value too large for setBytes). A rejection: the
// device stays usable.
var errMetalArgument = errors.New("metal: launch argument cannot be bound")

// errMetalOutOfMemory: Metal returned no buffer.
var errMetalOutOfMemory = errors.New("metal: buffer allocation failed")

// metalArg is one buffer-index binding of a launch, read from the runtime's
// void** argument array.
type metalArg struct {
	index   uint64
	pointer bool
	// constant: a pointer into the constant address space, whose offset
	// macOS wants 256-byte aligned (setBuffer:offset:atIndex:).
	constant bool
	addr     driver.Ptr     // pointer arguments: the device address passed
	value    unsafe.Pointer // value arguments: the bytes, valid for the launch call
	size     uint64
}

// metalArgs reads params (argument i at *params[i], as Stream.pack lays
// them out) by the kernel's signature.
func metalArgs(params unsafe.Pointer, k msl.Kernel) []metalArg {
	out := make([]metalArg, len(k.Args))
	if len(k.Args) == 0 {
		return out
	}
	ptrs := unsafe.Slice((*unsafe.Pointer)(params), len(k.Args))
	for i, a := range k.Args {
		out[i] = metalArg{index: uint64(a.Index), pointer: a.Pointer, constant: a.Pointer && a.AddressSpace == "constant", size: uint64(a.Size)}
		if a.Pointer {
			out[i].addr = driver.Ptr(*(*uint64)(ptrs[i]))
		} else {
			out[i].value = ptrs[i]
		}
	}
	return out
}

// classifyMetal sorts the Metal adapter's errors: a command buffer that
// faulted itself or lost the GPU loses the device; Metal's timeout (a long
// or hung command buffer, or a victim of someone else's hang or of a GPU
// recovery) and short memory fail only the event.
func classifyMetal(err error) driver.Class {
	if code, ok := metal.CommandBufferCode(err); ok {
		switch code.Kind() {
		case metal.OwnFault, metal.DeviceGone:
			return driver.Fault
		}
		if code == metal.ErrOutOfMemory {
			return driver.OutOfMemory
		}
		return driver.Other
	}
	switch {
	case errors.Is(err, errMetalOutOfMemory):
		return driver.OutOfMemory
	case errors.Is(err, metal.ErrInvalidLaunch), errors.Is(err, errMetalArgument):
		return driver.Rejected
	case errors.Is(err, metal.ErrNilResult):
		return driver.NotFound
	}
	return driver.Other
}

// metalThreadgroups are a kernel's threadgroup memory lengths and their sum
// as Metal will set them (each rounded up to 16 bytes).
func metalThreadgroups(k msl.Kernel) (lengths []uint64, total uint64) {
	for _, tg := range k.Threadgroup {
		n := (uint64(tg.Bytes) + 15) &^ 15
		lengths = append(lengths, n)
		total += n
	}
	return lengths, total
}

// metalShape turns a runtime launch shape into Metal's.
func metalShape(d driver.Dim3) metal.Size {
	return metal.Size{Width: uint64(d.X), Height: uint64(d.Y), Depth: uint64(d.Z)}
}

func metalArgError(kernel string, i int, format string, args ...any) error {
	return fmt.Errorf("%s: argument %d: %s: %w", kernel, i, fmt.Sprintf(format, args...), errMetalArgument)
}

// metalCompletions is a Metal stream's record of its command buffers'
// fates, numbered from 1 in commit order, written by completion handlers on
// Metal's threads (finish never blocks) and read by events, waits and
// notifications.
type metalCompletions struct {
	mu       sync.Mutex
	through  uint64          // every command buffer numbered up to here has finished
	finished map[uint64]bool // finished ahead of through
	failures []metalFailure
	notifies []metalNotify
	times    map[uint64][2]float64 // GPU start and end, the last metalTimesKept
	advanced chan struct{}         // closed and replaced whenever through moves
	// releaseAt: the stream was destroyed with command buffers in flight;
	// its queue goes once through reaches this.
	releaseAt uint64
}

const metalTimesKept = 1024

type metalFailure struct {
	seq uint64
	err error
}

type metalNotify struct {
	target uint64
	fn     func()
}

func newMetalCompletions() *metalCompletions {
	return &metalCompletions{finished: map[uint64]bool{}, times: map[uint64][2]float64{}, advanced: make(chan struct{})}
}

// finish records command buffer seq's fate. It returns the notifications
// now due (the caller runs them, outside any lock) and whether the stream's
// queue may now be released.
func (c *metalCompletions) finish(seq uint64, err error, start, end float64) (ready []func(), release bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.times[seq] = [2]float64{start, end}
	if seq > metalTimesKept {
		delete(c.times, seq-metalTimesKept)
	}
	if err != nil {
		c.failures = append(c.failures, metalFailure{seq: seq, err: err})
	}
	c.finished[seq] = true
	moved := false
	for c.finished[c.through+1] {
		delete(c.finished, c.through+1)
		c.through++
		moved = true
	}
	if !moved {
		return nil, false
	}
	close(c.advanced)
	c.advanced = make(chan struct{})
	keep := c.notifies[:0]
	for _, n := range c.notifies {
		switch {
		case n.target > c.through:
			keep = append(keep, n)
		case c.failedLocked(0, n.target) == nil:
			ready = append(ready, n.fn)
		} // else the work it waited for failed: a notification says success only
	}
	clear(c.notifies[len(keep):])
	c.notifies = keep
	if c.releaseAt != 0 && c.through >= c.releaseAt {
		c.releaseAt, release = 0, true
	}
	return ready, release
}

// failedLocked is the first failure of a command buffer numbered in
// (from, to].
func (c *metalCompletions) failedLocked(from, to uint64) error {
	for _, f := range c.failures {
		if f.seq > from && f.seq <= to {
			return f.err
		}
	}
	return nil
}

// query is an event's answer for the command buffers (from, to]: their
// first failure, nil once all finished, else driver.ErrNotReady.
func (c *metalCompletions) query(from, to uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.failedLocked(from, to); err != nil {
		return err
	}
	if c.through < to {
		return driver.ErrNotReady
	}
	return nil
}

// notify registers fn for when command buffers 1..target have all
// completed well. It reports true when they already have (the caller runs
// fn); fn is dropped when one of them failed.
func (c *metalCompletions) notify(target uint64, fn func()) (now bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if target <= c.through {
		return c.failedLocked(0, target) == nil
	}
	c.notifies = append(c.notifies, metalNotify{target: target, fn: fn})
	return false
}

// wait blocks until command buffers 1..target have finished, or one failed.
func (c *metalCompletions) wait(target uint64) error {
	for {
		c.mu.Lock()
		through, advanced := c.through, c.advanced
		err := c.failedLocked(0, min(target, through))
		c.mu.Unlock()
		if err != nil {
			return err
		}
		if through >= target {
			return nil
		}
		<-advanced
	}
}

// releaseAfter says whether the queue may go now; otherwise finish says so
// once command buffer target has finished.
func (c *metalCompletions) releaseAfter(target uint64) (now bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.through >= target {
		return true
	}
	c.releaseAt = target
	return false
}

// elapsed is the GPU time from the start of command buffer first to the end
// of last (0 when first > last: no work between the marks). Both must have
// finished.
func (c *metalCompletions) elapsed(first, last uint64) (time.Duration, error) {
	if first > last {
		return 0, nil
	}
	c.mu.Lock()
	t0, ok0 := c.times[first]
	t1, ok1 := c.times[last]
	c.mu.Unlock()
	if !ok0 || !ok1 {
		return 0, fmt.Errorf("metal: GPU times of command buffers %d..%d are not kept (only the last %d): %w", first, last, metalTimesKept, errors.ErrUnsupported)
	}
	return time.Duration((t1[1] - t0[0]) * float64(time.Second)), nil
}
