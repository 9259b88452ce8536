package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hipgo/hipgo/kernels/manifest"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes: 0 success, 1 -check found differences, 2 any other failure.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("kernelc", flag.ContinueOnError)
	fl.SetOutput(stderr)
	check := fl.Bool("check", false, "rebuild into a temporary directory and fail, listing every file of kernels/build that differs")
	out := fl.String("out", "", "build the whole artifact tree into this directory instead of kernels/build")
	inspect := fl.String("inspect", "", "print the metadata of this .hsaco, .cubin or .ptx file and exit")
	asJSON := fl.Bool("json", false, "with -inspect: print JSON")
	root := fl.String("root", "", "repository root (default: the nearest parent directory holding kernels/src)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if fl.NArg() != 0 {
		fmt.Fprintf(stderr, "kernelc: unexpected arguments %q\n", fl.Args())
		return 2
	}
	if *inspect != "" {
		if err := inspectFile(stdout, *inspect, *asJSON); err != nil {
			fmt.Fprintln(stderr, "kernelc:", err)
			return 2
		}
		return 0
	}
	if *asJSON {
		fmt.Fprintln(stderr, "kernelc: -json only applies to -inspect")
		return 2
	}
	if *check && *out != "" {
		fmt.Fprintln(stderr, "kernelc: -check and -out are exclusive")
		return 2
	}
	code, err := buildCommand(ctx, *root, *out, *check, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "kernelc:", err)
	}
	return code
}

func buildCommand(ctx context.Context, root, out string, check bool, stdout, stderr io.Writer) (int, error) {
	if root == "" {
		var err error
		if root, err = findRoot(); err != nil {
			return 2, err
		}
	}
	kernelsDir := filepath.Join(root, "kernels")
	buildDir := filepath.Join(kernelsDir, "build")
	tc, err := findToolchain(ctx)
	if err != nil {
		return 2, err
	}
	pa, err := findPTXAS(ctx, root)
	if err != nil {
		return 2, err
	}
	if out != "" {
		if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
			return 2, fmt.Errorf("-out %s: directory is not empty", out)
		}
		if err := buildTree(ctx, tc, pa, kernelsDir, out, stderr); err != nil {
			return 2, err
		}
		fmt.Fprintf(stdout, "kernelc: built %s with %s and %s\n", out, tc.version, pa.version)
		return 0, nil
	}

	tmp, err := os.MkdirTemp("", "kernelc-")
	if err != nil {
		return 2, err
	}
	defer os.RemoveAll(tmp)
	fresh := filepath.Join(tmp, "build")
	if err := buildTree(ctx, tc, pa, kernelsDir, fresh, stderr); err != nil {
		return 2, err
	}
	if check {
		diffs, err := diffTrees(fresh, buildDir)
		if err != nil {
			return 2, err
		}
		if len(diffs) == 0 {
			fmt.Fprintf(stdout, "kernelc: kernels/build matches a fresh build (%s; %s)\n", tc.version, pa.version)
			return 0, nil
		}
		fmt.Fprintf(stderr, "kernelc: kernels/build differs from a fresh build in %d file(s):\n", len(diffs))
		for _, d := range diffs {
			fmt.Fprintf(stderr, "  %s\n", d)
		}
		if old := committedToolchain(buildDir); old != "" && old != tc.version {
			fmt.Fprintf(stderr, "kernelc: the committed artifacts were built with %q, this machine has %q\n", old, tc.version)
		}
		fmt.Fprintln(stderr, "kernelc: run `go run ./tools/kernelc` (make kernels) and commit kernels/build")
		return 1, nil
	}
	diffs, err := syncTree(fresh, buildDir)
	if err != nil {
		return 2, err
	}
	for _, d := range diffs {
		fmt.Fprintf(stdout, "kernelc: updated %s\n", d)
	}
	fmt.Fprintf(stdout, "kernelc: kernels/build is up to date (%d file(s) changed, %s; %s)\n", len(diffs), tc.version, pa.version)
	return 0, nil
}

// committedToolchain reads the toolchain line of the committed manifest, or
// "" if it cannot.
func committedToolchain(buildDir string) string {
	b, err := os.ReadFile(filepath.Join(buildDir, manifestName))
	if err != nil {
		return ""
	}
	m, err := manifest.Parse(b)
	if err != nil {
		return ""
	}
	return m.Toolchain
}

// findRoot walks up from the working directory to the first directory that
// holds kernels/src.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if st, err := os.Stat(filepath.Join(dir, "kernels", "src")); err == nil && st.IsDir() {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no kernels/src in the working directory or its parents; run from the repository or pass -root")
		}
		dir = parent
	}
}
