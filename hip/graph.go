package hip

import (
	"github.com/ebitengine/purego"
	"github.com/hipgo/hipgo/internal/dynlib"
)

// Graph is a hipGraph_t: work captured from a stream, not yet launchable.
type Graph uintptr

// GraphExec is a hipGraphExec_t: an instantiated graph, launched as a whole.
type GraphExec uintptr

// CaptureMode is a hipStreamCaptureMode.
type CaptureMode uint32

// hipStreamCaptureMode values (hip_runtime_api.h, ROCm 5.2).
const (
	CaptureModeGlobal      CaptureMode = 0 // hipStreamCaptureModeGlobal
	CaptureModeThreadLocal CaptureMode = 1 // hipStreamCaptureModeThreadLocal
	// CaptureModeRelaxed refuses no call on other threads while a stream
	// captures (the runtime's fault monitor keeps querying events).
	CaptureModeRelaxed CaptureMode = 2
)

// graphSince is the release whose symbol version (hip_4.3) exports the
// graph calls bound here; all are optional.
const graphSince = "ROCm 4.3"

type graphAPI struct {
	// hipError_t hipStreamBeginCapture(hipStream_t stream, hipStreamCaptureMode mode);
	hipStreamBeginCapture func(s Stream, mode CaptureMode) Code
	// hipError_t hipStreamEndCapture(hipStream_t stream, hipGraph_t* pGraph);
	hipStreamEndCapture func(s Stream, g *Graph) Code
	// hipError_t hipGraphInstantiate(hipGraphExec_t* pGraphExec, hipGraph_t graph,
	//     hipGraphNode_t* pErrorNode, char* pLogBuffer, size_t bufferSize);
	hipGraphInstantiate func(e *GraphExec, g Graph, errNode uintptr, log uintptr, logSize uintptr) Code
	// hipError_t hipGraphExecDestroy(hipGraphExec_t graphExec);
	hipGraphExecDestroy func(e GraphExec) Code
	// hipError_t hipGraphDestroy(hipGraph_t graph);
	hipGraphDestroy func(g Graph) Code
	// hipError_t hipGraphLaunch(hipGraphExec_t graphExec, hipStream_t stream);
	// Hot (once per decode step): called through its raw address.
	hipGraphLaunch uintptr
}

func (a *graphAPI) funcs() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"hipStreamBeginCapture"}, Fn: &a.hipStreamBeginCapture, Since: graphSince},
		{Names: []string{"hipStreamEndCapture"}, Fn: &a.hipStreamEndCapture, Since: graphSince},
		{Names: []string{"hipGraphInstantiate"}, Fn: &a.hipGraphInstantiate, Since: graphSince},
		{Names: []string{"hipGraphExecDestroy"}, Fn: &a.hipGraphExecDestroy, Since: graphSince},
		{Names: []string{"hipGraphDestroy"}, Fn: &a.hipGraphDestroy, Since: graphSince},
		{Names: []string{"hipGraphLaunch"}, Addr: &a.hipGraphLaunch, Since: graphSince},
	}
}

func (a *graphAPI) graphBound() bool {
	return a.hipStreamBeginCapture != nil && a.hipStreamEndCapture != nil && a.hipGraphInstantiate != nil &&
		a.hipGraphExecDestroy != nil && a.hipGraphDestroy != nil && a.hipGraphLaunch != 0
}

// GraphSupported reports whether the loaded library exports every call of
// stream capture and graph launch.
func GraphSupported() bool {
	a, err := get()
	return err == nil && a.graphBound()
}

// graphLib returns the library when it has the graph calls, else an
// *UnsupportedError naming fn.
func graphLib(fn string) (*api, error) {
	a, err := get()
	if err != nil {
		return nil, err
	}
	if !a.graphBound() {
		return nil, &UnsupportedError{Func: fn, Since: graphSince, Library: a.path}
	}
	return a, nil
}

// StreamBeginCapture starts capturing s: work enqueued on it is recorded
// into a graph instead of running, until StreamEndCapture.
func StreamBeginCapture(s Stream, mode CaptureMode) error {
	a, err := graphLib("hipStreamBeginCapture")
	if err != nil {
		return err
	}
	return check("hipStreamBeginCapture", a.hipStreamBeginCapture(s, mode))
}

// StreamEndCapture ends the capture of s and returns the graph it recorded.
func StreamEndCapture(s Stream) (Graph, error) {
	a, err := graphLib("hipStreamEndCapture")
	if err != nil {
		return 0, err
	}
	var g Graph
	if err := check("hipStreamEndCapture", a.hipStreamEndCapture(s, &g)); err != nil {
		return g, err
	}
	return g, nil
}

// GraphInstantiate makes g launchable.
func GraphInstantiate(g Graph) (GraphExec, error) {
	a, err := graphLib("hipGraphInstantiate")
	if err != nil {
		return 0, err
	}
	var e GraphExec
	if err := check("hipGraphInstantiate", a.hipGraphInstantiate(&e, g, 0, 0, 0)); err != nil {
		return 0, err
	}
	return e, nil
}

// GraphDestroy frees g; executables instantiated from it stay valid.
func GraphDestroy(g Graph) error {
	a, err := graphLib("hipGraphDestroy")
	if err != nil {
		return err
	}
	return check("hipGraphDestroy", a.hipGraphDestroy(g))
}

// GraphLaunch enqueues the whole executable graph on s.
func GraphLaunch(e GraphExec, s Stream) error {
	a, err := graphLib("hipGraphLaunch")
	if err != nil {
		return err
	}
	r, _, _ := purego.SyscallN(a.hipGraphLaunch, uintptr(e), uintptr(s))
	return check("hipGraphLaunch", Code(int32(r)))
}

// GraphExecDestroy frees e; launches already enqueued complete.
func GraphExecDestroy(e GraphExec) error {
	a, err := graphLib("hipGraphExecDestroy")
	if err != nil {
		return err
	}
	return check("hipGraphExecDestroy", a.hipGraphExecDestroy(e))
}
