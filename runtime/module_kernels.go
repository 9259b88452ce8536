package runtime

import (
	"errors"
	"fmt"

	"github.com/hipgo/hipgo/kernels"
)

// ErrNoBinary: the kernels package ships no binary for this device's arch
// (the *kernels.NoBinaryError lists the arches shipped).
var ErrNoBinary = kernels.ErrNoBinary

// LoadModule loads one of the embedded kernel modules (package kernels),
// choosing the artifact for the device's arch, and describes each kernel from
// the artifact's metadata so every launch can be checked against it.
//
// On a CUDA GPU for which the module ships a cubin (machine code that runs
// on its SM: sm_90a for the H100 and H200, sm_80 for compute capability
// 8.x; package kernels has the rules) it loads the cubin, so the driver
// compiles nothing; where the driver refuses it (a driver older than the
// ptxas that built it), or EnvCUDAJIT is "1", it loads the PTX, which the
// driver compiles (cached by the driver across runs). Where the chosen PTX is
// arch-specific (sm_90a PTX, PTX ISA 8.0) and the driver refuses it (a driver
// older than CUDA 12.0), it loads the generic PTX of the same sm instead.
// Module.Target and Module.Format say which was loaded.
func (d *Device) LoadModule(name string) (*Module, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	arch := d.info.Target
	if arch == "" {
		arch = d.info.Arch
	}
	format := kernels.Format(d.info.Format)
	var refused error // the cubin's load failure, kept if the PTX fails too
	if format == kernels.FormatPTX && !d.cudaJIT {
		m, _, err := d.loadArtifact(name, kernels.FormatCubin, arch)
		if err == nil {
			return m, nil
		}
		if !errors.Is(err, kernels.ErrNoBinary) {
			refused = err
		}
	}
	m, target, err := d.loadArtifact(name, format, arch)
	if generic := kernels.GenericArch(target); err != nil && generic != "" {
		m2, _, err2 := d.loadArtifact(name, format, generic)
		if err2 == nil {
			return m2, nil
		}
		err = errors.Join(err, err2)
	}
	if err != nil && refused != nil {
		err = errors.Join(refused, err)
	}
	return m, err
}

// loadArtifact loads module name's artifact of format for arch and returns
// it with the artifact's own arch ("" when none was chosen).
func (d *Device) loadArtifact(name string, format kernels.Format, arch string) (*Module, string, error) {
	a, err := kernels.Resolve(name, format, arch)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", d.label, err)
	}
	image, infos, err := kernels.Load(name, format, arch)
	if err != nil {
		return nil, a.Arch, fmt.Errorf("%s: %w", d.label, err)
	}
	specs := make([]KernelSpec, 0, len(infos))
	for _, ki := range infos {
		specs = append(specs, specFromInfo(ki))
	}
	m, err := d.LoadImage(image, specs)
	if err != nil {
		return nil, a.Arch, err
	}
	m.target, m.format = a.Arch, a.Format
	return m, a.Arch, nil
}

// Target is the arch of the embedded artifact LoadModule loaded ("sm_90a",
// "sm_80", "gfx942", "metal"), or "" for a module from LoadImage.
func (m *Module) Target() string { return m.target }

// Format is the format of the embedded artifact LoadModule loaded: "cubin"
// where the driver took machine code, "ptx" where it compiled PTX, "hsaco"
// or "msl"; "" for a module from LoadImage.
func (m *Module) Format() kernels.Format { return m.format }

// specFromInfo keeps what launches are checked against. Hidden arguments
// (code object v5) are left out: the HIP runtime fills them itself.
func specFromInfo(ki kernels.KernelInfo) KernelSpec {
	s := KernelSpec{Name: ki.Name, MaxThreads: ki.MaxThreadsPerBlock, StaticShared: ki.StaticShared}
	for _, p := range ki.ExplicitParams() {
		s.Params = append(s.Params, ParamSpec{Offset: p.Offset, Size: p.Size, Pointer: p.Kind == "global_buffer"})
	}
	return s
}
