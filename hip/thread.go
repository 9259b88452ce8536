package hip

import "runtime"

// OnDevice makes ordinal the current device of the calling goroutine until
// release is called, and is how every device-bound call in hipgo is made.
//
// HIP keeps the current device per OS thread, and goroutines move between
// threads, so a hipSetDevice on one call may be invisible to the next. The
// model chosen here is "lock and set per call": OnDevice locks the goroutine
// to its thread (runtime.LockOSThread, which nests), then calls hipSetDevice
// only when hipGetDevice says the thread is on another device, so the usual
// case costs one LockOSThread and one hipGetDevice (BenchmarkOnDevice
// measures it; it needs a GPU). The layer above wraps each device-bound
// call, or each short group of them:
//
//	release, err := hip.OnDevice(dev)
//	if err != nil { return err }
//	defer release()
//	... hip calls for dev ...
//
// release unlocks the thread; call it exactly once. On error the thread is
// already unlocked and release is nil.
func OnDevice(ordinal int) (release func(), err error) {
	runtime.LockOSThread()
	cur, err := GetDevice()
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	if cur != ordinal {
		if err := SetDevice(ordinal); err != nil {
			runtime.UnlockOSThread()
			return nil, err
		}
	}
	return runtime.UnlockOSThread, nil
}
