package simgpu

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hipgo/hipgo/runtime/driver"
)

// op is one piece of queued stream work.
type op struct {
	launch *launchOp
	event  *event
	mark   *mark
	notify func()
}

type launchOp struct {
	def         KernelDef
	grid, block driver.Dim3
	args        []uint64
}

type stream struct {
	dev   *Device
	mu    sync.Mutex
	cond  *sync.Cond
	queue []op
	dead  bool

	// capture is the graph being recorded, nil when the stream does not
	// capture; invalid says a call failed during it (EndCapture then fails).
	// Only the runtime's calling goroutine touches them (under its stream
	// lock).
	capture *graph
	invalid bool
}

func (d *Device) NewStream() (driver.Stream, error) {
	if err := d.call("NewStream"); err != nil {
		return nil, err
	}
	s := &stream{dev: d}
	d.StreamsLive.Add(1)
	s.cond = sync.NewCond(&s.mu)
	d.wg.Add(1)
	go s.work()
	go func() { <-d.stop; s.mu.Lock(); s.dead = true; s.cond.Broadcast(); s.mu.Unlock() }()
	if d.cfg.GPUTimer {
		return &timedStream{s}, nil
	}
	return s, nil
}

// timedStream is a stream with driver.GPUTimer (Config.GPUTimer).
type timedStream struct{ *stream }

// mark is a timing event: the time the stream reached it.
type mark struct {
	event
	at time.Time
}

func (s *timedStream) Mark() (driver.TimingMark, error) {
	if err := s.dev.call("Mark"); err != nil {
		return nil, err
	}
	if err := s.notCapturing(); err != nil {
		return nil, err
	}
	m := &mark{event: event{dev: s.dev}}
	s.dev.MarksLive.Add(1)
	s.enqueue(op{mark: m})
	return m, nil
}

func (m *mark) Destroy() error {
	m.dev.MarksLive.Add(-1)
	return m.dev.call("MarkDestroy")
}

// Since waits for m (and start) as a real event synchronize does; after a
// fault it returns the fault.
func (m *mark) Since(start driver.TimingMark) (time.Duration, error) {
	st := start.(*mark)
	for _, e := range []*mark{st, m} {
		for {
			err := e.Query()
			if err == nil {
				break
			}
			if err != driver.ErrNotReady {
				return 0, err
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	return m.at.Sub(st.at), nil
}

func (s *stream) enqueue(o op) {
	s.mu.Lock()
	s.queue = append(s.queue, o)
	s.cond.Signal()
	s.mu.Unlock()
}

// work runs queued ops in order. After a fault nothing more runs: events
// stay incomplete (their Query reports the fault) and callbacks never come,
// as on CUDA; with HIPCallbacks the callbacks still run, as on ROCm.
func (s *stream) work() {
	defer s.dev.wg.Done()
	for {
		s.mu.Lock()
		for len(s.queue) == 0 && !s.dead {
			s.cond.Wait()
		}
		if s.dead {
			s.mu.Unlock()
			return
		}
		o := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()

		if s.dev.fault() == nil || (o.notify != nil && s.dev.cfg.HIPCallbacks) {
			s.run(o)
		}
	}
}

func (s *stream) run(o op) {
	d := s.dev
	switch {
	case o.launch != nil:
		if err := o.launch.def.Run(d, o.launch.grid, o.launch.block, o.launch.args, d.stop); err != nil {
			if c, ok := err.(Code); ok && c.Sticky() {
				d.Fault(c)
			}
		}
	case o.event != nil:
		o.event.done.Store(true)
	case o.mark != nil:
		o.mark.at = time.Now() // written before done is set, read after it is seen
		o.mark.done.Store(true)
	case o.notify != nil:
		if d.cfg.DropCallbacks {
			return
		}
		fire := func() {
			if d.cfg.CallbackDelay > 0 {
				time.Sleep(d.cfg.CallbackDelay)
			}
			d.Callbacks.Add(1)
			o.notify()
		}
		if d.cfg.ForeignThreadCallbacks {
			// Real drivers call back on their own threads and wait for the
			// callback to return before later stream work runs.
			if err := runOnForeignThread(fire); err != nil {
				panic("simgpu: foreign thread: " + err.Error()) // test-only package; a broken harness must be loud
			}
			return
		}
		fire()
	}
}

func (s *stream) Launch(fn driver.Function, grid, block driver.Dim3, shmem uint32, params unsafe.Pointer) error {
	err := s.launch(fn, grid, block, shmem, params)
	// A failed launch invalidates a capture, as on CUDA.
	s.invalid = s.invalid || (err != nil && s.capture != nil)
	return err
}

func (s *stream) launch(fn driver.Function, grid, block driver.Dim3, shmem uint32, params unsafe.Pointer) error {
	if err := s.dev.call("Launch"); err != nil {
		return err
	}
	f := simFunction(fn)
	if f.def.Reject != nil {
		if err := f.def.Reject(grid, block); err != nil {
			return err
		}
	}
	if block.Count() > uint64(s.dev.cfg.MaxBlock) || !f.sharedFits(shmem) {
		return CodeInvalidValue
	}
	l := &launchOp{def: f.def, grid: grid, block: block, args: readArgs(params, f.def.ParamSizes)}
	if s.capture != nil {
		s.capture.launches = append(s.capture.launches, l)
		return nil
	}
	s.dev.Launches.Add(1)
	s.enqueue(op{launch: l})
	return nil
}

// LaunchEarly is driver.EarlyLauncher: the simulated stream runs kernels one
// at a time in order, so an early launch is a launch, counted apart
// (Device.EarlyLaunches) so tests see which launches asked for it.
func (s *stream) LaunchEarly(fn driver.Function, grid, block driver.Dim3, shmem uint32, params unsafe.Pointer) error {
	if err := s.Launch(fn, grid, block, shmem, params); err != nil {
		return err
	}
	s.dev.EarlyLaunches.Add(1)
	return nil
}

type event struct {
	dev       *Device
	done      atomic.Bool
	destroyed atomic.Bool
}

// stale counts a call on a destroyed event: on a real driver a use after
// free, or a query of whichever event has recycled the handle.
func (e *event) stale() error {
	if e.destroyed.Load() {
		e.dev.StaleHandleCalls.Add(1)
		return CodeInvalidValue
	}
	return nil
}

func (e *event) Query() error {
	if err := e.dev.call("EventQuery"); err != nil {
		return err
	}
	if err := e.stale(); err != nil {
		return err
	}
	if e.done.Load() {
		return nil
	}
	return driver.ErrNotReady
}

func (e *event) Destroy() error {
	err := e.dev.call("EventDestroy")
	if serr := e.stale(); serr != nil {
		return serr
	}
	e.destroyed.Store(true)
	e.dev.EventsLive.Add(-1)
	return err
}

func (s *stream) Record() (driver.Event, error) {
	if err := s.dev.call("Record"); err != nil {
		return nil, err
	}
	if err := s.notCapturing(); err != nil {
		return nil, err
	}
	e := &event{dev: s.dev}
	s.dev.EventsLive.Add(1)
	s.enqueue(op{event: e})
	return e, nil
}

func (s *stream) Notify(fn func()) error {
	if err := s.dev.call("Notify"); err != nil {
		return err
	}
	if err := s.notCapturing(); err != nil {
		return err
	}
	s.enqueue(op{notify: fn})
	return nil
}

func (s *stream) Destroy() error {
	s.dropCapture()
	s.dev.StreamsLive.Add(-1)
	return s.dev.call("StreamDestroy")
}

// Abandon is driver.Abandoner: a simulated stream holds nothing outside the
// driver, so it only counts, which tells tests the runtime let go of it.
func (s *stream) Abandon() error {
	s.dropCapture()
	s.dev.StreamsLive.Add(-1)
	return nil
}
