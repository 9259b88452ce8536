package driver

import (
	"errors"
	"time"
	"unsafe"
)

// Kind names a backend: "rocm", "cuda", "metal", or a test backend.
type Kind string

// The built-in backend kinds, in the order runtime.Open tries them.
const (
	ROCm  Kind = "rocm"
	CUDA  Kind = "cuda"
	Metal Kind = "metal"
)

// Format names a kernel artifact format a backend loads.
type Format string

const (
	HSACO Format = "hsaco"
	PTX   Format = "ptx"
	MSL   Format = "msl"
)

// Driver finds and opens devices of one backend.
type Driver interface {
	Kind() Kind
	// DeviceCount loads the vendor library and initialises it. It returns the
	// number of devices, or an error saying why the backend is unusable: a
	// library that was not found, an init failure with its code, or no device.
	DeviceCount() (int, error)
	Open(ordinal int) (Device, error)
}

// Info describes an opened device.
type Info struct {
	Backend        Kind
	Ordinal        int
	Name           string
	Arch           string // the arch kernels are chosen by: "gfx1100", "sm_90"
	Target         string // the full target id where it differs: "gfx90a:sramecc+:xnack-"
	TotalMemory    uint64
	ComputeUnits   int
	WarpSize       int
	MaxBlock       int // max threads per block
	DriverVersion  string
	RuntimeVersion string
	Library        string // the path or soname of the vendor library
	Format         Format // the kernel artifact format this device loads
	// NotifyReportsSuccess says a Stream.Notify callback runs only once the
	// work ahead of it completed successfully, so the runtime may land
	// events from it (CUDA: cuLaunchHostFunc's function is not called after
	// a fault). False (HIP, and the safe default) means a callback may run
	// whatever happened: the runtime then only wakes its monitor with it,
	// and the monitor's query decides.
	NotifyReportsSuccess bool
	// RunsOnHost says the device's kernels run on the host's own cores (the
	// simulated backend), so a Wait that polls takes a core from the work
	// it waits for: the runtime's default wait spin is then HostWaitSpin.
	RunsOnHost bool
	// MaxSharedOptin is the most shared memory in bytes, static plus
	// dynamic, a block may use once its kernel's limit has been raised
	// (SharedMemRaiser): CUDA's MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448 on
	// an H100 or H200. 0 where the backend has no such opt-in; its blocks
	// get DefaultSharedMem at most, as far as the runtime is concerned.
	MaxSharedOptin int
}

// DefaultSharedMem is the shared memory in bytes, static plus dynamic, a
// block may use without raising its kernel's limit: 48 KiB, CUDA's default
// on every architecture hipgo runs on (a launch asking for more fails unless
// the kernel opted in).
const DefaultSharedMem = 48 << 10

// Ptr is a device address.
type Ptr uint64

// Dim3 is a grid or block shape.
type Dim3 struct{ X, Y, Z uint32 }

// Count is the number of threads (or blocks) in the shape.
func (d Dim3) Count() uint64 { return uint64(d.X) * uint64(d.Y) * uint64(d.Z) }

// Device is one opened GPU.
type Device interface {
	Info() Info
	Alloc(bytes uint64) (Ptr, error)
	Free(p Ptr) error
	// CopyHtoD and CopyDtoH are synchronous with respect to the host.
	CopyHtoD(dst Ptr, src unsafe.Pointer, bytes uint64) error
	CopyDtoH(dst unsafe.Pointer, src Ptr, bytes uint64) error
	MemInfo() (free, total uint64, err error)
	NewStream() (Stream, error)
	LoadModule(image []byte) (Module, error)
	// Classify sorts an error returned by this device's calls.
	Classify(err error) Class
	// Alive probes, without waiting on queued work, whether the device still
	// answers; after a sticky fault it returns that fault.
	Alive() error
	Close() error
}

// Stream is an in-order queue of work.
type Stream interface {
	// Launch enqueues a kernel. params is a void** array of pointers to each
	// argument, in memory the caller keeps valid (and out of the Go heap, or
	// pinned) for the duration of the call.
	Launch(fn Function, grid, block Dim3, sharedMem uint32, params unsafe.Pointer) error
	// Record creates an event that completes when all work enqueued so far
	// has completed.
	Record() (Event, error)
	// Notify enqueues a host function that the driver calls on its own thread
	// once all work enqueued so far has completed (successfully, where
	// Info.NotifyReportsSuccess says so). It must not block. After a fault
	// the driver may never call it, or (HIP) call it anyway.
	Notify(fn func()) error
	Destroy() error
}

// Abandoner is implemented by streams that hold memory of their own outside
// the driver (host memory the driver reads, such as CUDA's launch
// configuration for early launches). On a lost device the runtime never
// calls Destroy, since no driver call is made after a fault; it calls
// Abandon instead, which frees that memory without calling the driver.
type Abandoner interface {
	Abandon() error
}

// EarlyLauncher is implemented by streams that can start a kernel before
// the kernel ahead of it on the stream has finished (CUDA's programmatic
// dependent launch). The kernel must itself wait for the work ahead
// (grid_dependency_wait in kernels/src/portable.h) before it touches memory;
// the stream only lets it be scheduled early. A stream whose device cannot
// (compute capability below 9.0) launches it plainly.
type EarlyLauncher interface {
	LaunchEarly(fn Function, grid, block Dim3, sharedMem uint32, params unsafe.Pointer) error
}

// Event is a driver event.
type Event interface {
	// Query reports completion without waiting: nil when complete,
	// ErrNotReady while pending, else the error the device reported.
	Query() error
	Destroy() error
}

// GPUTimer is implemented by streams that can time their work on the GPU's
// own clock (cuEventElapsedTime, hipEventElapsedTime): for benchmarks, which
// should not count host scheduling or synchronization latency.
type GPUTimer interface {
	// Mark enqueues a timing event after all work enqueued so far.
	Mark() (TimingMark, error)
}

// TimingMark is a timing event recorded on a stream.
type TimingMark interface {
	// Since waits for this mark and returns the GPU time from start to it.
	Since(start TimingMark) (time.Duration, error)
	Destroy() error
}

// Module is a loaded code object.
type Module interface {
	Function(name string) (Function, error)
	Unload() error
}

// Function is a kernel in a loaded module.
type Function interface {
	Name() string
}

// SharedMemRaiser is implemented by functions whose blocks may use more than
// DefaultSharedMem bytes of shared memory once their limit is raised (CUDA:
// cuFuncSetAttribute with CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).
// The runtime raises the limit before the first launch that needs it, only
// ever upward, once it has checked static plus dynamic against
// Info.MaxSharedOptin; it serialises the raises of each function.
type SharedMemRaiser interface {
	// SetMaxDynamicShared lets launches of the function ask for up to bytes
	// of dynamic shared memory per block.
	SetMaxDynamicShared(bytes int) error
}

// ParamInspector is implemented by functions whose driver reports the
// argument layout itself (cuFuncGetParamInfo, hipKernelGetParamInfo). ok is
// false when this driver version cannot say.
type ParamInspector interface {
	Params() (params []Param, ok bool, err error)
}

// Param is one kernel argument's place in the argument buffer.
type Param struct {
	Offset, Size uint64
}

// ErrNotReady is returned by Query while work is pending. Backends return it
// (or an error wrapping it) instead of their own not-ready code.
var ErrNotReady = errors.New("not ready")

// Class sorts driver errors into what runtime does about them.
type Class int

const (
	// Other: the call failed; the device is fine. The runtime returns the
	// driver's error, wrapped.
	Other Class = iota
	// Rejected: a launch or argument the driver refused synchronously; a
	// launch so refused is a *runtime.LaunchError.
	Rejected
	// OutOfMemory: an allocation could not be satisfied; the device is fine
	// (*runtime.OutOfMemoryError; from a launch, a *runtime.LaunchError).
	OutOfMemory
	// Fault: a device fault after which the context is unusable (sticky):
	// illegal address, launch failure, hardware exception. The runtime
	// marks the device lost.
	Fault
	// NotFound: a missing module function, or a binary for another arch
	// (runtime.ErrNotFound).
	NotFound
)

// AsyncFault describes an asynchronous device fault reported out of band (the
// HSA system event handler on ROCm) rather than through a call's status.
type AsyncFault struct {
	Kind    string // "memory fault", "hardware exception"
	Address uint64 // faulting virtual address, when known
	Reason  string // the decoded reason bits
	Err     error  // the underlying event, for errors.As
}

// FaultSource is implemented by devices that learn of faults out of band.
// The runtime registers one handler; the device calls it from the vendor's
// thread and returns its result to the vendor (true: the fault was delivered).
type FaultSource interface {
	OnFault(handler func(AsyncFault) bool)
}

// Capturer is implemented by streams that can record the kernels launched
// on them into a graph and replay it with one call (CUDA graphs, hipGraph).
// Between BeginCapture and EndCapture, Launch records instead of running;
// the runtime makes no other call on the stream meanwhile (no Record, no
// Notify, no Mark). A backend whose library lacks the calls returns an
// error wrapping errors.ErrUnsupported from BeginCapture.
type Capturer interface {
	BeginCapture() error
	// EndCapture ends the capture, whatever happened during it, and returns
	// the launchable graph. When a launch failed during the capture (the
	// driver invalidates it) it returns an error and no graph; the stream
	// captures no more either way.
	EndCapture() (Graph, error)
}

// Graph is a captured, launchable sequence of kernels.
type Graph interface {
	// Launch enqueues the graph's kernels on on (a stream of the same
	// device), in order with its other work. A fault while they run is
	// reported as a plain launch's is: by queries of events recorded after.
	Launch(on Stream) error
	Destroy() error
}
