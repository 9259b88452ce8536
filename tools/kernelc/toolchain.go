package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// errToolchain marks a missing or unusable compiler.
var errToolchain = errors.New("kernel toolchain unusable")

// toolchain is the clang that builds the kernels.
type toolchain struct {
	clang   string // absolute path
	version string // first line of --version
}

// findToolchain locates clang-19 (HIPGO_CLANG overrides) and checks that it
// is version 19 and that the lld it needs for the HIP device link exists.
func findToolchain(ctx context.Context) (*toolchain, error) {
	const hint = "install Debian's clang-19 and lld-19 (apt-get install clang-19 lld-19), or set HIPGO_CLANG to a clang 19 binary"
	name := os.Getenv("HIPGO_CLANG")
	if name == "" {
		name = "clang-19"
	}
	p, err := exec.LookPath(name)
	if err != nil {
		if alt := "/usr/lib/llvm-19/bin/clang"; name == "clang-19" && fileExists(alt) {
			p = alt
		} else {
			return nil, fmt.Errorf("%w: %s not found: %w; %s", errToolchain, name, err, hint)
		}
	}
	out, err := exec.CommandContext(ctx, p, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s --version: %w; %s", errToolchain, p, err, hint)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	first = strings.TrimSpace(first)
	if !strings.Contains(first, "clang version 19.") {
		return nil, fmt.Errorf("%w: %s is %q, want clang 19 (the artifacts are reproducible only with one compiler); %s", errToolchain, p, first, hint)
	}
	// clang looks for lld next to its real binary (the HIP device link runs
	// <llvm bin>/lld); without it every AMDGPU build fails with a less clear
	// message, so check first.
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errToolchain, p, err)
	}
	dir := filepath.Dir(real)
	if !fileExists(filepath.Join(dir, "lld")) && !fileExists(filepath.Join(dir, "ld.lld")) {
		return nil, fmt.Errorf("%w: no lld next to %s (the AMDGPU device link needs it); %s", errToolchain, real, hint)
	}
	return &toolchain{clang: p, version: first}, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// cleanEnv is the environment clang runs with: PATH (to find lld), TMPDIR
// (its temporaries) and the C locale. Nothing else, so variables such as
// CPATH or CCC_OVERRIDE_OPTIONS on a developer's machine cannot change the
// output.
func cleanEnv() []string {
	env := []string{"LC_ALL=C", "PATH=" + os.Getenv("PATH")}
	if t := os.Getenv("TMPDIR"); t != "" {
		env = append(env, "TMPDIR="+t)
	}
	return env
}

// run executes clang in dir. It returns clang's stderr (warnings) on
// success and an error quoting it on failure.
func (tc *toolchain) run(ctx context.Context, dir string, args []string) (string, error) {
	cmd := exec.CommandContext(ctx, tc.clang, args...)
	cmd.Dir = dir
	cmd.Env = cleanEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w\n%s", filepath.Base(tc.clang), strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stderr.String(), nil
}

// ptxasVersion is the one ptxas the cubins are built with: the build is
// byte-reproducible only with one compiler. scripts/deps.sh fetches it
// from PyPI (nvidia-cuda-nvcc-cu12 12.9.86, pinned by hash).
const ptxasVersion = "V12.9.86"

// ptxas is NVIDIA's PTX assembler, which turns the sm_90a PTX into the
// cubin an H100 or H200 loads without compiling anything.
type ptxas struct {
	path    string
	version string // the "Cuda compilation tools" line of --version
}

// findPTXAS locates ptxas: HIPGO_PTXAS, else .cache/cuda/ptxas under root,
// where scripts/deps.sh puts it; it must be version ptxasVersion.
func findPTXAS(ctx context.Context, root string) (*ptxas, error) {
	const hint = "run scripts/deps.sh (it fetches ptxas " + ptxasVersion + " from PyPI's nvidia-cuda-nvcc-cu12 into .cache/cuda/ptxas), or set HIPGO_PTXAS to that binary"
	p := os.Getenv("HIPGO_PTXAS")
	if p == "" {
		p = filepath.Join(root, ".cache", "cuda", "ptxas")
	}
	out, err := exec.CommandContext(ctx, p, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s --version: %w; %s", errToolchain, p, err, hint)
	}
	var line string
	for l := range strings.SplitSeq(string(out), "\n") {
		if strings.HasPrefix(l, "Cuda compilation tools") {
			line = strings.TrimSpace(l)
		}
	}
	if !strings.HasSuffix(line, ", "+ptxasVersion) {
		return nil, fmt.Errorf("%w: %s is %q, want ptxas %s (the cubins are reproducible only with one ptxas); %s", errToolchain, p, line, ptxasVersion, hint)
	}
	return &ptxas{path: p, version: "ptxas: " + line}, nil
}

// run assembles in (a .ptx file) into out for arch, in a clean environment.
func (pa *ptxas) run(ctx context.Context, arch, in, out string) error {
	cmd := exec.CommandContext(ctx, pa.path, "-arch="+arch, "-O3", "-o", out, in)
	cmd.Env = cleanEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ptxas -arch=%s %s: %w\n%s", arch, filepath.Base(in), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
