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
// the artifact's metadata so every launch can be checked against it. Where
// the chosen artifact is arch-specific (sm_90a PTX, PTX ISA 8.0) and the
// driver refuses it (a driver older than CUDA 12.0), it loads the generic
// PTX of the same sm instead; Module.Target says which.
func (d *Device) LoadModule(name string) (*Module, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	arch := d.info.Target
	if arch == "" {
		arch = d.info.Arch
	}
	m, target, err := d.loadArtifact(name, arch)
	if generic := kernels.GenericArch(target); err != nil && generic != "" {
		m2, _, err2 := d.loadArtifact(name, generic)
		if err2 == nil {
			return m2, nil
		}
		return nil, errors.Join(err, err2)
	}
	return m, err
}

// loadArtifact loads module name's artifact for arch and returns it with
// the artifact's own arch ("" when none was chosen).
func (d *Device) loadArtifact(name, arch string) (*Module, string, error) {
	format := kernels.Format(d.info.Format)
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
	m.target = a.Arch
	return m, a.Arch, nil
}

// Target is the arch of the embedded artifact LoadModule loaded ("sm_90a",
// "sm_80", "gfx942", "metal"), or "" for a module from LoadImage.
func (m *Module) Target() string { return m.target }

// specFromInfo keeps what launches are checked against. Hidden arguments
// (code object v5) are left out: the HIP runtime fills them itself.
func specFromInfo(ki kernels.KernelInfo) KernelSpec {
	s := KernelSpec{Name: ki.Name, MaxThreads: ki.MaxThreadsPerBlock, StaticShared: ki.StaticShared}
	for _, p := range ki.ExplicitParams() {
		s.Params = append(s.Params, ParamSpec{Offset: p.Offset, Size: p.Size, Pointer: p.Kind == "global_buffer"})
	}
	return s
}
