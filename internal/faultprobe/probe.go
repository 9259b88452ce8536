// Package faultprobe provokes each GPU failure class on the present device
// through the runtime and reports what a caller saw: the error, how long it
// took, and whether the device was usable afterwards. tools/faultprobe prints
// its results as a table; the runtime's GPU tests assert on the same results.
//
// The fatal classes (an out-of-bounds write loses the device for the rest of
// the process) must run in a process of their own: RunChild does that by
// re-executing the current binary, which calls ChildMain.
package faultprobe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/runtime/driver"
)

// Class is one failure class.
type Class string

const (
	// OversizedBlock: more threads per block than the kernel was built for.
	// The runtime refuses it from the code object's metadata.
	OversizedBlock Class = "oversized-block"
	// DriverRejection: a launch only the driver can refuse: on CUDA a block
	// of 1x1x128 (over its 64 threads in z; the runtime checks only a
	// block's total against the kernel's and the device's), elsewhere more
	// dynamic shared memory than a block may have (on CUDA the runtime
	// refuses that itself, past the device's opt-in maximum).
	DriverRejection Class = "driver-rejection"
	// OutOfMemory: an allocation larger than the device.
	OutOfMemory Class = "out-of-memory"
	// Watchdog: a kernel spinning 3 s with a 300 ms watchdog.
	Watchdog Class = "watchdog"
	// SpinLands: the same spin without a watchdog lands.
	SpinLands Class = "spin-lands"
	// OOBWrite: a store 2^40 bytes past a buffer: an asynchronous illegal
	// address, which loses the device. Fatal: runs in a child process.
	OOBWrite Class = "oob-write"
	// OOBWriteDriverSync: the same fault through the CUDA driver API alone,
	// timed to cuStreamSynchronize's return: the baseline for OOBWrite's
	// time to error. Fatal: runs in a child process.
	OOBWriteDriverSync Class = "oob-write-driver-sync"
	// OOBWriteDriverEvent: the same driver-only fault with an event recorded
	// behind the kernel and waited on with cuEventSynchronize, as a CUDA
	// program that waits on events does and as the runtime enqueues: on the
	// H200 anything queued behind the faulting kernel delays the driver's
	// report by about 45 ms, so this is the like-for-like baseline.
	OOBWriteDriverEvent Class = "oob-write-driver-event"
	// OOBWriteGraph: OOBWrite's fault from inside a captured graph (a fill,
	// then the faulting store) replayed with Stream.LaunchGraph: the event
	// recorded after the replay must fail as after a plain launch. Fatal;
	// not in Classes, since it needs a backend with graphs (CUDA).
	OOBWriteGraph Class = "oob-write-graph"
)

// Classes in the order the tool runs them.
var Classes = []Class{OversizedBlock, DriverRejection, OutOfMemory, Watchdog, SpinLands, OOBWrite, OOBWriteDriverSync, OOBWriteDriverEvent}

// Fatal reports whether a class loses the device (so it needs its own process).
func (c Class) Fatal() bool { return c == OOBWrite || c == OOBWriteGraph || c.Baseline() }

// Baseline reports whether a class is a driver-only baseline (CUDA only).
func (c Class) Baseline() bool { return c == OOBWriteDriverSync || c == OOBWriteDriverEvent }

// Result is what one probe saw.
type Result struct {
	Class       Class         `json:"class"`
	Expected    string        `json:"expected"`
	Got         string        `json:"got"`
	TimeToError time.Duration `json:"time_to_error_ns"`
	UsableAfter string        `json:"usable_after"`
	OK          bool          `json:"ok"`
	// Metrics holds class-specific numbers (e.g. the driver's own
	// synchronize time to the same fault, process exit time).
	Metrics map[string]float64 `json:"metrics,omitempty"`
	Detail  string             `json:"detail,omitempty"`
}

// Env is an opened device with the test kernels loaded.
type Env struct {
	Dev                                   *runtime.Device
	Fill, Bounded, OOB, Spin, EmptyKernel *runtime.Kernel
}

// Open opens the default device and loads the test kernels.
func Open(ctx context.Context, opts ...runtime.Option) (*Env, error) {
	dev, err := runtime.Open(ctx, opts...)
	if err != nil {
		return nil, err
	}
	mod, err := dev.LoadModule("testkernels")
	if err != nil {
		return nil, errors.Join(err, dev.Close())
	}
	e := &Env{Dev: dev}
	for name, dst := range map[string]**runtime.Kernel{
		"fill_u32": &e.Fill, "bounded_fill_u32": &e.Bounded, "oob_write_u32": &e.OOB,
		"spin_ns": &e.Spin, "empty": &e.EmptyKernel,
	} {
		if *dst, err = mod.Kernel(name); err != nil {
			return nil, errors.Join(err, dev.Close())
		}
	}
	return e, nil
}

// Close closes the device.
func (e *Env) Close() error { return e.Dev.Close() }

func grid1(blocks, threads uint32) runtime.LaunchConfig {
	return runtime.LaunchConfig{Grid: runtime.Dim3{X: blocks, Y: 1, Z: 1}, Block: runtime.Dim3{X: threads, Y: 1, Z: 1}}
}

// CheckUsable runs a fill on a fresh stream and verifies every element: the
// proof that the device still works.
func (e *Env) CheckUsable(ctx context.Context) error {
	const n = 1 << 20
	s, err := e.Dev.NewStream()
	if err != nil {
		return err
	}
	defer s.Close()
	buf, err := e.Dev.Alloc(4 * n)
	if err != nil {
		return err
	}
	defer buf.Free()
	want := rand.Uint32() | 1 // never zero: zero would pass on untouched memory
	if err := s.Launch(e.Fill, grid1(256, 256), buf, want, uint32(n)); err != nil {
		return err
	}
	if err := s.Synchronize(ctx); err != nil {
		return err
	}
	got := make([]uint32, n)
	if err := runtime.Download(buf, got); err != nil {
		return err
	}
	for i, v := range got {
		if v != want {
			return fmt.Errorf("fill check: element %d is %#x, want %#x", i, v, want)
		}
	}
	return nil
}

func usable(ctx context.Context, e *Env) string {
	if err := e.CheckUsable(ctx); err != nil {
		return "no: " + err.Error()
	}
	return "yes (fill of 1M elements verified)"
}

// Run provokes one non-fatal class in this process.
func Run(ctx context.Context, e *Env, c Class) Result {
	switch c {
	case OversizedBlock:
		return oversizedBlock(ctx, e)
	case DriverRejection:
		return driverRejection(ctx, e)
	case OutOfMemory:
		return outOfMemory(ctx, e)
	case Watchdog:
		return watchdog(ctx, e)
	case SpinLands:
		return spinLands(ctx, e)
	}
	return Result{Class: c, Got: "not an in-process class", Detail: "run it with RunChild"}
}

func oversizedBlock(ctx context.Context, e *Env) Result {
	r := Result{Class: OversizedBlock, Expected: "Launch returns *LaunchError (ErrLaunchRejected) within 10ms; device usable"}
	return rejectedLaunch(ctx, e, r, e.Bounded, grid1(1, 512), func(le *runtime.LaunchError) bool {
		return le.Kernel == "bounded_fill_u32"
	})
}

func driverRejection(ctx context.Context, e *Env) Result {
	r := Result{Class: DriverRejection, Expected: "the driver refuses 1 GiB of shared memory: *LaunchError wrapping its code; device usable"}
	cfg := grid1(1, 64)
	cfg.SharedMem = 1 << 30
	if e.Dev.Backend() == driver.CUDA {
		r.Expected = "the driver refuses a block of 1x1x128: *LaunchError wrapping its code; device usable"
		cfg = grid1(1, 1)
		cfg.Block.Z = 128
	}
	return rejectedLaunch(ctx, e, r, e.Fill, cfg, func(le *runtime.LaunchError) bool { return le.Err != nil })
}

// rejectedLaunch launches a fill kernel (p, value, n) with cfg, which must be
// refused within 10 ms by a *LaunchError that want accepts, and then checks
// the device still works.
func rejectedLaunch(ctx context.Context, e *Env, r Result, k *runtime.Kernel, cfg runtime.LaunchConfig, want func(*runtime.LaunchError) bool) Result {
	s, err := e.Dev.NewStream()
	if err != nil {
		r.Got = err.Error()
		return r
	}
	defer s.Close()
	buf, err := e.Dev.Alloc(4 * 1024)
	if err != nil {
		r.Got = err.Error()
		return r
	}
	defer buf.Free()
	t0 := time.Now()
	err = s.Launch(k, cfg, buf, uint32(1), uint32(1024))
	r.TimeToError = time.Since(t0)
	r.Got = errString(err)
	r.UsableAfter = usable(ctx, e)
	var le *runtime.LaunchError
	r.OK = errors.As(err, &le) && want(le) && r.TimeToError < 10*time.Millisecond && strings.HasPrefix(r.UsableAfter, "yes")
	return r
}

func outOfMemory(ctx context.Context, e *Env) Result {
	r := Result{Class: OutOfMemory, Expected: "Alloc(total + 1 GiB) returns *OutOfMemoryError; device usable"}
	t0 := time.Now()
	b, err := e.Dev.Alloc(int(e.Dev.Info().TotalMemory + 1<<30))
	r.TimeToError = time.Since(t0)
	if err == nil {
		r.Got = "allocation succeeded"
		_ = b.Free() // the probe already failed; the free only tidies up
		return r
	}
	r.Got = errString(err)
	r.UsableAfter = usable(ctx, e)
	r.OK = errors.Is(err, runtime.ErrOutOfMemory) && strings.HasPrefix(r.UsableAfter, "yes")
	return r
}

// spin launches spin_ns for d on a new stream and returns the stream, the
// event and the flag buffer.
func spin(e *Env, d time.Duration) (*runtime.Stream, *runtime.Event, *runtime.Buffer, error) {
	s, err := e.Dev.NewStream()
	if err != nil {
		return nil, nil, nil, err
	}
	flag, err := e.Dev.Alloc(4)
	if err != nil {
		return nil, nil, nil, errors.Join(err, s.Close())
	}
	if err := flag.Write(0, make([]byte, 4)); err != nil {
		return nil, nil, nil, errors.Join(err, s.Close())
	}
	if err := s.Launch(e.Spin, grid1(1, 1), uint64(d), flag); err != nil {
		return nil, nil, nil, errors.Join(err, s.Close())
	}
	ev, err := s.Record()
	if err != nil {
		return nil, nil, nil, errors.Join(err, s.Close())
	}
	return s, ev, flag, nil
}

func watchdog(ctx context.Context, e *Env) Result {
	r := Result{Class: Watchdog, Expected: "3 s spin, 300 ms watchdog: Wait fails within 400 ms with *WatchdogError naming spin_ns"}
	// A second handle on the same device, with the watchdog on.
	dev, err := runtime.Open(ctx, runtime.WithBackend(e.Dev.Backend()), runtime.WithOrdinal(e.Dev.Info().Ordinal), runtime.WithWatchdog(300*time.Millisecond))
	if err != nil {
		r.Got = err.Error()
		return r
	}
	defer dev.Close()
	we := &Env{Dev: dev}
	mod, err := dev.LoadModule("testkernels")
	if err == nil {
		we.Spin, err = mod.Kernel("spin_ns")
	}
	if err != nil {
		r.Got = err.Error()
		return r
	}
	s, ev, flag, err := spin(we, 3*time.Second)
	if err != nil {
		r.Got = err.Error()
		return r
	}
	defer s.Close()
	defer flag.Free()
	t0 := time.Now()
	err = ev.Wait(ctx)
	r.TimeToError = time.Since(t0)
	r.Got = errString(err)
	var wde *runtime.WatchdogError
	named := errors.As(err, &wde) && wde.Kernel == "spin_ns"
	// Let the spin finish so the device is idle for the next probe (polled:
	// another Wait would expire again).
	for ev.State() == runtime.Pending {
		time.Sleep(10 * time.Millisecond)
	}
	r.UsableAfter = usable(ctx, e)
	r.OK = named && r.TimeToError < 400*time.Millisecond && strings.HasPrefix(r.UsableAfter, "yes")
	return r
}

func spinLands(ctx context.Context, e *Env) Result {
	r := Result{Class: SpinLands, Expected: "the same 3 s spin without a watchdog lands and writes its flag"}
	s, ev, flag, err := spin(e, 3*time.Second)
	if err != nil {
		r.Got = err.Error()
		return r
	}
	defer s.Close()
	defer flag.Free()
	t0 := time.Now()
	err = ev.Wait(ctx)
	took := time.Since(t0)
	r.Metrics = map[string]float64{"wait_ms": ms(took)}
	if err != nil {
		r.Got = err.Error()
		return r
	}
	got := make([]uint32, 1)
	if err := runtime.Download(flag, got); err != nil {
		r.Got = err.Error()
		return r
	}
	r.Got = fmt.Sprintf("landed after %v, flag %d", took.Round(time.Millisecond), got[0])
	r.UsableAfter = usable(ctx, e)
	r.OK = got[0] == 1 && took >= 2900*time.Millisecond && strings.HasPrefix(r.UsableAfter, "yes")
	return r
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// The child protocol: the parent re-executes its own binary with these
// variables set; the child runs ChildMain's class and prints one JSON line
// prefixed with ChildPrefix.
const (
	EnvChild    = "HIPGO_FAULTPROBE_CHILD"
	ChildPrefix = "FAULTPROBE_RESULT "
)

// ChildMain runs the class named by HIPGO_FAULTPROBE_CHILD, prints its
// result and exits the process. It returns false when the variable is unset.
func ChildMain() bool {
	c := Class(os.Getenv(EnvChild))
	if c == "" {
		return false
	}
	ctx := context.Background()
	var r Result
	switch c {
	case OOBWrite:
		r = oobWrite(ctx, false)
	case OOBWriteGraph:
		r = oobWrite(ctx, true)
	case OOBWriteDriverSync:
		r = oobWriteDriverSync(false)
	case OOBWriteDriverEvent:
		r = oobWriteDriverSync(true)
	default:
		r = Result{Class: c, Got: "unknown child class"}
	}
	b, _ := json.Marshal(r) // a Result always marshals
	fmt.Println(ChildPrefix + string(b))
	os.Exit(0)
	return true
}

// RunChild runs a fatal class in a child process (args re-run the current
// binary so that it reaches ChildMain) and adds the child's exit time.
func RunChild(ctx context.Context, c Class, args ...string) Result {
	exe, err := os.Executable()
	if err != nil {
		return Result{Class: c, Got: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), EnvChild+"="+string(c))
	cmd.Stderr = os.Stderr
	t0 := time.Now()
	out, err := cmd.Output()
	total := time.Since(t0)
	var r Result
	found := false
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, ChildPrefix); ok {
			if jerr := json.Unmarshal([]byte(rest), &r); jerr == nil {
				found = true
			}
		}
	}
	if !found {
		return Result{Class: c, Got: fmt.Sprintf("child printed no result (err %v): %s", err, out)}
	}
	if r.Metrics == nil {
		r.Metrics = map[string]float64{}
	}
	if exitMS, ok := r.Metrics["result_at_ms"]; ok {
		r.Metrics["exit_after_result_ms"] = ms(total) - exitMS
	}
	r.Metrics["child_total_ms"] = ms(total)
	if err != nil {
		r.OK = false
		r.Detail += fmt.Sprintf("; child exit: %v", err)
	}
	if r.Metrics["exit_after_result_ms"] > 5000 {
		r.OK = false
		r.Detail += "; the process took more than 5 s to exit after the fault"
	}
	return r
}

var childStart = time.Now()

// faultOffset is when, after the spin kernel's launch, every out-of-bounds
// probe launches its faulting kernel. The H200 reports such a fault after
// either about 100 ms or about 140 ms, by the launch's phase against
// something periodic in the driver or the GPU, for the runtime and the
// driver-only baselines alike; the same offset puts them in the same phase.
const faultOffset = 50 * time.Millisecond

// Diagnostics for the time-to-error comparison (faultprobe's doc): the
// out-of-bounds probe without host callbacks, and the driver-only baseline
// with a host function queued behind each of its kernels, as the runtime
// queues one to land events.
const (
	EnvNoCallbacks  = "HIPGO_FAULTPROBE_NO_CALLBACKS"
	EnvBaselineHost = "HIPGO_FAULTPROBE_BASELINE_HOSTFN"
)

// oobWrite runs in a child process: a fault loses the device for good.
// With graph, the faulting kernel runs inside a replayed graph.
func oobWrite(ctx context.Context, graph bool) Result {
	r := Result{Class: OOBWrite, Expected: "Wait fails with *FaultError (illegal address) within 2 s; other streams' events fail with it; a new launch fails in < 1 ms with *DeviceLostError",
		Metrics: map[string]float64{}}
	if graph {
		r.Class = OOBWriteGraph
		r.Expected = "the fault inside a replayed graph: " + r.Expected
	}
	var opts []runtime.Option
	if os.Getenv(EnvNoCallbacks) == "1" {
		opts = append(opts, runtime.WithoutCallbacks())
		r.Detail = "without host callbacks; "
	}
	e, err := Open(ctx, opts...)
	if err != nil {
		r.Got = err.Error()
		return r
	}
	// Pending work on another stream when the fault hits (stream and flag
	// die with the device).
	tSpin := time.Now()
	_, otherEv, _, err := spin(e, 10*time.Second)
	if err != nil {
		r.Got = err.Error()
		return r
	}
	s, err := e.Dev.NewStream()
	if err != nil {
		r.Got = err.Error()
		return r
	}
	buf, err := e.Dev.Alloc(4096)
	if err != nil {
		r.Got = err.Error()
		return r
	}
	var g *runtime.Graph
	if graph {
		g, err = s.Capture(func() error {
			if err := s.Launch(e.Fill, grid1(1, 1), buf, uint32(1), uint32(1)); err != nil {
				return err
			}
			return s.Launch(e.OOB, grid1(1, 1), buf, uint32(0xBAD), uint64(1)<<40)
		})
		if err != nil {
			r.Got = "capture: " + err.Error()
			return r
		}
		r.Detail += fmt.Sprintf("graph of %d kernels; ", g.Kernels())
	}
	time.Sleep(time.Until(tSpin.Add(faultOffset)))
	tLaunch := time.Now()
	if g != nil {
		err = s.LaunchGraph(g)
	} else {
		err = s.Launch(e.OOB, grid1(1, 1), buf, uint32(0xBAD), uint64(1)<<40)
	}
	if err != nil {
		r.Got = "launch: " + err.Error()
		return r
	}
	ev, err := s.Record()
	if err != nil {
		r.Got = "record: " + err.Error()
		return r
	}
	t0 := time.Now()
	werr := ev.Wait(ctx)
	r.TimeToError = time.Since(t0)
	r.Metrics["launch_to_error_ms"] = ms(time.Since(tLaunch))
	r.Got = errString(werr)
	var fe *runtime.FaultError
	isFault := errors.As(werr, &fe)

	oerr := otherEv.Wait(ctx)
	var ofe *runtime.FaultError
	sameFault := errors.As(oerr, &ofe) && ofe == fe

	t1 := time.Now()
	lerr := s.Launch(e.Fill, grid1(1, 1), buf, uint32(1), uint32(1))
	launchAfter := time.Since(t1)
	var lost *runtime.DeviceLostError
	isLost := errors.As(lerr, &lost)
	r.Metrics["new_launch_error_us"] = float64(launchAfter.Nanoseconds()) / 1000
	r.UsableAfter = "no: " + errString(lerr)

	t2 := time.Now()
	cerr := e.Close()
	r.Metrics["close_ms"] = ms(time.Since(t2))
	r.Metrics["result_at_ms"] = ms(time.Since(childStart))
	r.Detail += fmt.Sprintf("other stream's event: %v; close: %v", errString(oerr), errString(cerr))
	r.OK = isFault && r.TimeToError < 2*time.Second && sameFault && isLost && launchAfter < time.Millisecond
	return r
}
