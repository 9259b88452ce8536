package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/hipgo/hipgo/kernels/codeobj"
	"github.com/hipgo/hipgo/kernels/cubin"
	"github.com/hipgo/hipgo/kernels/manifest"
	"github.com/hipgo/hipgo/kernels/msl"
	"github.com/hipgo/hipgo/kernels/ptx"
)

// amdTarget is one AMDGPU processor and the code-object version built for
// it. kernels/README.md gives the reasoning and sources; in short: v4 for
// processors that ROCm releases before 6.0 support (v4 loads on every ROCm
// from 4.1 on, Debian's 5.2 included, and is still accepted by current
// loaders), v5 for processors that only ROCm 6.1 and later know, where v5 is
// the compiler default and supported by every such runtime.
type amdTarget struct {
	arch string
	cov  int
}

var amdTargets = []amdTarget{
	{"gfx90a", 4},  // ROCm >= 5.0 (MI200)
	{"gfx942", 4},  // ROCm >= 5.7 (MI300)
	{"gfx1030", 4}, // ROCm >= 5.0 (RDNA2)
	{"gfx1100", 4}, // ROCm >= 5.3 (RDNA3)
	{"gfx1101", 4}, // ROCm >= 5.5
	{"gfx1102", 4}, // ROCm >= 5.3
	{"gfx1150", 5}, // ROCm >= 6.1 (RDNA3.5)
	{"gfx1151", 5}, // ROCm >= 6.1
	{"gfx1200", 5}, // ROCm >= 6.2 (RDNA4)
	{"gfx1201", 5}, // ROCm >= 6.2
}

// ptxArches are the PTX targets; the CUDA driver JIT-compiles PTX for its
// GPU, so sm_80 PTX also runs on sm_86/sm_89, and sm_90 PTX on later GPUs.
// sm_90a is Hopper's arch-specific target (wgmma; __CUDA_ARCH_FEAT_SM90_ALL
// in the source): its PTX runs on compute capability 9.0 alone.
var ptxArches = []string{"sm_80", "sm_90", "sm_90a"}

// cubinArches are the PTX arches also shipped as machine code (ptxas's
// cubin of that PTX), so a GPU starts without the driver compiling
// megabytes of PTX at every cold start: sm_80 for compute capability 8.x
// (A100, A10, L4, L40, RTX 30 and 40 series: a plain cubin runs on its
// major revision at or above its minor), sm_90a for the H100 and H200.
// Other GPUs (sm_100 and later) JIT-compile their PTX.
var cubinArches = []string{"sm_80", "sm_90a"}

const manifestName = "manifest.json"

// moduleName is what a source file name may be: it becomes a directory, a
// -cuid and part of the manifest.
var moduleName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

type module struct {
	name     string
	hasCU    bool
	hasMetal bool
}

// discoverModules lists kernels/src/*.cu and *.metal, sorted by name.
func discoverModules(srcDir string) ([]module, error) {
	entries, err := os.ReadDir(srcDir)
	if err != nil {
		return nil, fmt.Errorf("reading kernel sources: %w", err)
	}
	byName := map[string]*module{}
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".cu" && ext != ".metal") {
			continue
		}
		name := strings.TrimSuffix(e.Name(), ext)
		if !moduleName.MatchString(name) {
			return nil, fmt.Errorf("kernel source %s: module name %q must match %s", filepath.Join(srcDir, e.Name()), name, moduleName)
		}
		m := byName[name]
		if m == nil {
			m = &module{name: name}
			byName[name] = m
		}
		if ext == ".cu" {
			m.hasCU = true
		} else {
			m.hasMetal = true
		}
	}
	out := make([]module, 0, len(byName))
	for _, m := range byName {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	if len(out) == 0 {
		return nil, fmt.Errorf("no kernel sources (*.cu, *.metal) in %s", srcDir)
	}
	return out, nil
}

// artifactJob is one file to produce.
type artifactJob struct {
	module string
	format manifest.Format
	arch   string
	cov    int
	rel    string   // path under the output directory, slash-separated
	args   []string // clang arguments without -o
	source string   // a cubin's PTX, under the output directory
}

// hipArgs compiles src/M.cu for one AMDGPU processor into a raw code object.
func hipArgs(m string, t amdTarget) []string {
	return []string{
		"-x", "hip", "--offload-arch=" + t.arch, "--cuda-device-only", "--no-gpu-bundle-output",
		"-nogpuinc", "-nogpulib", "-nostdinc", "-std=c++17", "-O3", "-Wall",
		fmt.Sprintf("-mcode-object-version=%d", t.cov),
		"-cuid=hipgo_" + m, // fixed: otherwise clang derives it from the path and time
		"src/" + m + ".cu",
	}
}

// cudaArgs compiles src/M.cu to PTX for one arch (-S: there is no ptxas).
func cudaArgs(m, sm string) []string {
	return []string{
		"-x", "cuda", "--cuda-gpu-arch=" + sm, "--cuda-device-only",
		"-nocudainc", "-nocudalib", "-nostdinc", "-std=c++17", "-O3", "-Wall", "-S",
		"src/" + m + ".cu",
	}
}

func plan(mods []module) []artifactJob {
	var jobs []artifactJob
	for _, m := range mods {
		if !m.hasCU {
			continue
		}
		for _, t := range amdTargets {
			jobs = append(jobs, artifactJob{module: m.name, format: manifest.FormatHSACO, arch: t.arch, cov: t.cov,
				rel: m.name + "/" + t.arch + ".hsaco", args: hipArgs(m.name, t)})
		}
		for _, sm := range ptxArches {
			jobs = append(jobs, artifactJob{module: m.name, format: manifest.FormatPTX, arch: sm,
				rel: m.name + "/" + sm + ".ptx", args: cudaArgs(m.name, sm)})
		}
	}
	return jobs
}

// cubinPlan is the ptxas jobs, run once the PTX they read is built.
func cubinPlan(mods []module) []artifactJob {
	var jobs []artifactJob
	for _, m := range mods {
		if !m.hasCU {
			continue
		}
		for _, sm := range cubinArches {
			jobs = append(jobs, artifactJob{module: m.name, format: manifest.FormatCubin, arch: sm,
				rel: m.name + "/" + sm + ".cubin", source: m.name + "/" + sm + ".ptx"})
		}
	}
	return jobs
}

// buildTree builds every artifact and the manifest into outDir, which must
// be empty or absent. Warnings from clang go to log.
func buildTree(ctx context.Context, tc *toolchain, pa *ptxas, kernelsDir, outDir string, log io.Writer) error {
	kernelsDir, err := filepath.Abs(kernelsDir)
	if err != nil {
		return err
	}
	outDir, err = filepath.Abs(outDir)
	if err != nil {
		return err
	}
	mods, err := discoverModules(filepath.Join(kernelsDir, "src"))
	if err != nil {
		return err
	}
	for _, m := range mods {
		if err := os.MkdirAll(filepath.Join(outDir, m.name), 0o755); err != nil {
			return err
		}
	}
	jobs := plan(mods)

	warns := make([]string, len(jobs))
	err = runAll(len(jobs), func(i int) (err error) {
		j := jobs[i]
		args := append(append([]string(nil), j.args[:len(j.args)-1]...),
			"-o", filepath.Join(outDir, filepath.FromSlash(j.rel)), j.args[len(j.args)-1])
		warns[i], err = tc.run(ctx, kernelsDir, args)
		return err
	})
	for i, w := range warns {
		if w = strings.TrimSpace(w); w != "" {
			fmt.Fprintf(log, "kernelc: %s (%s): %s\n", jobs[i].module, jobs[i].arch, w)
		}
	}
	if err != nil {
		return err
	}
	cubins := cubinPlan(mods)
	if err := runAll(len(cubins), func(i int) error {
		j := cubins[i]
		return pa.run(ctx, j.arch, filepath.Join(outDir, filepath.FromSlash(j.source)), filepath.Join(outDir, filepath.FromSlash(j.rel)))
	}); err != nil {
		return err
	}

	man := &manifest.Manifest{Schema: manifest.Schema, Toolchain: tc.version, Artifacts: []manifest.Artifact{}}
	if len(cubins) > 0 {
		man.CubinToolchain = pa.version
	}
	byPath := map[string]manifest.Artifact{}
	for _, j := range append(jobs, cubins...) {
		a, err := describe(outDir, j, byPath)
		if err != nil {
			return err
		}
		byPath[a.Path] = a
		man.Artifacts = append(man.Artifacts, a)
	}
	for _, m := range mods {
		if !m.hasMetal {
			continue
		}
		rel := m.name + "/metal.metal"
		src, err := os.ReadFile(filepath.Join(kernelsDir, "src", m.name+".metal"))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(outDir, filepath.FromSlash(rel)), src, 0o644); err != nil {
			return err
		}
		sig, err := msl.Parse(src)
		if err != nil {
			return fmt.Errorf("%s.metal: %w", m.name, err)
		}
		man.Artifacts = append(man.Artifacts, manifest.Artifact{
			Module: m.name, Format: manifest.FormatMSL, Arch: manifest.MSLArch, Path: rel,
			Size: len(src), SHA256: digest(src), Kernels: manifest.FromMSL(sig),
		})
	}
	if err := checkConsistent(man); err != nil {
		return err
	}
	enc, err := man.Encode()
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(outDir, manifestName), enc, 0o644)
}

// runAll runs job(0) to job(n-1), as many at once as there are CPUs (the
// compilers are single-threaded), and joins their errors.
func runAll(n int, job func(i int) error) error {
	errs := make([]error, n)
	sem := make(chan struct{}, runtime.NumCPU())
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = job(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// describe reads a built artifact back and checks it is what was asked for.
// A cubin takes its kernels from its PTX, described before it in built.
func describe(outDir string, j artifactJob, built map[string]manifest.Artifact) (manifest.Artifact, error) {
	b, err := os.ReadFile(filepath.Join(outDir, filepath.FromSlash(j.rel)))
	if err != nil {
		return manifest.Artifact{}, err
	}
	a := manifest.Artifact{Module: j.module, Format: j.format, Arch: j.arch, Path: j.rel, Size: len(b), SHA256: digest(b)}
	switch j.format {
	case manifest.FormatHSACO:
		f, err := codeobj.Parse(b)
		if err != nil {
			return a, fmt.Errorf("built %s: %w", j.rel, err)
		}
		if f.Processor != j.arch || f.CodeObjectVersion != j.cov {
			return a, fmt.Errorf("built %s is %s code object v%d, want %s v%d", j.rel, f.Processor, f.CodeObjectVersion, j.arch, j.cov)
		}
		a.CodeObjectVersion, a.Target, a.Kernels = f.CodeObjectVersion, f.Target, manifest.FromCodeObject(f)
	case manifest.FormatPTX:
		m, err := ptx.Parse(b)
		if err != nil {
			return a, fmt.Errorf("built %s: %w", j.rel, err)
		}
		if m.Target != j.arch {
			return a, fmt.Errorf("built %s has .target %s, want %s", j.rel, m.Target, j.arch)
		}
		a.Target, a.PTXVersion, a.Kernels = m.Target, m.Version, manifest.FromPTX(m)
	case manifest.FormatCubin:
		f, err := cubin.Parse(b)
		if err != nil {
			return a, fmt.Errorf("built %s: %w", j.rel, err)
		}
		src, ok := built[j.source]
		if !ok {
			return a, fmt.Errorf("built %s: its PTX %s is not described", j.rel, j.source)
		}
		if err := manifest.CubinMatches(f, src); err != nil {
			return a, fmt.Errorf("built %s: %w", j.rel, err)
		}
		a.Target, a.Source, a.Kernels = f.Arch(), j.source, src.Clone().Kernels
	}
	return a, nil
}

// checkConsistent requires every compiled artifact of a module to expose the
// same kernels with the same explicit parameter sizes: one source, one
// calling convention, whatever the target.
func checkConsistent(m *manifest.Manifest) error {
	type sig struct {
		from   string
		params []int
	}
	ref := map[string]map[string]sig{} // module -> kernel -> signature
	first := map[string]string{}       // module -> first artifact path
	var mslArtifacts []manifest.Artifact
	for _, a := range m.Artifacts {
		if a.Format == manifest.FormatMSL {
			mslArtifacts = append(mslArtifacts, a)
			continue
		}
		got := map[string]sig{}
		for _, k := range a.Kernels {
			var sizes []int
			for _, p := range k.ExplicitParams() {
				sizes = append(sizes, p.Size)
			}
			got[k.Name] = sig{a.Path, sizes}
		}
		want, ok := ref[a.Module]
		if !ok {
			ref[a.Module], first[a.Module] = got, a.Path
			continue
		}
		for name := range want {
			if _, ok := got[name]; !ok {
				return fmt.Errorf("%s lacks kernel %s that %s has", a.Path, name, first[a.Module])
			}
		}
		for name, s := range got {
			w, ok := want[name]
			if !ok {
				return fmt.Errorf("%s has kernel %s that %s lacks", a.Path, name, first[a.Module])
			}
			if fmt.Sprint(w.params) != fmt.Sprint(s.params) {
				return fmt.Errorf("kernel %s: parameter sizes %v in %s but %v in %s", name, s.params, a.Path, w.params, w.from)
			}
		}
	}
	// An MSL kernel binds buffer i to argument i of its .cu twin, so it must
	// take the same sizes (a .cu kernel without an MSL twin has no Metal port).
	for _, a := range mslArtifacts {
		want, ok := ref[a.Module]
		if !ok {
			continue
		}
		for _, k := range a.Kernels {
			w, ok := want[k.Name]
			if !ok {
				return fmt.Errorf("%s has kernel %s that %s lacks", a.Path, k.Name, first[a.Module])
			}
			var sizes []int
			for _, p := range k.Params {
				sizes = append(sizes, p.Size)
			}
			if fmt.Sprint(w.params) != fmt.Sprint(sizes) {
				return fmt.Errorf("kernel %s: parameter sizes %v in %s but %v in %s", k.Name, sizes, a.Path, w.params, w.from)
			}
		}
	}
	return nil
}
