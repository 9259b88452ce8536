package faultprobe

import (
	"fmt"
	"os"
	goruntime "runtime"
	"time"
	"unsafe"

	"github.com/hipgo/hipgo/cuda"
	"github.com/hipgo/hipgo/kernels"
)

// oobWriteDriverSync provokes the out-of-bounds write with nothing but the
// CUDA driver API and times cuStreamSynchronize, the driver's own report of
// the fault: the baseline the runtime's time to error is compared with. As
// in oobWrite, a spin kernel runs on another stream when the fault hits: the
// driver's detection time depends on what else the context is running, so
// without it the two runs would not time the same fault.
//
// With withEvent it records an event behind the faulting kernel and waits
// with cuEventSynchronize instead (OOBWriteDriverEvent).
func oobWriteDriverSync(withEvent bool) Result {
	r := Result{Class: OOBWriteDriverSync, Expected: "cuStreamSynchronize returns CUDA_ERROR_ILLEGAL_ADDRESS", Metrics: map[string]float64{}}
	if withEvent {
		r.Class, r.Expected = OOBWriteDriverEvent, "cuEventSynchronize on an event behind the kernel returns CUDA_ERROR_ILLEGAL_ADDRESS"
	}
	fail := func(err error) Result { r.Got = err.Error(); return r }
	if err := cuda.Load(); err != nil {
		return fail(err)
	}
	if err := cuda.Init(); err != nil {
		return fail(err)
	}
	dev, err := cuda.DeviceGet(0)
	if err != nil {
		return fail(err)
	}
	ctx, err := dev.PrimaryCtxRetain()
	if err != nil {
		return fail(err)
	}
	if err := ctx.Lock(); err != nil {
		return fail(err)
	}
	defer ctx.Unlock()
	major, minor, err := dev.ComputeCapability()
	if err != nil {
		return fail(err)
	}
	image, _, err := kernels.Load("testkernels", kernels.FormatPTX, fmt.Sprintf("sm_%d%d", major, minor))
	if err != nil {
		return fail(err)
	}
	mod, err := cuda.ModuleLoadData(image)
	if err != nil {
		return fail(err)
	}
	fn, err := mod.Function("oob_write_u32")
	if err != nil {
		return fail(err)
	}
	spinFn, err := mod.Function("spin_ns")
	if err != nil {
		return fail(err)
	}
	s, err := cuda.StreamCreate(cuda.StreamNonBlocking)
	if err != nil {
		return fail(err)
	}
	other, err := cuda.StreamCreate(cuda.StreamNonBlocking)
	if err != nil {
		return fail(err)
	}
	p, err := cuda.MemAlloc(4096)
	if err != nil {
		return fail(err)
	}
	// oob_write_u32 (u32* p, u32 value, u64 byte_offset) and spin_ns (u64
	// ns, u32* flag), each value in pinned memory.
	a0, a1, a2 := new(uint64), new(uint32), new(uint64)
	*a0, *a1, *a2 = uint64(p), 0xBAD, 1<<40
	params := []unsafe.Pointer{unsafe.Pointer(a0), unsafe.Pointer(a1), unsafe.Pointer(a2)}
	s0, s1 := new(uint64), new(uint64)
	*s0, *s1 = uint64(10*time.Second), uint64(p)
	spinParams := []unsafe.Pointer{unsafe.Pointer(s0), unsafe.Pointer(s1)}
	var pin goruntime.Pinner
	for _, v := range []any{a0, a1, a2, s0, s1, &params[0], &spinParams[0]} {
		pin.Pin(v)
	}
	defer pin.Unpin()
	one := cuda.Dim3{X: 1, Y: 1, Z: 1}
	tSpin := time.Now()
	if err := cuda.LaunchKernel(spinFn, one, one, 0, other, unsafe.Pointer(&spinParams[0]), nil); err != nil {
		return fail(err)
	}
	time.Sleep(time.Until(tSpin.Add(faultOffset)))
	t0 := time.Now()
	if err := cuda.LaunchKernel(fn, one, one, 0, s, unsafe.Pointer(&params[0]), nil); err != nil {
		return fail(err)
	}
	if os.Getenv(EnvBaselineHost) == "1" {
		for _, st := range []cuda.Stream{other, s} {
			if err := cuda.LaunchHostFunc(st, func() {}); err != nil {
				return fail(err)
			}
		}
		r.Detail = "with a host function queued on both streams"
	}
	var serr error
	if withEvent {
		ev, err := cuda.EventCreate(cuda.EventDisableTiming)
		if err != nil {
			return fail(err)
		}
		if serr = ev.Record(s); serr == nil {
			serr = ev.Synchronize()
		}
	} else {
		serr = s.Synchronize()
	}
	r.TimeToError = time.Since(t0)
	r.Metrics["launch_to_error_ms"] = ms(r.TimeToError)
	r.Got = errString(serr)
	r.UsableAfter = "n/a (baseline)"
	r.OK = serr != nil
	return r
}
