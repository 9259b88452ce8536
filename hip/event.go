package hip

import (
	"github.com/ebitengine/purego"
	"github.com/hipgo/hipgo/internal/dynlib"
)

// Event is a hipEvent_t.
type Event uintptr

// EventFlags are hipEventCreateWithFlags' flags.
type EventFlags uint32

const (
	EventDefault       EventFlags = 0x0 // hipEventDefault
	EventBlockingSync  EventFlags = 0x1 // hipEventBlockingSync
	EventDisableTiming EventFlags = 0x2 // hipEventDisableTiming
)

type eventAPI struct {
	// hipError_t hipEventCreateWithFlags(hipEvent_t* event, unsigned flags);
	hipEventCreateWithFlags func(e *Event, flags EventFlags) Code
	// hipError_t hipEventSynchronize(hipEvent_t event);
	hipEventSynchronize func(e Event) Code
	// hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop);
	hipEventElapsedTime func(ms *float32, start, stop Event) Code
	// hipError_t hipEventDestroy(hipEvent_t event);
	hipEventDestroy func(e Event) Code
	// hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream);  (hot: once per launch)
	hipEventRecord uintptr
	// hipError_t hipEventQuery(hipEvent_t event);  (hot: polled by the fault monitor)
	hipEventQuery uintptr
}

func (a *eventAPI) funcs() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"hipEventCreateWithFlags"}, Fn: &a.hipEventCreateWithFlags},
		{Names: []string{"hipEventSynchronize"}, Fn: &a.hipEventSynchronize},
		{Names: []string{"hipEventElapsedTime"}, Fn: &a.hipEventElapsedTime},
		{Names: []string{"hipEventDestroy"}, Fn: &a.hipEventDestroy},
		{Names: []string{"hipEventRecord"}, Addr: &a.hipEventRecord},
		{Names: []string{"hipEventQuery"}, Addr: &a.hipEventQuery},
	}
}

// EventCreateWithFlags creates an event on the current device.
func EventCreateWithFlags(flags EventFlags) (Event, error) {
	a, err := get()
	if err != nil {
		return 0, err
	}
	var e Event
	if err := check("hipEventCreateWithFlags", a.hipEventCreateWithFlags(&e, flags)); err != nil {
		return 0, err
	}
	return e, nil
}

// EventRecord enqueues e on stream s. Called through its raw address.
func EventRecord(e Event, s Stream) error {
	a, err := get()
	if err != nil {
		return err
	}
	r, _, _ := purego.SyscallN(a.hipEventRecord, uintptr(e), uintptr(s))
	return check("hipEventRecord", Code(int32(r)))
}

// EventQuery reports whether the work before e has completed: (true, nil),
// (false, nil) for hipErrorNotReady, or an *Error (a fault included). It is
// the fault monitor's authority, since HIP callbacks cannot carry faults.
// Called through its raw address; allocates only on error.
func EventQuery(e Event) (done bool, err error) {
	a, err := get()
	if err != nil {
		return false, err
	}
	r, _, _ := purego.SyscallN(a.hipEventQuery, uintptr(e))
	return queryResult("hipEventQuery", Code(int32(r)))
}

// EventSynchronize waits for e. Like StreamSynchronize it may not return
// after a fault.
func EventSynchronize(e Event) error {
	a, err := get()
	if err != nil {
		return err
	}
	return check("hipEventSynchronize", a.hipEventSynchronize(e))
}

// EventElapsedTime returns the milliseconds between two completed events
// created without EventDisableTiming.
func EventElapsedTime(start, stop Event) (float32, error) {
	a, err := get()
	if err != nil {
		return 0, err
	}
	var ms float32
	if err := check("hipEventElapsedTime", a.hipEventElapsedTime(&ms, start, stop)); err != nil {
		return 0, err
	}
	return ms, nil
}

// EventDestroy destroys an event.
func EventDestroy(e Event) error {
	a, err := get()
	if err != nil {
		return err
	}
	return check("hipEventDestroy", a.hipEventDestroy(e))
}
