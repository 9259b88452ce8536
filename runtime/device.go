package runtime

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hipgo/hipgo/runtime/driver"
)

// closeTimeout bounds Close: after a sticky fault a driver call can hang,
// and a server shutting down must not hang with it.
const closeTimeout = 2 * time.Second

// Device is an opened GPU. Its methods are safe for concurrent use.
type Device struct {
	drv      driver.Device
	info     driver.Info
	label    string
	watchdog time.Duration
	waitSpin time.Duration // how long Wait polls before it sleeps (WithWaitSpin)
	notify   bool          // enqueue coalesced host callbacks (see Stream)
	// notifyLands: a callback's run means success (driver.Info
	// .NotifyReportsSuccess), so it lands events; else it only wakes the
	// monitor.
	notifyLands bool
	cudaJIT     bool // LoadModule skips the cubins (EnvCUDAJIT)

	lost atomic.Pointer[FaultError]
	mon  *monitor

	destroyErrors atomic.Int64 // see Stats
	notifyErrors  atomic.Int64

	mu       sync.Mutex
	closed   bool
	inflight int           // driver calls in progress from callers (enter)
	drained  chan struct{} // closed when inflight reaches 0 after Close
	streams  map[*Stream]struct{}
	modules  []*Module
}

func newDevice(drv driver.Device, cfg config) *Device {
	info := drv.Info()
	d := &Device{
		drv:         drv,
		info:        info,
		label:       fmt.Sprintf("%s:%d %s", info.Backend, info.Ordinal, info.Name),
		watchdog:    cfg.watchdog,
		waitSpin:    cfg.waitSpin,
		notify:      !cfg.noCallbacks,
		notifyLands: info.NotifyReportsSuccess,
		cudaJIT:     cfg.cudaJIT,
		streams:     map[*Stream]struct{}{},
	}
	if !cfg.waitSpinSet {
		d.waitSpin = DefaultWaitSpin
		if info.RunsOnHost {
			d.waitSpin = HostWaitSpin
		}
	}
	d.mon = newMonitor(d)
	if fs, ok := drv.(driver.FaultSource); ok {
		fs.OnFault(d.asyncFault)
	}
	return d
}

// Info describes the device.
func (d *Device) Info() driver.Info { return d.info }

// String names the device, e.g. "cuda:0 NVIDIA H200".
func (d *Device) String() string { return d.label }

// Backend is the device's backend kind.
func (d *Device) Backend() driver.Kind { return d.info.Backend }

// Watchdog is the limit on one Wait, 0 when off.
func (d *Device) Watchdog() time.Duration { return d.watchdog }

// WaitSpin is how long a Wait polls its event before it sleeps
// (WithWaitSpin).
func (d *Device) WaitSpin() time.Duration { return d.waitSpin }

// Stats are counts of what the runtime handles without returning an error,
// for metrics.
type Stats struct {
	// PendingEvents is the number of events not yet landed or failed.
	PendingEvents int
	// EventDestroyErrors counts driver events of settled events whose
	// destroy failed: each leaks one driver handle (the event itself had
	// already settled, so it is nobody's error).
	EventDestroyErrors int64
	// NotifyErrors counts host callbacks the driver would not enqueue: the
	// monitor landed those events instead, a little later.
	NotifyErrors int64
}

// Stats returns the device's counters. It makes no driver call.
func (d *Device) Stats() Stats {
	return Stats{
		PendingEvents:      d.mon.pendingCount(),
		EventDestroyErrors: d.destroyErrors.Load(),
		NotifyErrors:       d.notifyErrors.Load(),
	}
}

// Lost returns the fault that made the device unusable, or nil.
func (d *Device) Lost() error {
	if f := d.lost.Load(); f != nil {
		return f
	}
	return nil
}

// usable returns the error every call on a lost or closed device gets, before
// any driver call.
func (d *Device) usable() error {
	if f := d.lost.Load(); f != nil {
		return &DeviceLostError{Device: d.label, Cause: f}
	}
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return fmt.Errorf("%s: %w", d.label, ErrClosed)
	}
	return nil
}

// enter is usable for a method about to call the driver: on success the
// call is counted in progress until leave, and Close waits for it (within
// its bound) before it tears the driver down under it.
func (d *Device) enter() error {
	if f := d.lost.Load(); f != nil {
		return &DeviceLostError{Device: d.label, Cause: f}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("%s: %w", d.label, ErrClosed)
	}
	d.inflight++
	return nil
}

// leave ends what enter began.
func (d *Device) leave() {
	d.mu.Lock()
	d.inflight--
	if d.inflight == 0 && d.drained != nil {
		close(d.drained)
		d.drained = nil
	}
	d.mu.Unlock()
}

// markLost records the first sticky fault and fails every pending event on
// every stream with it. Later faults are dropped: the first is the cause.
func (d *Device) markLost(f *FaultError) *FaultError {
	if f.Device == "" {
		f.Device = d.label
	}
	if f.InFlight == nil {
		f.InFlight = d.mon.inFlight()
	}
	if !d.lost.CompareAndSwap(nil, f) {
		return d.lost.Load()
	}
	d.mon.end(f)
	return f
}

// asyncFault receives out-of-band faults (the HSA system event handler). It
// runs on the vendor's thread, so it only marks state. It reports whether the
// fault was delivered, which tells ROCr not to abort the process.
func (d *Device) asyncFault(af driver.AsyncFault) bool {
	// markLost's result, the device's first fault, is for callers that
	// return it; the handler only records this one.
	d.markLost(&FaultError{
		Device: d.label, Op: "system event", Kind: af.Kind,
		Address: af.Address, Reason: af.Reason, Err: af.Err,
	})
	return true
}

// fail turns an error from a driver call into the runtime's error, marking
// the device lost when the error is a sticky fault.
func (d *Device) fail(op, kernel string, err error) error {
	switch d.drv.Classify(err) {
	case driver.Fault:
		f := d.markLost(&FaultError{Device: d.label, Kernel: kernel, Op: op, Kind: faultKind(err), Err: err})
		return &DeviceLostError{Device: d.label, Cause: f}
	case driver.OutOfMemory:
		return &OutOfMemoryError{Device: d.label, Err: err}
	case driver.NotFound:
		return fmt.Errorf("%s: %s: %w: %w", d.label, op, ErrNotFound, err)
	default:
		return fmt.Errorf("%s: %s: %w", d.label, op, err)
	}
}

// faultKind names a fault for people, from the driver's error text.
func faultKind(err error) string {
	var named interface{ Name() string }
	if errors.As(err, &named) {
		return named.Name()
	}
	return ""
}

// Close releases the device: every event still pending fails (with the
// fault on a lost device, else with an error wrapping ErrClosed), then the
// driver tears down. It returns within a bound (2 s) even when a driver call
// hangs, as one can after a sticky fault: what did not finish by then is
// abandoned, and the error says so.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	var drained chan struct{}
	if d.inflight > 0 {
		drained = make(chan struct{})
		d.drained = drained
	}
	d.mu.Unlock()

	deadline := time.Now().Add(closeTimeout)
	if !d.mon.shutdown(fmt.Errorf("%s closed before the event completed: %w", d.label, ErrClosed), deadline) {
		// Tearing down under a driver call in progress would free what it
		// uses: leave everything to the process's exit.
		return d.abandoned("the fault monitor is stuck in a driver call; nothing was torn down")
	}
	if drained != nil {
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-drained:
			t.Stop()
		case <-t.C:
			return d.abandoned("a driver call in progress did not return; nothing was torn down")
		}
	}
	// Nothing can be added now: every call that could add a stream or a
	// module has returned, and later ones see closed.
	d.mu.Lock()
	streams := make([]*Stream, 0, len(d.streams))
	for s := range d.streams {
		streams = append(streams, s)
	}
	modules := d.modules
	d.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- d.teardown(streams, modules) }()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return d.abandoned("teardown did not finish")
	}
}

// abandoned is Close's error when it gave up on the driver.
func (d *Device) abandoned(why string) error {
	err := fmt.Errorf("%s: close: %s in %v; abandoned (the driver may hold resources until the process exits)", d.label, why, closeTimeout)
	if lost := d.lost.Load(); lost != nil {
		return fmt.Errorf("%w: %w", err, &DeviceLostError{Device: d.label, Cause: lost})
	}
	return err
}

// teardown destroys what the device holds, then closes the driver. A sticky
// fault met on the way (one no query had reported yet) loses the device,
// and from then on only the driver's Close is called.
func (d *Device) teardown(streams []*Stream, modules []*Module) error {
	var errs []error
	note := func(op string, err error) {
		if err == nil {
			return
		}
		if d.drv.Classify(err) == driver.Fault {
			// Lost from here on; the error itself is joined into Close's.
			d.markLost(&FaultError{Device: d.label, Op: op, Kind: faultKind(err), Err: err})
		}
		errs = append(errs, err)
	}
	for _, s := range streams {
		note("destroy stream", s.destroy(true))
	}
	// After the streams: a Record in flight during Close (it holds its
	// stream's lock, which destroy waits for) has put its handle here.
	for _, ev := range d.mon.takeReaped() {
		if d.lost.Load() == nil {
			note("destroy event", ev.Destroy())
		}
	}
	for _, m := range modules {
		if d.lost.Load() == nil { // after a loss the driver's Close releases them with the context
			note("unload module", m.unload())
		}
	}
	errs = append(errs, d.drv.Close())
	return errors.Join(errs...)
}
