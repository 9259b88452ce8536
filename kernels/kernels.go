package kernels

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"

	"github.com/hipgo/hipgo/kernels/manifest"
)

//go:embed build
var buildFS embed.FS

// Format is an artifact format.
type Format = manifest.Format

// The artifact formats.
const (
	FormatHSACO = manifest.FormatHSACO
	FormatPTX   = manifest.FormatPTX
	FormatMSL   = manifest.FormatMSL
	FormatCubin = manifest.FormatCubin
)

// Artifact describes one shipped file; KernelInfo and Param describe the
// kernels in it (see package manifest for every field).
type (
	Artifact   = manifest.Artifact
	KernelInfo = manifest.KernelInfo
	Param      = manifest.Param
)

var (
	// ErrNoBinary: the module ships no artifact that runs on this arch.
	ErrNoBinary = errors.New("no kernel binary for this device")
	// ErrUnknownModule: no module of that name is shipped.
	ErrUnknownModule = errors.New("unknown kernel module")
	// ErrUnknownFormat: the format is not hsaco, ptx, cubin or msl.
	ErrUnknownFormat = errors.New("unknown kernel format")
	// ErrCorrupt: the embedded artifacts do not match their manifest. The
	// package tests rule it out for a committed build.
	ErrCorrupt = errors.New("embedded kernel artifacts are corrupt")
)

// NoBinaryError says which arches a module does ship for a format.
type NoBinaryError struct {
	Module  string
	Format  Format
	Arch    string
	Shipped []string
}

func (e *NoBinaryError) Error() string {
	shipped := "none"
	if len(e.Shipped) > 0 {
		shipped = strings.Join(e.Shipped, ", ")
	}
	return fmt.Sprintf("kernels: module %q has no %s binary for %q (shipped: %s)", e.Module, e.Format, e.Arch, shipped)
}

// Is makes errors.Is(err, ErrNoBinary) true.
func (e *NoBinaryError) Is(target error) bool { return target == ErrNoBinary }

var loaded struct {
	once sync.Once
	man  *manifest.Manifest
	err  error
}

func embedded() (*manifest.Manifest, error) {
	loaded.once.Do(func() {
		b, err := buildFS.ReadFile("build/manifest.json")
		if err != nil {
			loaded.err = fmt.Errorf("kernels: %w: %w", ErrCorrupt, err)
			return
		}
		m, err := manifest.Parse(b)
		if err != nil {
			loaded.err = fmt.Errorf("kernels: %w: build/manifest.json: %w", ErrCorrupt, err)
			return
		}
		loaded.man = m
	})
	return loaded.man, loaded.err
}

// Manifest returns a copy of the embedded manifest.
func Manifest() (*manifest.Manifest, error) {
	m, err := embedded()
	if err != nil {
		return nil, err
	}
	return m.Clone(), nil
}

// Modules lists the shipped kernel modules, sorted.
func Modules() ([]string, error) {
	m, err := embedded()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, a := range m.Artifacts {
		if !seen[a.Module] {
			seen[a.Module] = true
			out = append(out, a.Module)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Resolve returns the artifact Load would return for a device, without
// reading it. The arch rules are in the package documentation.
func Resolve(module string, format Format, arch string) (Artifact, error) {
	m, err := embedded()
	if err != nil {
		return Artifact{}, err
	}
	switch format {
	case FormatHSACO, FormatPTX, FormatCubin, FormatMSL:
	default:
		return Artifact{}, fmt.Errorf("kernels: %w %q (want %s, %s, %s or %s)", ErrUnknownFormat, format, FormatHSACO, FormatPTX, FormatCubin, FormatMSL)
	}
	var cands []Artifact
	known := false
	for _, a := range m.Artifacts {
		if a.Module != module {
			continue
		}
		known = true
		if a.Format == format {
			cands = append(cands, a)
		}
	}
	if !known {
		mods, _ := Modules()
		return Artifact{}, fmt.Errorf("kernels: %w %q (shipped: %s)", ErrUnknownModule, module, strings.Join(mods, ", "))
	}
	noBinary := func() error {
		e := &NoBinaryError{Module: module, Format: format, Arch: arch}
		for _, a := range cands {
			e.Shipped = append(e.Shipped, a.Arch)
		}
		return e
	}
	switch format {
	case FormatMSL:
		if len(cands) == 1 {
			return cands[0].Clone(), nil
		}
	case FormatHSACO:
		proc := amdProcessor(arch)
		for _, a := range cands {
			if a.Arch == proc {
				return a.Clone(), nil
			}
		}
	case FormatPTX:
		if i := closestSM(cands, arch, false); i >= 0 {
			return cands[i].Clone(), nil
		}
	case FormatCubin:
		// Machine code runs on the compute capabilities NVIDIA guarantees:
		// an arch-specific cubin (sm_90a) on its own SM alone, a plain one
		// (sm_80) on its major revision at or above its minor (sm_86,
		// sm_89), never across majors. Only a device that names an SM takes
		// one (no "compute_90", no family "sm_100f").
		if !plainSM(arch) {
			break
		}
		if i := closestSM(cands, arch, true); i >= 0 {
			return cands[i].Clone(), nil
		}
	}
	return Artifact{}, noBinary()
}

// Load returns the image to hand to the driver (hipModuleLoadData,
// cuModuleLoadData, newLibraryWithSource) and the launch facts of each
// kernel in it, for a device of the given arch. The slices are the caller's
// own copies. An arch the module does not ship gives a *NoBinaryError.
func Load(module string, format Format, arch string) ([]byte, []KernelInfo, error) {
	a, err := Resolve(module, format, arch)
	if err != nil {
		return nil, nil, err
	}
	image, err := fs.ReadFile(buildFS, "build/"+a.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("kernels: %w: %s is in the manifest but not embedded: %w", ErrCorrupt, a.Path, err)
	}
	if len(image) != a.Size {
		return nil, nil, fmt.Errorf("kernels: %w: %s is %d bytes, the manifest says %d", ErrCorrupt, a.Path, len(image), a.Size)
	}
	return image, a.Kernels, nil
}

// closestSM is the index in cands of the NVIDIA artifact a device of arch
// takes, or -1: the highest sm not above the device's, ranked sm*2, +1 for
// an arch-specific artifact, which only a device of exactly that sm may
// take ("sm_90" or "sm_90a" for sm_90a); with sameMajor (machine code) only
// an sm of the device's major revision.
func closestSM(cands []Artifact, arch string, sameMajor bool) int {
	want, ok := smNumber(arch)
	if !ok {
		return -1
	}
	best, bestRank := -1, -1
	for i, a := range cands {
		sm, ok := smNumber(a.Arch)
		if !ok || sm > want || sameMajor && sm/10 != want/10 {
			continue
		}
		rank := 2 * sm
		if archSpecific(a.Arch) {
			if sm != want || !plainSM(arch) {
				continue
			}
			rank++
		}
		if rank > bestRank {
			best, bestRank = i, rank
		}
	}
	return best
}

// amdProcessor reduces an AMDGPU target id ("gfx90a:sramecc+:xnack-",
// "amdgcn-amd-amdhsa--gfx1100") to its processor name. The shipped code
// objects leave xnack and sramecc unspecified ("any"), so they load under
// either setting.
func amdProcessor(arch string) string {
	s := strings.ToLower(strings.TrimSpace(arch))
	s = strings.TrimPrefix(s, "amdgcn-amd-amdhsa--")
	if i := strings.IndexByte(s, ':'); i >= 0 {
		s = s[:i]
	}
	return s
}

// archSpecific: an "a" target ("sm_90a"), whose PTX runs on that compute
// capability alone.
func archSpecific(arch string) bool {
	s := strings.ToLower(strings.TrimSpace(arch))
	return strings.HasPrefix(s, "sm_") && strings.HasSuffix(s, "a")
}

// GenericArch is the arch that resolves to the generic PTX of an
// arch-specific target's sm ("sm_90a" -> "compute_90", which gets sm_90),
// or "" for any other arch: what to load where a driver refuses the
// arch-specific PTX.
func GenericArch(arch string) string {
	if !archSpecific(arch) {
		return ""
	}
	sm, ok := smNumber(arch)
	if !ok {
		return ""
	}
	return fmt.Sprintf("compute_%d", sm)
}

// plainSM: a device arch that names one GPU generation exactly ("sm_90",
// "sm_90a"), not a family ("sm_100f") or generic PTX ("compute_90").
func plainSM(arch string) bool {
	s := strings.ToLower(strings.TrimSpace(arch))
	return strings.HasPrefix(s, "sm_") && !strings.HasSuffix(s, "f")
}

// smNumber reads the compute capability of "sm_90", "sm_90a", "sm_100f" or
// "compute_90" as 90, 90, 100, 90.
func smNumber(arch string) (int, bool) {
	s := strings.ToLower(strings.TrimSpace(arch))
	switch {
	case strings.HasPrefix(s, "sm_"):
		s = s[3:]
	case strings.HasPrefix(s, "compute_"):
		s = s[8:]
	default:
		return 0, false
	}
	s = strings.TrimRight(s, "af") // arch- and family-specific variants
	if s == "" || len(s) > 4 {
		return 0, false
	}
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n >= 10
}
