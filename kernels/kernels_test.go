package kernels

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/kernels/codeobj"
	"github.com/hipgo/hipgo/kernels/cubin"
	"github.com/hipgo/hipgo/kernels/manifest"
	"github.com/hipgo/hipgo/kernels/msl"
	"github.com/hipgo/hipgo/kernels/ptx"
)

// The AMDGPU targets and PTX arches every module ships (the project's
// target list in shared/DESIGN.md).
var (
	wantAMD   = []string{"gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1101", "gfx1102", "gfx1150", "gfx1151", "gfx1200", "gfx1201"}
	wantPTX   = []string{"sm_80", "sm_90", "sm_90a"}
	wantCubin = []string{"sm_80", "sm_90a"}
)

// TestManifestMatchesEmbeddedArtifacts proves the manifest is the truth
// about the embedded files: every listed file is embedded with the listed
// size and SHA-256, every embedded file is listed, and the kernel table of
// each artifact equals a fresh parse of its embedded bytes.
func TestManifestMatchesEmbeddedArtifacts(t *testing.T) {
	m, err := Manifest()
	require.NoError(t, err)
	require.NotEmpty(t, m.Toolchain)
	listed := map[string]bool{"build/manifest.json": true}
	for _, a := range m.Artifacts {
		listed["build/"+a.Path] = true
		b, err := fs.ReadFile(buildFS, "build/"+a.Path)
		require.NoError(t, err, a.Path)
		require.Equal(t, a.Size, len(b), a.Path)
		sum := sha256.Sum256(b)
		require.Equal(t, hex.EncodeToString(sum[:]), a.SHA256, a.Path)
		switch a.Format {
		case FormatHSACO:
			f, err := codeobj.Parse(b)
			require.NoError(t, err, a.Path)
			require.Equal(t, a.Arch, f.Processor, a.Path)
			require.Equal(t, f.CodeObjectVersion, a.CodeObjectVersion, a.Path)
			require.Equal(t, f.Target, a.Target, a.Path)
			require.Equal(t, manifest.FromCodeObject(f), a.Kernels, a.Path)
		case FormatPTX:
			p, err := ptx.Parse(b)
			require.NoError(t, err, a.Path)
			require.Equal(t, a.Arch, p.Target, a.Path)
			require.Equal(t, p.Version, a.PTXVersion, a.Path)
			require.Equal(t, manifest.FromPTX(p), a.Kernels, a.Path)
		case FormatCubin:
			f, err := cubin.Parse(b)
			require.NoError(t, err, a.Path)
			var src *manifest.Artifact
			for i := range m.Artifacts {
				if m.Artifacts[i].Path == a.Source {
					src = &m.Artifacts[i]
				}
			}
			require.NotNil(t, src, "%s: its source %s is shipped", a.Path, a.Source)
			require.NoError(t, manifest.CubinMatches(f, *src), a.Path)
			require.Equal(t, a.Arch, f.Arch(), a.Path)
			require.Equal(t, f.Arch(), a.Target, a.Path)
			require.Equal(t, src.Kernels, a.Kernels, "%s: the launch facts of its PTX", a.Path)
		case FormatMSL:
			src, err := os.ReadFile(filepath.Join("src", a.Module+".metal"))
			require.NoError(t, err, "an MSL artifact is a copy of its source")
			require.Equal(t, src, b, a.Path)
			sig, err := msl.Parse(b)
			require.NoError(t, err, a.Path)
			require.Equal(t, manifest.FromMSL(sig), a.Kernels, a.Path)
		}
	}
	err = fs.WalkDir(buildFS, "build", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			require.True(t, listed[p], "%s is embedded but not in the manifest", p)
		}
		return err
	})
	require.NoError(t, err)
}

// TestEveryModuleShipsEveryTarget proves each module built from a .cu
// source has one code object per AMDGPU target and one PTX per arch, and
// that the code object versions are the documented choice (v4 up to gfx1102,
// v5 for gfx1150 and later; see README.md).
func TestEveryModuleShipsEveryTarget(t *testing.T) {
	mods, err := Modules()
	require.NoError(t, err)
	m, err := Manifest()
	require.NoError(t, err)
	require.Contains(t, mods, "testkernels")
	for _, mod := range mods {
		if _, err := os.Stat(filepath.Join("src", mod+".cu")); err != nil {
			continue
		}
		for _, arch := range wantAMD {
			a, err := Resolve(mod, FormatHSACO, arch)
			require.NoError(t, err, "%s %s", mod, arch)
			require.Equal(t, arch, a.Arch)
			wantCOV := 4
			if strings.HasPrefix(arch, "gfx115") || strings.HasPrefix(arch, "gfx12") {
				wantCOV = 5
			}
			require.Equal(t, wantCOV, a.CodeObjectVersion, "%s %s", mod, arch)
		}
		// Resolve gives "sm_90" the arch-specific sm_90a: list what is shipped.
		var ptxArches []string
		for _, a := range m.Artifacts {
			if a.Module == mod && a.Format == FormatPTX {
				ptxArches = append(ptxArches, a.Arch)
			}
		}
		require.ElementsMatch(t, wantPTX, ptxArches, mod)
		var cubinArches []string
		for _, a := range m.Artifacts {
			if a.Module == mod && a.Format == FormatCubin {
				cubinArches = append(cubinArches, a.Arch)
				require.Equal(t, mod+"/"+a.Arch+".ptx", a.Source, "%s: compiled from its own PTX", a.Path)
			}
		}
		require.ElementsMatch(t, wantCubin, cubinArches, mod)
	}
}

// TestArchMatching checks the documented rules for choosing an artifact.
func TestArchMatching(t *testing.T) {
	tests := []struct {
		format Format
		arch   string
		want   string // "" means no binary
	}{
		{FormatHSACO, "gfx90a", "gfx90a"},
		{FormatHSACO, "gfx90a:sramecc+:xnack-", "gfx90a"},
		{FormatHSACO, "gfx942:xnack+", "gfx942"},
		{FormatHSACO, "amdgcn-amd-amdhsa--gfx1100", "gfx1100"},
		{FormatHSACO, "GFX1201", "gfx1201"},
		{FormatHSACO, "gfx1103", ""}, // close to gfx1100, but another ISA
		{FormatHSACO, "gfx906", ""},
		{FormatHSACO, "sm_90", ""},
		{FormatPTX, "sm_90", "sm_90a"},
		{FormatPTX, "sm_90a", "sm_90a"},
		{FormatPTX, "compute_90", "sm_90"},
		{FormatPTX, "sm_91", "sm_90"}, // sm_90a's PTX runs on 9.0 alone
		{FormatPTX, "sm_89", "sm_80"},
		{FormatPTX, "sm_86", "sm_80"},
		{FormatPTX, "sm_80", "sm_80"},
		{FormatPTX, "compute_80", "sm_80"},
		{FormatPTX, "sm_100", "sm_90"},
		{FormatPTX, "sm_120f", "sm_90"},
		{FormatPTX, "sm_90f", "sm_90"},
		{FormatPTX, "sm_75", ""},
		{FormatPTX, "sm_", ""},
		{FormatPTX, "gfx90a", ""},
		{FormatCubin, "sm_90", "sm_90a"},
		{FormatCubin, "sm_90a", "sm_90a"},
		{FormatCubin, "compute_90", ""}, // generic PTX asks for no machine code
		{FormatCubin, "sm_90f", ""},
		{FormatCubin, "sm_91", ""}, // sm_90a's machine code runs on 9.0 alone, sm_80's not across majors
		{FormatCubin, "sm_80", "sm_80"},
		{FormatCubin, "sm_86", "sm_80"}, // a plain cubin runs at or above its minor revision
		{FormatCubin, "sm_87", "sm_80"},
		{FormatCubin, "sm_89", "sm_80"},
		{FormatCubin, "compute_80", ""},
		{FormatCubin, "sm_75", ""},
		{FormatCubin, "sm_100", ""},
		{FormatCubin, "sm_120", ""},
		{FormatCubin, "gfx942", ""},
		{FormatMSL, "apple-m3", ""}, // testkernels has no Metal source
	}
	for _, tc := range tests {
		t.Run(string(tc.format)+"/"+tc.arch, func(t *testing.T) {
			image, info, err := Load("testkernels", tc.format, tc.arch)
			if tc.want == "" {
				require.ErrorIs(t, err, ErrNoBinary)
				var nb *NoBinaryError
				require.ErrorAs(t, err, &nb)
				require.Equal(t, "testkernels", nb.Module)
				require.Equal(t, tc.format, nb.Format)
				require.Equal(t, tc.arch, nb.Arch)
				switch tc.format {
				case FormatHSACO:
					require.ElementsMatch(t, wantAMD, nb.Shipped)
				case FormatPTX:
					require.ElementsMatch(t, wantPTX, nb.Shipped)
				case FormatCubin:
					require.ElementsMatch(t, wantCubin, nb.Shipped)
				default:
					require.Empty(t, nb.Shipped)
				}
				require.Contains(t, err.Error(), tc.arch)
				require.Nil(t, image)
				return
			}
			require.NoError(t, err)
			a, err := Resolve("testkernels", tc.format, tc.arch)
			require.NoError(t, err)
			require.Equal(t, tc.want, a.Arch)
			require.Len(t, image, a.Size)
			require.Equal(t, a.Kernels, info)
		})
	}
}

// TestGenericArchResolvesToTheGenericPTX: an arch-specific target names
// the arch that gets its sm's generic PTX; other arches name none.
func TestGenericArchResolvesToTheGenericPTX(t *testing.T) {
	require.Equal(t, "compute_90", GenericArch("sm_90a"))
	a, err := Resolve("testkernels", FormatPTX, GenericArch("sm_90a"))
	require.NoError(t, err)
	require.Equal(t, "sm_90", a.Arch)
	for _, arch := range []string{"sm_90", "compute_90", "sm_100f", "gfx90a", ""} {
		require.Empty(t, GenericArch(arch), arch)
	}
}

// TestLoadErrors proves unknown modules and formats are typed errors.
func TestLoadErrors(t *testing.T) {
	_, _, err := Load("nosuchmodule", FormatPTX, "sm_90")
	require.ErrorIs(t, err, ErrUnknownModule)
	require.Contains(t, err.Error(), "testkernels", "the error lists what is shipped")
	_, _, err = Load("testkernels", Format("spirv"), "x")
	require.ErrorIs(t, err, ErrUnknownFormat)
	require.False(t, errors.Is(err, ErrNoBinary))
}

// TestLoadReturnsCopies proves a caller cannot change what later Loads see.
func TestLoadReturnsCopies(t *testing.T) {
	image, info, err := Load("testkernels", FormatHSACO, "gfx1100")
	require.NoError(t, err)
	orig := append([]byte(nil), image...)
	image[0] = 0
	info[0].Name = "changed"
	info[0].Params[0].Size = 99
	image2, info2, err := Load("testkernels", FormatHSACO, "gfx1100")
	require.NoError(t, err)
	require.Equal(t, orig, image2)
	require.NotEqual(t, "changed", info2[0].Name)
	require.NotEqual(t, 99, info2[0].Params[0].Size)
}

// TestTestKernelsAgreeAcrossFormats proves the facts the runtime's fault
// tests depend on, on every artifact: bounded_fill_u32 admits at most 256
// threads per block (the driver must reject more), fill_u32 carries no
// bound of its own (1024 on AMDGPU, none in PTX), no test kernel has hidden
// arguments, and the code object and the PTX of each kernel, read by two
// independent parsers, agree on the explicit parameter sizes.
func TestTestKernelsAgreeAcrossFormats(t *testing.T) {
	m, err := Manifest()
	require.NoError(t, err)
	var ref map[string][]int
	for _, a := range m.Artifacts {
		if a.Module != "testkernels" {
			continue
		}
		sizes := map[string][]int{}
		for _, k := range a.Kernels {
			for _, p := range k.Params {
				require.False(t, p.Hidden(), "%s %s has hidden argument %s", a.Path, k.Name, p.Kind)
				sizes[k.Name] = append(sizes[k.Name], p.Size)
			}
			switch {
			case k.Name == "bounded_fill_u32":
				require.Equal(t, 256, k.MaxThreadsPerBlock, a.Path)
			case a.Format == FormatHSACO:
				require.Equal(t, 1024, k.MaxThreadsPerBlock, "%s %s", a.Path, k.Name)
			default:
				require.Equal(t, 0, k.MaxThreadsPerBlock, "%s %s", a.Path, k.Name)
			}
			require.Equal(t, 0, k.StaticShared, "%s %s", a.Path, k.Name)
		}
		if ref == nil {
			ref = sizes
			require.Equal(t, map[string][]int{
				"fill_u32": {8, 4, 4}, "bounded_fill_u32": {8, 4, 4},
				"oob_write_u32": {8, 4, 8}, "spin_ns": {8, 8},
			}, sizes, "parameter sizes of the source's signatures")
			continue
		}
		require.Equal(t, ref, sizes, a.Path)
	}
}
