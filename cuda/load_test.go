package cuda

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/dynlib"
)

// withoutDriver runs f as if Load had never succeeded, then restores the
// loaded driver (tests in this package do not run in parallel).
func withoutDriver(f func()) {
	saved := current.Swap(nil)
	defer current.Store(saved)
	f()
}

// TestCallsBeforeLoadFail proves every family of calls returns ErrNotLoaded,
// rather than crashing on an unbound function, when Load has not succeeded.
func TestCallsBeforeLoadFail(t *testing.T) {
	withoutDriver(func() {
		calls := map[string]func() error{
			"Init":         Init,
			"DeviceCount":  func() error { _, err := DeviceCount(); return err },
			"MemAlloc":     func() error { _, err := MemAlloc(1); return err },
			"ContextLock":  func() error { return Context(1).Lock() },
			"StreamQuery":  func() error { _, err := Stream(0).Query(); return err },
			"EventRecord":  func() error { return Event(1).Record(0) },
			"LaunchKernel": func() error { return LaunchKernel(1, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, 0, nil, nil) },
			"LaunchKernelEx": func() error {
				return LaunchKernelEx(&LaunchConfig{Grid: Dim3{1, 1, 1}, Block: Dim3{1, 1, 1}}, 1, nil, nil)
			},
			"ModuleLoad":    func() error { _, err := ModuleLoadData([]byte("x")); return err },
			"HostFunc":      func() error { return LaunchHostFunc(0, func() {}) },
			"ErrorName":     func() error { _, err := ErrorName(ErrInvalidValue); return err },
			"ParamInfo":     func() error { _, err := Function(1).ParamInfo(0); return err },
			"SetAttribute":  func() error { return Function(1).SetAttribute(FuncMaxDynamicSharedSizeBytes, 1) },
			"ElapsedTime":   func() error { _, err := EventElapsedTime(1, 2); return err },
			"MemcpyHtoD":    func() error { return MemcpyHtoD(1, []byte{1}) },
			"StreamAddCall": func() error { return StreamAddCallback(0, func(Code) {}) },
			"BeginCapture":  func() error { return Stream(1).BeginCapture(CaptureModeRelaxed) },
			"EndCapture":    func() error { _, err := Stream(1).EndCapture(); return err },
			"Instantiate":   func() error { _, err := Graph(1).Instantiate(); return err },
			"GraphLaunch":   func() error { return GraphExec(1).Launch(0) },
			"GraphDestroy":  func() error { return Graph(1).Destroy() },
			"ExecDestroy":   func() error { return GraphExec(1).Destroy() },
		}
		for name, call := range calls {
			require.ErrorIs(t, call(), ErrNotLoaded, name)
		}
		require.Equal(t, "", LibraryPath())
		require.False(t, ParamInfoSupported())
		require.False(t, LaunchKernelExSupported())
		require.False(t, GraphSupported())
	})
}

// TestGraphCallsWithoutTheSymbols proves a driver that lacks the graph
// entry points (older than CUDA 11.4) gives an *UnavailableError from every
// graph call, matching ErrNotSupported, rather than calling a nil function.
func TestGraphCallsWithoutTheSymbols(t *testing.T) {
	saved := current.Swap(&driver{lib: &dynlib.Library{Path: "libcuda.so.old"}})
	defer current.Store(saved)
	require.False(t, GraphSupported())
	calls := map[string]func() error{
		"cuStreamBeginCapture_v2":     func() error { return Stream(1).BeginCapture(CaptureModeRelaxed) },
		"cuStreamEndCapture":          func() error { _, err := Stream(1).EndCapture(); return err },
		"cuGraphInstantiateWithFlags": func() error { _, err := Graph(1).Instantiate(); return err },
		"cuGraphLaunch":               func() error { return GraphExec(1).Launch(0) },
		"cuGraphDestroy":              func() error { return Graph(1).Destroy() },
		"cuGraphExecDestroy":          func() error { return GraphExec(1).Destroy() },
	}
	for symbol, call := range calls {
		err := call()
		require.ErrorIs(t, err, ErrNotSupported, symbol)
		var ue *UnavailableError
		require.ErrorAs(t, err, &ue, symbol)
		require.Equal(t, symbol, ue.Symbol)
		require.Contains(t, err.Error(), "libcuda.so.old")
	}
}

// TestBindTableNames proves the symbol table binds each entry point once,
// tries the _v2 names first where there are several, and never binds the
// _v2 symbols whose signature differs from the function bound
// (cuCtxSynchronize_v2(CUcontext) in 13.0, cuLaunchHostFunc_v2(..., syncMode)
// in 13.2), and binds the hot calls by address.
func TestBindTableNames(t *testing.T) {
	seen := map[string]bool{}
	raw := map[string]bool{} // bound by address, for purego.SyscallN
	for _, f := range (&driver{}).table() {
		raw[f.Names[0]] = f.Addr != nil
		require.NotEmpty(t, f.Names)
		require.True(t, (f.Fn == nil) != (f.Addr == nil), "%v: exactly one of Fn and Addr", f.Names)
		for _, n := range f.Names {
			require.False(t, seen[n], "%s bound twice", n)
			seen[n] = true
			require.NotContains(t, []string{"cuCtxSynchronize_v2", "cuLaunchHostFunc_v2"}, n)
			// Exports whose signature is not the one bound: CUDA 10.0's
			// cuStreamBeginCapture has no mode, and the exported
			// cuGraphInstantiate(_v2) takes an error node and a log buffer.
			require.NotContains(t, []string{"cuStreamBeginCapture", "cuGraphInstantiate", "cuGraphInstantiate_v2"}, n)
		}
		if len(f.Names) > 1 {
			require.True(t, strings.HasSuffix(f.Names[0], "_v2"), "%v: _v2 first", f.Names)
			require.Equal(t, strings.TrimSuffix(f.Names[0], "_v2"), f.Names[1], "%v: same function", f.Names)
		}
	}
	for _, hot := range []string{"cuLaunchKernel", "cuEventRecord", "cuEventQuery", "cuStreamQuery", "cuCtxGetCurrent", "cuCtxSetCurrent", "cuGraphLaunch"} {
		require.True(t, raw[hot], "%s is a hot call, bound by address", hot)
	}
}
