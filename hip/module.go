package hip

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/hipgo/hipgo/internal/dynlib"
)

// Module is a loaded code object (hipModule_t).
type Module uintptr

// Function is a kernel in a module (hipFunction_t).
type Function uintptr

type moduleAPI struct {
	// hipError_t hipModuleLoadData(hipModule_t* module, const void* image);
	hipModuleLoadData func(m *Module, image unsafe.Pointer) Code
	// hipError_t hipModuleGetFunction(hipFunction_t* function, hipModule_t module, const char* kname);
	hipModuleGetFunction func(f *Function, m Module, name string) Code
	// hipError_t hipModuleUnload(hipModule_t module);
	hipModuleUnload func(m Module) Code
	// hipError_t hipKernelGetParamInfo(hipKernel_t kernel, size_t paramIndex,
	//                                  size_t* paramOffset, size_t* paramSize);
	// Optional: absent from ROCm 5.2 and from CLR through 6.3; CLR casts a
	// hipFunction_t to hipKernel_t, so a Function can be passed.
	hipKernelGetParamInfo func(f Function, index uintptr, offset, size *uintptr) Code
}

// kernelGetParamInfoSince is the release known to export hipKernelGetParamInfo
// (its HIP API-table step is 20; the exact ROCm release is unverified).
const kernelGetParamInfoSince = "ROCm 7.x"

func (a *moduleAPI) funcs() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"hipModuleLoadData"}, Fn: &a.hipModuleLoadData},
		{Names: []string{"hipModuleGetFunction"}, Fn: &a.hipModuleGetFunction},
		{Names: []string{"hipModuleUnload"}, Fn: &a.hipModuleUnload},
		{Names: []string{"hipKernelGetParamInfo"}, Fn: &a.hipKernelGetParamInfo, Since: kernelGetParamInfoSince},
	}
}

// images keeps each loaded module's code-object bytes pinned until unload:
// the runtime may read the image after hipModuleLoadData returns, and Go
// memory that C keeps must be pinned.
var images = struct {
	sync.Mutex
	pins map[Module]*runtime.Pinner
}{pins: map[Module]*runtime.Pinner{}}

// ModuleLoadData loads a code object (a raw AMDGPU ELF or an offload bundle)
// on the current device. No code object for the device's arch gives
// hipErrorNoBinaryForGpu (209). The image stays pinned until ModuleUnload.
func ModuleLoadData(image []byte) (Module, error) {
	a, err := get()
	if err != nil {
		return 0, err
	}
	if len(image) == 0 {
		return 0, fmt.Errorf("hip: ModuleLoadData: empty code object image: %w", ErrInvalidImage)
	}
	p := new(runtime.Pinner)
	p.Pin(&image[0])
	var m Module
	if err := check("hipModuleLoadData", a.hipModuleLoadData(&m, unsafe.Pointer(&image[0]))); err != nil {
		p.Unpin()
		return 0, err
	}
	images.Lock()
	images.pins[m] = p
	images.Unlock()
	return m, nil
}

// ModuleGetFunction finds a kernel by its (unmangled, extern "C") name. A
// name the module lacks gives hipErrorNotFound (500).
func ModuleGetFunction(m Module, name string) (Function, error) {
	a, err := get()
	if err != nil {
		return 0, err
	}
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		return 0, fmt.Errorf("hip: ModuleGetFunction: kernel name %q is empty or contains NUL: %w", name, ErrInvalidValue)
	}
	var f Function
	if err := check("hipModuleGetFunction", a.hipModuleGetFunction(&f, m, name)); err != nil {
		return 0, err
	}
	return f, nil
}

// ModuleUnload unloads a module and, when that succeeds, unpins its image.
func ModuleUnload(m Module) error {
	a, err := get()
	if err != nil {
		return err
	}
	if err := check("hipModuleUnload", a.hipModuleUnload(m)); err != nil {
		return err
	}
	images.Lock()
	p := images.pins[m]
	delete(images.pins, m)
	images.Unlock()
	if p != nil {
		p.Unpin()
	}
	return nil
}

// KernelGetParamInfo returns the byte offset and size of parameter index of
// a kernel, as the code object's metadata describes it; an index past the
// last parameter gives hipErrorInvalidValue, so callers can count
// parameters by probing. Libraries that do not export
// hipKernelGetParamInfo (ROCm 5.2 among them) give an *UnsupportedError
// (errors.Is(err, errors.ErrUnsupported)); the kernel loader then reads the
// code object's own metadata instead.
func KernelGetParamInfo(f Function, index int) (offset, size uintptr, err error) {
	a, err := get()
	if err != nil {
		return 0, 0, err
	}
	if a.hipKernelGetParamInfo == nil {
		return 0, 0, &UnsupportedError{Func: "hipKernelGetParamInfo", Since: kernelGetParamInfoSince, Library: a.path}
	}
	if index < 0 {
		return 0, 0, fmt.Errorf("hip: KernelGetParamInfo: negative parameter index %d: %w", index, ErrInvalidValue)
	}
	if err := check("hipKernelGetParamInfo", a.hipKernelGetParamInfo(f, uintptr(index), &offset, &size)); err != nil {
		return 0, 0, err
	}
	return offset, size, nil
}
