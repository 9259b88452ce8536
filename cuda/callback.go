package cuda

import (
	"fmt"
	"sync"

	"github.com/ebitengine/purego"
	"github.com/hipgo/hipgo/internal/dynlib"
)

// callbackAPI: host work ordered on a stream.
type callbackAPI struct {
	// CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData);
	// typedef void (CUDA_CB *CUhostFn)(void *userData);
	cuLaunchHostFunc func(s Stream, fn, user uintptr) Code
	// CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags);
	// typedef void (CUDA_CB *CUstreamCallback)(CUstream hStream, CUresult status, void *userData);
	cuStreamAddCallback func(s Stream, cb, user uintptr, flags uint32) Code
}

func (a *callbackAPI) bind() []dynlib.Func {
	return []dynlib.Func{
		// Not cuLaunchHostFunc_v2: CUDA 13.2 adds it with a fourth argument
		// (syncMode), so a newer driver's _v2 would take another signature.
		{Names: []string{"cuLaunchHostFunc"}, Fn: &a.cuLaunchHostFunc},
		{Names: []string{"cuStreamAddCallback"}, Fn: &a.cuStreamAddCallback},
	}
}

// oneShot maps integer handles to Go callbacks, each fired at most once. The
// handle is what travels through the driver as user data: never a Go pointer.
type oneShot[F any] struct {
	mu   sync.Mutex
	next uintptr
	fns  map[uintptr]F
}

// add registers f and returns its handle (never 0).
func (t *oneShot[F]) add(f F) uintptr {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fns == nil {
		t.fns = make(map[uintptr]F)
	}
	t.next++
	if t.next == 0 { // wrapped after 2^64 callbacks: skip the reserved 0
		t.next++
	}
	t.fns[t.next] = f
	return t.next
}

// take removes and returns the callback of handle h.
func (t *oneShot[F]) take(h uintptr) (F, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, ok := t.fns[h]
	delete(t.fns, h)
	return f, ok
}

// pending returns how many callbacks wait to fire.
func (t *oneShot[F]) pending() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.fns)
}

// enqueue registers f and hands its handle to submit; when submit fails the
// driver will never call back, so the entry is removed again.
func (t *oneShot[F]) enqueue(f F, submit func(handle uintptr) error) error {
	h := t.add(f)
	if err := submit(h); err != nil {
		t.take(h)
		return err
	}
	return nil
}

var (
	hostFuncs       oneShot[func()]
	streamCallbacks oneShot[func(Code)]
)

// hostFuncTrampoline is the Go side of the one CUhostFn trampoline.
func hostFuncTrampoline(user uintptr) {
	if f, ok := hostFuncs.take(user); ok {
		f()
	}
}

// streamCallbackTrampoline is the Go side of the one CUstreamCallback trampoline.
func streamCallbackTrampoline(_ uintptr, status int32, user uintptr) {
	if f, ok := streamCallbacks.take(user); ok {
		f(Code(status))
	}
}

// trampolines are created on first use, once per process: purego can make
// only about 2000 callbacks and never frees them.
var trampolines struct {
	once             sync.Once
	hostFn, streamCb uintptr
	err              error
}

func callbackTrampolines() (hostFn, streamCb uintptr, err error) {
	trampolines.once.Do(func() {
		defer func() {
			// purego panics where it cannot make callbacks; report it instead.
			if r := recover(); r != nil {
				trampolines.err = fmt.Errorf("cuda: cannot create the callback trampolines: %v", r)
			}
		}()
		trampolines.hostFn = purego.NewCallback(hostFuncTrampoline)
		trampolines.streamCb = purego.NewCallback(streamCallbackTrampoline)
	})
	return trampolines.hostFn, trampolines.streamCb, trampolines.err
}

// errNilCallback is returned for a nil callback, before the driver.
var errNilCallback = fmt.Errorf("cuda: nil callback: %w", ErrInvalidValue)

// LaunchHostFunc enqueues cb on s (cuLaunchHostFunc): it runs once all
// earlier work on s has finished, and later work waits for it.
//
// cb runs on a driver thread: it must not block and must not call CUDA (the
// driver may answer CUDA_ERROR_NOT_PERMITTED or deadlock); hand results to a
// goroutine through a buffered channel or an atomic. After a fault on s the
// driver never runs it (anchors.md §3), so it can report success only.
func LaunchHostFunc(s Stream, cb func()) error {
	if cb == nil {
		return errNilCallback
	}
	d, err := api()
	if err != nil {
		return err
	}
	hostFn, _, err := callbackTrampolines()
	if err != nil {
		return err
	}
	return hostFuncs.enqueue(cb, func(h uintptr) error {
		return check("cuLaunchHostFunc", d.cuLaunchHostFunc(s, hostFn, h))
	})
}

// StreamAddCallback enqueues cb on s (cuStreamAddCallback, flags 0). Unlike
// LaunchHostFunc it also runs after a fault, with the device error as status
// (measured on an H200: status 700 after an illegal address), and Success
// otherwise. The same thread rules as LaunchHostFunc apply. NVIDIA marks
// cuStreamAddCallback as slated for deprecation; it cannot be captured in
// graphs.
func StreamAddCallback(s Stream, cb func(status Code)) error {
	if cb == nil {
		return errNilCallback
	}
	d, err := api()
	if err != nil {
		return err
	}
	_, streamCb, err := callbackTrampolines()
	if err != nil {
		return err
	}
	return streamCallbacks.enqueue(cb, func(h uintptr) error {
		return check("cuStreamAddCallback", d.cuStreamAddCallback(s, streamCb, h, 0))
	})
}
