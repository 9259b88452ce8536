package runtime

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hipgo/hipgo/internal/dynlib"
	"github.com/hipgo/hipgo/runtime/driver"
)

// Sentinels for errors.Is. Every error the runtime returns for a GPU failure
// matches exactly one of these (and wraps the binding's own error, so
// errors.Is(err, cuda.ErrIllegalAddress) works too).
var (
	// ErrNoDevice: no backend had a usable device (see *OpenError).
	ErrNoDevice = errors.New("no usable GPU")
	// ErrLibraryNotFound: a vendor library is at none of the paths tried.
	ErrLibraryNotFound = dynlib.ErrNotFound
	// ErrLibraryRejected: a vendor library is there but dlopen refused it (its reason is in the message).
	ErrLibraryRejected = dynlib.ErrRejected
	// ErrOutOfMemory: an allocation could not be satisfied.
	ErrOutOfMemory = errors.New("out of device memory")
	// ErrNotFound: the driver has no such kernel in the module, or cannot
	// load the code object for this device; the device is fine.
	ErrNotFound = errors.New("not found by the driver")
	// ErrLaunchRejected: a launch was refused synchronously; the device is fine.
	ErrLaunchRejected = errors.New("launch rejected")
	// ErrDeviceFault: the device reported a fault for queued work.
	ErrDeviceFault = errors.New("device fault")
	// ErrDeviceLost: an earlier sticky fault made the device unusable.
	ErrDeviceLost = errors.New("device lost")
	// ErrWatchdog: a wait outlasted HIPGO_GPU_WATCHDOG.
	ErrWatchdog = errors.New("GPU watchdog expired")
	// ErrInvalidArgument: a caller error caught before reaching the driver.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrClosed: the object was closed or freed.
	ErrClosed = errors.New("closed")
)

// Attempt is one backend tried by Open and why it was unusable.
type Attempt struct {
	Backend driver.Kind
	Err     error
}

// OpenError says that no backend had a usable device. It lists every backend
// tried and why each was unusable.
type OpenError struct {
	Attempts []Attempt
}

func (e *OpenError) Error() string {
	var b strings.Builder
	b.WriteString("no usable GPU:")
	for _, a := range e.Attempts {
		fmt.Fprintf(&b, " [%s: %v]", a.Backend, a.Err)
	}
	return b.String()
}

func (e *OpenError) Is(target error) bool { return target == ErrNoDevice }

// Unwrap exposes each backend's reason to errors.Is/As.
func (e *OpenError) Unwrap() []error {
	errs := make([]error, len(e.Attempts))
	for i, a := range e.Attempts {
		errs[i] = a.Err
	}
	return errs
}

// NoDeviceError says a backend loaded and initialised but found no device.
type NoDeviceError struct {
	Backend driver.Kind
	Err     error // the driver's own answer, when it gave one
}

// Error leaves the backend out: every report that prints it (OpenError,
// gpuinfo) names the backend already.
func (e *NoDeviceError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("no device (%v)", e.Err)
	}
	return "no device"
}
func (e *NoDeviceError) Is(target error) bool { return target == ErrNoDevice }
func (e *NoDeviceError) Unwrap() error        { return e.Err }

// LaunchError is a launch refused before it ran: by the runtime's check of
// the kernel's metadata, or synchronously by the driver. The device stays
// usable.
type LaunchError struct {
	Kernel string
	Reason string // why, when the runtime refused it
	Err    error  // the driver's error, when the driver refused it
}

func (e *LaunchError) Error() string {
	switch {
	case e.Err != nil && e.Reason != "":
		return fmt.Sprintf("launch %s rejected: %s: %v", e.Kernel, e.Reason, e.Err)
	case e.Err != nil:
		return fmt.Sprintf("launch %s rejected: %v", e.Kernel, e.Err)
	default:
		return fmt.Sprintf("launch %s rejected: %s", e.Kernel, e.Reason)
	}
}
func (e *LaunchError) Is(target error) bool {
	return target == ErrLaunchRejected || (e.Err == nil && target == ErrInvalidArgument)
}
func (e *LaunchError) Unwrap() error { return e.Err }

// FaultError is an asynchronous device fault: the error every pending event
// of a lost device fails with.
type FaultError struct {
	Device string // e.g. "cuda:0 NVIDIA H200"
	Kernel string // the last kernel launched on the stream that reported it, if known
	// InFlight lists the last kernel of every stream with unfinished work
	// when the fault was seen. A sticky fault poisons every stream at once, so
	// the stream that reports it need not be the one that caused it: the
	// culprit is one of these.
	InFlight []string
	Op       string // what reported it: "event query", "launch", "hsa system event", ...
	Kind     string // "illegal address", "memory fault", ...
	Address  uint64 // faulting address when the backend reports one (ROCm)
	Reason   string // decoded reason when the backend reports one
	Err      error  // the driver's error
}

func (e *FaultError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "device fault on %s", e.Device)
	if e.Kernel != "" {
		fmt.Fprintf(&b, " after kernel %s", e.Kernel)
	}
	if e.Op != "" {
		fmt.Fprintf(&b, " (reported by %s)", e.Op)
	}
	if len(e.InFlight) > 0 {
		fmt.Fprintf(&b, " [kernels in flight: %s]", strings.Join(e.InFlight, ", "))
	}
	if e.Kind != "" {
		fmt.Fprintf(&b, ": %s", e.Kind)
	}
	if e.Address != 0 {
		fmt.Fprintf(&b, " at address %#x", e.Address)
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, " (%s)", e.Reason)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}
func (e *FaultError) Is(target error) bool { return target == ErrDeviceFault }
func (e *FaultError) Unwrap() error        { return e.Err }

// DeviceLostError is returned by every call on a device after a sticky fault.
type DeviceLostError struct {
	Device string
	Cause  error // the *FaultError that lost the device
}

func (e *DeviceLostError) Error() string {
	return fmt.Sprintf("%s is lost (restart the process to use the GPU again): %v", e.Device, e.Cause)
}
func (e *DeviceLostError) Is(target error) bool { return target == ErrDeviceLost }
func (e *DeviceLostError) Unwrap() error        { return e.Cause }

// WatchdogError is returned by a Wait that outlasted the watchdog. The event
// stays pending: the runtime cannot tell a long kernel from a hung one, so it
// does not mark the device lost; the caller decides.
type WatchdogError struct {
	Device  string
	Kernel  string // the last kernel launched on the event's stream
	Waited  time.Duration
	Pending time.Duration // since the event was recorded
	Limit   time.Duration
}

func (e *WatchdogError) Error() string {
	k := e.Kernel
	if k == "" {
		k = "(no kernel launched on this stream)"
	}
	return fmt.Sprintf("GPU watchdog expired on %s: waited %v (limit %v, pending %v since record); last kernel on the stream: %s",
		e.Device, e.Waited.Round(time.Millisecond), e.Limit, e.Pending.Round(time.Millisecond), k)
}
func (e *WatchdogError) Is(target error) bool { return target == ErrWatchdog }

// OutOfMemoryError is an allocation the device could not satisfy.
type OutOfMemoryError struct {
	Device      string
	Requested   uint64
	Free, Total uint64 // as the driver reported them after the failure, when it could
	Err         error
}

func (e *OutOfMemoryError) Error() string {
	return fmt.Sprintf("out of memory on %s: requested %d bytes (free %d of %d): %v",
		e.Device, e.Requested, e.Free, e.Total, e.Err)
}
func (e *OutOfMemoryError) Is(target error) bool { return target == ErrOutOfMemory }
func (e *OutOfMemoryError) Unwrap() error        { return e.Err }
