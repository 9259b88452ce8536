package simgpu

import (
	"errors"
	"fmt"

	"github.com/hipgo/hipgo/runtime/driver"
)

// Stream capture (driver.Capturer), as CUDA's relaxed mode behaves: while a
// stream captures, Launch records the kernel with its argument values
// instead of queueing it; Record, Notify and Mark fail with
// CodeCaptureUnsupported and invalidate the capture, as does a rejected
// launch, and EndCapture then fails with CodeCaptureInvalidated. A graph's
// Launch queues its kernels in order on the stream given, where they run
// (and fault) as plain launches do. Config.NoGraphs makes BeginCapture fail
// as a backend without graphs does.

// graph is a captured sequence of launches.
type graph struct {
	dev       *Device
	launches  []*launchOp
	destroyed bool
}

// errNoGraphs is BeginCapture's answer under Config.NoGraphs.
var errNoGraphs = fmt.Errorf("simgpu: stream capture: %w", errors.ErrUnsupported)

// notCapturing refuses a call that is not capturable, invalidating the
// capture as CUDA does.
func (s *stream) notCapturing() error {
	if s.capture == nil {
		return nil
	}
	s.invalid = true
	return CodeCaptureUnsupported
}

// dropCapture ends a capture the stream's destruction interrupts.
func (s *stream) dropCapture() {
	if s.capture != nil {
		s.capture, s.invalid = nil, false
		s.dev.Capturing.Add(-1)
	}
}

func (s *stream) BeginCapture() error {
	if s.dev.cfg.NoGraphs {
		return errNoGraphs
	}
	if err := s.dev.call("BeginCapture"); err != nil {
		return err
	}
	if s.capture != nil {
		return CodeCaptureUnsupported // already capturing
	}
	s.capture, s.invalid = &graph{dev: s.dev}, false
	s.dev.Capturing.Add(1)
	return nil
}

func (s *stream) EndCapture() (driver.Graph, error) {
	err := s.dev.call("EndCapture")
	g, invalid := s.capture, s.invalid
	if g == nil {
		if err != nil {
			return nil, err
		}
		return nil, CodeCaptureInvalidated // not capturing
	}
	s.dropCapture() // ended whatever the call returns
	switch {
	case err != nil:
		return nil, err
	case invalid:
		return nil, CodeCaptureInvalidated
	}
	s.dev.GraphsLive.Add(1)
	return g, nil
}

// Launch checks each kernel's Reject first, as Launch does (a test's hook
// runs once per replayed kernel); a rejection queues nothing.
func (g *graph) Launch(on driver.Stream) error {
	if err := g.dev.call("GraphLaunch"); err != nil {
		return err
	}
	if g.destroyed {
		g.dev.StaleHandleCalls.Add(1)
		return CodeInvalidValue
	}
	s := streamOf(on)
	if s.capture != nil {
		return CodeCaptureUnsupported
	}
	for _, l := range g.launches {
		if l.def.Reject != nil {
			if err := l.def.Reject(l.grid, l.block); err != nil {
				return err
			}
		}
	}
	g.dev.GraphLaunches.Add(1)
	s.mu.Lock()
	for _, l := range g.launches {
		s.queue = append(s.queue, op{launch: l})
	}
	s.cond.Signal()
	s.mu.Unlock()
	return nil
}

func (g *graph) Destroy() error {
	err := g.dev.call("GraphDestroy")
	if g.destroyed {
		g.dev.StaleHandleCalls.Add(1)
		return CodeInvalidValue
	}
	g.destroyed = true
	g.dev.GraphsLive.Add(-1)
	return err
}

// streamOf unwraps the driver stream the runtime hands a graph.
func streamOf(s driver.Stream) *stream {
	if t, ok := s.(*timedStream); ok {
		return t.stream
	}
	return s.(*stream)
}
