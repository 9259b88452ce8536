// Command faultprobe provokes each GPU failure class on the present GPU and
// prints what a caller of hipgo sees: a table of class, expected, got, time
// to error, and whether the device was usable afterwards. The classes that
// lose the device run in a child process (this binary, re-executed).
//
//	go run ./tools/faultprobe [-json]
//
// With -json, standard output carries exactly one JSON document (a report:
// the device, every class's result, and whether all behaved); everything
// else goes to standard error. It exits 1 when any class misbehaves. Without
// a GPU it says so (in the report's no_gpu field under -json) and exits 0.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hipgo/hipgo/internal/faultprobe"
	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/runtime/driver"
)

func main() {
	if faultprobe.ChildMain() {
		return
	}
	asJSON := flag.Bool("json", false, "print one JSON report on standard output (messages go to standard error)")
	flag.Parse()
	os.Exit(run(context.Background(), *asJSON, os.Stdout, os.Stderr))
}

// report is the -json document.
type report struct {
	Backend string              `json:"backend,omitempty"`
	Arch    string              `json:"arch,omitempty"`
	Device  string              `json:"device,omitempty"`
	NoGPU   string              `json:"no_gpu,omitempty"` // why nothing ran, when there is no GPU
	Results []faultprobe.Result `json:"results"`
	OK      bool                `json:"ok"` // every class behaved
}

// run probes and reports; text goes to stdout, unless asJSON, where stdout
// gets only the report and text goes to stderr.
func run(ctx context.Context, asJSON bool, stdout, stderr io.Writer) int {
	text := stdout
	if asJSON {
		text = stderr
	}
	rep := report{Results: []faultprobe.Result{}}
	env, err := faultprobe.Open(ctx)
	if errors.Is(err, runtime.ErrNoDevice) {
		fmt.Fprintf(text, "faultprobe: no GPU here, nothing to provoke.\n%v\n", err)
		if asJSON {
			rep.NoGPU, rep.OK = err.Error(), true
			return encode(stdout, stderr, rep, 0)
		}
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "faultprobe:", err)
		return 1
	}
	backend := env.Dev.Backend()
	rep.Backend, rep.Arch, rep.Device = string(backend), env.Dev.Info().Arch, env.Dev.String()
	fmt.Fprintf(text, "faultprobe on %s (arch %s)\n", env.Dev, rep.Arch)
	for _, c := range faultprobe.Classes {
		if c.Fatal() {
			continue
		}
		rep.Results = append(rep.Results, faultprobe.Run(ctx, env, c))
	}
	if err := env.Close(); err != nil {
		fmt.Fprintln(stderr, "faultprobe: close:", err)
		return 1
	}
	for _, c := range faultprobe.Classes {
		if !c.Fatal() {
			continue
		}
		if c.Baseline() && backend != driver.CUDA {
			continue // the driver-only baselines are written for CUDA
		}
		rep.Results = append(rep.Results, faultprobe.RunChild(ctx, c))
	}
	if !asJSON {
		printTable(text, rep.Results)
	}
	bad := 0
	for _, r := range rep.Results {
		if !r.OK {
			bad++
		}
	}
	rep.OK = bad == 0
	code := 0
	if bad > 0 {
		fmt.Fprintf(text, "faultprobe: %d of %d classes misbehaved\n", bad, len(rep.Results))
		code = 1
	} else {
		fmt.Fprintf(text, "faultprobe: all %d classes behaved\n", len(rep.Results))
	}
	if asJSON {
		return encode(stdout, stderr, rep, code)
	}
	return code
}

func encode(stdout, stderr io.Writer, rep report, code int) int {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		fmt.Fprintln(stderr, "faultprobe:", err)
		return 1
	}
	return code
}

func printTable(out io.Writer, results []faultprobe.Result) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "class\tok\ttime to error\tusable after\tgot")
	var ours, baseline, eventBaseline float64
	for _, r := range results {
		ok := "yes"
		if !r.OK {
			ok = "NO"
		}
		fmt.Fprintf(w, "%s\t%s\t%v\t%s\t%s\n", r.Class, ok, r.TimeToError.Round(time.Microsecond), short(r.UsableAfter, 40), short(r.Got, 160))
		switch r.Class {
		case faultprobe.OOBWrite:
			ours = r.Metrics["launch_to_error_ms"]
		case faultprobe.OOBWriteDriverSync:
			baseline = r.Metrics["launch_to_error_ms"]
		case faultprobe.OOBWriteDriverEvent:
			eventBaseline = r.Metrics["launch_to_error_ms"]
		}
	}
	w.Flush()
	for _, r := range results {
		fmt.Fprintf(out, "  %s: expected: %s\n", r.Class, r.Expected)
		if len(r.Metrics) > 0 {
			fmt.Fprintf(out, "  %s: metrics: %v\n", r.Class, r.Metrics)
		}
		if r.Detail != "" {
			fmt.Fprintf(out, "  %s: %s\n", r.Class, r.Detail)
		}
	}
	if ours > 0 && eventBaseline > 0 {
		fmt.Fprintf(out, "out-of-bounds write, launch to error: hipgo Wait %.1f ms, cuEventSynchronize on an event behind the kernel %.1f ms, ratio %.2f\n", ours, eventBaseline, ours/eventBaseline)
	}
	if ours > 0 && baseline > 0 {
		fmt.Fprintf(out, "out-of-bounds write, launch to error: hipgo Wait %.1f ms, cuStreamSynchronize on the bare kernel %.1f ms, ratio %.2f\n", ours, baseline, ours/baseline)
	}
}

func short(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n-3] + "..."
	}
	return s
}
