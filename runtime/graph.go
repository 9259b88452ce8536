package runtime

import (
	"errors"
	"fmt"

	"github.com/hipgo/hipgo/runtime/driver"
)

// ErrCapturing: the call cannot be made on a stream that is capturing.
var ErrCapturing = errors.New("stream is capturing")

// CaptureError: a stream capture could not be made or instantiated: the
// backend has no graphs (errors.Is ErrUnsupported), or the driver refused
// to begin, end or instantiate it. Nothing was captured, the stream is
// usable and captures no more: plain launches are the fallback.
type CaptureError struct {
	Device string
	Op     string // "begin capture", "end capture"
	Err    error
}

func (e *CaptureError) Error() string {
	return fmt.Sprintf("%s: %s: %v (launch plainly instead)", e.Device, e.Op, e.Err)
}
func (e *CaptureError) Unwrap() error { return e.Err }

// Graph is a sequence of kernel launches captured on a stream, replayed by
// LaunchGraph with one driver call. It belongs to its stream (Close of the
// stream or the device frees it).
type Graph struct {
	s        *Stream
	drv      driver.Graph // under s.mu
	kernels  int          // launches captured
	last     string       // the last kernel captured
	closed   bool         // under s.mu
	captured uint64       // capture number on the stream, for names
}

// Kernels is the number of kernel launches the graph replays.
func (g *Graph) Kernels() int { return g.kernels }

// capture is a Capture in progress on a stream (under its mu).
type capture struct {
	kernels int
	last    string // the last kernel captured
	// ended: the capture was ended early, and why (a call the capture
	// cannot record); later launches get err, Capture returns it.
	ended bool
	err   error
}

// Capture runs enqueue with s capturing: the kernels enqueue launches on s
// (argument and shape checks apply as usual) are recorded into a graph
// instead of running, and the graph is returned for LaunchGraph. Argument
// values are copied at capture: device pointers and scalars are fixed, the
// memory they point to is read when the graph runs.
//
// While s captures, Record, Synchronize, TimeGPU and LaunchGraph on it are
// refused (errors.Is ErrCapturing); Record, Synchronize and TimeGPU also end
// and discard the capture, so Capture then returns their error. An error
// from enqueue ends and discards the capture and is returned as is. A
// backend or driver that cannot capture gives a *CaptureError (errors.Is
// errors.ErrUnsupported when the backend has no graphs) and nothing was
// launched: launch plainly instead. Launches on s from another goroutine
// during the capture are captured too; keep the stream to one goroutine.
func (s *Stream) Capture(enqueue func() error) (*Graph, error) {
	if err := s.beginCapture(); err != nil {
		return nil, err
	}
	finished := false
	defer func() {
		if !finished { // enqueue panicked: leave no driver state capturing
			_, _ = s.endCapture(errors.New("enqueue panicked")) // the panic is the error that matters
		}
	}()
	eerr := enqueue()
	finished = true
	g, err := s.endCapture(eerr)
	if err != nil {
		return nil, err
	}
	return g, nil
}

func (s *Stream) beginCapture() error {
	d := s.dev
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	c, ok := s.drv.(driver.Capturer)
	if !ok {
		return &CaptureError{Device: d.label, Op: "begin capture", Err: fmt.Errorf("backend %s has no graphs: %w", d.Backend(), errors.ErrUnsupported)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.destroyed:
		return fmt.Errorf("capture: stream closed: %w", ErrClosed)
	case s.capture != nil:
		return fmt.Errorf("capture: %w already", ErrCapturing)
	}
	if err := c.BeginCapture(); err != nil {
		return s.captureFailed("begin capture", err)
	}
	s.capture = &capture{}
	return nil
}

// captureFailed is the error of a capture call the driver refused: a lost
// device after a sticky fault, else a *CaptureError.
func (s *Stream) captureFailed(op string, err error) error {
	d := s.dev
	if d.drv.Classify(err) == driver.Fault {
		return d.fail(op, s.last, err)
	}
	return &CaptureError{Device: d.label, Op: op, Err: err}
}

// endCapture ends the capture and returns its graph, or discards it when
// eerr (enqueue's error) is set or the capture was ended early.
func (s *Stream) endCapture(eerr error) (*Graph, error) {
	d := s.dev
	if err := d.enter(); err != nil {
		// Lost or closed: no driver call; the capture goes with the
		// context (or with the stream's teardown, which ends it).
		s.mu.Lock()
		s.capture = nil
		s.mu.Unlock()
		if eerr != nil {
			return nil, eerr
		}
		return nil, err
	}
	defer d.leave()
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.capture
	if c == nil {
		// The stream was closed during the capture; its destroy ended it.
		if eerr != nil {
			return nil, eerr
		}
		return nil, fmt.Errorf("capture: stream closed during the capture: %w", ErrClosed)
	}
	s.capture = nil
	if c.ended {
		if eerr != nil {
			return nil, eerr
		}
		return nil, c.err
	}
	dg, err := s.drv.(driver.Capturer).EndCapture()
	if eerr != nil {
		if err == nil {
			err = dg.Destroy()
		}
		if err != nil && d.drv.Classify(err) == driver.Fault {
			return nil, errors.Join(eerr, d.fail("end capture", s.last, err))
		}
		// A capture the failed launch invalidated fails to end: expected,
		// and enqueue's error is the one to report.
		return nil, eerr
	}
	if err != nil {
		return nil, s.captureFailed("end capture", err)
	}
	s.captures++
	g := &Graph{s: s, drv: dg, kernels: c.kernels, last: c.last, captured: s.captures}
	s.graphs[g] = struct{}{}
	return g, nil
}

// abortCaptureLocked ends a capture early because of a call it cannot
// record, and returns that call's error. Callers hold s.mu and are entered.
func (s *Stream) abortCaptureLocked(op string) error {
	err := fmt.Errorf("%s: %w: the capture was ended and discarded", op, ErrCapturing)
	c := s.capture
	if c.ended {
		return err
	}
	c.ended, c.err = true, err
	dg, derr := s.drv.(driver.Capturer).EndCapture()
	if derr == nil {
		derr = dg.Destroy()
	}
	if derr != nil && s.dev.drv.Classify(derr) == driver.Fault {
		return errors.Join(err, s.dev.fail("end capture", s.last, derr))
	}
	return err
}

// LaunchGraph enqueues g's kernels on s, in order with its other work, with
// one driver call. A fault while they run fails the events recorded after
// it and loses the device, as a plain launch's fault does. g must have been
// captured on s.
func (s *Stream) LaunchGraph(g *Graph) error {
	d := s.dev
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	if g == nil || g.s != s {
		return &LaunchError{Kernel: "graph", Reason: "graph captured on another stream"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.destroyed:
		return fmt.Errorf("launch graph: stream closed: %w", ErrClosed)
	case g.closed:
		return fmt.Errorf("launch graph: graph closed: %w", ErrClosed)
	case s.capture != nil:
		return fmt.Errorf("launch graph: %w", ErrCapturing)
	}
	if err := g.drv.Launch(s.drv); err != nil {
		return s.launchFailed(g.name(), "", err)
	}
	s.last = g.last
	s.afterGraph = true
	return nil
}

// name is how launch errors name the graph.
func (g *Graph) name() string {
	return fmt.Sprintf("graph %d (%d kernels, last %s)", g.captured, g.kernels, g.last)
}

// Close frees the graph; replays already enqueued complete. On a lost or
// closed device it makes no driver call and returns the device's error.
// A second Close does nothing.
func (g *Graph) Close() error {
	s := g.s
	d := s.dev
	err := d.enter()
	if err == nil {
		defer d.leave()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	delete(s.graphs, g)
	if err != nil {
		return err
	}
	if derr := g.drv.Destroy(); derr != nil {
		return d.fail("destroy graph", g.last, derr)
	}
	return nil
}

// destroyGraphsLocked frees the stream's graphs, and ends a capture in
// progress, with driver calls only when useDriver. Callers hold s.mu.
func (s *Stream) destroyGraphsLocked(useDriver bool) error {
	var errs []error
	if c := s.capture; c != nil {
		s.capture = nil
		if useDriver && !c.ended {
			// An invalidated capture fails to end: nothing to free then.
			if dg, err := s.drv.(driver.Capturer).EndCapture(); err == nil {
				errs = append(errs, dg.Destroy())
			}
		}
	}
	for g := range s.graphs {
		g.closed = true
		if useDriver {
			errs = append(errs, g.drv.Destroy())
		}
	}
	clear(s.graphs)
	return errors.Join(errs...)
}
