package runtime

import (
	"fmt"
	"sync"

	"github.com/hipgo/hipgo/kernels"
	"github.com/hipgo/hipgo/runtime/driver"
)

// ParamSpec is one kernel argument as the code object's metadata gives it.
type ParamSpec struct {
	Offset int
	Size   int
	// Pointer is true when the metadata says the argument is a global buffer
	// (HSACO). PTX does not say, so a .u64 PTX parameter accepts either.
	Pointer bool
}

// KernelSpec is what the runtime checks every launch of a kernel against.
type KernelSpec struct {
	Name       string
	Params     []ParamSpec
	MaxThreads int // threads per block the kernel was built for; 0 = the device's limit
	// StaticShared is the bytes of static shared (LDS) memory; it counts
	// with a launch's LaunchConfig.SharedMem against the per-block limits.
	StaticShared int
}

// argBytes is the size of the packed argument block.
func (k KernelSpec) argBytes() int {
	n := 0
	for _, p := range k.Params {
		if end := p.Offset + p.Size; end > n {
			n = end
		}
	}
	return n
}

// Module is a loaded code object.
type Module struct {
	dev    *Device
	drv    driver.Module
	specs  map[string]KernelSpec
	target string // the artifact's arch (LoadModule), "" for LoadImage
	format kernels.Format

	mu       sync.Mutex
	kernels  map[string]*Kernel
	unloaded bool
}

// LoadImage loads a code object (HSACO or PTX, as the device's backend takes)
// whose kernels are described by specs. Kernels missing from specs cannot be
// launched: every launch is checked against its spec.
func (d *Device) LoadImage(image []byte, specs []KernelSpec) (*Module, error) {
	if len(image) == 0 {
		if err := d.usable(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s: empty code object: %w", d.label, ErrInvalidArgument)
	}
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.leave()
	m, err := d.drv.LoadModule(image)
	if err != nil {
		return nil, d.fail("load module", "", err)
	}
	mod := &Module{dev: d, drv: m, specs: map[string]KernelSpec{}, kernels: map[string]*Kernel{}}
	for _, s := range specs {
		mod.specs[s.Name] = s
	}
	d.mu.Lock()
	d.modules = append(d.modules, mod)
	d.mu.Unlock()
	return mod, nil
}

// Kernel returns a kernel of the module, checking its spec against what the
// driver reports about the argument layout when it can.
func (m *Module) Kernel(name string) (*Kernel, error) {
	if err := m.dev.enter(); err != nil {
		return nil, err
	}
	defer m.dev.leave()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.unloaded {
		return nil, fmt.Errorf("module unloaded: %w", ErrClosed)
	}
	if k := m.kernels[name]; k != nil {
		return k, nil
	}
	spec, ok := m.specs[name]
	if !ok {
		return nil, fmt.Errorf("%s: kernel %q has no metadata in this module: %w", m.dev.label, name, ErrInvalidArgument)
	}
	fn, err := m.drv.Function(name)
	if err != nil {
		return nil, m.dev.fail("get function "+name, "", err)
	}
	if pi, ok := fn.(driver.ParamInspector); ok {
		got, known, err := pi.Params()
		if err != nil {
			return nil, m.dev.fail("param info "+name, "", err)
		}
		if known {
			if err := checkLayout(spec, got); err != nil {
				return nil, fmt.Errorf("%s: kernel %s: %w", m.dev.label, name, err)
			}
		}
	}
	k := &Kernel{mod: m, spec: spec, fn: fn}
	m.kernels[name] = k
	return k, nil
}

// checkLayout compares the metadata's layout with the driver's own.
func checkLayout(spec KernelSpec, got []driver.Param) error {
	if len(got) != len(spec.Params) {
		return fmt.Errorf("metadata lists %d parameters, the driver reports %d: %w", len(spec.Params), len(got), ErrInvalidArgument)
	}
	for i, p := range spec.Params {
		if uint64(p.Offset) != got[i].Offset || uint64(p.Size) != got[i].Size {
			return fmt.Errorf("parameter %d: metadata says offset %d size %d, the driver says offset %d size %d: %w",
				i, p.Offset, p.Size, got[i].Offset, got[i].Size, ErrInvalidArgument)
		}
	}
	return nil
}

func (m *Module) unload() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.unloaded {
		return nil
	}
	m.unloaded = true
	return m.drv.Unload()
}

// Kernel is a launchable function of a loaded module.
type Kernel struct {
	mod  *Module
	spec KernelSpec
	fn   driver.Function

	// sharedRaised is the largest dynamic shared memory limit set on fn
	// (driver.SharedMemRaiser), 0 before the first raise. sharedMu makes
	// check-and-raise one step, so the limit only grows and a launch on
	// another stream never finds it lowered under what it checked.
	sharedMu     sync.Mutex
	sharedRaised int
}

// Name is the kernel's symbol name.
func (k *Kernel) Name() string { return k.spec.Name }

// Spec is the metadata launches are checked against.
func (k *Kernel) Spec() KernelSpec { return k.spec }
