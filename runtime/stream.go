package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hipgo/hipgo/runtime/driver"
)

// Dim3 is a grid (in blocks) or block (in threads) shape.
type Dim3 = driver.Dim3

// LaunchConfig is a launch's shape.
type LaunchConfig struct {
	Grid, Block Dim3
	// SharedMem is the dynamic shared memory per block in bytes. With the
	// kernel's static shared memory (KernelSpec.StaticShared) it may pass
	// driver.DefaultSharedMem (48 KiB) on a backend that can raise a
	// kernel's limit (CUDA), up to the device's Info().MaxSharedOptin: the
	// first such launch raises the kernel's limit before it reaches the
	// driver, and Launch refuses one over that maximum with a *LaunchError.
	// Elsewhere (ROCm, whose HIP takes up to the device's LDS without a
	// raise; Metal) the launch goes to the driver as it is, which refuses
	// what the device cannot give (a *LaunchError wrapping its code).
	SharedMem int
	// EarlyStart lets the device schedule the kernel before the kernel
	// ahead of it on the stream has finished, hiding the launch gap (CUDA
	// programmatic dependent launch, compute capability 9.0 and later;
	// elsewhere a plain launch). Set it only for a kernel that calls
	// grid_dependency_wait (kernels/src/portable.h) before it reads or
	// writes global memory: the stream no longer orders it, the kernel does.
	EarlyStart bool
}

// Limits common to every backend: CUDA caps grid Y and Z at 65535 blocks;
// AMD caps grid×block at 2^32 threads per dimension.
const (
	maxGridYZ          = 65535
	maxThreadsPerDim   = 1<<32 - 1
	argAlign           = 16
	defaultScratchSize = 4096
)

// Stream is an in-order queue of work on a device. Its methods are safe for
// concurrent use, though work from several goroutines interleaves.
type Stream struct {
	dev *Device
	drv driver.Stream

	mu        sync.Mutex
	scratch   []byte // kernel-argument memory outside the Go heap
	last      string // the last kernel launched
	destroyed bool
	capture   *capture            // non-nil while Capture runs
	graphs    map[*Graph]struct{} // graphs captured here and not closed
	captures  uint64              // graphs captured so far, for names
	// afterGraph: the last thing enqueued was a graph replay (Launch then
	// launches an EarlyStart kernel plainly).
	afterGraph bool

	// Completion callbacks are coalesced: at most one host callback is
	// outstanding per stream, and when it runs it lands every event recorded
	// on the stream before it (stream order guarantees their work is done).
	// A host callback stalls the stream until the driver's thread has run
	// it: one per event made launch+record 5.6× slower than in C, and one
	// per decode step (recorded with each step's event) cost 4-6% of the
	// step at batch 1 and 3-5% at batch 32 on the H200 (1B shape), where the
	// next step's work waited behind it. So a callback is enqueued only for
	// a Wait that is going to sleep: at Record when the wait spin is 0,
	// else by the Wait whose spin ended (notifyLate).
	evMu          sync.Mutex
	evs           []*Event // this stream's events in record order, settled ones pruned lazily
	cbOutstanding atomic.Bool
}

// NewStream creates a stream that does not synchronise with other streams.
func (d *Device) NewStream() (*Stream, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.leave()
	ds, err := d.drv.NewStream()
	if err != nil {
		return nil, d.fail("create stream", "", err)
	}
	scratch, err := hostAlloc(defaultScratchSize)
	if err != nil {
		// The stream exists; give it back before reporting.
		return nil, fmt.Errorf("%s: kernel-argument memory: %w (stream destroy: %v)", d.label, err, ds.Destroy())
	}
	s := &Stream{dev: d, drv: ds, scratch: scratch, graphs: map[*Graph]struct{}{}}
	d.mu.Lock()
	d.streams[s] = struct{}{}
	d.mu.Unlock()
	return s, nil
}

// Device is the stream's device.
func (s *Stream) Device() *Device { return s.dev }

// LastKernel names the last kernel launched on the stream.
func (s *Stream) LastKernel() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// Launch enqueues k with args, checked against the kernel's metadata before
// anything reaches the driver: argument count, sizes and pointer kinds, and
// the block size against what the kernel was built for. A refused launch is a
// *LaunchError naming the kernel and leaves the device usable; a sticky fault
// reported at launch loses the device.
func (s *Stream) Launch(k *Kernel, cfg LaunchConfig, args ...any) error {
	d := s.dev
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	if k.mod.dev != d {
		return &LaunchError{Kernel: k.spec.Name, Reason: fmt.Sprintf("kernel belongs to %s, stream to %s", k.mod.dev.label, d.label)}
	}
	if reason := k.checkShape(d, cfg); reason != "" {
		return &LaunchError{Kernel: k.spec.Name, Reason: reason}
	}
	if err := k.checkArgs(d, args); err != nil {
		return &LaunchError{Kernel: k.spec.Name, Reason: err.Error()}
	}
	if err := s.fitShared(k, cfg.SharedMem); err != nil {
		return err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.destroyed {
		return fmt.Errorf("launch %s: stream closed: %w", k.spec.Name, ErrClosed)
	}
	c := s.capture
	if c != nil && c.ended {
		return fmt.Errorf("launch %s: %w", k.spec.Name, c.err)
	}
	params, err := s.pack(k, args)
	if err != nil {
		return &LaunchError{Kernel: k.spec.Name, Reason: err.Error()}
	}
	// Inside a capture an early launch becomes a programmatic edge from the
	// kernel captured before it (the first kernel of a capture has none and
	// is captured plainly). The launch right after a graph replay does not
	// start early: the kernel ahead of it is a graph's node, which a
	// programmatic edge from a plain launch is not known to reach
	// (unmeasured; a plain launch is safe).
	early := cfg.EarlyStart && !s.afterGraph && (c == nil || c.kernels > 0)
	s.afterGraph = false
	if el, ok := s.drv.(driver.EarlyLauncher); ok && early {
		err = el.LaunchEarly(k.fn, cfg.Grid, cfg.Block, uint32(cfg.SharedMem), params)
	} else {
		err = s.drv.Launch(k.fn, cfg.Grid, cfg.Block, uint32(cfg.SharedMem), params)
	}
	if err != nil {
		return s.launchFailed(k.spec.Name, "", err)
	}
	if c != nil {
		// Captured, not run: the stream's last kernel is the graph's once
		// it is launched.
		c.kernels++
		c.last = k.spec.Name
		return nil
	}
	s.last = k.spec.Name
	return nil
}

// checkShape returns why a launch shape is invalid for k, or "".
func (k *Kernel) checkShape(d *Device, cfg LaunchConfig) string {
	g, b := cfg.Grid, cfg.Block
	switch {
	case g.X == 0 || g.Y == 0 || g.Z == 0:
		return fmt.Sprintf("grid %dx%dx%d has a zero dimension", g.X, g.Y, g.Z)
	case b.X == 0 || b.Y == 0 || b.Z == 0:
		return fmt.Sprintf("block %dx%dx%d has a zero dimension", b.X, b.Y, b.Z)
	case g.Y > maxGridYZ || g.Z > maxGridYZ:
		return fmt.Sprintf("grid %dx%dx%d exceeds %d blocks in y or z", g.X, g.Y, g.Z, maxGridYZ)
	case uint64(g.X)*uint64(b.X) > maxThreadsPerDim || uint64(g.Y)*uint64(b.Y) > maxThreadsPerDim || uint64(g.Z)*uint64(b.Z) > maxThreadsPerDim:
		return "grid×block exceeds 2^32-1 threads in one dimension"
	case cfg.SharedMem < 0:
		return fmt.Sprintf("negative shared memory %d", cfg.SharedMem)
	}
	threads := b.Count()
	if k.spec.MaxThreads > 0 && threads > uint64(k.spec.MaxThreads) {
		return fmt.Sprintf("block of %d threads exceeds the %d the kernel was built for", threads, k.spec.MaxThreads)
	}
	if max := d.info.MaxBlock; max > 0 && threads > uint64(max) {
		return fmt.Sprintf("block of %d threads exceeds the device's %d", threads, max)
	}
	return ""
}

// fitShared lets k launch with dyn bytes of dynamic shared memory per
// block. Up to driver.DefaultSharedMem, static included, there is nothing to
// do and no driver call, and on a backend whose functions are no
// driver.SharedMemRaiser the driver decides alone. Otherwise the total must
// be within the device's MaxSharedOptin, else the launch is refused before
// the driver; then the kernel's limit is raised unless an earlier raise
// covers dyn, so each kernel is raised once per larger size, whichever
// stream launches it.
func (s *Stream) fitShared(k *Kernel, dyn int) error {
	static := k.spec.StaticShared
	// Compared as dyn against what static leaves, so that no dyn overflows.
	if dyn <= driver.DefaultSharedMem-static {
		return nil
	}
	r, ok := k.fn.(driver.SharedMemRaiser)
	if !ok {
		return nil
	}
	asked := func() string {
		return fmt.Sprintf("%d bytes of shared memory per block (%d static + %d dynamic)", uint64(static)+uint64(dyn), static, dyn)
	}
	if ceiling := max(s.dev.info.MaxSharedOptin, driver.DefaultSharedMem); dyn > ceiling-static {
		return &LaunchError{Kernel: k.spec.Name, Reason: fmt.Sprintf("%s is over the device's maximum of %d", asked(), ceiling)}
	}
	k.sharedMu.Lock()
	defer k.sharedMu.Unlock()
	if dyn <= k.sharedRaised {
		return nil
	}
	if err := r.SetMaxDynamicShared(dyn); err != nil {
		return s.launchFailed(k.spec.Name, fmt.Sprintf("raising its dynamic shared memory limit to %d bytes for %s", dyn, asked()), err)
	}
	k.sharedRaised = dyn
	return nil
}

// pack lays the arguments out at the metadata's offsets in scratch memory and
// returns the void** array the driver takes. Callers hold s.mu.
func (s *Stream) pack(k *Kernel, args []any) (unsafe.Pointer, error) {
	n := len(args)
	ptrBytes := (n*8 + argAlign - 1) / argAlign * argAlign
	need := ptrBytes + k.spec.argBytes()
	if need > len(s.scratch) {
		bigger, err := hostAlloc((need + 4095) / 4096 * 4096)
		if err != nil {
			return nil, fmt.Errorf("kernel-argument memory: %w", err)
		}
		if err := hostFree(s.scratch); err != nil {
			return nil, fmt.Errorf("kernel-argument memory: %w", err)
		}
		s.scratch = bigger
	}
	if n == 0 {
		return nil, nil
	}
	base := unsafe.Pointer(&s.scratch[0])
	ptrs := unsafe.Slice((*uintptr)(base), n)
	for i, a := range args {
		p := k.spec.Params[i]
		off := ptrBytes + p.Offset
		putArg(s.scratch[off:off+p.Size], a)
		ptrs[i] = uintptr(base) + uintptr(off)
	}
	return base, nil
}

// launchFailed turns a driver's launch error (or that of a call made for
// the launch, which reason then names) into the runtime's: a
// *LaunchError when the driver refused the launch (Rejected, OutOfMemory),
// a lost device after a fault, and the driver's error otherwise (nothing
// says the device is fine). A sticky code at launch can be a plain
// rejection (HIP has reported a block over the kernel's bounds as
// hipErrorLaunchFailure), so the device is probed before it is declared
// lost.
func (s *Stream) launchFailed(name, reason string, err error) error {
	d := s.dev
	switch d.drv.Classify(err) {
	case driver.Fault:
		if probe := d.drv.Alive(); probe != nil {
			f := d.markLost(&FaultError{Device: d.label, Kernel: name, Op: "launch", Kind: faultKind(err), Err: err})
			return &DeviceLostError{Device: d.label, Cause: f}
		}
		return &LaunchError{Kernel: name, Reason: reason, Err: err}
	case driver.OutOfMemory:
		if reason == "" {
			reason = "out of resources"
		}
		return &LaunchError{Kernel: name, Reason: reason, Err: err}
	case driver.Rejected:
		return &LaunchError{Kernel: name, Reason: reason, Err: err}
	}
	if reason != "" {
		err = fmt.Errorf("%s: %w", reason, err)
	}
	return d.fail("launch "+name, name, err)
}

// Record returns an event that completes when all work enqueued on the
// stream so far completes.
func (s *Stream) Record() (*Event, error) {
	d := s.dev
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.leave()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.destroyed {
		return nil, fmt.Errorf("record: stream closed: %w", ErrClosed)
	}
	if s.capture != nil {
		return nil, s.abortCaptureLocked("record")
	}
	// Under the stream's lock, which Close's teardown takes before the
	// driver closes, so no destroy runs against a closed driver.
	d.mon.destroyReaped()
	de, err := s.drv.Record()
	if err != nil {
		return nil, d.fail("record event", s.last, err)
	}
	e := newEvent(s, de, s.last)
	if !d.mon.add(e) { // tracked and listed on the stream in one step
		// The device was lost or closed while the driver recorded: the
		// event is never handed out, and settles with that error too.
		err := d.usable()
		e.finish(err)
		return nil, err
	}
	if d.waitSpin == 0 {
		// Every Wait sleeps at once: the callback at the event is its
		// low-latency wake. Otherwise a Wait enqueues one only if its spin
		// ends first (notifyLate).
		if err := s.notifyLocked(e); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// notifyLocked enqueues the coalesced host callback behind e (none when one
// is outstanding already, or callbacks are off): the low-latency wake of a
// sleeping Wait; if it cannot be enqueued the monitor still settles the
// event. Where the driver's callback says nothing about how the work ended
// (HIP), it only wakes the monitor. Only a fault is returned. Callers hold
// s.mu, on a stream that is not capturing.
func (s *Stream) notifyLocked(e *Event) error {
	d := s.dev
	if !d.notify || !s.cbOutstanding.CompareAndSwap(false, true) {
		return nil
	}
	err := s.drv.Notify(func() {
		if d.notifyLands {
			s.landThrough(e.seq)
		} else {
			d.mon.kick()
		}
		s.cbOutstanding.Store(false)
	})
	if err != nil {
		s.cbOutstanding.Store(false)
		if d.drv.Classify(err) == driver.Fault {
			return d.fail("enqueue host callback", s.last, err)
		}
		d.notifyErrors.Add(1)
	}
	return nil
}

// notifyLate is a Wait's callback for e when its spin ended with e still
// pending: enqueued now, behind whatever the stream holds, unless the stream
// is closed or capturing (the monitor settles e either way).
func (s *Stream) notifyLate(e *Event) {
	d := s.dev
	if !d.notify || d.enter() != nil {
		return
	}
	defer d.leave()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.destroyed || s.capture != nil || State(e.state.Load()) != Pending {
		return
	}
	_ = s.notifyLocked(e) // a fault loses the device, which fails e
}

// landThrough lands every event of the stream recorded at or before seq. It
// runs on the driver's callback thread: no driver call, no blocking beyond a
// short lock.
func (s *Stream) landThrough(seq uint64) {
	s.evMu.Lock()
	n := 0
	for n < len(s.evs) && s.evs[n].seq <= seq {
		n++
	}
	done := make([]*Event, n)
	copy(done, s.evs[:n])
	for i := 0; i < n; i++ {
		s.evs[i] = nil
	}
	s.evs = s.evs[n:]
	more := len(s.evs) > 0
	s.evMu.Unlock()
	for _, e := range done {
		e.finish(nil)
	}
	if more {
		// Events recorded after this callback have none of their own: the
		// monitor settles them, starting now.
		s.dev.mon.kick()
	}
}

// pruneLocked drops settled events from the front of the list.
func (s *Stream) pruneLocked() {
	for len(s.evs) > 0 && State(s.evs[0].state.Load()) != Pending {
		s.evs[0] = nil
		s.evs = s.evs[1:]
	}
}

// oldestPending is the stream's oldest unsettled event, or nil.
func (s *Stream) oldestPending() *Event {
	s.evMu.Lock()
	defer s.evMu.Unlock()
	s.pruneLocked()
	if len(s.evs) == 0 {
		return nil
	}
	return s.evs[0]
}

// Synchronize waits for all work enqueued so far (Record, then Wait).
func (s *Stream) Synchronize(ctx context.Context) error {
	e, err := s.Record()
	if err != nil {
		return err
	}
	return e.Wait(ctx)
}

// TimeGPU runs enqueue, which puts work on s, between two timing events and
// returns the GPU time between them: the work's time on the device's own
// clock, without host scheduling or wake-up latency (what benchmarks should
// report, as CUDA events do for PyTorch). It waits for the work through
// Synchronize, so a fault, a watchdog or ctx ends it with that error. A
// backend that cannot time (the simulated one) gets an error wrapping
// errors.ErrUnsupported.
func (s *Stream) TimeGPU(ctx context.Context, enqueue func() error) (elapsed time.Duration, err error) {
	start, err := s.mark()
	if err != nil {
		return 0, err
	}
	// Timing events hold no work: destroying them is cleanup, reported only
	// when nothing else failed.
	defer func() { err = errors.Join(err, s.dropMark(start)) }()
	if err := enqueue(); err != nil {
		return 0, err
	}
	end, err := s.mark()
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, s.dropMark(end)) }()
	if err := s.Synchronize(ctx); err != nil {
		return 0, err
	}
	if err := s.dev.enter(); err != nil {
		return 0, err
	}
	elapsed, err = end.Since(start)
	s.dev.leave()
	if err != nil {
		return 0, s.dev.fail("time GPU work", s.last, err)
	}
	return elapsed, nil
}

// dropMark destroys a timing event, unless the device is lost or closed: no
// driver call after a loss (the context owns the event and goes with it),
// none after Close (the driver has released everything).
func (s *Stream) dropMark(m driver.TimingMark) error {
	if s.dev.enter() != nil {
		return nil
	}
	defer s.dev.leave()
	return m.Destroy()
}

// mark enqueues a timing event, in order with the stream's launches.
func (s *Stream) mark() (driver.TimingMark, error) {
	d := s.dev
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.leave()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.destroyed {
		return nil, fmt.Errorf("time GPU work: stream closed: %w", ErrClosed)
	}
	if s.capture != nil {
		return nil, s.abortCaptureLocked("time GPU work")
	}
	t, ok := s.drv.(driver.GPUTimer)
	if !ok {
		return nil, fmt.Errorf("time GPU work: backend %s has no GPU timer: %w", d.Backend(), errors.ErrUnsupported)
	}
	m, err := t.Mark()
	if err != nil {
		return nil, d.fail("record timing event", s.last, err)
	}
	return m, nil
}

// Close destroys the stream. Pending work keeps running; events already
// recorded still settle. On a lost or closed device it calls no driver but
// still frees the stream's host memory, and returns the device's error.
func (s *Stream) Close() error {
	d := s.dev
	err := d.enter()
	d.mu.Lock()
	delete(d.streams, s)
	d.mu.Unlock()
	if err != nil {
		// Device.Close (which may be running) releases the driver's stream
		// with everything else; a lost device's is abandoned.
		_ = s.destroy(false) // no driver call: only host memory, and its error is the device's
		return err
	}
	defer d.leave()
	return s.destroy(true)
}

// destroy releases the stream: the driver's stream when useDriver and the
// device is not lost; otherwise only what the driver's stream holds outside
// the driver (driver.Abandoner); the kernel-argument memory always.
func (s *Stream) destroy(useDriver bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.destroyed {
		return nil
	}
	s.destroyed = true
	var derr error
	if useDriver && s.dev.lost.Load() == nil {
		derr = errors.Join(s.destroyGraphsLocked(true), s.drv.Destroy())
	} else {
		derr = s.destroyGraphsLocked(false) // no driver call: the context owns them
		if a, ok := s.drv.(driver.Abandoner); ok {
			derr = a.Abandon()
		}
	}
	ferr := hostFree(s.scratch)
	s.scratch = nil
	if derr != nil {
		return fmt.Errorf("%s: destroy stream: %w", s.dev.label, derr)
	}
	return ferr
}
