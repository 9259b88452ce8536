package main

import (
	"bytes"
	"errors"
	"testing"

	"github.com/hipgo/hipgo/mlx"
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
	noMLX := mlxSurvey{Err: errors.New("libmlxc: library not found")}
	mlxCPU := mlxSurvey{Report: mlx.Report{Version: "0.31.2", Library: "libmlxc.so", Devices: map[mlx.DeviceType]int{mlx.CPU: 1}}}
	mlxGPU := mlxSurvey{Report: mlx.Report{Version: "0.31.2", Library: "libmlxc.dylib", Devices: map[mlx.DeviceType]int{mlx.CPU: 1, mlx.GPU: 1}}}
	for _, asJSON := range []bool{false, true} {
		var out, errb bytes.Buffer
		require.Equal(t, exitNoDevice, report(&out, &errb, unusable, noMLX, asJSON), "json=%v", asJSON)
		require.Contains(t, out.String(), "library not found")
		require.Contains(t, out.String(), "libmlxc")
		out.Reset()
		require.Equal(t, exitUsable, report(&out, &errb, usable, noMLX, asJSON), "json=%v", asJSON)
		require.Contains(t, out.String(), "sm_90")
		out.Reset()
		require.Equal(t, exitNoDevice, report(&out, &errb, unusable, mlxCPU, asJSON), "MLX on the CPU is no GPU (json=%v)", asJSON)
		require.Contains(t, out.String(), "0.31.2")
		out.Reset()
		require.Equal(t, exitUsable, report(&out, &errb, unusable, mlxGPU, asJSON), "json=%v", asJSON)
	}
}
