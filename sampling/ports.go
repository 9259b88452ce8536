package sampling

// Backend names a GPU backend family. The values match what the runtime
// reports; anything else (a simulator, a future backend) is a backend with no
// kernel ports.
type Backend string

const (
	BackendROCm  Backend = "rocm"
	BackendCUDA  Backend = "cuda"
	BackendMetal Backend = "metal"
)

// Port is one kernel's build artifact on one backend: the module the kernels
// live in and the kernel (function) names the entry point launches, in launch
// order.
//
//   - ROCm: Module is the code-object name under kernels/ (one HSACO per gfx
//     target; the loader picks the device's arch).
//   - CUDA: Module is the PTX name under kernels/ (sm_80 and sm_90 builds;
//     the driver JIT-compiles).
//   - Metal: Module names the MSL source (kernels/src/<Module>.metal),
//     compiled at run time with newLibraryWithSource, fast math off (the
//     kernels rely on correctly rounded division and no contraction);
//     Threadgroup lists the threadgroup-memory arguments each kernel
//     declares, in bytes per [[threadgroup(n)]] index.
type Port struct {
	Module      string
	Kernels     []string
	Threadgroup map[string][]int
}

// Ports is an entry point's table of ports. A nil entry means "no port".
// Adding a backend means adding a field here and revisiting every table
// (TestPortTablesCoverEveryBackend fails until then).
type Ports struct {
	Entry    string // the direct entry point, e.g. "sampling.GumbelMax"
	Fallback string // what production callers take when there is no port
	ROCm     *Port
	CUDA     *Port
	Metal    *Port
}

// For returns the port for backend b, or nil.
func (p Ports) For(b Backend) *Port {
	switch b {
	case BackendROCm:
		return p.ROCm
	case BackendCUDA:
		return p.CUDA
	case BackendMetal:
		return p.Metal
	}
	return nil
}

// Supported reports whether the entry point has a port for backend b.
func (p Ports) Supported(b Backend) bool { return p.For(b) != nil }

// Entry points.
const (
	EntryGumbelMax = "sampling.GumbelMax"
	EntryRejection = "sampling.Rejection"
)

var (
	gumbelKernels    = []string{"gumbel_max_f32"}
	rejectionKernels = []string{"rejection_f32"}
)

// Metal threadgroup memory (see sampling.metal): the Gumbel kernel takes a
// float[512], a uint[512] and a uint; rejection takes float[1024] x2,
// uint[1024] x2 and uint[4].
var (
	gumbelMetalTG = map[string][]int{
		"gumbel_max_f32": {4 * GumbelThreads, 4 * GumbelThreads, 4},
	}
	rejectionMetalTG = map[string][]int{
		"rejection_f32": {4 * RejectionThreads, 4 * RejectionThreads, 4 * RejectionThreads, 4 * RejectionThreads, 16},
	}
)

// GumbelMaxPorts is the Gumbel-max sampler's port table.
func GumbelMaxPorts() Ports {
	return Ports{
		Entry:    EntryGumbelMax,
		Fallback: "categorical fallback",
		ROCm:     &Port{Module: "sampling", Kernels: gumbelKernels},
		CUDA:     &Port{Module: "sampling", Kernels: gumbelKernels},
		Metal:    &Port{Module: "sampling", Kernels: gumbelKernels, Threadgroup: gumbelMetalTG},
	}
}

// RejectionPorts is the rejection sampler's port table.
func RejectionPorts() Ports {
	return Ports{
		Entry:    EntryRejection,
		Fallback: "argpartition fallback",
		ROCm:     &Port{Module: "sampling", Kernels: rejectionKernels},
		CUDA:     &Port{Module: "sampling", Kernels: rejectionKernels},
		Metal:    &Port{Module: "sampling", Kernels: rejectionKernels, Threadgroup: rejectionMetalTG},
	}
}

func portsFor(entry string) (Ports, bool) {
	switch entry {
	case EntryGumbelMax:
		return GumbelMaxPorts(), true
	case EntryRejection:
		return RejectionPorts(), true
	}
	return Ports{}, false
}

// selectPort is the first thing a direct entry point does: it returns the
// port for backend b, or a *NoKernelPortError naming the entry point, the
// backend and the fallback, before any port-specific code runs.
func selectPort(entry string, b Backend) (*Port, error) {
	p, ok := portsFor(entry)
	if !ok {
		return nil, &NoKernelPortError{Entry: entry, Backend: b, Fallback: "CPU fallback"}
	}
	if port := p.For(b); port != nil {
		return port, nil
	}
	return nil, &NoKernelPortError{Entry: p.Entry, Backend: b, Fallback: p.Fallback}
}
