// Package runtime is hipgo's backend-neutral GPU runtime: devices, buffers,
// streams, kernels and events, with the fault semantics written once for every
// backend (ROCm, CUDA, Metal; Metal has never run on Apple hardware) behind
// one driver interface.
//
// Start with Open, which returns the first usable GPU (or an *OpenError
// saying why each backend is unusable); then Device.LoadModule and
// Module.Kernel for a kernel, Device.NewStream, Device.Alloc,
// Stream.Launch and Stream.Record; Event.Wait returns nil, a *FaultError
// (the device is lost), a *WatchdogError or ctx's error (see Example).
//
// The contract:
//   - An Event is Pending, then exactly once Landed or Failed(err). State and
//     Err never consume the error: every reader, and every waiter, sees it.
//     Wait(ctx) returns when the event lands, fails, or ctx ends.
//   - An event fails either with a device fault (errors.Is ErrDeviceFault;
//     the device is lost, see below) or, when the driver could not answer
//     for it (a query that failed without a fault, an invalid handle say),
//     with the driver's error as what it is: the device stays usable, and
//     the event's work may still be running, so memory it uses is safe to
//     reuse only after a new event recorded behind it lands. Device.Lost
//     tells the two apart.
//   - A launch the runtime or the driver rejects synchronously (too many
//     threads for the kernel, wrong arguments) returns an error from Launch
//     naming the kernel; the device stays usable.
//   - Completion comes from several sources, because none is enough alone:
//     a host callback for a Wait that is going to sleep (enqueued at Record
//     when the wait spin is 0, else by the Wait whose spin ended; one per
//     event would stall each stream until the host ran it), for latency:
//     on CUDA its run
//     means success (cuLaunchHostFunc is not called after an error), so it
//     lands the events recorded before it; on ROCm it means nothing (CLR
//     hands callbacks hipSuccess whatever happened, and ROCclr may run them
//     after a fault), so there it only wakes the monitor
//     (driver.Info.NotifyReportsSuccess says which). The monitor queries
//     pending events and is the authority for faults. On ROCm the HSA system
//     event handler reports memory faults with address and reason. A Wait
//     first polls its own event for up to the device's WaitSpin
//     (DefaultWaitSpin, 10 ms; HostWaitSpin, 100 µs, on the simulated
//     device, whose kernels run on the host's cores; WithWaitSpin,
//     HIPGO_GPU_WAIT_SPIN), because
//     being woken from a sleep by the callback or the monitor costs more
//     than a decode step can spare. An optional watchdog
//     (HIPGO_GPU_WATCHDOG) fails a wait pending too long, polling included,
//     and names the last kernel launched on its stream.
//   - A sticky fault (illegal address, launch failure, hardware exception)
//     marks the device lost: every pending event on every stream fails with
//     the same *FaultError, and every later call fails at once with a
//     *DeviceLostError wrapping it, without calling into the driver (Close
//     makes one call, the driver's own release). The process must restart to
//     use the GPU again; nothing in-process can recover a faulted context.
//   - Close fails every event still pending (with the fault on a lost
//     device, else with ErrClosed), waits for driver calls in progress, and
//     tears down; it returns within 2 s even when a driver call never
//     returns, abandoning what it could not release, and says so.
//   - No event is left pending by a race with a loss or a Close: tracking
//     an event and failing everything are one ordered step.
//
// Timing: Stream.TimeGPU brackets the work a callback enqueues with two
// timing events and returns the GPU time between them (CUDA and ROCm event
// timers), for benchmarks; the simulated backend refuses it with an error
// wrapping errors.ErrUnsupported unless built with a timer.
//
// Early start: LaunchConfig.EarlyStart lets the device schedule a kernel
// before the kernel ahead of it on the stream ends (CUDA programmatic
// dependent launch on compute capability 9.0+; a plain launch elsewhere).
// Only for kernels that wait for the work ahead themselves
// (grid_dependency_wait in kernels/src/portable.h); sampling's Gumbel kernel
// is one.
//
// Shared memory: a block may use 48 KiB (driver.DefaultSharedMem) of
// shared memory, the kernel's static (KernelSpec.StaticShared) plus the
// launch's LaunchConfig.SharedMem, without more ado: such a launch makes no
// driver call beyond the launch. Past that, on a backend whose kernels can
// opt in (CUDA: cuFuncSetAttribute), Launch raises the kernel's dynamic
// limit before the launch, once per kernel and larger size whichever
// stream launches it, up to the device's Info().MaxSharedOptin (232448
// bytes on an H100 or H200). Past that maximum Launch refuses with a
// *LaunchError naming the bytes asked and the maximum, before the driver;
// the device stays usable. On a backend that cannot raise (ROCm, whose HIP
// takes up to the device's LDS without one; Metal) the launch goes to the
// driver as it is, and what the driver refuses is a *LaunchError wrapping
// its code.
//
// Graphs: Stream.Capture runs a function with the stream capturing (CUDA
// stream capture in relaxed mode, hipGraph where the library has it): its
// launches are checked as usual and recorded, not run, and
// Stream.LaunchGraph replays them with one driver call. A replayed kernel's
// fault fails the events recorded after it and loses the device exactly as
// a plain launch's does. A capturing stream refuses Record, Synchronize and
// TimeGPU (ErrCapturing) and ends the capture; an error from the function
// discards it; a backend without graphs gives a *CaptureError matching
// errors.ErrUnsupported, so callers launch plainly. Graphs belong to their
// stream and are freed with it.
//
// Thread model: CUDA contexts and HIP's current device are per OS thread and
// goroutines migrate, so each backend call locks the OS thread and makes the
// device current for its duration (see the backend files for the measured
// cost). Driver callbacks run on the driver's own threads and only flip an
// atomic state and close a channel.
package runtime
