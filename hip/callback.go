package hip

import (
	"errors"
	"sync"

	"github.com/ebitengine/purego"
	"github.com/hipgo/hipgo/internal/dynlib"
)

type callbackAPI struct {
	// typedef void (*hipStreamCallback_t)(hipStream_t stream, hipError_t status, void* userData);
	// hipError_t hipStreamAddCallback(hipStream_t stream, hipStreamCallback_t callback,
	//                                 void* userData, unsigned int flags);
	hipStreamAddCallback func(s Stream, cb uintptr, user uintptr, flags uint32) Code
	// typedef void (*hipHostFn_t)(void* userData);
	// hipError_t hipLaunchHostFunc(hipStream_t stream, hipHostFn_t fn, void* userData);
	// Optional: the 5.2 header declares it but Debian's 5.2 library does not
	// export it; CLR exports it under the hip_5.3 symbol version.
	hipLaunchHostFunc func(s Stream, fn uintptr, user uintptr) Code
}

const launchHostFuncSince = "ROCm 5.3"

func (a *callbackAPI) funcs() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"hipStreamAddCallback"}, Fn: &a.hipStreamAddCallback},
		{Names: []string{"hipLaunchHostFunc"}, Fn: &a.hipLaunchHostFunc, Since: launchHostFuncSince},
	}
}

// Callbacks. purego can make at most 2000 C-callable trampolines per process
// and never frees them, so there is exactly one per C signature, made on
// first use. The runtime hands each back an integer handle as its user data
// (never a Go pointer, which C must not keep); the handle indexes a one-shot
// table of Go funcs. An entry leaves the table when its callback fires, or
// when the enqueue fails and it never will.

var trampolines struct {
	once     sync.Once
	streamCB uintptr // hipStreamCallback_t
	hostFn   uintptr // hipHostFn_t
	pending  sync.Mutex
	next     uintptr
	funcs    map[uintptr]any // func(Code) or func()
}

func initTrampolines() {
	trampolines.once.Do(func() {
		trampolines.funcs = map[uintptr]any{}
		trampolines.streamCB = purego.NewCallback(streamCallback)
		trampolines.hostFn = purego.NewCallback(hostFn)
	})
}

// register adds fn to the table and returns its handle.
func register(fn any) uintptr {
	trampolines.pending.Lock()
	defer trampolines.pending.Unlock()
	trampolines.next++
	h := trampolines.next
	trampolines.funcs[h] = fn
	return h
}

// take removes and returns the entry for h (nil if it already fired).
func take(h uintptr) any {
	trampolines.pending.Lock()
	defer trampolines.pending.Unlock()
	fn := trampolines.funcs[h]
	delete(trampolines.funcs, h)
	return fn
}

// pendingCallbacks is the number of enqueued callbacks that have not fired.
func pendingCallbacks() int {
	trampolines.pending.Lock()
	defer trampolines.pending.Unlock()
	return len(trampolines.funcs)
}

// streamCallback runs on the HIP runtime's thread (a foreign thread to Go).
func streamCallback(_ uintptr, status int32, user uintptr) {
	if fn, ok := take(user).(func(Code)); ok {
		fn(Code(status))
	}
}

// hostFn runs on the HIP runtime's thread (a foreign thread to Go).
func hostFn(user uintptr) {
	if fn, ok := take(user).(func()); ok {
		fn()
	}
}

var errNilCallback = errors.New("hip: nil callback")

// StreamAddCallback enqueues cb on stream s, to run once the work before it
// completes (hipStreamAddCallback, flags 0).
//
// On AMD the status cb receives is always Success: CLR hard-codes hipSuccess
// (anchors §2.1), so a fault never reaches a callback, and after a queue
// fault queued callbacks never run at all. Use callbacks for low-latency
// completion only and poll EventQuery/StreamQuery for faults.
//
// cb runs on the runtime's completion thread, which every stream shares:
// it must not block or call HIP; a non-blocking channel send or an atomic
// store is the intended use. Later work on s waits until cb returns.
func StreamAddCallback(s Stream, cb func(status Code)) error {
	if cb == nil {
		return errNilCallback
	}
	a, err := get()
	if err != nil {
		return err
	}
	initTrampolines()
	h := register(cb)
	if err := check("hipStreamAddCallback", a.hipStreamAddCallback(s, trampolines.streamCB, h, 0)); err != nil {
		take(h)
		return err
	}
	return nil
}

// LaunchHostFunc enqueues cb on stream s (hipLaunchHostFunc), with the same
// rules as StreamAddCallback; unlike it, it is capturable in graphs. Debian's
// ROCm 5.2 library lacks it: the result is then an *UnsupportedError
// (errors.Is(err, errors.ErrUnsupported)) and StreamAddCallback is the
// alternative.
func LaunchHostFunc(s Stream, cb func()) error {
	if cb == nil {
		return errNilCallback
	}
	a, err := get()
	if err != nil {
		return err
	}
	if a.hipLaunchHostFunc == nil {
		return &UnsupportedError{Func: "hipLaunchHostFunc", Since: launchHostFuncSince, Library: a.path}
	}
	initTrampolines()
	h := register(cb)
	if err := check("hipLaunchHostFunc", a.hipLaunchHostFunc(s, trampolines.hostFn, h)); err != nil {
		take(h)
		return err
	}
	return nil
}
