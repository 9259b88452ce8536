// Command faultprobe provokes each GPU failure class on the present GPU and
// prints what a caller of hipgo sees: a table of class, expected, got, time
// to error, and whether the device was usable afterwards. The classes that
// lose the device run in a child process (this binary, re-executed).
//
//	go run ./tools/faultprobe [-json]
//
// It exits 1 when any class misbehaves. Without a GPU it says so and exits 0.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
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
	asJSON := flag.Bool("json", false, "print JSON results")
	flag.Parse()
	os.Exit(run(*asJSON))
}

func run(asJSON bool) int {
	ctx := context.Background()
	env, err := faultprobe.Open(ctx)
	if errors.Is(err, runtime.ErrNoDevice) {
		fmt.Printf("faultprobe: no GPU here, nothing to provoke.\n%v\n", err)
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "faultprobe:", err)
		return 1
	}
	backend := env.Dev.Backend()
	fmt.Printf("faultprobe on %s (arch %s)\n", env.Dev, env.Dev.Info().Arch)
	var results []faultprobe.Result
	for _, c := range faultprobe.Classes {
		if c.Fatal() {
			continue
		}
		results = append(results, faultprobe.Run(ctx, env, c))
	}
	if err := env.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "faultprobe: close:", err)
		return 1
	}
	for _, c := range faultprobe.Classes {
		if !c.Fatal() {
			continue
		}
		if c == faultprobe.OOBWriteDriverSync && backend != driver.CUDA {
			continue // the driver-only baseline is written for CUDA
		}
		results = append(results, faultprobe.RunChild(ctx, c))
	}
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(results); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	} else {
		printTable(results)
	}
	bad := 0
	for _, r := range results {
		if !r.OK {
			bad++
		}
	}
	if bad > 0 {
		fmt.Printf("faultprobe: %d of %d classes misbehaved\n", bad, len(results))
		return 1
	}
	fmt.Printf("faultprobe: all %d classes behaved\n", len(results))
	return 0
}

func printTable(results []faultprobe.Result) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "class\tok\ttime to error\tusable after\tgot")
	var ours, baseline float64
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
		}
	}
	w.Flush()
	for _, r := range results {
		fmt.Printf("  %s: expected: %s\n", r.Class, r.Expected)
		if len(r.Metrics) > 0 {
			fmt.Printf("  %s: metrics: %v\n", r.Class, r.Metrics)
		}
		if r.Detail != "" {
			fmt.Printf("  %s: %s\n", r.Class, r.Detail)
		}
	}
	if ours > 0 && baseline > 0 {
		fmt.Printf("out-of-bounds write, launch to error: hipgo Wait %.1f ms, cuStreamSynchronize %.1f ms, ratio %.2f\n", ours, baseline, ours/baseline)
	}
}

func short(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n-3] + "..."
	}
	return s
}
