package cuda

import (
	"github.com/ebitengine/purego"
	"github.com/hipgo/hipgo/internal/dynlib"
)

// Graph is a CUgraph: work captured from a stream (or built), not yet
// launchable.
type Graph uintptr

// GraphExec is a CUgraphExec: an instantiated graph, launched as a whole.
type GraphExec uintptr

// CaptureMode is a CUstreamCaptureMode: which calls, on which threads, the
// driver refuses while a stream captures.
type CaptureMode uint32

// CUstreamCaptureMode values, checked against cuda.h 13.0.
const (
	// CaptureModeGlobal refuses "potentially unsafe" calls (an event query,
	// a synchronous copy) on every thread while any stream captures.
	CaptureModeGlobal CaptureMode = 0
	// CaptureModeThreadLocal refuses them on the capturing thread only.
	CaptureModeThreadLocal CaptureMode = 1
	// CaptureModeRelaxed refuses nothing: other threads (the runtime's
	// fault monitor querying events) go on as usual.
	CaptureModeRelaxed CaptureMode = 2
)

// graphAPI: stream capture and graph launch (optional: the graph API came
// in CUDA 10, cuStreamBeginCapture's mode argument in 10.1 and
// cuGraphInstantiateWithFlags in 11.4).
type graphAPI struct {
	// CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode);
	// Never the unsuffixed export: CUDA 10.0's cuStreamBeginCapture takes no mode.
	cuStreamBeginCapture func(s Stream, mode CaptureMode) Code
	// CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph);
	cuStreamEndCapture func(s Stream, g *Graph) Code
	// CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags);
	// cuda.h 12+: #define cuGraphInstantiate cuGraphInstantiateWithFlags;
	// the exported cuGraphInstantiate and _v2 take an error node and a log
	// buffer instead of flags.
	cuGraphInstantiateWithFlags func(e *GraphExec, g Graph, flags uint64) Code
	// CUresult cuGraphExecDestroy(CUgraphExec hGraphExec);
	cuGraphExecDestroy func(e GraphExec) Code
	// CUresult cuGraphDestroy(CUgraph hGraph);
	cuGraphDestroy func(g Graph) Code

	// Hot call (once per decode step), made through purego.SyscallN.
	// CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream);
	cuGraphLaunch uintptr
}

const graphSince = "CUDA 11.4"

func (a *graphAPI) bind() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"cuStreamBeginCapture_v2"}, Fn: &a.cuStreamBeginCapture, Since: "CUDA 10.1"},
		{Names: []string{"cuStreamEndCapture"}, Fn: &a.cuStreamEndCapture, Since: "CUDA 10.0"},
		{Names: []string{"cuGraphInstantiateWithFlags"}, Fn: &a.cuGraphInstantiateWithFlags, Since: graphSince},
		{Names: []string{"cuGraphExecDestroy"}, Fn: &a.cuGraphExecDestroy, Since: "CUDA 10.0"},
		{Names: []string{"cuGraphDestroy"}, Fn: &a.cuGraphDestroy, Since: "CUDA 10.0"},
		{Names: []string{"cuGraphLaunch"}, Addr: &a.cuGraphLaunch, Since: "CUDA 10.0"},
	}
}

// GraphSupported reports whether the loaded driver exports every call of
// stream capture and graph launch (CUDA 11.4 and later).
func GraphSupported() bool {
	d, err := api()
	return err == nil && d.graphBound()
}

func (a *graphAPI) graphBound() bool {
	return a.cuStreamBeginCapture != nil && a.cuStreamEndCapture != nil && a.cuGraphInstantiateWithFlags != nil &&
		a.cuGraphExecDestroy != nil && a.cuGraphDestroy != nil && a.cuGraphLaunch != 0
}

// graphDriver returns the loaded driver when it has the graph calls, else an
// *UnavailableError naming the call.
func graphDriver(call string) (*driver, error) {
	d, err := api()
	if err != nil {
		return nil, err
	}
	if !d.graphBound() {
		return nil, &UnavailableError{Symbol: call, Since: graphSince, Path: d.lib.Path}
	}
	return d, nil
}

// BeginCapture starts capturing s: work enqueued on it is recorded into a
// graph instead of running, until EndCapture.
func (s Stream) BeginCapture(mode CaptureMode) error {
	d, err := graphDriver("cuStreamBeginCapture_v2")
	if err != nil {
		return err
	}
	return check("cuStreamBeginCapture_v2", d.cuStreamBeginCapture(s, mode))
}

// EndCapture ends the capture of s and returns the graph it recorded. A
// capture invalidated by a failed call (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
// ends with an error and no graph; either way s no longer captures.
func (s Stream) EndCapture() (Graph, error) {
	d, err := graphDriver("cuStreamEndCapture")
	if err != nil {
		return 0, err
	}
	var g Graph
	if err := check("cuStreamEndCapture", d.cuStreamEndCapture(s, &g)); err != nil {
		return g, err
	}
	return g, nil
}

// Instantiate makes g launchable (cuGraphInstantiateWithFlags, no flags).
func (g Graph) Instantiate() (GraphExec, error) {
	d, err := graphDriver("cuGraphInstantiateWithFlags")
	if err != nil {
		return 0, err
	}
	var e GraphExec
	if err := check("cuGraphInstantiateWithFlags", d.cuGraphInstantiateWithFlags(&e, g, 0)); err != nil {
		return 0, err
	}
	return e, nil
}

// Destroy frees the graph; executables instantiated from it stay valid.
func (g Graph) Destroy() error {
	d, err := graphDriver("cuGraphDestroy")
	if err != nil {
		return err
	}
	return check("cuGraphDestroy", d.cuGraphDestroy(g))
}

// Launch enqueues the whole graph on s, in order with s's other work.
func (e GraphExec) Launch(s Stream) error {
	d, err := graphDriver("cuGraphLaunch")
	if err != nil {
		return err
	}
	r, _, _ := purego.SyscallN(d.cuGraphLaunch, uintptr(e), uintptr(s))
	return check("cuGraphLaunch", result(r))
}

// Destroy frees the executable graph; launches already enqueued complete.
func (e GraphExec) Destroy() error {
	d, err := graphDriver("cuGraphExecDestroy")
	if err != nil {
		return err
	}
	return check("cuGraphExecDestroy", d.cuGraphExecDestroy(e))
}
