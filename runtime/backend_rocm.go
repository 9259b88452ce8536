package runtime

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hipgo/hipgo/hip"
	"github.com/hipgo/hipgo/hsa"
	"github.com/hipgo/hipgo/runtime/driver"
)

// The ROCm backend adapts packages hip and hsa to driver.Device.
//
// Thread model: HIP's current device is per OS thread, so each call runs
// under hip.OnDevice (lock the OS thread; hipSetDevice only when another
// device is current).
//
// Faults: HIP's stream-callback status is always hipSuccess and ROCclr may
// run callbacks after a fault, so a callback only wakes the monitor (Info
// .NotifyReportsSuccess is false) and hipEventQuery decides. On top of that
// the HSA system event handler turns a memory fault or hardware exception
// into a *FaultError with the faulting address and reason, and returns
// success only when it delivered the fault to an open device.
//
// Verified against Debian's ROCm 5.2 libraries without a GPU (the no-device
// path) and through tools/rocmshim (a ROCm-shaped shim over the CUDA driver);
// never run on AMD hardware (see docs/gpu-faults.md).
//
// Which signal comes first depends on the CLR release. Current CLR records a
// fault and returns it (700, 719) from every HIP call after it, queries
// included; CLR up to 6.2 records nothing, so there the HSA event is the only
// signal. The event is routed to its device by PCI address (matchAgent), and
// claiming it stops ROCr's VMFaultHandler abort, not CLR 6.2's abort on queue
// errors (docs/gpu-faults.md).

type rocmDriver struct{}

func (rocmDriver) Kind() driver.Kind { return driver.ROCm }

func (rocmDriver) DeviceCount() (int, error) {
	if err := hip.Load(); err != nil {
		return 0, err
	}
	if err := hip.Init(); err != nil {
		if errors.Is(err, hip.ErrNoDevice) || errors.Is(err, hip.ErrInvalidDevice) {
			return 0, &NoDeviceError{Backend: driver.ROCm, Err: err}
		}
		return 0, fmt.Errorf("init failed: %w", err)
	}
	n, err := hip.GetDeviceCount()
	if errors.Is(err, hip.ErrNoDevice) {
		return 0, &NoDeviceError{Backend: driver.ROCm, Err: err}
	}
	return n, err
}

func (rocmDriver) Open(ordinal int) (driver.Device, error) {
	d := &rocmDevice{ordinal: ordinal}
	info, err := d.describe()
	if err != nil {
		return nil, err
	}
	d.info = info
	d.agent, d.agentKnown = gpuAgent(ordinal)
	rocmFaults.add(d)
	return d, nil
}

type rocmDevice struct {
	ordinal    int
	info       driver.Info
	agent      uint64
	agentKnown bool

	faultMu sync.Mutex
	onFault func(driver.AsyncFault) bool
	// faulted: a sticky error or a system event reached this device, so a
	// late event for its agent after Close is still this device's fault.
	faulted atomic.Bool

	events handlePool[hip.Event]
}

func (d *rocmDevice) describe() (driver.Info, error) {
	info := driver.Info{Backend: driver.ROCm, Ordinal: d.ordinal, Format: driver.HSACO, Library: hip.LibraryPath()}
	var err error
	if info.Name, err = hip.DeviceGetName(d.ordinal); err != nil {
		return info, err
	}
	t, err := hip.DeviceTarget(d.ordinal)
	if err != nil {
		return info, err
	}
	info.Arch, info.Target = t.Arch, t.ID
	if info.TotalMemory, err = hip.DeviceTotalMem(d.ordinal); err != nil {
		return info, err
	}
	if info.ComputeUnits, err = hip.DeviceGetAttribute(hip.AttrMultiprocessorCount, d.ordinal); err != nil {
		return info, err
	}
	if info.WarpSize, err = hip.DeviceGetAttribute(hip.AttrWarpSize, d.ordinal); err != nil {
		return info, err
	}
	if info.MaxBlock, err = hip.DeviceGetAttribute(hip.AttrMaxThreadsPerBlock, d.ordinal); err != nil {
		return info, err
	}
	if v, err := hip.DriverVersion(); err == nil {
		info.DriverVersion = versionString(v)
	} else {
		return info, err
	}
	if v, err := hip.RuntimeVersion(); err == nil {
		info.RuntimeVersion = versionString(v)
	} else {
		return info, err
	}
	return info, nil
}

func versionString(v int) string {
	major, minor, patch := hip.SplitVersion(v)
	return fmt.Sprintf("%d.%d.%d", major, minor, patch)
}

// agentIdentity is what fault routing knows of one HSA GPU agent.
type agentIdentity struct {
	handle   uint64
	pci      pciLocation
	pciKnown bool
	uuid     string // HSA_AMD_AGENT_INFO_UUID, "GPU-" and 16 hex digits
}

// deviceIdentity is what HIP says of one device, in the same terms.
type deviceIdentity struct {
	pci       pciLocation
	pciKnown  bool
	uuid      [16]byte // hipDeviceGetUuid: the 16 characters after "GPU-"
	uuidKnown bool
}

// pciLocation is a PCI domain, bus and device. The function is left out:
// CLR's hipDeviceGetPCIBusId always prints it as 0.
type pciLocation struct {
	domain      uint32
	bus, device uint8
}

// informative reports whether an HSA UUID names one GPU: "GPU-XX" is what
// ROCr reports for a GPU without a unique id.
func informativeUUID(u string) bool {
	return len(u) == 20 && strings.HasPrefix(u, "GPU-") && u != "GPU-XX"
}

// matchAgent finds the HSA agent of a HIP device by a stable identity, never
// by position: HIP_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES renumber HIP's
// devices but not HSA's agents (ROCR_VISIBLE_DEVICES filters both), so the
// N-th GPU agent need not be HIP device N. The PCI location decides; the
// UUID breaks a tie (several agents at one location, as GPU partitions may
// be) or stands in when a side lacks the PCI attributes. No unique match
// leaves the device unmapped, which the single-device fallback in
// faultRouter.handle covers.
func matchAgent(dev deviceIdentity, agents []agentIdentity) (uint64, bool) {
	var byPCI []agentIdentity
	if dev.pciKnown {
		for _, a := range agents {
			if a.pciKnown && a.pci == dev.pci {
				byPCI = append(byPCI, a)
			}
		}
		if len(byPCI) == 1 {
			return byPCI[0].handle, true
		}
	}
	pool := byPCI
	if len(pool) == 0 {
		pool = agents
	}
	if !dev.uuidKnown {
		return 0, false
	}
	want := "GPU-" + string(dev.uuid[:])
	var found []agentIdentity
	for _, a := range pool {
		if informativeUUID(a.uuid) && a.uuid == want {
			found = append(found, a)
		}
	}
	if len(found) == 1 {
		return found[0].handle, true
	}
	return 0, false
}

// gpuAgent maps a HIP ordinal to its HSA agent handle for routing system
// events (matchAgent). Any failure leaves the device unmapped.
func gpuAgent(ordinal int) (uint64, bool) {
	var dev deviceIdentity
	if p, err := hip.DevicePCIAddress(ordinal); err == nil {
		dev.pci, dev.pciKnown = pciLocation{domain: p.Domain, bus: p.Bus, device: p.Device}, true
	}
	if u, err := hip.DeviceUUID(ordinal); err == nil {
		dev.uuid, dev.uuidKnown = u, true
	}
	agents, err := hsa.Agents()
	if err != nil {
		return 0, false
	}
	var ids []agentIdentity
	for _, a := range agents {
		if a.DeviceType() != hsa.DeviceGPU {
			continue
		}
		id := agentIdentity{handle: a.Handle(), uuid: a.UUID()}
		if p, ok := a.PCI(); ok {
			id.pci, id.pciKnown = pciLocation{domain: p.Domain, bus: p.Bus, device: p.Device}, true
		}
		ids = append(ids, id)
	}
	return matchAgent(dev, ids)
}

func (d *rocmDevice) Info() driver.Info { return d.info }

func (d *rocmDevice) do(fn func() error) error {
	release, err := hip.OnDevice(d.ordinal)
	if err != nil {
		return err
	}
	defer release()
	return fn()
}

func (d *rocmDevice) Alloc(n uint64) (p driver.Ptr, err error) {
	err = d.do(func() error {
		dp, err := hip.Malloc(uintptr(n))
		p = driver.Ptr(dp)
		return err
	})
	return p, err
}

func (d *rocmDevice) Free(p driver.Ptr) error {
	return d.do(func() error { return hip.Free(hip.DevicePtr(p)) })
}

func (d *rocmDevice) CopyHtoD(dst driver.Ptr, src unsafe.Pointer, n uint64) error {
	return d.do(func() error { return hip.MemcpyHtoD(hip.DevicePtr(dst), unsafe.Slice((*byte)(src), n)) })
}

func (d *rocmDevice) CopyDtoH(dst unsafe.Pointer, src driver.Ptr, n uint64) error {
	return d.do(func() error { return hip.MemcpyDtoH(unsafe.Slice((*byte)(dst), n), hip.DevicePtr(src)) })
}

func (d *rocmDevice) MemInfo() (free, total uint64, err error) {
	err = d.do(func() error {
		free, total, err = hip.MemGetInfo()
		return err
	})
	return free, total, err
}

func (d *rocmDevice) NewStream() (driver.Stream, error) {
	var s hip.Stream
	err := d.do(func() (err error) {
		s, err = hip.StreamCreateWithFlags(hip.StreamNonBlocking)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &rocmStream{dev: d, s: s}, nil
}

func (d *rocmDevice) LoadModule(image []byte) (driver.Module, error) {
	var m hip.Module
	err := d.do(func() (err error) {
		m, err = hip.ModuleLoadData(image)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &rocmModule{dev: d, m: m}, nil
}

// Classify sorts HIP errors. Every sticky code is a Fault, a 719 from
// hipModuleLaunchKernel included: current CLR returns the recorded GPU error
// (700 or 719) from every call after a fault, launches too, and uses the same
// 719 for a block over the kernel's launch bounds (see hip.Code.Sticky). A
// Fault at launch is probed with Alive before the device is declared lost,
// so the rejection still comes back as a *LaunchError.
func (d *rocmDevice) Classify(err error) driver.Class {
	var he *hip.Error
	if errors.As(err, &he) && he.Sticky() {
		d.faulted.Store(true)
		return driver.Fault
	}
	var c hip.Code
	if !errors.As(err, &c) {
		return driver.Other
	}
	switch c {
	case hip.ErrOutOfMemory:
		return driver.OutOfMemory
	case hip.ErrNotFound, hip.ErrNoBinaryForGpu:
		return driver.NotFound
	case hip.ErrInvalidValue, hip.ErrInvalidConfiguration:
		return driver.Rejected
	}
	return driver.Other
}

// Alive asks for the memory info, which does not wait for queued work and,
// after a fault, fails like every other HIP call on current CLR: hipMemGetInfo
// starts with HIP_INIT_API, which returns the recorded GPU error (mlxcel saw
// it on ROCm 7.15). On CLR up to 6.2 it succeeds after a fault (nothing is
// recorded), so there the HSA system event is what loses the device.
func (d *rocmDevice) Alive() error {
	_, _, err := d.MemInfo()
	return err
}

func (d *rocmDevice) OnFault(h func(driver.AsyncFault) bool) {
	d.faultMu.Lock()
	d.onFault = h
	d.faultMu.Unlock()
}

func (d *rocmDevice) deliver(f driver.AsyncFault) bool {
	d.faultMu.Lock()
	h := d.onFault
	d.faultMu.Unlock()
	if h == nil || !h(f) {
		return false
	}
	d.faulted.Store(true)
	return true
}

func (d *rocmDevice) Close() error {
	rocmFaults.remove(d)
	pool := d.events.drain()
	return d.do(func() error {
		var errs []error
		for _, e := range pool {
			errs = append(errs, hip.EventDestroy(e))
		}
		return errors.Join(errs...)
	})
}

// rocmFaults routes HSA system events to open devices by agent handle. The
// C handler is registered once per process (handlers cannot be removed).
var rocmFaults = &faultRouter{devs: map[*rocmDevice]struct{}{}}

type faultRouter struct {
	mu         sync.Mutex
	devs       map[*rocmDevice]struct{}
	retired    []retiredDevice // closed after a fault
	registered bool
	regErr     error
}

// retiredDevice is what the router keeps of a device closed after a fault.
type retiredDevice struct {
	agent      uint64
	agentKnown bool
}

func (r *faultRouter) add(d *rocmDevice) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.devs[d] = struct{}{}
	if !r.registered {
		// HIP has initialised HSA by now; registering shares its instance.
		r.regErr = hsa.RegisterSystemEventHandler(r.handle)
		r.registered = r.regErr == nil
	}
}

// remove unregisters a closing device. One that faulted stays known by its
// agent: ROCr's event thread may deliver the fault after the HIP call that
// saw it returned and the device was closed (on the shim over an H200 the
// race is a few milliseconds wide), and an unclaimed event makes ROCr abort
// the process (CLR up to 6.2 registers no handler of its own).
func (r *faultRouter) remove(d *rocmDevice) {
	r.mu.Lock()
	if _, ok := r.devs[d]; ok && d.faulted.Load() {
		r.retired = append(r.retired, retiredDevice{agent: d.agent, agentKnown: d.agentKnown})
	}
	delete(r.devs, d)
	r.mu.Unlock()
}

// handle runs on ROCr's event thread. It claims (returns true for) an event
// only when an open device took it; an event for an agent hipgo has not
// opened is left to ROCr's default. When the open devices are all one GPU
// (one ordinal, any number of handles) whose agent could not be identified
// (matchAgent), they take every memory fault and hardware exception.
func (r *faultRouter) handle(ev hsa.SystemEvent) bool {
	f, ok := asyncFault(ev)
	if !ok {
		return false
	}
	r.mu.Lock()
	// Several handles may be open on one GPU: a fault kills it for all.
	var targets, unmapped []*rocmDevice
	ordinals := map[int]bool{}
	for d := range r.devs {
		switch {
		case d.agentKnown && d.agent == ev.Agent:
			targets = append(targets, d)
		case !d.agentKnown:
			unmapped = append(unmapped, d)
		}
		ordinals[d.ordinal] = true
	}
	if len(targets) == 0 && len(unmapped) == len(r.devs) && len(ordinals) == 1 {
		targets = unmapped // one GPU open, its agent unknown: the event can only be its
	}
	// A fault already reported by a device closed since: claimed, not
	// delivered (an unmapped one only while no other device is open).
	claimed := false
	if len(targets) == 0 {
		for _, rd := range r.retired {
			if (rd.agentKnown && rd.agent == ev.Agent) || (!rd.agentKnown && len(r.devs) == 0) {
				claimed = true
			}
		}
	}
	r.mu.Unlock()
	for _, d := range targets {
		if d.deliver(f) {
			claimed = true
		}
	}
	return claimed
}

// asyncFault describes the events that lose a device: memory faults and
// hardware exceptions. Memory errors (raised synchronously inside a free)
// and shutdown are not claimed.
func asyncFault(ev hsa.SystemEvent) (driver.AsyncFault, bool) {
	switch ev.Type {
	case hsa.MemoryFaultEvent:
		return driver.AsyncFault{Kind: "memory fault", Address: ev.Address, Reason: ev.FaultReason.String(), Err: systemEventError{ev}}, true
	case hsa.HWExceptionEvent:
		return driver.AsyncFault{Kind: "hardware exception", Reason: ev.ResetCause.String(), Err: systemEventError{ev}}, true
	}
	return driver.AsyncFault{}, false
}

// systemEventError carries the decoded event for errors.As.
type systemEventError struct{ Event hsa.SystemEvent }

func (e systemEventError) Error() string { return "HSA system event: " + e.Event.String() }

type rocmStream struct {
	dev *rocmDevice
	s   hip.Stream
}

func (s *rocmStream) Launch(fn driver.Function, grid, block driver.Dim3, shmem uint32, params unsafe.Pointer) error {
	f := fn.(*rocmFunction).f
	return s.dev.do(func() error {
		return hip.ModuleLaunchKernel(f, hip.Dim3(grid), hip.Dim3(block), shmem, s.s, params, nil)
	})
}

func (s *rocmStream) Record() (driver.Event, error) {
	d := s.dev
	var ev hip.Event
	err := d.do(func() error {
		ev = d.events.get()
		if ev == 0 {
			var err error
			if ev, err = hip.EventCreateWithFlags(hip.EventDisableTiming); err != nil {
				return err
			}
		}
		if err := hip.EventRecord(ev, s.s); err != nil {
			d.events.put(ev)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &rocmEvent{dev: d, e: ev}, nil
}

// Mark records a timing event (created with timing on, and not pooled).
func (s *rocmStream) Mark() (driver.TimingMark, error) {
	var ev hip.Event
	err := s.dev.do(func() error {
		var err error
		if ev, err = hip.EventCreateWithFlags(hip.EventDefault); err != nil {
			return err
		}
		if err := hip.EventRecord(ev, s.s); err != nil {
			_ = hip.EventDestroy(ev) // never enqueued; the record error is the one to report
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &rocmMark{dev: s.dev, e: ev}, nil
}

type rocmMark struct {
	dev *rocmDevice
	e   hip.Event
}

func (m *rocmMark) Since(start driver.TimingMark) (time.Duration, error) {
	var ms float32
	err := m.dev.do(func() error {
		if err := hip.EventSynchronize(m.e); err != nil {
			return err
		}
		var err error
		ms, err = hip.EventElapsedTime(start.(*rocmMark).e, m.e)
		return err
	})
	return time.Duration(float64(ms) * float64(time.Millisecond)), err
}

func (m *rocmMark) Destroy() error { return m.dev.do(func() error { return hip.EventDestroy(m.e) }) }

// Notify uses hipLaunchHostFunc (ROCm ≥ 5.3) and falls back to
// hipStreamAddCallback, whose status argument is always hipSuccess on AMD.
func (s *rocmStream) Notify(fn func()) error {
	return s.dev.do(func() error {
		err := hip.LaunchHostFunc(s.s, fn)
		if errors.Is(err, errors.ErrUnsupported) {
			return hip.StreamAddCallback(s.s, func(hip.Code) { fn() })
		}
		return err
	})
}

func (s *rocmStream) Destroy() error {
	return s.dev.do(func() error { return hip.StreamDestroy(s.s) })
}

// BeginCapture starts a relaxed capture (driver.Capturer) where the library
// exports hipGraph (ROCm 4.3+); elsewhere hip's *UnsupportedError, which
// matches errors.ErrUnsupported.
func (s *rocmStream) BeginCapture() error {
	if !hip.GraphSupported() {
		return hip.StreamBeginCapture(s.s, hip.CaptureModeRelaxed) // the *UnsupportedError, no driver call
	}
	return s.dev.do(func() error { return hip.StreamBeginCapture(s.s, hip.CaptureModeRelaxed) })
}

// EndCapture ends the capture and instantiates its graph, freeing the
// graph itself at once.
func (s *rocmStream) EndCapture() (driver.Graph, error) {
	var exec hip.GraphExec
	err := s.dev.do(func() error {
		g, err := hip.StreamEndCapture(s.s)
		if err != nil {
			return err
		}
		exec, err = hip.GraphInstantiate(g)
		return errors.Join(err, hip.GraphDestroy(g))
	})
	if err != nil {
		if exec != 0 {
			err = errors.Join(err, s.dev.do(func() error { return hip.GraphExecDestroy(exec) }))
		}
		return nil, err
	}
	return &rocmGraph{dev: s.dev, e: exec}, nil
}

type rocmGraph struct {
	dev *rocmDevice
	e   hip.GraphExec
}

func (g *rocmGraph) Launch(on driver.Stream) error {
	s := on.(*rocmStream).s
	return g.dev.do(func() error { return hip.GraphLaunch(g.e, s) })
}

func (g *rocmGraph) Destroy() error {
	return g.dev.do(func() error { return hip.GraphExecDestroy(g.e) })
}

type rocmEvent struct {
	dev *rocmDevice
	e   hip.Event
}

func (e *rocmEvent) Query() error {
	return e.dev.do(func() error {
		done, err := hip.EventQuery(e.e)
		if err == nil && !done {
			return driver.ErrNotReady
		}
		return err
	})
}

func (e *rocmEvent) Destroy() error {
	if e.dev.events.put(e.e) {
		return nil
	}
	return e.dev.do(func() error { return hip.EventDestroy(e.e) })
}

type rocmModule struct {
	dev *rocmDevice
	m   hip.Module
}

func (m *rocmModule) Function(name string) (driver.Function, error) {
	var f hip.Function
	err := m.dev.do(func() (err error) {
		f, err = hip.ModuleGetFunction(m.m, name)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &rocmFunction{dev: m.dev, f: f, name: name}, nil
}

func (m *rocmModule) Unload() error {
	return m.dev.do(func() error { return hip.ModuleUnload(m.m) })
}

type rocmFunction struct {
	dev  *rocmDevice
	f    hip.Function
	name string
}

func (f *rocmFunction) Name() string { return f.name }

// Params reports hipKernelGetParamInfo's layout where the library has it
// (newer ROCm; not 5.2), probing indexes until hipErrorInvalidValue.
func (f *rocmFunction) Params() ([]driver.Param, bool, error) {
	var out []driver.Param
	known := true
	err := f.dev.do(func() error {
		for i := 0; i < 256; i++ {
			off, size, err := hip.KernelGetParamInfo(f.f, i)
			switch {
			case errors.Is(err, errors.ErrUnsupported):
				known = false
				return nil
			case errors.Is(err, hip.ErrInvalidValue):
				return nil
			case err != nil:
				return err
			}
			out = append(out, driver.Param{Offset: uint64(off), Size: uint64(size)})
		}
		return fmt.Errorf("hipKernelGetParamInfo answered for 256 parameters, more than a kernel can take")
	})
	if err != nil || !known {
		return nil, false, err
	}
	return out, true, nil
}
