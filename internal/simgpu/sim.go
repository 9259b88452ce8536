package simgpu

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hipgo/hipgo/runtime/driver"
)

// Kind is the simulated backend's kind.
const Kind driver.Kind = "sim"

// Code is a simulated driver status.
type Code int

const (
	CodeInvalidValue  Code = 1
	CodeOutOfMemory   Code = 2
	CodeNotFound      Code = 500
	CodeIllegalAddr   Code = 700
	CodeLaunchFailure Code = 719
	// CodeCaptureUnsupported: a call a capturing stream cannot record.
	CodeCaptureUnsupported Code = 900
	// CodeCaptureInvalidated: EndCapture of a capture a failed call spoiled.
	CodeCaptureInvalidated Code = 901
)

var names = map[Code]string{
	CodeInvalidValue: "simErrorInvalidValue", CodeOutOfMemory: "simErrorOutOfMemory",
	CodeNotFound: "simErrorNotFound", CodeIllegalAddr: "simErrorIllegalAddress",
	CodeLaunchFailure: "simErrorLaunchFailure", CodeCaptureUnsupported: "simErrorStreamCaptureUnsupported",
	CodeCaptureInvalidated: "simErrorStreamCaptureInvalidated",
}

func (c Code) Error() string { return fmt.Sprintf("%s (%d)", c.Name(), int(c)) }

// Name is the status's name, like the vendors' name functions.
func (c Code) Name() string {
	if n, ok := names[c]; ok {
		return n
	}
	return fmt.Sprintf("simError(%d)", int(c))
}

// Sticky reports whether the code leaves the context unusable.
func (c Code) Sticky() bool { return c == CodeIllegalAddr || c == CodeLaunchFailure }

// KernelFunc runs a simulated kernel on its stream's goroutine. args are the
// argument values, each widened to uint64. Returning a sticky Code faults
// the device; stop is closed when the device closes (spinning kernels must
// watch it).
type KernelFunc func(dev *Device, grid, block driver.Dim3, args []uint64, stop <-chan struct{}) error

// KernelDef is a simulated kernel and its argument sizes.
type KernelDef struct {
	Name       string
	ParamSizes []int
	Run        KernelFunc
	// Reject, when set, is a synchronous launch check: a non-nil result is
	// returned from Launch (like a driver rejecting a block size).
	Reject func(grid, block driver.Dim3) error
	// StaticShared is the kernel's static shared memory in bytes: with a
	// launch's dynamic shared memory it counts against
	// driver.DefaultSharedMem, and against Config.MaxSharedOptin once raised.
	StaticShared int
}

// Config shapes a simulated device.
type Config struct {
	Devices int
	// Kind is the backend the device reports (default "sim", which has no
	// kernel ports); Format the artifact format it loads. A test of the
	// plumbing above the runtime can pose as "cuda" with the real PTX
	// metadata while its kernels run as Go functions.
	Kind     driver.Kind
	Format   driver.Format
	Name     string
	Arch     string
	Memory   uint64 // bytes; allocations beyond it fail with CodeOutOfMemory
	MaxBlock int
	Kernels  []KernelDef
	// DropCallbacks makes Notify accept callbacks and never call them.
	DropCallbacks bool
	// ForeignThreadCallbacks runs callbacks on threads created by the C
	// library (pthread_create through purego), as real drivers do.
	ForeignThreadCallbacks bool
	// HIPCallbacks makes callbacks behave as ROCm's do (CLR's
	// ihipStreamCallback passes hipSuccess whatever happened, and ROCclr
	// runs callbacks on abnormal termination too): they still run after a
	// fault, and the device reports Info.NotifyReportsSuccess false. By
	// default callbacks behave as CUDA's: they run only after the work ahead
	// succeeded, and the device says so.
	HIPCallbacks bool
	// CallbackDelay delays each callback.
	CallbackDelay time.Duration
	// GPUTimer gives streams driver.GPUTimer: a mark's time is the wall
	// time at which the stream reaches it. Without it streams cannot time,
	// like a backend with no timing events.
	GPUTimer bool
	// NoGraphs makes BeginCapture fail with an error wrapping
	// errors.ErrUnsupported, as a backend without graphs does.
	NoGraphs bool
	// CloseBlocks makes Close block until Release is called.
	CloseBlocks bool
	// MaxSharedOptin is the device's shared memory per block, static plus
	// dynamic, once a kernel's limit is raised (driver.Info.MaxSharedOptin;
	// default 232448, an H100's or H200's). A launch over
	// driver.DefaultSharedMem fails with CodeInvalidValue unless the
	// function's limit (driver.SharedMemRaiser) was raised to cover it, as
	// on CUDA.
	MaxSharedOptin int
	// NoSharedRaise leaves functions without driver.SharedMemRaiser and has
	// the device report no opt-in maximum, as on ROCm and Metal.
	NoSharedRaise bool
	// OnCall, when set, runs inside every driver call (Close included),
	// after the call's sticky-fault check: a test injects an out-of-band
	// fault there (InjectAsyncFault from inside Record), a hang (block), a
	// failure (a non-nil result is the call's error, unless the device has
	// faulted: then the call returns the fault), or logs the call. call
	// names the method: "Alloc", "Free", "CopyHtoD", "CopyDtoH", "MemInfo",
	// "Alive", "Open" (the driver's), "Close", "LoadModule", "Function", "Unload", "NewStream",
	// "Launch", "Record", "Notify", "StreamDestroy", "EventQuery",
	// "EventDestroy", "Mark", "MarkDestroy" (a mark's Since queries as
	// "EventQuery"), "BeginCapture", "EndCapture", "GraphLaunch",
	// "GraphDestroy", "SetMaxDynamicShared".
	OnCall func(call string) error
	// OnLoadModule, when set, sees every image LoadModule is given (after
	// OnCall has let the call through); an error refuses the image.
	OnLoadModule func(image []byte) error
}

// DefaultMaxSharedOptin is the simulated device's default
// Config.MaxSharedOptin: an H100's or H200's 227 KiB.
const DefaultMaxSharedOptin = 232448

// Driver is a simulated backend.
type Driver struct {
	cfg  Config
	mu   sync.Mutex
	devs []*Device
	// InitErr, when set, is DeviceCount's answer.
	InitErr error
}

// New returns a simulated backend.
func New(cfg Config) *Driver {
	if cfg.Name == "" {
		cfg.Name = "Simulated GPU"
	}
	if cfg.Arch == "" {
		cfg.Arch = "sim_1"
	}
	if cfg.Memory == 0 {
		cfg.Memory = 1 << 30
	}
	if cfg.MaxBlock == 0 {
		cfg.MaxBlock = 1024
	}
	if cfg.Kind == "" {
		cfg.Kind = Kind
	}
	if cfg.MaxSharedOptin == 0 {
		cfg.MaxSharedOptin = DefaultMaxSharedOptin
	}
	return &Driver{cfg: cfg}
}

func (d *Driver) Kind() driver.Kind { return d.cfg.Kind }

func (d *Driver) DeviceCount() (int, error) {
	if d.InitErr != nil {
		return 0, d.InitErr
	}
	return d.cfg.Devices, nil
}

func (d *Driver) Open(ordinal int) (driver.Device, error) {
	if d.cfg.OnCall != nil {
		if err := d.cfg.OnCall("Open"); err != nil {
			return nil, err
		}
	}
	dev := &Device{
		cfg: d.cfg, ordinal: ordinal,
		next: 0x1000_0000, stop: make(chan struct{}), release: make(chan struct{}),
		kernels: map[string]KernelDef{}, sharedLimits: map[string]int{},
	}
	for _, k := range d.cfg.Kernels {
		dev.kernels[k.Name] = k
	}
	d.mu.Lock()
	d.devs = append(d.devs, dev)
	d.mu.Unlock()
	return dev, nil
}

// Devices returns the devices opened so far.
func (d *Driver) Devices() []*Device {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*Device(nil), d.devs...)
}

// Device is a simulated GPU.
type Device struct {
	cfg     Config
	ordinal int
	kernels map[string]KernelDef

	mu sync.Mutex
	// mem: the live allocations in increasing address order, so that Bytes
	// finds the one around an address by binary search (kernel twins look
	// up memory per head and per row; a scan made that the simulated
	// device's main cost once a model had allocated its buffers).
	mem    []allocation
	used   uint64
	next   driver.Ptr
	faultE atomic.Pointer[Code]
	// sharedLimits: the largest dynamic shared memory limit set on any
	// function of each kernel name (under mu).
	sharedLimits map[string]int

	onFault func(driver.AsyncFault) bool
	stop    chan struct{}
	release chan struct{}
	closed  atomic.Bool
	wg      sync.WaitGroup

	// Counters for tests.
	Launches atomic.Int64
	// EarlyLaunches counts the launches among Launches that came through
	// driver.EarlyLauncher (runtime.LaunchConfig.EarlyStart).
	EarlyLaunches atomic.Int64
	Callbacks     atomic.Int64
	EventsLive    atomic.Int64
	MarksLive     atomic.Int64 // timing marks created and not destroyed (Config.GPUTimer)
	DriverCalls   atomic.Int64
	// StreamsLive counts streams created and neither destroyed nor
	// abandoned (driver.Abandoner, after a loss).
	StreamsLive atomic.Int64
	// StaleHandleCalls counts queries and destroys of an event already
	// destroyed (on a real driver: a use after free, or a handle recycled
	// for another event); such a call fails with CodeInvalidValue.
	StaleHandleCalls atomic.Int64
	// GraphsLive counts captured graphs not destroyed; Capturing, streams
	// capturing now; GraphLaunches, graph launches queued (their kernels
	// are not counted in Launches).
	GraphsLive    atomic.Int64
	Capturing     atomic.Int64
	GraphLaunches atomic.Int64
	// SharedRaises counts the dynamic shared memory limits set
	// (driver.SharedMemRaiser), refused ones included.
	SharedRaises atomic.Int64
}

func (d *Device) Info() driver.Info {
	return driver.Info{
		Backend: d.cfg.Kind, Ordinal: d.ordinal, Name: d.cfg.Name, Arch: d.cfg.Arch, Format: d.cfg.Format,
		TotalMemory: d.cfg.Memory, ComputeUnits: 132, WarpSize: 32, MaxBlock: d.cfg.MaxBlock,
		DriverVersion: "sim", RuntimeVersion: "sim", Library: "(simulated)",
		NotifyReportsSuccess: !d.cfg.HIPCallbacks, RunsOnHost: true, MaxSharedOptin: d.maxSharedOptin(),
	}
}

// maxSharedOptin is the opt-in maximum the device reports: 0 when its
// functions cannot raise.
func (d *Device) maxSharedOptin() int {
	if d.cfg.NoSharedRaise {
		return 0
	}
	return d.cfg.MaxSharedOptin
}

// MaxDynamicShared is the largest dynamic shared memory limit set on a
// function of kernel name (driver.SharedMemRaiser), 0 when none was.
func (d *Device) MaxDynamicShared(name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sharedLimits[name]
}

// fault returns the sticky error if the device faulted.
func (d *Device) fault() error {
	if c := d.faultE.Load(); c != nil {
		return *c
	}
	return nil
}

// Fault makes the device sticky-faulted with c, as an asynchronous fault does.
func (d *Device) Fault(c Code) { d.faultE.CompareAndSwap(nil, &c) }

// InjectAsyncFault delivers an out-of-band fault (like the HSA system event
// handler) from a goroutine of its own, and reports whether the runtime
// claimed it.
func (d *Device) InjectAsyncFault(addr uint64, reason string) bool {
	// Like ROCr, the handler hears of the fault before any query reports it.
	defer d.Fault(CodeIllegalAddr)
	d.mu.Lock()
	h := d.onFault
	d.mu.Unlock()
	if h == nil {
		return false
	}
	res := make(chan bool)
	go func() {
		res <- h(driver.AsyncFault{Kind: "memory fault", Address: addr, Reason: reason, Err: CodeIllegalAddr})
	}()
	return <-res
}

func (d *Device) OnFault(h func(driver.AsyncFault) bool) {
	d.mu.Lock()
	d.onFault = h
	d.mu.Unlock()
}

// call counts a driver call and returns its status: the sticky fault, or
// what Config.OnCall says.
func (d *Device) call(name string) error {
	d.DriverCalls.Add(1)
	fault := d.fault()
	var err error
	if d.cfg.OnCall != nil {
		err = d.cfg.OnCall(name)
	}
	if fault != nil {
		return fault
	}
	return err
}

func (d *Device) Alloc(n uint64) (driver.Ptr, error) {
	if err := d.call("Alloc"); err != nil {
		return 0, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.used+n > d.cfg.Memory {
		return 0, CodeOutOfMemory
	}
	p := d.next
	d.next += driver.Ptr((n + 255) &^ 255)
	a := allocation{p, make([]byte, n)}
	if k := len(d.mem); k > 0 && d.mem[k-1].base == p {
		d.mem[k-1] = a // a zero-byte allocation does not move next
	} else {
		d.mem = append(d.mem, a) // next only grows: mem stays sorted
	}
	d.used += n
	return p, nil
}

func (d *Device) Free(p driver.Ptr) error {
	if err := d.call("Free"); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	i, ok := d.find(p)
	if !ok {
		return CodeInvalidValue
	}
	d.used -= uint64(len(d.mem[i].b))
	d.mem = slices.Delete(d.mem, i, i+1)
	return nil
}

// Bytes returns the simulated memory at p (a view into the allocation that
// contains it), or an error for an address outside every allocation — the
// simulated illegal address.
func (d *Device) Bytes(p driver.Ptr, n uint64) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	// The last allocation at or below p is the only one that can hold it.
	i, found := d.find(p)
	if !found {
		i--
	}
	if i < 0 {
		return nil, CodeIllegalAddr
	}
	a := d.mem[i]
	if off := uint64(p - a.base); off+n <= uint64(len(a.b)) {
		return a.b[off : off+n], nil
	}
	return nil, CodeIllegalAddr
}

// allocation is one Alloc's memory, at base.
type allocation struct {
	base driver.Ptr
	b    []byte
}

// find returns the index of the allocation at base p, or where one would
// go and false (under mu).
func (d *Device) find(p driver.Ptr) (int, bool) {
	return slices.BinarySearchFunc(d.mem, p, func(a allocation, p driver.Ptr) int { return cmp.Compare(a.base, p) })
}

func (d *Device) CopyHtoD(dst driver.Ptr, src unsafe.Pointer, n uint64) error {
	if err := d.call("CopyHtoD"); err != nil {
		return err
	}
	b, err := d.Bytes(dst, n)
	if err != nil {
		return CodeInvalidValue
	}
	copy(b, unsafe.Slice((*byte)(src), n))
	return nil
}

func (d *Device) CopyDtoH(dst unsafe.Pointer, src driver.Ptr, n uint64) error {
	if err := d.call("CopyDtoH"); err != nil {
		return err
	}
	b, err := d.Bytes(src, n)
	if err != nil {
		return CodeInvalidValue
	}
	copy(unsafe.Slice((*byte)(dst), n), b)
	return nil
}

func (d *Device) MemInfo() (uint64, uint64, error) {
	if err := d.call("MemInfo"); err != nil {
		return 0, 0, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg.Memory - d.used, d.cfg.Memory, nil
}

func (d *Device) Classify(err error) driver.Class {
	var c Code
	if !errors.As(err, &c) {
		return driver.Other
	}
	switch {
	case c.Sticky():
		return driver.Fault
	case c == CodeOutOfMemory:
		return driver.OutOfMemory
	case c == CodeNotFound:
		return driver.NotFound
	case c == CodeInvalidValue:
		return driver.Rejected
	}
	return driver.Other
}

func (d *Device) Alive() error { return d.call("Alive") }

// Closed reports whether Close was called.
func (d *Device) Closed() bool { return d.closed.Load() }

// Release lets a blocked Close return.
func (d *Device) Release() { close(d.release) }

func (d *Device) Close() error {
	_ = d.call("Close") // counted and hooked; a simulated close succeeds even after a fault
	if !d.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(d.stop)
	if d.cfg.CloseBlocks {
		<-d.release
	}
	d.wg.Wait()
	return nil
}

func (d *Device) LoadModule(image []byte) (driver.Module, error) {
	if err := d.call("LoadModule"); err != nil {
		return nil, err
	}
	if d.cfg.OnLoadModule != nil {
		if err := d.cfg.OnLoadModule(image); err != nil {
			return nil, err
		}
	}
	return &module{dev: d, name: string(image)}, nil
}

type module struct {
	dev  *Device
	name string
}

func (m *module) Function(name string) (driver.Function, error) {
	if err := m.dev.call("Function"); err != nil {
		return nil, err
	}
	k, ok := m.dev.kernels[name]
	if !ok {
		return nil, CodeNotFound
	}
	f := &function{dev: m.dev, def: k}
	if m.dev.cfg.NoSharedRaise {
		return f, nil
	}
	return &raisingFunction{f}, nil
}

func (m *module) Unload() error { return m.dev.call("Unload") }

type function struct {
	dev *Device
	def KernelDef
	// maxDynamic is the dynamic shared memory limit set on this function
	// (0: none; the default applies).
	maxDynamic atomic.Int64
}

func (f *function) Name() string { return f.def.Name }

// raisingFunction is a function with driver.SharedMemRaiser (unless
// Config.NoSharedRaise).
type raisingFunction struct{ *function }

// SetMaxDynamicShared sets the function's dynamic shared memory limit, as
// cuFuncSetAttribute does: static plus bytes over the device's
// MaxSharedOptin is CodeInvalidValue. Each call is counted
// (Device.SharedRaises) and recorded (Device.MaxDynamicShared).
func (f *raisingFunction) SetMaxDynamicShared(bytes int) error {
	d := f.dev
	d.SharedRaises.Add(1)
	if err := d.call("SetMaxDynamicShared"); err != nil {
		return err
	}
	if bytes < 0 || f.def.StaticShared+bytes > d.cfg.MaxSharedOptin {
		return CodeInvalidValue
	}
	f.maxDynamic.Store(int64(bytes))
	d.mu.Lock()
	d.sharedLimits[f.def.Name] = max(d.sharedLimits[f.def.Name], bytes)
	d.mu.Unlock()
	return nil
}

// simFunction is the function behind either kind.
func simFunction(fn driver.Function) *function {
	if r, ok := fn.(*raisingFunction); ok {
		return r.function
	}
	return fn.(*function)
}

// sharedFits reports whether a launch with shmem bytes of dynamic shared
// memory fits the function's limit: the default, or what was set.
func (f *function) sharedFits(shmem uint32) bool {
	return f.def.StaticShared+int(shmem) <= driver.DefaultSharedMem || int64(shmem) <= f.maxDynamic.Load()
}

// Params reports the layout the way cuFuncGetParamInfo does: natural
// alignment of each size.
func (f *function) Params() ([]driver.Param, bool, error) {
	var ps []driver.Param
	off := uint64(0)
	for _, s := range f.def.ParamSizes {
		off = (off + uint64(s) - 1) / uint64(s) * uint64(s)
		ps = append(ps, driver.Param{Offset: off, Size: uint64(s)})
		off += uint64(s)
	}
	return ps, true, nil
}

// readArgs reads the void** argument array with the kernel's sizes.
func readArgs(params unsafe.Pointer, sizes []int) []uint64 {
	out := make([]uint64, len(sizes))
	if len(sizes) == 0 {
		return out
	}
	ptrs := unsafe.Slice((*unsafe.Pointer)(params), len(sizes))
	for i, s := range sizes {
		b := unsafe.Slice((*byte)(ptrs[i]), s)
		switch s {
		case 1:
			out[i] = uint64(b[0])
		case 2:
			out[i] = uint64(binary.LittleEndian.Uint16(b))
		case 4:
			out[i] = uint64(binary.LittleEndian.Uint32(b))
		case 8:
			out[i] = binary.LittleEndian.Uint64(b)
		}
	}
	return out
}
