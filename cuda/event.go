package cuda

import (
	"github.com/ebitengine/purego"
	"github.com/hipgo/hipgo/internal/dynlib"
)

// Event is a CUevent.
type Event uintptr

// EventFlags are the CU_EVENT_* creation flags.
type EventFlags uint32

// CUevent_flags values, checked against cuda.h 13.0.
const (
	EventDefault       EventFlags = 0x0
	EventBlockingSync  EventFlags = 0x1 // Synchronize sleeps instead of spinning
	EventDisableTiming EventFlags = 0x2 // cheaper; ElapsedTime then fails
	EventInterprocess  EventFlags = 0x4 // requires EventDisableTiming
)

// eventAPI: events for completion and timing.
type eventAPI struct {
	// CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags);
	cuEventCreate func(e *Event, flags uint32) Code
	// CUresult cuEventSynchronize(CUevent hEvent);
	cuEventSynchronize func(e Event) Code
	// CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd);
	cuEventElapsedTime func(ms *float32, start, end Event) Code
	// CUresult cuEventDestroy_v2(CUevent hEvent);
	cuEventDestroy func(e Event) Code

	// Hot calls, made through purego.SyscallN.
	// CUresult cuEventRecord(CUevent hEvent, CUstream hStream);
	cuEventRecord uintptr
	// CUresult cuEventQuery(CUevent hEvent);
	cuEventQuery uintptr
}

func (a *eventAPI) bind() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"cuEventCreate"}, Fn: &a.cuEventCreate},
		{Names: []string{"cuEventSynchronize"}, Fn: &a.cuEventSynchronize},
		// CUDA 12.8 added cuEventElapsedTime_v2 and made the plain name a
		// macro for it; older drivers export only cuEventElapsedTime, with
		// the same signature.
		{Names: []string{"cuEventElapsedTime_v2", "cuEventElapsedTime"}, Fn: &a.cuEventElapsedTime},
		// cuda.h: #define cuEventDestroy cuEventDestroy_v2 (same signature).
		{Names: []string{"cuEventDestroy_v2", "cuEventDestroy"}, Fn: &a.cuEventDestroy},
		{Names: []string{"cuEventRecord"}, Addr: &a.cuEventRecord},
		{Names: []string{"cuEventQuery"}, Addr: &a.cuEventQuery},
	}
}

// EventCreate creates an event in the current context.
func EventCreate(flags EventFlags) (Event, error) {
	d, err := api()
	if err != nil {
		return 0, err
	}
	var e Event
	if err := check("cuEventCreate", d.cuEventCreate(&e, uint32(flags))); err != nil {
		return 0, err
	}
	return e, nil
}

// Record enqueues the event on s; it completes when s reaches it.
func (e Event) Record(s Stream) error {
	d, err := api()
	if err != nil {
		return err
	}
	r, _, _ := purego.SyscallN(d.cuEventRecord, uintptr(e), uintptr(s))
	return check("cuEventRecord", result(r))
}

// Query reports whether the event has completed: (true, nil) when it has (or
// was never recorded), (false, nil) while pending, an error otherwise. After
// a sticky fault it returns that fault.
func (e Event) Query() (done bool, err error) {
	d, err := api()
	if err != nil {
		return false, err
	}
	r, _, _ := purego.SyscallN(d.cuEventQuery, uintptr(e))
	return readiness("cuEventQuery", result(r))
}

// Synchronize blocks until the event completes. It cannot be interrupted.
func (e Event) Synchronize() error {
	d, err := api()
	if err != nil {
		return err
	}
	return check("cuEventSynchronize", d.cuEventSynchronize(e))
}

// Destroy destroys the event.
func (e Event) Destroy() error {
	d, err := api()
	if err != nil {
		return err
	}
	return check("cuEventDestroy_v2", d.cuEventDestroy(e))
}

// EventElapsedTime returns the milliseconds between two completed events
// (resolution about 0.5 µs). Both must be created without EventDisableTiming.
func EventElapsedTime(start, end Event) (float32, error) {
	d, err := api()
	if err != nil {
		return 0, err
	}
	var ms float32
	if err := check("cuEventElapsedTime_v2", d.cuEventElapsedTime(&ms, start, end)); err != nil {
		return 0, err
	}
	return ms, nil
}
