package runtime

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/hipgo/hipgo/kernels/manifest"
	"github.com/hipgo/hipgo/kernels/msl"
	"github.com/hipgo/hipgo/metal"
	"github.com/hipgo/hipgo/runtime/driver"
)

// The Metal backend adapts package metal to driver.Device. It has never run
// on Apple hardware (docs/metal.md is the runbook for someone with a Mac).
//
// Model: a runtime stream is an MTLCommandQueue. Launches encode into the
// stream's open command buffer (one compute encoder, serial dispatches, so
// each dispatch sees the one before); Record, Notify, Mark and Destroy
// commit it, and so does every 64th dispatch, so a long sequence starts on
// the GPU before anyone waits. Each committed
// command buffer gets a completion handler that records, on Metal's thread
// and without blocking, whether it completed and with what error
// (MTLCommandBufferStatus, MTLCommandBufferErrorDomain code). An event
// covers the command buffers committed since the stream's previous event:
// it lands when all of them have completed and fails with the first one's
// error. Buffers are shared storage with made-up device addresses
// (metal_bind.go); copies are memmoves into their contents. No OS-thread
// locking is needed beyond the autorelease pools the binding keeps: Metal
// objects are not bound to a thread.

const metalDispatchesPerCommit = 64

func metalDeviceCount() (int, error) {
	if err := metal.Load(); err != nil {
		return 0, err
	}
	dev, err := metal.SystemDefaultDevice()
	if errors.Is(err, metal.ErrNoDevice) {
		return 0, &NoDeviceError{Backend: driver.Metal, Err: err}
	}
	if err != nil {
		return 0, err
	}
	dev.Release()
	return 1, nil // MTLCreateSystemDefaultDevice: the one GPU of an Apple silicon Mac
}

func metalOpen(ordinal int) (driver.Device, error) {
	if ordinal != 0 {
		return nil, fmt.Errorf("metal: device %d requested, only the system default device (0) is opened: %w", ordinal, ErrInvalidArgument)
	}
	if err := metal.Load(); err != nil {
		return nil, err
	}
	dev, err := metal.SystemDefaultDevice()
	if err != nil {
		return nil, err
	}
	d := &metalDevice{dev: dev, limits: dev.Limits()}
	arch := dev.Family()
	if arch == "" {
		arch = "metal"
	}
	lib := os.Getenv(metal.EnvFramework)
	if lib == "" {
		lib = metal.FrameworkPath
	}
	osv, err := syscall.Sysctl("kern.osproductversion")
	if err != nil {
		osv = "unknown"
	}
	d.info = driver.Info{
		Backend: driver.Metal, Ordinal: 0, Name: dev.Name(), Arch: arch,
		TotalMemory:   d.limits.RecommendedMaxWorkingSetSize,
		WarpSize:      32, // Apple GPUs' SIMD-group width; each pipeline reports its own threadExecutionWidth
		MaxBlock:      int(d.limits.MaxThreadsPerThreadgroup.Width),
		DriverVersion: "macOS " + osv, RuntimeVersion: "Metal (MSL compiled at load)",
		Library: lib, Format: driver.MSL,
		// A notification runs only when the command buffers it waited for
		// completed well (metalCompletions.finish drops it otherwise).
		NotifyReportsSuccess: true,
	}
	return d, nil
}

type metalDevice struct {
	dev    *metal.Device
	limits metal.Limits
	info   driver.Info

	mu  sync.Mutex
	mem metalAddrSpace[*metal.Buffer]

	// gone is the first command-buffer error of a kind that loses the device
	// (classifyMetal: Fault), seen by a completion handler. Alive reports it.
	gone atomic.Pointer[error]
}

func (d *metalDevice) Info() driver.Info { return d.info }

func (d *metalDevice) Alloc(n uint64) (driver.Ptr, error) {
	if n > d.limits.MaxBufferLength {
		return 0, fmt.Errorf("metal: %d bytes exceed the device's maxBufferLength %d: %w", n, d.limits.MaxBufferLength, errMetalOutOfMemory)
	}
	b, err := d.dev.NewBuffer(n)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", errMetalOutOfMemory, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mem.add(n, b), nil
}

func (d *metalDevice) Free(p driver.Ptr) error {
	d.mu.Lock()
	b, ok := d.mem.remove(p)
	d.mu.Unlock()
	if !ok {
		return fmt.Errorf("metal: free of %#x, which is no buffer's start: %w", uint64(p), errMetalArgument)
	}
	b.Release() // command buffers still using it hold their own reference
	return nil
}

// hostView is the CPU view of [p, p+n).
func (d *metalDevice) hostView(p driver.Ptr, n uint64) ([]byte, error) {
	d.mu.Lock()
	b, off, ok := d.mem.find(p, n)
	d.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("metal: %d bytes at %#x are not inside one live buffer: %w", n, uint64(p), errMetalArgument)
	}
	return unsafe.Slice((*byte)(unsafe.Add(b.Contents(), off)), n), nil
}

// CopyHtoD writes shared memory directly: command buffers committed after
// it returns read the new bytes.
func (d *metalDevice) CopyHtoD(dst driver.Ptr, src unsafe.Pointer, n uint64) error {
	v, err := d.hostView(dst, n)
	if err != nil {
		return err
	}
	copy(v, unsafe.Slice((*byte)(src), n))
	return nil
}

func (d *metalDevice) CopyDtoH(dst unsafe.Pointer, src driver.Ptr, n uint64) error {
	v, err := d.hostView(src, n)
	if err != nil {
		return err
	}
	copy(unsafe.Slice((*byte)(dst), n), v)
	return nil
}

// MemInfo is the working set Metal recommends and what the process has
// allocated of it.
func (d *metalDevice) MemInfo() (free, total uint64, err error) {
	total = d.limits.RecommendedMaxWorkingSetSize
	if used := d.dev.CurrentAllocatedSize(); used < total {
		free = total - used
	}
	return free, total, nil
}

func (d *metalDevice) NewStream() (driver.Stream, error) {
	q, err := d.dev.NewCommandQueue()
	if err != nil {
		return nil, err
	}
	return &metalStream{d: d, q: q, done: newMetalCompletions()}, nil
}

// LoadModule reads the kernels' signatures from the MSL source (how each
// argument is bound) and compiles it.
func (d *metalDevice) LoadModule(image []byte) (driver.Module, error) {
	sig, err := msl.Parse(image)
	if err != nil {
		return nil, err
	}
	lib, err := d.dev.NewLibraryWithSource(image)
	if err != nil {
		return nil, err
	}
	return &metalModule{d: d, lib: lib, sig: sig}, nil
}

func (d *metalDevice) Classify(err error) driver.Class { return classifyMetal(err) }

// Alive reports the first command-buffer error that lost the device. Metal
// has no call that probes the GPU without work, and its calls do not fail
// after a fault; the completion handlers are what knows.
func (d *metalDevice) Alive() error {
	if g := d.gone.Load(); g != nil {
		return *g
	}
	return nil
}

func (d *metalDevice) Close() error {
	d.mu.Lock()
	for _, r := range d.mem.regions {
		r.buf.Release()
	}
	d.mem.regions = nil
	d.mu.Unlock()
	d.dev.Release()
	return nil
}

type metalModule struct {
	d   *metalDevice
	lib *metal.Library
	sig *msl.Module

	mu    sync.Mutex
	funcs []*metalFunction
}

// Function builds the kernel's compute pipeline state; its limits are
// checked at every launch.
func (m *metalModule) Function(name string) (driver.Function, error) {
	k, ok := m.sig.Kernel(name)
	if !ok {
		return nil, fmt.Errorf("metal: kernel %s is not declared in the MSL source: %w", name, metal.ErrNilResult)
	}
	fn, err := m.lib.Function(name)
	if err != nil {
		return nil, err
	}
	defer fn.Release()
	p, err := m.d.dev.NewComputePipelineState(fn)
	if err != nil {
		return nil, err
	}
	f := &metalFunction{name: name, sig: k, pipeline: p}
	f.tgLengths, f.tgTotal = metalThreadgroups(k)
	m.mu.Lock()
	m.funcs = append(m.funcs, f)
	m.mu.Unlock()
	return f, nil
}

func (m *metalModule) Unload() error {
	m.mu.Lock()
	for _, f := range m.funcs {
		f.pipeline.Release()
	}
	m.funcs = nil
	m.mu.Unlock()
	m.lib.Release()
	return nil
}

type metalFunction struct {
	name      string
	sig       msl.Kernel
	pipeline  *metal.ComputePipelineState
	tgLengths []uint64
	tgTotal   uint64
}

func (f *metalFunction) Name() string { return f.name }

// Params reports the layout the MSL signature gives, so a caller's specs
// (LoadImage) are checked against the source.
func (f *metalFunction) Params() ([]driver.Param, bool, error) {
	ki := manifest.FromMSL(&msl.Module{Kernels: []msl.Kernel{f.sig}})[0]
	out := make([]driver.Param, len(ki.Params))
	for i, p := range ki.Params {
		out[i] = driver.Param{Offset: uint64(p.Offset), Size: uint64(p.Size)}
	}
	return out, true, nil
}

type metalStream struct {
	d *metalDevice
	q *metal.CommandQueue

	mu         sync.Mutex // the open command buffer and the commit count
	cb         *metal.CommandBuffer
	enc        *metal.ComputeEncoder
	dispatches int
	committed  uint64 // command buffers committed, numbered from 1
	lastEvent  uint64 // committed count at the previous Record
	destroyed  bool

	done *metalCompletions // what the completion handlers write
}

// openLocked returns the open encoder, making a command buffer if needed.
func (s *metalStream) openLocked() (*metal.ComputeEncoder, error) {
	if s.enc != nil {
		return s.enc, nil
	}
	cb, err := s.q.CommandBuffer()
	if err != nil {
		return nil, err
	}
	enc, err := cb.ComputeEncoder()
	if err != nil {
		cb.Release()
		return nil, err
	}
	s.cb, s.enc, s.dispatches = cb, enc, 0
	return enc, nil
}

// commitLocked ends and commits the open command buffer, if any.
func (s *metalStream) commitLocked() {
	if s.cb == nil {
		return
	}
	s.enc.EndEncoding()
	s.enc.Release()
	cb := s.cb
	s.committed++
	seq := s.committed
	cb.OnCompleted(func(st metal.Status, err error) { s.completed(seq, cb, st, err) })
	cb.Commit()
	s.cb, s.enc, s.dispatches = nil, nil, 0
}

// completed runs on Metal's thread: it records the command buffer's fate
// and runs the notifications it satisfies, without blocking.
func (s *metalStream) completed(seq uint64, cb *metal.CommandBuffer, st metal.Status, err error) {
	if err == nil && st != metal.StatusCompleted {
		err = &metal.Error{Call: "command buffer", Description: "finished with status " + st.String()}
	}
	start, end := cb.GPUTimes()
	cb.Release()
	if err != nil && classifyMetal(err) == driver.Fault {
		s.d.gone.CompareAndSwap(nil, &err)
	}
	ready, release := s.done.finish(seq, err, start, end)
	for _, fn := range ready {
		fn()
	}
	if release {
		s.q.Release()
	}
}

func (s *metalStream) Launch(fn driver.Function, grid, block driver.Dim3, shmem uint32, params unsafe.Pointer) error {
	f := fn.(*metalFunction)
	if shmem != 0 {
		return fmt.Errorf("metal: %s: %d bytes of dynamic shared memory: Metal kernels size threadgroup memory per [[threadgroup(n)]] argument (/* hipgo: N bytes */), so it must be 0: %w", f.name, shmem, metal.ErrInvalidLaunch)
	}
	threads := metalShape(block)
	if err := metal.CheckDispatch(threads, f.tgTotal, f.pipeline.MaxTotalThreadsPerThreadgroup, f.pipeline.StaticThreadgroupMemoryLength, s.d.limits); err != nil {
		return fmt.Errorf("metal: %s: %w", f.name, err)
	}
	args := metalArgs(params, f.sig)
	bufs := make([]*metal.Buffer, len(args))
	offs := make([]uint64, len(args))
	s.d.mu.Lock()
	for i, a := range args {
		if !a.pointer || a.addr == 0 {
			continue
		}
		b, off, ok := s.d.mem.find(a.addr, 0)
		if !ok {
			s.d.mu.Unlock()
			return metalArgError(f.name, i, "address %#x is inside no live buffer", uint64(a.addr))
		}
		if a.constant && off%256 != 0 {
			s.d.mu.Unlock()
			return metalArgError(f.name, i, "a constant-space buffer at offset %d: macOS wants a multiple of 256", off)
		}
		bufs[i], offs[i] = b, off
	}
	s.d.mu.Unlock()

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.destroyed {
		return fmt.Errorf("metal: launch %s on a destroyed stream: %w", f.name, ErrClosed)
	}
	enc, err := s.openLocked()
	if err != nil {
		return err
	}
	enc.SetPipeline(f.pipeline)
	for i, a := range args {
		if a.pointer {
			enc.SetBuffer(bufs[i], offs[i], a.index)
			continue
		}
		if err := enc.SetBytes(a.value, a.size, a.index); err != nil {
			// Unreachable for the scalar types msl accepts; the encoder
			// already holds this dispatch's earlier bindings, which the next
			// dispatch overwrites, so nothing half-done runs.
			return metalArgError(f.name, i, "%v", err)
		}
	}
	for i, n := range f.tgLengths {
		enc.SetThreadgroupMemoryLength(n, uint64(i))
	}
	enc.Dispatch(metalShape(grid), threads)
	s.dispatches++
	if s.dispatches >= metalDispatchesPerCommit {
		s.commitLocked()
	}
	return nil
}

func (s *metalStream) Record() (driver.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commitLocked()
	e := &metalEvent{s: s, from: s.lastEvent, to: s.committed}
	s.lastEvent = s.committed
	return e, nil
}

func (s *metalStream) Notify(fn func()) error {
	s.mu.Lock()
	s.commitLocked()
	target := s.committed
	s.mu.Unlock()
	if s.done.notify(target, fn) {
		go fn() // the work is done; run it off the caller's locks, as a driver thread would
	}
	return nil
}

// Destroy commits what is open (pending work keeps running) and releases
// the queue once the command buffers in flight have finished.
func (s *metalStream) Destroy() error {
	s.mu.Lock()
	if s.destroyed {
		s.mu.Unlock()
		return nil
	}
	s.destroyed = true
	s.commitLocked()
	target := s.committed
	s.mu.Unlock()
	if s.done.releaseAfter(target) {
		s.q.Release()
	}
	return nil
}

// Mark commits the open command buffer; the mark stands after it.
func (s *metalStream) Mark() (driver.TimingMark, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commitLocked()
	return &metalMark{s: s, seq: s.committed}, nil
}

type metalMark struct {
	s   *metalStream
	seq uint64
}

// Since waits for this mark and returns the GPU time from the start of the
// first command buffer after start to the end of the last one before this
// mark (GPUStartTime, GPUEndTime).
func (m *metalMark) Since(start driver.TimingMark) (time.Duration, error) {
	if err := m.s.done.wait(m.seq); err != nil {
		return 0, err
	}
	return m.s.done.elapsed(start.(*metalMark).seq+1, m.seq)
}

func (m *metalMark) Destroy() error { return nil }

type metalEvent struct {
	s        *metalStream
	from, to uint64 // the command buffers (from, to] it covers
}

func (e *metalEvent) Query() error { return e.s.done.query(e.from, e.to) }

func (e *metalEvent) Destroy() error { return nil }
