package cuda

import (
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/hipgo/hipgo/internal/dynlib"
)

// Context is a CUcontext. This binding uses each device's primary context
// (the one the CUDA runtime and other libraries share).
//
// Thread model: a context is current per OS thread, and goroutines migrate
// between threads. Every call that needs a context must therefore run between
// Lock and Unlock on one goroutine; the runtime package above does this once
// per operation. Lock pins the goroutine to its thread and makes c current
// there only when it is not already (one cuCtxGetCurrent, usually no
// cuCtxSetCurrent). Measured on the H200 machine (driver 13000, CGO_ENABLED=0):
// Lock+Unlock 165 ns (BenchmarkContextLockUnlock); cuCtxGetCurrent 116 ns
// through purego.SyscallN against 628 ns through purego.RegisterFunc
// (BenchmarkCtxGetCurrent), which is why the hot calls are bound by address.
// An empty 1×1 launch is issued every 3.8 µs either way (BenchmarkLaunch,
// BenchmarkLaunchLocked), so the per-call lock is lost in the launch cost.
type Context uintptr

// CtxFlags are the CU_CTX_* scheduling flags for Device.PrimaryCtxSetFlags.
type CtxFlags uint32

// CUctx_flags values, checked against cuda.h 13.0 (cuda-python cydriver.pxd.in 13.0.0).
const (
	CtxSchedAuto         CtxFlags = 0x00
	CtxSchedSpin         CtxFlags = 0x01
	CtxSchedYield        CtxFlags = 0x02
	CtxSchedBlockingSync CtxFlags = 0x04
	CtxLmemResizeToMax   CtxFlags = 0x10
)

// contextAPI: primary contexts and the calling thread's current context.
type contextAPI struct {
	// CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
	cuDevicePrimaryCtxRetain func(ctx *Context, dev Device) Code
	// CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev);
	cuDevicePrimaryCtxRelease func(dev Device) Code
	// CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags);
	cuDevicePrimaryCtxSetFlags func(dev Device, flags uint32) Code
	// CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active);
	cuDevicePrimaryCtxGetState func(dev Device, flags *uint32, active *int32) Code
	// CUresult cuCtxSynchronize(void);
	cuCtxSynchronize func() Code
	// CUresult cuCtxGetDevice(CUdevice *device);
	cuCtxGetDevice func(dev *Device) Code

	// Hot calls, made through purego.SyscallN.
	// CUresult cuCtxGetCurrent(CUcontext *pctx);
	cuCtxGetCurrent uintptr
	// CUresult cuCtxSetCurrent(CUcontext ctx);
	cuCtxSetCurrent uintptr
}

func (a *contextAPI) bind() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"cuDevicePrimaryCtxRetain"}, Fn: &a.cuDevicePrimaryCtxRetain},
		// cuda.h: #define cuDevicePrimaryCtxRelease cuDevicePrimaryCtxRelease_v2,
		// likewise SetFlags; v1 and v2 share the signature.
		{Names: []string{"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}, Fn: &a.cuDevicePrimaryCtxRelease},
		{Names: []string{"cuDevicePrimaryCtxSetFlags_v2", "cuDevicePrimaryCtxSetFlags"}, Fn: &a.cuDevicePrimaryCtxSetFlags},
		{Names: []string{"cuDevicePrimaryCtxGetState"}, Fn: &a.cuDevicePrimaryCtxGetState},
		// Not cuCtxSynchronize_v2: the 13.0 header adds it with another
		// signature, cuCtxSynchronize_v2(CUcontext ctx).
		{Names: []string{"cuCtxSynchronize"}, Fn: &a.cuCtxSynchronize},
		{Names: []string{"cuCtxGetDevice"}, Fn: &a.cuCtxGetDevice},
		{Names: []string{"cuCtxGetCurrent"}, Addr: &a.cuCtxGetCurrent},
		{Names: []string{"cuCtxSetCurrent"}, Addr: &a.cuCtxSetCurrent},
	}
}

// PrimaryCtxRetain retains the device's primary context, creating it on first
// use. Each successful call must be balanced by PrimaryCtxRelease.
func (dev Device) PrimaryCtxRetain() (Context, error) {
	d, err := api()
	if err != nil {
		return 0, err
	}
	var c Context
	if err := check("cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain(&c, dev)); err != nil {
		return 0, err
	}
	return c, nil
}

// PrimaryCtxRelease releases one retain of the device's primary context; the
// last release destroys it.
func (dev Device) PrimaryCtxRelease() error {
	d, err := api()
	if err != nil {
		return err
	}
	return check("cuDevicePrimaryCtxRelease_v2", d.cuDevicePrimaryCtxRelease(dev))
}

// PrimaryCtxSetFlags sets the primary context's scheduling flags; it may be
// called while the context is active.
func (dev Device) PrimaryCtxSetFlags(flags CtxFlags) error {
	d, err := api()
	if err != nil {
		return err
	}
	return check("cuDevicePrimaryCtxSetFlags_v2", d.cuDevicePrimaryCtxSetFlags(dev, uint32(flags)))
}

// PrimaryCtxState returns the primary context's flags and whether it is active.
func (dev Device) PrimaryCtxState() (flags CtxFlags, active bool, err error) {
	d, err := api()
	if err != nil {
		return 0, false, err
	}
	var f uint32
	var a int32
	if err := check("cuDevicePrimaryCtxGetState", d.cuDevicePrimaryCtxGetState(dev, &f, &a)); err != nil {
		return 0, false, err
	}
	return CtxFlags(f), a != 0, nil
}

// CurrentContext returns the calling OS thread's current context (0 when
// none). Only meaningful while the goroutine is locked to its thread.
func CurrentContext() (Context, error) {
	d, err := api()
	if err != nil {
		return 0, err
	}
	return d.ctxGetCurrent()
}

func (d *driver) ctxGetCurrent() (Context, error) {
	var c Context
	r, _, _ := purego.SyscallN(d.cuCtxGetCurrent, uintptr(unsafe.Pointer(&c)))
	if err := check("cuCtxGetCurrent", result(r)); err != nil {
		return 0, err
	}
	return c, nil
}

func (d *driver) ctxSetCurrent(c Context) error {
	r, _, _ := purego.SyscallN(d.cuCtxSetCurrent, uintptr(c))
	return check("cuCtxSetCurrent", result(r))
}

// SetCurrent makes c current on the calling OS thread (cuCtxSetCurrent).
// Prefer Lock, which also pins the goroutine to that thread.
func (c Context) SetCurrent() error {
	d, err := api()
	if err != nil {
		return err
	}
	return d.ctxSetCurrent(c)
}

// Lock pins the calling goroutine to its OS thread (runtime.LockOSThread) and
// makes c current there, calling cuCtxSetCurrent only when another context is
// current. Every context-bound call must be made between Lock and Unlock.
// When Lock fails it has already undone the thread lock: do not call Unlock.
func (c Context) Lock() error {
	d, err := api()
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	cur, err := d.ctxGetCurrent()
	if err == nil && cur != c {
		err = d.ctxSetCurrent(c)
	}
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	return nil
}

// Unlock ends a successful Lock (runtime.UnlockOSThread). The context stays
// current on the thread, which is harmless: the next Lock checks it.
func (c Context) Unlock() { runtime.UnlockOSThread() }

// CtxSynchronize waits for all work of the current context to finish and
// returns the first error of it (a sticky fault among them).
func CtxSynchronize() error {
	d, err := api()
	if err != nil {
		return err
	}
	return check("cuCtxSynchronize", d.cuCtxSynchronize())
}

// CtxGetDevice returns the device of the current context.
func CtxGetDevice() (Device, error) {
	d, err := api()
	if err != nil {
		return 0, err
	}
	var dev Device
	if err := check("cuCtxGetDevice", d.cuCtxGetDevice(&dev)); err != nil {
		return 0, err
	}
	return dev, nil
}
