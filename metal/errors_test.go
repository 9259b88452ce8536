package metal

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCodeTableIsTheHeaders holds the code table to MTLCommandBuffer.h's
// enumerators (values and names, 5 and 6 unused) and each code's kind to
// what the runtime does with it.
func TestCodeTableIsTheHeaders(t *testing.T) {
	want := []struct {
		code Code
		val  int64
		name string
		kind FaultKind
	}{
		{CodeNone, 0, "MTLCommandBufferErrorNone", NotAFault},
		{ErrInternal, 1, "MTLCommandBufferErrorInternal", DeviceGone},
		{ErrTimeout, 2, "MTLCommandBufferErrorTimeout", Transient},
		{ErrPageFault, 3, "MTLCommandBufferErrorPageFault", OwnFault},
		{ErrAccessRevoked, 4, "MTLCommandBufferErrorAccessRevoked", DeviceGone},
		{ErrNotPermitted, 7, "MTLCommandBufferErrorNotPermitted", DeviceGone},
		{ErrOutOfMemory, 8, "MTLCommandBufferErrorOutOfMemory", Transient},
		{ErrInvalidResource, 9, "MTLCommandBufferErrorInvalidResource", OwnFault},
		{ErrMemoryless, 10, "MTLCommandBufferErrorMemoryless", Transient},
		{ErrDeviceRemoved, 11, "MTLCommandBufferErrorDeviceRemoved", DeviceGone},
		{ErrStackOverflow, 12, "MTLCommandBufferErrorStackOverflow", OwnFault},
	}
	require.Len(t, codeTable, len(want))
	for i, w := range want {
		require.EqualValues(t, w.val, w.code, w.name)
		require.Equal(t, w.code, codeTable[i].code)
		require.Equal(t, w.name, w.code.Name())
		require.Equal(t, w.kind, w.code.Kind(), w.name)
	}
	require.Equal(t, "MTLCommandBufferError(42)", Code(42).Name())
	require.Equal(t, DeviceGone, Code(42).Kind(), "an unknown failure code is judged the device's")
	require.Equal(t, "MTLCommandBufferErrorPageFault (3)", ErrPageFault.Error())
}

// TestCommandBufferErrorMatchesItsCode: a command buffer's NSError becomes an
// *Error that errors.Is matches against its Code sentinel only, and
// CommandBufferCode reads it back through wrapping.
func TestCommandBufferErrorMatchesItsCode(t *testing.T) {
	e := &Error{Call: "command buffer", Domain: CommandBufferErrorDomain, Code: 3,
		Description: "Discarded (victim of GPU error/recovery) (00000003:kIOGPUCommandBufferCallbackErrorPageFault)"}
	wrapped := fmt.Errorf("stream 1: %w", e)
	require.ErrorIs(t, wrapped, ErrPageFault)
	require.NotErrorIs(t, wrapped, ErrTimeout)
	c, ok := CommandBufferCode(wrapped)
	require.True(t, ok)
	require.Equal(t, ErrPageFault, c)
	require.Equal(t, "command buffer: MTLCommandBufferErrorPageFault (3): "+e.Description, e.Error())

	other := &Error{Call: "newComputePipelineStateWithFunction:error:", Domain: "CompilerError", Code: 3, Description: "bad"}
	require.NotErrorIs(t, other, ErrPageFault, "code 3 of another domain is not a page fault")
	_, ok = CommandBufferCode(other)
	require.False(t, ok)

	nilRes := &Error{Call: "newBufferWithLength:options:", Err: ErrNilResult}
	require.ErrorIs(t, nilRes, ErrNilResult)
	require.Equal(t, "newBufferWithLength:options:: returned nil", nilRes.Error())
}

func TestCompileErrorCarriesTheLog(t *testing.T) {
	var err error = &CompileError{Code: 3, Log: "program_source:3:5: error: use of undeclared identifier 'x'"}
	require.ErrorIs(t, err, ErrCompile)
	require.Contains(t, err.Error(), "program_source:3:5: error: use of undeclared identifier 'x'")
}

func TestStatusNames(t *testing.T) {
	require.Equal(t, "MTLCommandBufferStatusError", StatusError.String())
	require.True(t, StatusError.Done())
	require.True(t, StatusCompleted.Done())
	require.False(t, StatusScheduled.Done())
	require.Equal(t, "MTLCommandBufferStatus(9)", Status(9).String())
}

func TestCheckDispatchRefusesWhatMetalCannotRun(t *testing.T) {
	dev := Limits{MaxThreadsPerThreadgroup: Size{1024, 1024, 1024}, MaxThreadgroupMemoryLength: 32768}
	for _, c := range []struct {
		name    string
		threads Size
		tg      uint64
		max     uint64
		static  uint64
		want    string
	}{
		{"fits", Size{1024, 1, 1}, 16384, 1024, 0, ""},
		{"zero", Size{0, 1, 1}, 0, 1024, 0, "zero dimension"},
		{"device dim", Size{1, 1, 2048}, 0, 0, 0, "exceeds the device's 1024x1024x1024"},
		{"pipeline", Size{1024, 1, 1}, 0, 896, 0, "exceeds the pipeline's maxTotalThreadsPerThreadgroup 896"},
		{"2d pipeline", Size{32, 32, 1}, 0, 512, 0, "1024 threads exceeds"},
		{"threadgroup memory", Size{256, 1, 1}, 32768, 1024, 16, "32784 bytes of threadgroup memory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckDispatch(c.threads, c.tg, c.max, c.static, dev)
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalidLaunch)
			require.ErrorContains(t, err, c.want)
		})
	}
}

func TestUnsupportedPlatformError(t *testing.T) {
	err := error(&UnsupportedPlatformError{GOOS: "linux"})
	require.True(t, errors.Is(err, ErrUnsupportedPlatform))
	require.Equal(t, "metal: only on macOS (this is linux)", err.Error())
}
