package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/hipgo/hipgo/kernels/codeobj"
	"github.com/hipgo/hipgo/kernels/cubin"
	"github.com/hipgo/hipgo/kernels/manifest"
	"github.com/hipgo/hipgo/kernels/ptx"
)

// repoRoot is the repository root seen from this package's directory.
var repoRoot = filepath.Join("..", "..")

func runKernelc(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// TestDiscoverModules proves modules come from *.cu and *.metal names,
// headers and other files are ignored, and a name that cannot be a module is
// an error naming the file.
func TestDiscoverModules(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"b.cu", "a.cu", "a.metal", "m_only.metal", "portable.h", "notes.txt"} {
		writeFile(t, filepath.Join(dir, f), "")
	}
	mods, err := discoverModules(dir)
	require.NoError(t, err)
	require.Equal(t, []module{{"a", true, true}, {"b", true, false}, {"m_only", false, true}}, mods)

	writeFile(t, filepath.Join(dir, "Bad-Name.cu"), "")
	_, err = discoverModules(dir)
	require.ErrorContains(t, err, "Bad-Name.cu")

	_, err = discoverModules(t.TempDir())
	require.ErrorContains(t, err, "no kernel sources")
}

// TestPlan proves each .cu module gets one job per AMDGPU target and PTX
// arch, with the flags that make the output reproducible and loadable: a
// relative source path, a -cuid fixed per module, raw (unbundled) code
// objects with the chosen code object version, no host headers.
func TestPlan(t *testing.T) {
	jobs := plan([]module{{"k", true, false}, {"metalonly", false, true}})
	require.Len(t, jobs, len(amdTargets)+len(ptxArches))
	seen := map[string]bool{}
	for _, j := range jobs {
		require.Equal(t, "k", j.module)
		require.False(t, seen[j.rel], "duplicate output %s", j.rel)
		seen[j.rel] = true
		args := strings.Join(j.args, " ")
		require.Equal(t, "src/k.cu", j.args[len(j.args)-1], "relative source path, last")
		require.Contains(t, args, "-nostdinc")
		require.Contains(t, args, "-O3")
		switch j.format {
		case manifest.FormatHSACO:
			require.Equal(t, "k/"+j.arch+".hsaco", j.rel)
			require.Contains(t, args, "--offload-arch="+j.arch)
			require.Contains(t, args, "--no-gpu-bundle-output")
			require.Contains(t, args, "-nogpulib")
			require.Contains(t, args, "-cuid=hipgo_k")
			require.Contains(t, args, "-mcode-object-version="+map[int]string{4: "4", 5: "5"}[j.cov])
		case manifest.FormatPTX:
			require.Equal(t, "k/"+j.arch+".ptx", j.rel)
			require.Contains(t, args, "--cuda-gpu-arch="+j.arch)
			require.Contains(t, args, "-nocudalib")
			require.Contains(t, args, " -S ")
		default:
			t.Fatalf("unexpected format %s", j.format)
		}
	}
	for _, arch := range []string{"gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1101", "gfx1102", "gfx1150", "gfx1151", "gfx1200", "gfx1201"} {
		require.True(t, seen["k/"+arch+".hsaco"], arch)
	}
	require.True(t, seen["k/sm_80.ptx"] && seen["k/sm_90.ptx"])
}

// TestDiffAndSyncTrees proves the comparison catches changed, missing and
// extra files, and that syncing makes the trees byte-identical again.
func TestDiffAndSyncTrees(t *testing.T) {
	want, have := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(want, "m/a.bin"), "same")
	writeFile(t, filepath.Join(want, "m/b.bin"), "new")
	writeFile(t, filepath.Join(want, "manifest.json"), "{}")
	writeFile(t, filepath.Join(have, "m/a.bin"), "same")
	writeFile(t, filepath.Join(have, "m/b.bin"), "old")
	writeFile(t, filepath.Join(have, "gone/c.bin"), "stale")

	diffs, err := diffTrees(want, have)
	require.NoError(t, err)
	require.Equal(t, []difference{
		{"gone/c.bin", "not produced by the build"},
		{"m/b.bin", "content differs"},
		{"manifest.json", "missing"},
	}, diffs)

	_, err = syncTree(want, have)
	require.NoError(t, err)
	diffs, err = diffTrees(want, have)
	require.NoError(t, err)
	require.Empty(t, diffs)
	_, err = os.Stat(filepath.Join(have, "gone"))
	require.True(t, os.IsNotExist(err), "the emptied directory is removed")

	diffs, err = diffTrees(want, filepath.Join(have, "absent"))
	require.NoError(t, err)
	require.Len(t, diffs, 3, "an absent tree lacks every file")
}

// TestCheckConsistent proves the build refuses artifacts of one source that
// disagree on kernels or parameter sizes.
func TestCheckConsistent(t *testing.T) {
	art := func(path string, kernels ...manifest.KernelInfo) manifest.Artifact {
		return manifest.Artifact{Module: "m", Format: manifest.FormatHSACO, Path: path, Kernels: kernels}
	}
	k := func(name string, sizes ...int) manifest.KernelInfo {
		ki := manifest.KernelInfo{Name: name}
		for _, s := range sizes {
			ki.Params = append(ki.Params, manifest.Param{Size: s, Kind: "by_value"})
		}
		return ki
	}
	hidden := k("a", 8)
	hidden.Params = append(hidden.Params, manifest.Param{Size: 4, Kind: "hidden_block_count_x"})
	ok := &manifest.Manifest{Artifacts: []manifest.Artifact{art("x", k("a", 8)), art("y", hidden)}}
	require.NoError(t, checkConsistent(ok), "hidden arguments do not count")

	bad := &manifest.Manifest{Artifacts: []manifest.Artifact{art("x", k("a", 8, 4)), art("y", k("a", 8, 8))}}
	require.ErrorContains(t, checkConsistent(bad), "parameter sizes")
	missing := &manifest.Manifest{Artifacts: []manifest.Artifact{art("x", k("a"), k("b")), art("y", k("a"))}}
	require.ErrorContains(t, checkConsistent(missing), "lacks kernel b")
}

// TestMissingCompiler proves a missing clang is a clear error naming the
// Debian packages to install.
func TestMissingCompiler(t *testing.T) {
	t.Setenv("HIPGO_CLANG", "no-such-clang-for-hipgo")
	_, err := findToolchain(context.Background())
	require.ErrorIs(t, err, errToolchain)
	require.ErrorContains(t, err, "apt-get install clang-19 lld-19")

	code, _, stderr := runKernelc(t, "-check", "-root", repoRoot)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "clang-19 and lld-19")
}

// TestMissingOrOtherPTXAS proves a missing ptxas, or one of another
// version (whose cubins would differ), is a clear error naming deps.sh.
func TestMissingOrOtherPTXAS(t *testing.T) {
	t.Setenv("HIPGO_PTXAS", "no-such-ptxas-for-hipgo")
	_, err := findPTXAS(context.Background(), repoRoot)
	require.ErrorIs(t, err, errToolchain)
	require.ErrorContains(t, err, "scripts/deps.sh")

	other := filepath.Join(t.TempDir(), "ptxas")
	require.NoError(t, os.WriteFile(other, []byte("#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.48'\n"), 0o755))
	t.Setenv("HIPGO_PTXAS", other)
	_, err = findPTXAS(context.Background(), repoRoot)
	require.ErrorIs(t, err, errToolchain)
	require.ErrorContains(t, err, "V13.0.48")
	require.ErrorContains(t, err, "want ptxas V12.9.86")

	t.Setenv("HIPGO_PTXAS", "")
	pa, err := findPTXAS(context.Background(), filepath.Join(t.TempDir(), "no-cache-here"))
	require.ErrorIs(t, err, errToolchain, "without HIPGO_PTXAS it is .cache/cuda/ptxas under the root: %v", pa)
}

// TestUsageErrors proves bad command lines exit 2 with a message.
func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"-nosuchflag"}, {"-json"}, {"extra"}, {"-check", "-out", "x"}} {
		code, _, stderr := runKernelc(t, args...)
		require.Equal(t, 2, code, "%v", args)
		require.NotEmpty(t, stderr, "%v", args)
	}
	code, _, stderr := runKernelc(t, "-inspect", filepath.Join(repoRoot, "go.mod"))
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "not PTX")
}

// TestInspect proves -inspect prints what the parsers read: as JSON equal to
// codeobj.Parse / ptx.Parse of the file, and as text naming each kernel.
func TestInspect(t *testing.T) {
	dir := filepath.Join(repoRoot, "kernels", "build", "testkernels")
	hsaco := filepath.Join(dir, "gfx1100.hsaco")
	requireInspectJSON(t, hsaco, codeobj.Parse, func(f *codeobj.File) { f.Metadata = nil })
	code, out, _ := runKernelc(t, "-inspect", hsaco)
	require.Equal(t, 0, code)
	require.Contains(t, out, "kernel bounded_fill_u32")
	require.Contains(t, out, "max 256 threads per block")

	pf := filepath.Join(dir, "sm_90.ptx")
	requireInspectJSON(t, pf, ptx.Parse, nil)
	code, out, _ = runKernelc(t, "-inspect", pf)
	require.Equal(t, 0, code)
	require.Contains(t, out, ".maxntid [256 1 1]")

	cf := filepath.Join(dir, "sm_90a.cubin")
	requireInspectJSON(t, cf, cubin.Parse, nil)
	code, out, _ = runKernelc(t, "-inspect", cf)
	require.Equal(t, 0, code)
	require.Contains(t, out, "NVIDIA cubin for sm_90a (from PTX for compute_90)")
	require.Contains(t, out, "kernel bounded_fill_u32")

	code, out, _ = runKernelc(t, "-inspect", filepath.Join(dir, "sm_80.cubin"))
	require.Equal(t, 0, code)
	require.Contains(t, out, "NVIDIA cubin for sm_80 (from PTX for compute_80)")
	require.Contains(t, out, "kernel bounded_fill_u32")
}

// requireInspectJSON: -inspect path -json prints what parse reads from the
// file (after normalize, where the JSON leaves a field out).
func requireInspectJSON[T any](t *testing.T, path string, parse func([]byte) (*T, error), normalize func(*T)) {
	t.Helper()
	code, out, stderr := runKernelc(t, "-inspect", path, "-json")
	require.Equal(t, 0, code, stderr)
	var got T
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	want, err := parse(b)
	require.NoError(t, err)
	if normalize != nil {
		normalize(want)
	}
	require.Equal(t, *want, got)
}

// copyTree copies the regular files under src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	files, err := listTree(src)
	require.NoError(t, err)
	for rel := range files {
		b, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(rel)))
		require.NoError(t, err)
		writeFile(t, filepath.Join(dst, filepath.FromSlash(rel)), string(b))
	}
}

// TestCheckAndRebuild is CI's check in test form, on a copy of the test
// kernels module in another directory (one module keeps the test short):
// -check lists every damaged, missing and extra file and exits 1; a rebuild
// repairs them; after it the copy's artifacts and manifest entries equal the
// committed ones byte for byte, which also proves the build does not depend
// on the directory it runs in. It needs clang-19, lld-19 and the pinned
// ptxas (scripts/deps.sh).
func TestCheckAndRebuild(t *testing.T) {
	testenv.LookPath(t, "clang-19")
	testenv.LookPath(t, "ld.lld-19")
	t.Setenv("HIPGO_PTXAS", testenv.CacheFile(t, "HIPGO_PTXAS", "cuda/ptxas"))
	root := t.TempDir()
	src := filepath.Join(root, "kernels", "src")
	build := filepath.Join(root, "kernels", "build")
	committed := filepath.Join(repoRoot, "kernels", "build")
	for _, f := range []string{"portable.h", "testkernels.cu"} {
		b, err := os.ReadFile(filepath.Join(repoRoot, "kernels", "src", f))
		require.NoError(t, err)
		writeFile(t, filepath.Join(src, f), string(b))
	}
	copyTree(t, filepath.Join(committed, "testkernels"), filepath.Join(build, "testkernels"))

	hsaco := filepath.Join(build, "testkernels", "gfx1100.hsaco")
	b, err := os.ReadFile(hsaco)
	require.NoError(t, err)
	b[len(b)/2] ^= 1
	require.NoError(t, os.WriteFile(hsaco, b, 0o644))
	require.NoError(t, os.Remove(filepath.Join(build, "testkernels", "sm_80.ptx")))
	cub := filepath.Join(build, "testkernels", "sm_90a.cubin")
	b, err = os.ReadFile(cub)
	require.NoError(t, err)
	b[len(b)/2] ^= 1
	require.NoError(t, os.WriteFile(cub, b, 0o644))
	writeFile(t, filepath.Join(build, "testkernels", "stale.hsaco"), "x")

	code, _, stderr := runKernelc(t, "-check", "-root", root)
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "testkernels/gfx1100.hsaco (content differs)")
	require.Contains(t, stderr, "testkernels/sm_80.ptx (missing)")
	require.Contains(t, stderr, "testkernels/sm_90a.cubin (content differs)")
	require.Contains(t, stderr, "testkernels/stale.hsaco (not produced by the build)")
	require.Contains(t, stderr, "manifest.json (missing)")

	code, stdout, stderr := runKernelc(t, "-root", root)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "updated testkernels/gfx1100.hsaco")
	require.Contains(t, stdout, "ptxas: Cuda compilation tools, release 12.9, V12.9.86", "the rebuild names both tools")
	code, stdout, stderr = runKernelc(t, "-check", "-root", root)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "matches a fresh build (")
	require.Contains(t, stdout, "ptxas: Cuda compilation tools, release 12.9, V12.9.86", "the check names both tools")

	diffs, err := diffTrees(filepath.Join(build, "testkernels"), filepath.Join(committed, "testkernels"))
	require.NoError(t, err)
	require.Empty(t, diffs, "a rebuild elsewhere reproduces the committed testkernels artifacts; if this fails, run go run ./tools/kernelc")
	mine, err := os.ReadFile(filepath.Join(build, manifestName))
	require.NoError(t, err)
	theirs, err := os.ReadFile(filepath.Join(committed, manifestName))
	require.NoError(t, err)
	m1, err := manifest.Parse(mine)
	require.NoError(t, err)
	m2, err := manifest.Parse(theirs)
	require.NoError(t, err)
	require.Equal(t, m2.Toolchain, m1.Toolchain)
	require.Equal(t, m2.CubinToolchain, m1.CubinToolchain)
	var committedTK []manifest.Artifact
	for _, a := range m2.Artifacts {
		if a.Module == "testkernels" {
			committedTK = append(committedTK, a)
		}
	}
	require.Equal(t, committedTK, m1.Artifacts)
}
