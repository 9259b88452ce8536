package runtime

import (
	"fmt"

	"github.com/hipgo/hipgo/kernels"
)

// ErrNoBinary: the kernels package ships no binary for this device's arch
// (the *kernels.NoBinaryError lists the arches shipped).
var ErrNoBinary = kernels.ErrNoBinary

// LoadModule loads one of the embedded kernel modules (package kernels),
// choosing the artifact for the device's arch, and describes each kernel from
// the artifact's metadata so every launch can be checked against it.
func (d *Device) LoadModule(name string) (*Module, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	arch := d.info.Target
	if arch == "" {
		arch = d.info.Arch
	}
	image, infos, err := kernels.Load(name, kernels.Format(d.info.Format), arch)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.label, err)
	}
	specs := make([]KernelSpec, 0, len(infos))
	for _, ki := range infos {
		specs = append(specs, specFromInfo(ki))
	}
	return d.LoadImage(image, specs)
}

// specFromInfo keeps what launches are checked against. Hidden arguments
// (code object v5) are left out: the HIP runtime fills them itself.
func specFromInfo(ki kernels.KernelInfo) KernelSpec {
	s := KernelSpec{Name: ki.Name, MaxThreads: ki.MaxThreadsPerBlock, StaticShared: ki.StaticShared}
	for _, p := range ki.ExplicitParams() {
		s.Params = append(s.Params, ParamSpec{Offset: p.Offset, Size: p.Size, Pointer: p.Kind == "global_buffer"})
	}
	return s
}
