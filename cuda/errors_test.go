package cuda

import (
	"bufio"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/hipgo/hipgo/internal/dynlib"
	"github.com/stretchr/testify/require"
)

// readHeaderCodes reads testdata/curesult_cuda13000.txt, the CUresult list
// extracted mechanically from bindgen output of cuda.h 13.0.
func readHeaderCodes(t *testing.T) []struct {
	name string
	code Code
} {
	t.Helper()
	f, err := os.Open("testdata/curesult_cuda13000.txt")
	require.NoError(t, err)
	defer func() { require.NoError(t, f.Close()) }()
	var out []struct {
		name string
		code Code
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, val, ok := strings.Cut(line, "=")
		require.True(t, ok, "bad testdata line %q", line)
		v, err := strconv.ParseInt(val, 10, 32)
		require.NoError(t, err, "bad testdata line %q", line)
		out = append(out, struct {
			name string
			code Code
		}{name, Code(v)})
	}
	require.NoError(t, sc.Err())
	return out
}

// TestCodeTableMatchesHeader proves the hand-written table lists exactly the
// CUresult enumerators of cuda.h 13.0, in header order, with their values.
func TestCodeTableMatchesHeader(t *testing.T) {
	want := readHeaderCodes(t)
	require.Len(t, want, 101, "cuda.h 13.0 lists 101 CUresult values")
	require.Len(t, codeTable, len(want))
	for i, w := range want {
		require.Equal(t, w.name, codeTable[i].name, "entry %d", i)
		require.Equal(t, w.code, codeTable[i].code, "entry %d (%s)", i, w.name)
	}
}

// TestCodeTableHasNoDuplicates proves no name or value appears twice, so Name
// is a function and the sentinels are distinct.
func TestCodeTableHasNoDuplicates(t *testing.T) {
	names := map[string]Code{}
	values := map[Code]string{}
	for _, e := range codeTable {
		if prev, ok := names[e.name]; ok {
			t.Errorf("name %s for %d and %d", e.name, prev, e.code)
		}
		if prev, ok := values[e.code]; ok {
			t.Errorf("value %d for %s and %s", e.code, prev, e.name)
		}
		names[e.name] = e.code
		values[e.code] = e.name
	}
}

// goSentinelName derives the Go identifier of a CUresult enumerator:
// CUDA_ERROR_NO_BINARY_FOR_GPU becomes ErrNoBinaryForGpu.
func goSentinelName(cName string) string {
	if cName == "CUDA_SUCCESS" {
		return "Success"
	}
	var b strings.Builder
	b.WriteString("Err")
	for _, part := range strings.Split(strings.TrimPrefix(cName, "CUDA_ERROR_"), "_") {
		b.WriteString(part[:1] + strings.ToLower(part[1:]))
	}
	return b.String()
}

// TestSentinelsFollowHeaderNames proves every exported Code constant in
// errors.go is named after its enumerator and carries the enumerator's value,
// by reading the constant declarations from the source.
func TestSentinelsFollowHeaderNames(t *testing.T) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "errors.go", nil, 0)
	require.NoError(t, err)
	consts := map[string]int64{}
	for _, decl := range file.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for i, n := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				require.True(t, ok, "%s is not a literal", n.Name)
				v, err := strconv.ParseInt(lit.Value, 0, 32)
				require.NoError(t, err)
				consts[n.Name] = v
			}
		}
	}
	want := readHeaderCodes(t)
	require.Len(t, consts, len(want), "one Code constant per enumerator")
	for _, w := range want {
		goName := goSentinelName(w.name)
		v, ok := consts[goName]
		require.True(t, ok, "no constant %s for %s", goName, w.name)
		require.Equal(t, int64(w.code), v, "%s", goName)
	}
}

// TestCodeFormatting proves the error text names the enumerator and value.
func TestCodeFormatting(t *testing.T) {
	tests := []struct {
		code Code
		want string
	}{
		{ErrInvalidValue, "CUDA_ERROR_INVALID_VALUE (1)"},
		{ErrIllegalAddress, "CUDA_ERROR_ILLEGAL_ADDRESS (700)"},
		{ErrUnknown, "CUDA_ERROR_UNKNOWN (999)"},
		{Success, "CUDA_SUCCESS (0)"},
		{Code(917), "CUresult(917)"}, // CUDA_ERROR_STREAM_DETACHED arrives in 13.1
		{Code(-1), "CUresult(-1)"},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, tc.code.Error())
	}
	require.False(t, Code(917).Known())
	require.True(t, ErrInvalidPtx.Known())
}

// TestErrorFormatAndMatching proves *Error prints the call and code (and the
// JIT log when set) and matches its Code through wrapping, with errors.Is and
// errors.As.
func TestErrorFormatAndMatching(t *testing.T) {
	launch := &Error{Call: "cuLaunchKernel", Code: ErrInvalidValue}
	require.Equal(t, "cuLaunchKernel: CUDA_ERROR_INVALID_VALUE (1)", launch.Error())

	jit := &Error{Call: "cuModuleLoadDataEx", Code: ErrInvalidPtx, Log: "ptxas fatal : syntax error\n\x00"}
	require.Equal(t, "cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX (218): JIT log:\nptxas fatal : syntax error", jit.Error())

	wrapped := fmt.Errorf("runtime: launch fill: %w", launch)
	require.ErrorIs(t, wrapped, ErrInvalidValue)
	require.NotErrorIs(t, wrapped, ErrIllegalAddress)
	var e *Error
	require.ErrorAs(t, wrapped, &e)
	require.Equal(t, "cuLaunchKernel", e.Call)
	var c Code
	require.ErrorAs(t, wrapped, &c)
	require.Equal(t, ErrInvalidValue, c)

	fault := fmt.Errorf("stream: %w", &Error{Call: "cuStreamSynchronize", Code: ErrIllegalAddress})
	require.ErrorIs(t, fault, ErrIllegalAddress)
	require.True(t, errors.As(fault, &c) && c.Sticky())
}

// TestStickyCodesFollowDocs proves Sticky is true exactly for the codes whose
// cuda.h documentation says the process (or, for ASSERT, the context) cannot
// be used again.
func TestStickyCodesFollowDocs(t *testing.T) {
	documented := map[Code]string{
		ErrContained:           "226: process must be terminated and relaunched",
		ErrIllegalAddress:      "700: process must be terminated and relaunched",
		ErrLaunchTimeout:       "702: process must be terminated and relaunched",
		ErrAssert:              "710: context cannot be used anymore",
		ErrHardwareStackError:  "714: process must be terminated and relaunched",
		ErrIllegalInstruction:  "715: process must be terminated and relaunched",
		ErrMisalignedAddress:   "716: process must be terminated and relaunched",
		ErrInvalidAddressSpace: "717: process must be terminated and relaunched",
		ErrInvalidPc:           "718: process must be terminated and relaunched",
		ErrLaunchFailed:        "719: process must be terminated and relaunched",
		ErrTensorMemoryLeak:    "721: process must be terminated and relaunched",
		ErrMpsClientTerminated: "810: process must be terminated and relaunched",
		ErrExternalDevice:      "911: process must be terminated and relaunched",
	}
	for _, e := range codeTable {
		_, want := documented[e.code]
		require.Equal(t, want, e.code.Sticky(), "%s", e.name)
	}
	// A launch rejected before it ran leaves the context usable.
	require.False(t, ErrInvalidValue.Sticky())
	require.False(t, ErrLaunchOutOfResources.Sticky())
}

// TestTypedLoadErrorsMatchSentinels proves the binding's own error types
// match the sentinels callers test for.
func TestTypedLoadErrorsMatchSentinels(t *testing.T) {
	var err error = &UnavailableError{Symbol: "cuFuncGetParamInfo", Since: "CUDA 12.4", Path: "libcuda.so.1"}
	require.ErrorIs(t, err, ErrNotSupported)
	require.NotErrorIs(t, err, ErrInvalidValue)
	require.Contains(t, err.Error(), "cuFuncGetParamInfo")

	err = &UnsupportedPlatformError{GOOS: "darwin", GOARCH: "arm64"}
	require.ErrorIs(t, err, dynlib.ErrNotFound)
	require.Contains(t, err.Error(), "darwin/arm64")
}
