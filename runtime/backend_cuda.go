package runtime

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/hipgo/hipgo/cuda"
	"github.com/hipgo/hipgo/runtime/driver"
)

// The CUDA backend adapts package cuda (the driver API) to driver.Device.
//
// Thread model: a CUDA context is current per OS thread and goroutines
// migrate between threads, so every call locks the goroutine to its thread
// and makes the device's primary context current for the duration
// (cuda.Context.Lock: runtime.LockOSThread plus cuCtxGetCurrent, and
// cuCtxSetCurrent only when another context is current). The alternative, a
// worker goroutine per device that owns a locked thread, costs a channel
// round trip per call (a few hundred ns to µs) and serialises streams; the
// lock-per-call cost is measured by BenchmarkCUDALaunch against a C loop.

type cudaDriver struct{}

func (cudaDriver) Kind() driver.Kind { return driver.CUDA }

func (cudaDriver) DeviceCount() (int, error) {
	if err := cuda.Load(); err != nil {
		return 0, err
	}
	if err := cuda.Init(); err != nil {
		if errors.Is(err, cuda.ErrNoDevice) {
			return 0, &NoDeviceError{Backend: driver.CUDA, Err: err}
		}
		return 0, fmt.Errorf("cuda: init failed: %w", err)
	}
	return cuda.DeviceCount()
}

func (cudaDriver) Open(ordinal int) (driver.Device, error) {
	dev, err := cuda.DeviceGet(ordinal)
	if err != nil {
		return nil, err
	}
	ctx, err := dev.PrimaryCtxRetain()
	if err != nil {
		return nil, err
	}
	d := &cudaDevice{dev: dev, ctx: ctx}
	info, err := d.describe(ordinal)
	if err != nil {
		return nil, errors.Join(err, dev.PrimaryCtxRelease())
	}
	d.info = info
	return d, nil
}

type cudaDevice struct {
	dev  cuda.Device
	ctx  cuda.Context
	info driver.Info
	// early: streams launch EarlyStart kernels with programmatic stream
	// serialization (compute capability 9.0+ and a driver with
	// cuLaunchKernelEx); otherwise they launch them plainly.
	early bool

	events handlePool[cuda.Event]
}

func (d *cudaDevice) describe(ordinal int) (driver.Info, error) {
	// cuLaunchHostFunc's function is not called after an error in the
	// context (the driver API's documentation; on the H200 a host function
	// enqueued behind a faulting kernel never ran), so its run means
	// success and it may land events.
	info := driver.Info{Backend: driver.CUDA, Ordinal: ordinal, Format: driver.PTX, Library: cuda.LibraryPath(), NotifyReportsSuccess: true}
	var err error
	if info.Name, err = d.dev.Name(); err != nil {
		return info, err
	}
	major, minor, err := d.dev.ComputeCapability()
	if err != nil {
		return info, err
	}
	info.Arch = fmt.Sprintf("sm_%d%d", major, minor)
	d.early = major >= 9 && cuda.LaunchKernelExSupported()
	if info.TotalMemory, err = d.dev.TotalMem(); err != nil {
		return info, err
	}
	if info.ComputeUnits, err = d.dev.Attribute(cuda.MultiprocessorCount); err != nil {
		return info, err
	}
	if info.WarpSize, err = d.dev.Attribute(cuda.WarpSize); err != nil {
		return info, err
	}
	if info.MaxBlock, err = d.dev.Attribute(cuda.MaxThreadsPerBlock); err != nil {
		return info, err
	}
	if info.MaxSharedOptin, err = d.dev.Attribute(cuda.MaxSharedMemoryPerBlockOptin); err != nil {
		return info, err
	}
	v, err := cuda.DriverVersion()
	if err != nil {
		return info, err
	}
	info.DriverVersion = fmt.Sprintf("%d.%d (CUDA driver API)", v/1000, v%1000/10)
	info.RuntimeVersion = "none (driver API only)"
	return info, nil
}

func (d *cudaDevice) Info() driver.Info { return d.info }

// do runs fn with the device's context current on a locked thread.
func (d *cudaDevice) do(fn func() error) error {
	if err := d.ctx.Lock(); err != nil {
		return err
	}
	defer d.ctx.Unlock()
	return fn()
}

func (d *cudaDevice) Alloc(n uint64) (p driver.Ptr, err error) {
	err = d.do(func() error {
		dp, err := cuda.MemAlloc(n)
		p = driver.Ptr(dp)
		return err
	})
	return p, err
}

func (d *cudaDevice) Free(p driver.Ptr) error {
	return d.do(func() error { return cuda.MemFree(cuda.DevicePtr(p)) })
}

// CopyHtoD copies and then synchronizes the legacy stream. cuMemcpyHtoD
// from pageable memory returns once the bytes are staged, "but the DMA to
// final destination may not have completed" (the driver API's "API
// synchronization behavior"), and it runs on the legacy stream, which the
// runtime's non-blocking streams do not wait for: without the synchronize a
// kernel enqueued next could read the old bytes.
func (d *cudaDevice) CopyHtoD(dst driver.Ptr, src unsafe.Pointer, n uint64) error {
	return d.do(func() error {
		if err := cuda.MemcpyHtoD(cuda.DevicePtr(dst), unsafe.Slice((*byte)(src), n)); err != nil {
			return err
		}
		return cuda.Stream(0).Synchronize()
	})
}

func (d *cudaDevice) CopyDtoH(dst unsafe.Pointer, src driver.Ptr, n uint64) error {
	return d.do(func() error { return cuda.MemcpyDtoH(unsafe.Slice((*byte)(dst), n), cuda.DevicePtr(src)) })
}

func (d *cudaDevice) MemInfo() (free, total uint64, err error) {
	err = d.do(func() error {
		free, total, err = cuda.MemGetInfo()
		return err
	})
	return free, total, err
}

func (d *cudaDevice) NewStream() (driver.Stream, error) {
	var s cuda.Stream
	err := d.do(func() (err error) {
		s, err = cuda.StreamCreate(cuda.StreamNonBlocking)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &cudaStream{dev: d, s: s}, nil
}

func (d *cudaDevice) LoadModule(image []byte) (driver.Module, error) {
	var m cuda.Module
	err := d.do(func() (err error) {
		m, _, err = cuda.ModuleLoadDataEx(image)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &cudaModule{dev: d, m: m}, nil
}

// Classify sorts CUDA errors: the codes after which the context is unusable
// (cuda.Code.Sticky) are faults.
func (d *cudaDevice) Classify(err error) driver.Class {
	var c cuda.Code
	if !errors.As(err, &c) {
		return driver.Other
	}
	switch {
	case c.Sticky():
		return driver.Fault
	case c == cuda.ErrOutOfMemory || c == cuda.ErrLaunchOutOfResources:
		return driver.OutOfMemory
	case c == cuda.ErrNotFound || c == cuda.ErrNoBinaryForGpu:
		return driver.NotFound
	case c == cuda.ErrInvalidValue || c == cuda.ErrInvalidHandle:
		return driver.Rejected
	}
	return driver.Other
}

// Alive asks for the memory info: it does not wait for queued work (a
// spinning kernel does not block it) and returns the sticky error after a
// fault (anchors.md §3: cuMemAlloc and friends return 700).
func (d *cudaDevice) Alive() error {
	_, _, err := d.MemInfo()
	return err
}

func (d *cudaDevice) Close() error {
	pool := d.events.drain()
	var errs []error
	errs = append(errs, d.do(func() error {
		var errs []error
		for _, e := range pool {
			errs = append(errs, e.Destroy())
		}
		return errors.Join(errs...)
	}))
	errs = append(errs, d.dev.PrimaryCtxRelease())
	return errors.Join(errs...)
}

type cudaStream struct {
	dev *cudaDevice
	s   cuda.Stream
	// launchEx holds the cuLaunchKernelEx config and its attribute, outside
	// the Go heap (the driver reads them as C memory); made at the first
	// early launch. The runtime's stream lock serialises launches.
	launchEx []byte
}

// earlyLaunchMem is the cuLaunchKernelEx config followed by its attribute.
type earlyLaunchMem struct {
	cfg  cuda.LaunchConfig
	attr cuda.LaunchAttribute
}

// LaunchEarly launches with programmatic stream serialization where the
// device has it, else plainly (driver.EarlyLauncher).
func (s *cudaStream) LaunchEarly(fn driver.Function, grid, block driver.Dim3, shmem uint32, params unsafe.Pointer) error {
	if !s.dev.early {
		return s.Launch(fn, grid, block, shmem, params)
	}
	if s.launchEx == nil {
		mem, err := hostAlloc(int(unsafe.Sizeof(earlyLaunchMem{})))
		if err != nil {
			return err
		}
		s.launchEx = mem
		m := (*earlyLaunchMem)(unsafe.Pointer(&s.launchEx[0]))
		m.attr = cuda.LaunchAttribute{ID: cuda.LaunchAttributeProgrammaticStreamSerialization}
		m.attr.Value[0] = 1 // programmaticStreamSerializationAllowed = 1 (a little-endian int)
	}
	m := (*earlyLaunchMem)(unsafe.Pointer(&s.launchEx[0])) // the attribute, set once above
	m.cfg = cuda.LaunchConfig{Grid: cuda.Dim3(grid), Block: cuda.Dim3(block), SharedMem: shmem, Stream: s.s,
		Attrs: unsafe.Pointer(&m.attr), NumAttrs: 1}
	f := fn.(*cudaFunction).f
	return s.dev.do(func() error { return cuda.LaunchKernelEx(&m.cfg, f, params, nil) })
}

func (s *cudaStream) Launch(fn driver.Function, grid, block driver.Dim3, shmem uint32, params unsafe.Pointer) error {
	f := fn.(*cudaFunction).f
	return s.dev.do(func() error {
		return cuda.LaunchKernel(f, cuda.Dim3(grid), cuda.Dim3(block), shmem, s.s, params, nil)
	})
}

func (s *cudaStream) Record() (driver.Event, error) {
	d := s.dev
	var ev cuda.Event
	err := d.do(func() error {
		ev = d.events.get()
		if ev == 0 {
			var err error
			if ev, err = cuda.EventCreate(cuda.EventDisableTiming); err != nil {
				return err
			}
		}
		if err := ev.Record(s.s); err != nil {
			// The event was never enqueued; it is free to reuse.
			d.events.put(ev)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &cudaEvent{dev: d, e: ev}, nil
}

// Mark records a timing event (created without EventDisableTiming, and not
// pooled: the recycled events cannot time).
func (s *cudaStream) Mark() (driver.TimingMark, error) {
	var ev cuda.Event
	err := s.dev.do(func() error {
		var err error
		if ev, err = cuda.EventCreate(cuda.EventDefault); err != nil {
			return err
		}
		if err := ev.Record(s.s); err != nil {
			_ = ev.Destroy() // never enqueued; the record error is the one to report
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &cudaMark{dev: s.dev, e: ev}, nil
}

type cudaMark struct {
	dev *cudaDevice
	e   cuda.Event
}

func (m *cudaMark) Since(start driver.TimingMark) (time.Duration, error) {
	var ms float32
	err := m.dev.do(func() error {
		if err := m.e.Synchronize(); err != nil {
			return err
		}
		var err error
		ms, err = cuda.EventElapsedTime(start.(*cudaMark).e, m.e)
		return err
	})
	return time.Duration(float64(ms) * float64(time.Millisecond)), err
}

func (m *cudaMark) Destroy() error { return m.dev.do(m.e.Destroy) }

func (s *cudaStream) Notify(fn func()) error {
	return s.dev.do(func() error { return cuda.LaunchHostFunc(s.s, fn) })
}

func (s *cudaStream) Destroy() error {
	return errors.Join(s.dev.do(s.s.Destroy), s.Abandon())
}

// Abandon frees the early-launch configuration, which is host memory, with
// no driver call (driver.Abandoner: what the runtime calls instead of
// Destroy on a lost device).
func (s *cudaStream) Abandon() error {
	if s.launchEx == nil {
		return nil
	}
	err := hostFree(s.launchEx)
	s.launchEx = nil
	return err
}

type cudaEvent struct {
	dev *cudaDevice
	e   cuda.Event
}

func (e *cudaEvent) Query() error {
	return e.dev.do(func() error {
		done, err := e.e.Query()
		if err == nil && !done {
			return driver.ErrNotReady
		}
		return err
	})
}

// Destroy recycles the event: the runtime destroys only settled events, so
// the driver is done with it.
func (e *cudaEvent) Destroy() error {
	if e.dev.events.put(e.e) {
		return nil
	}
	return e.dev.do(e.e.Destroy)
}

type cudaModule struct {
	dev *cudaDevice
	m   cuda.Module
}

func (m *cudaModule) Function(name string) (driver.Function, error) {
	var f cuda.Function
	err := m.dev.do(func() (err error) {
		f, err = m.m.Function(name)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &cudaFunction{dev: m.dev, f: f, name: name}, nil
}

func (m *cudaModule) Unload() error { return m.dev.do(m.m.Unload) }

type cudaFunction struct {
	dev  *cudaDevice
	f    cuda.Function
	name string
}

func (f *cudaFunction) Name() string { return f.name }

// SetMaxDynamicShared raises the kernel's dynamic shared memory limit
// (driver.SharedMemRaiser): without it a launch whose blocks use more than
// 48 KiB of shared memory fails.
func (f *cudaFunction) SetMaxDynamicShared(bytes int) error {
	return f.dev.do(func() error { return f.f.SetAttribute(cuda.FuncMaxDynamicSharedSizeBytes, bytes) })
}

// Params reports the driver's own view of the argument layout
// (cuFuncGetParamInfo, driver 12.4 and later).
func (f *cudaFunction) Params() ([]driver.Param, bool, error) {
	if !cuda.ParamInfoSupported() {
		return nil, false, nil
	}
	var ps []cuda.Param
	err := f.dev.do(func() (err error) {
		ps, err = f.f.Params()
		return err
	})
	if err != nil {
		return nil, false, err
	}
	out := make([]driver.Param, len(ps))
	for i, p := range ps {
		out[i] = driver.Param{Offset: p.Offset, Size: p.Size}
	}
	return out, true, nil
}

// BeginCapture starts a relaxed capture (driver.Capturer): the runtime's
// monitor keeps querying events from its own thread meanwhile, which the
// global and thread-local modes refuse.
func (s *cudaStream) BeginCapture() error {
	if !cuda.GraphSupported() {
		return fmt.Errorf("cuda: stream capture: %w (%w)", errors.ErrUnsupported, &cuda.UnavailableError{Symbol: "cuGraphInstantiateWithFlags", Since: "CUDA 11.4", Path: cuda.LibraryPath()})
	}
	return s.dev.do(func() error { return s.s.BeginCapture(cuda.CaptureModeRelaxed) })
}

// EndCapture ends the capture and instantiates its graph; the graph itself
// is freed at once (the executable does not need it).
func (s *cudaStream) EndCapture() (driver.Graph, error) {
	var exec cuda.GraphExec
	err := s.dev.do(func() error {
		g, err := s.s.EndCapture()
		if err != nil {
			return err
		}
		exec, err = g.Instantiate()
		return errors.Join(err, g.Destroy())
	})
	if err != nil {
		if exec != 0 {
			err = errors.Join(err, s.dev.do(exec.Destroy))
		}
		return nil, err
	}
	return &cudaGraph{dev: s.dev, e: exec}, nil
}

type cudaGraph struct {
	dev *cudaDevice
	e   cuda.GraphExec
}

func (g *cudaGraph) Launch(on driver.Stream) error {
	s := on.(*cudaStream).s
	return g.dev.do(func() error { return g.e.Launch(s) })
}

func (g *cudaGraph) Destroy() error { return g.dev.do(g.e.Destroy) }
