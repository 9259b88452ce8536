package main

import (
	"bytes"
	"errors"
	"testing"

	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/runtime/driver"
	"github.com/stretchr/testify/require"
)

// The exit code tells a script whether any backend is usable, in both output
// formats.
func TestExitCodeSaysWhetherAnyBackendIsUsable(t *testing.T) {
	unusable := []runtime.BackendReport{
		{Backend: driver.ROCm, Err: errors.New("no device")},
		{Backend: driver.CUDA, Err: errors.New("libcuda: library not found")},
	}
	usable := append(unusable[:1:1], runtime.BackendReport{Backend: driver.CUDA, Devices: []driver.Info{{Backend: driver.CUDA, Name: "GPU", Arch: "sm_90"}}})
	for _, asJSON := range []bool{false, true} {
		var out, errb bytes.Buffer
		require.Equal(t, exitNoDevice, report(&out, &errb, unusable, asJSON), "json=%v", asJSON)
		require.Contains(t, out.String(), "library not found")
		out.Reset()
		require.Equal(t, exitUsable, report(&out, &errb, usable, asJSON), "json=%v", asJSON)
		require.Contains(t, out.String(), "sm_90")
	}
}
