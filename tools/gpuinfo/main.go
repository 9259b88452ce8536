// Command gpuinfo prints every GPU backend hipgo tried, what it found
// (device, arch, memory, compute units, warp size, driver and runtime
// versions, library), and for each unusable backend why: library not found
// (with the paths tried), library found but could not be opened (with
// dlopen's reason), init failure (with the code), or no device; and
// MLX (libmlxc) with its version and devices, or why it is unusable.
//
//	go run ./tools/gpuinfo [-json] [-timeout 30s]
//
// It exits 0 when at least one backend is usable, 2 when it could report
// but no backend is usable (so scripts can tell), and 1 when it could not
// report.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hipgo/hipgo/mlx"
	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/runtime/driver"
)

type jsonBackend struct {
	Backend string        `json:"backend"`
	Usable  bool          `json:"usable"`
	Reason  string        `json:"reason,omitempty"`
	Devices []driver.Info `json:"devices,omitempty"`
	// MLX only: its version, library and device counts by type.
	Version    string         `json:"version,omitempty"`
	Library    string         `json:"library,omitempty"`
	MLXDevices map[string]int `json:"mlx_devices,omitempty"`
}

// Exit codes.
const (
	exitUsable   = 0 // at least one backend has a usable device
	exitFailed   = 1 // the report could not be written
	exitNoDevice = 2 // reported, but no backend is usable
)

func main() {
	asJSON := flag.Bool("json", false, "print JSON instead of text")
	timeout := flag.Duration("timeout", 30*time.Second, "give up on a backend's probe after this long")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	m, merr := mlx.Survey()
	os.Exit(report(os.Stdout, os.Stderr, runtime.Survey(ctx), mlxSurvey{m, merr}, *asJSON))
}

// mlxSurvey is MLX's line: what mlx.Survey found, or why it is unusable.
type mlxSurvey struct {
	mlx.Report
	Err error
}

// gpus is how many GPUs MLX has (0 when unusable or unknown).
func (m mlxSurvey) gpus() int {
	if m.Err != nil {
		return 0
	}
	return m.Devices[mlx.GPU]
}

// report writes the survey and returns the exit code. MLX counts as usable
// for the exit code only with a GPU: gpuinfo answers whether there is one.
func report(stdout, stderr io.Writer, reports []runtime.BackendReport, m mlxSurvey, asJSON bool) int {
	var err error
	if asJSON {
		err = writeJSON(stdout, reports, m)
	} else {
		err = writeText(stdout, reports, m)
	}
	if err != nil {
		fmt.Fprintln(stderr, "gpuinfo:", err)
		return exitFailed
	}
	for _, r := range reports {
		if r.Err == nil && len(r.Devices) > 0 {
			return exitUsable
		}
	}
	if m.gpus() > 0 {
		return exitUsable
	}
	return exitNoDevice
}

func writeJSON(w io.Writer, reports []runtime.BackendReport, m mlxSurvey) error {
	out := make([]jsonBackend, 0, len(reports)+1)
	for _, r := range reports {
		jb := jsonBackend{Backend: string(r.Backend), Usable: r.Err == nil, Devices: r.Devices}
		if r.Err != nil {
			jb.Reason = r.Err.Error()
		}
		out = append(out, jb)
	}
	jm := jsonBackend{Backend: "mlx", Usable: m.Err == nil, Version: m.Version, Library: m.Library}
	if m.Err != nil {
		jm.Reason = m.Err.Error()
	}
	for t, n := range m.Devices {
		if jm.MLXDevices == nil {
			jm.MLXDevices = map[string]int{}
		}
		jm.MLXDevices[t.String()] = n
	}
	out = append(out, jm)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func writeText(w io.Writer, reports []runtime.BackendReport, m mlxSurvey) error {
	if err := writeBackends(w, reports); err != nil {
		return err
	}
	if m.Err != nil {
		_, err := fmt.Fprintf(w, "%-6s unusable: %v\n", "mlx", m.Err)
		return err
	}
	devices := "device counts unknown (libmlxc predates mlx-c 0.5.0)"
	if m.Devices != nil {
		devices = fmt.Sprintf("%d cpu, %d gpu", m.Devices[mlx.CPU], m.Devices[mlx.GPU])
	}
	_, err := fmt.Fprintf(w, "%-6s MLX %s, devices: %s, library %s\n", "mlx", m.Version, devices, m.Library)
	return err
}

func writeBackends(w io.Writer, reports []runtime.BackendReport) error {
	for _, r := range reports {
		if r.Err != nil {
			if _, err := fmt.Fprintf(w, "%-6s unusable: %v\n", r.Backend, r.Err); err != nil {
				return err
			}
			continue
		}
		for _, d := range r.Devices {
			arch := d.Arch
			if d.Target != "" && d.Target != d.Arch {
				arch += " (" + d.Target + ")"
			}
			if _, err := fmt.Fprintf(w, "%-6s device %d: %s, arch %s, %.1f GiB, %d compute units, warp %d, max block %d, driver %s, runtime %s, library %s\n",
				r.Backend, d.Ordinal, d.Name, arch, float64(d.TotalMemory)/(1<<30), d.ComputeUnits, d.WarpSize, d.MaxBlock,
				d.DriverVersion, d.RuntimeVersion, d.Library); err != nil {
				return err
			}
		}
	}
	return nil
}
