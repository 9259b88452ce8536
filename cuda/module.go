package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"unsafe"

	"github.com/hipgo/hipgo/internal/dynlib"
)

// Module is a CUmodule: loaded device code.
type Module uintptr

// Function is a CUfunction: one kernel of a Module.
type Function uintptr

// FuncAttribute is a CUfunction_attribute for Function.Attribute and
// Function.SetAttribute.
type FuncAttribute int32

// CUfunction_attribute values, checked against cuda.h 13.0 (cuda-python
// cydriver.pxd.in 13.0.0 and cudarc cuda-13000 agree).
const (
	FuncMaxThreadsPerBlock            FuncAttribute = 0
	FuncSharedSizeBytes               FuncAttribute = 1
	FuncConstSizeBytes                FuncAttribute = 2
	FuncLocalSizeBytes                FuncAttribute = 3
	FuncNumRegs                       FuncAttribute = 4
	FuncPtxVersion                    FuncAttribute = 5
	FuncBinaryVersion                 FuncAttribute = 6
	FuncCacheModeCA                   FuncAttribute = 7
	FuncMaxDynamicSharedSizeBytes     FuncAttribute = 8
	FuncPreferredSharedMemoryCarveout FuncAttribute = 9
)

// CUjit_option values used by ModuleLoadDataEx, checked against cuda.h 13.0
// (cuda-python cydriver.pxd.in 13.0.0 and cudarc cuda-13000 agree).
const (
	jitInfoLogBuffer           int32 = 3
	jitInfoLogBufferSizeBytes  int32 = 4
	jitErrorLogBuffer          int32 = 5
	jitErrorLogBufferSizeBytes int32 = 6
)

const (
	jitLogBufferBytes = 16 << 10
	// maxKernelParams bounds the probing in Params: far above what fits in
	// the 32764-byte parameter space of a kernel.
	maxKernelParams        = 32768
	paramInfoSince         = "CUDA 12.4"
	funcGetParamInfoSymbol = "cuFuncGetParamInfo"
	// Image magics: a cubin is ELF; a fatbin starts with 0xBA55ED50 (little endian).
	elfMagic    = "\x7fELF"
	fatbinMagic = "\x50\xed\x55\xba"
)

// moduleAPI: loading code and inspecting kernels.
type moduleAPI struct {
	// CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
	//                             CUjit_option *options, void **optionValues);
	cuModuleLoadDataEx func(m *Module, image unsafe.Pointer, n uint32, opts *int32, vals *uintptr) Code
	// CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name);
	cuModuleGetFunction func(f *Function, m Module, name *byte) Code
	// CUresult cuModuleUnload(CUmodule hmod);
	cuModuleUnload func(m Module) Code
	// CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc);
	cuFuncGetAttribute func(v *int32, a FuncAttribute, f Function) Code
	// CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value);
	// (CUDA 9.0+, so required.)
	cuFuncSetAttribute func(f Function, a FuncAttribute, v int32) Code
	// Optional (driver 12.4+; absent on 535/12.2, anchors.md §3):
	// CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset, size_t *paramSize);
	cuFuncGetParamInfo func(f Function, i uintptr, off, size *uintptr) Code
}

func (a *moduleAPI) bind() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"cuModuleLoadDataEx"}, Fn: &a.cuModuleLoadDataEx},
		{Names: []string{"cuModuleGetFunction"}, Fn: &a.cuModuleGetFunction},
		{Names: []string{"cuModuleUnload"}, Fn: &a.cuModuleUnload},
		{Names: []string{"cuFuncGetAttribute"}, Fn: &a.cuFuncGetAttribute},
		{Names: []string{"cuFuncSetAttribute"}, Fn: &a.cuFuncSetAttribute},
		{Names: []string{funcGetParamInfoSymbol}, Fn: &a.cuFuncGetParamInfo, Since: paramInfoSince},
	}
}

// errEmptyImage is returned for an empty module image, before the driver.
var errEmptyImage = fmt.Errorf("cuda: empty module image: %w", ErrInvalidValue)

// prepareImage returns the bytes to hand to cuModuleLoadDataEx. Cubin (ELF)
// and fatbin images go as they are; anything else is taken for PTX text,
// which the driver reads up to a NUL, so one is appended when absent.
func prepareImage(image []byte) ([]byte, error) {
	if len(image) == 0 {
		return nil, errEmptyImage
	}
	if bytes.HasPrefix(image, []byte(elfMagic)) || bytes.HasPrefix(image, []byte(fatbinMagic)) {
		return image, nil
	}
	if image[len(image)-1] == 0 {
		return image, nil
	}
	out := make([]byte, len(image)+1)
	copy(out, image)
	return out, nil
}

// ModuleLoadData loads a cubin, fatbin or PTX image into the current context
// (PTX is JIT-compiled for the device). On failure the *Error carries the
// driver's JIT error log.
func ModuleLoadData(image []byte) (Module, error) {
	m, _, err := ModuleLoadDataEx(image)
	return m, err
}

// ModuleLoadDataEx is ModuleLoadData that also returns the JIT info log
// (empty for clean PTX). It uses cuModuleLoadDataEx with 16 KiB info and error
// log buffers; their sizes travel by value in the option-value slots and come
// back as the bytes written.
func ModuleLoadDataEx(image []byte) (Module, string, error) {
	d, err := api()
	if err != nil {
		return 0, "", err
	}
	img, err := prepareImage(image)
	if err != nil {
		return 0, "", err
	}
	info := make([]byte, jitLogBufferBytes)
	errLog := make([]byte, jitLogBufferBytes)
	opts := []int32{jitInfoLogBuffer, jitInfoLogBufferSizeBytes, jitErrorLogBuffer, jitErrorLogBufferSizeBytes}
	vals := []uintptr{
		uintptr(unsafe.Pointer(&info[0])), uintptr(len(info)),
		uintptr(unsafe.Pointer(&errLog[0])), uintptr(len(errLog)),
	}
	// The driver writes into the log buffers through pointers stored as
	// integers, so nothing else keeps them in place: pin them for the call.
	var pin runtime.Pinner
	pin.Pin(&info[0])
	pin.Pin(&errLog[0])
	pin.Pin(&img[0])
	var m Module
	c := d.cuModuleLoadDataEx(&m, unsafe.Pointer(&img[0]), uint32(len(opts)), &opts[0], &vals[0])
	pin.Unpin()
	runtime.KeepAlive(img)
	infoLog := logText(info, vals[1])
	if c != Success {
		return 0, infoLog, &Error{Call: "cuModuleLoadDataEx", Code: c, Log: logText(errLog, vals[3])}
	}
	return m, infoLog, nil
}

// logText reads a JIT log buffer: written holds the size slot as returned
// (the driver stores an unsigned int there), capped to the buffer.
func logText(buf []byte, written uintptr) string {
	n := int(uint32(written))
	if n > len(buf) || n < 0 {
		n = len(buf)
	}
	return strings.TrimRight(bufString(buf[:n]), "\n ")
}

// Function returns the kernel called name (its mangled name for C++ kernels).
// A missing kernel is an *Error with ErrNotFound.
func (m Module) Function(name string) (Function, error) {
	d, err := api()
	if err != nil {
		return 0, err
	}
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		return 0, fmt.Errorf("cuda: kernel name %q is empty or contains NUL: %w", name, ErrInvalidValue)
	}
	cname := cString(name)
	var f Function
	c := d.cuModuleGetFunction(&f, m, &cname[0])
	runtime.KeepAlive(cname)
	if err := check("cuModuleGetFunction", c); err != nil {
		return 0, fmt.Errorf("cuda: kernel %q: %w", name, err)
	}
	return f, nil
}

// Unload unloads the module from the current context.
func (m Module) Unload() error {
	d, err := api()
	if err != nil {
		return err
	}
	return check("cuModuleUnload", d.cuModuleUnload(m))
}

// Attribute returns one attribute of the kernel.
func (f Function) Attribute(a FuncAttribute) (int, error) {
	d, err := api()
	if err != nil {
		return 0, err
	}
	var v int32
	if err := check("cuFuncGetAttribute", d.cuFuncGetAttribute(&v, a, f)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// SetAttribute sets one attribute of the kernel (cuFuncSetAttribute), with
// the kernel's context current. The settable ones are
// FuncMaxDynamicSharedSizeBytes (a launch asking for more dynamic shared
// memory fails; by default static plus dynamic may not pass 48 KiB, and it
// may be raised until static plus dynamic reaches the device's
// MaxSharedMemoryPerBlockOptin) and FuncPreferredSharedMemoryCarveout. The
// driver answers an out-of-range value with ErrInvalidValue; a value outside
// C's int is refused before the call.
func (f Function) SetAttribute(a FuncAttribute, v int) error {
	d, err := api()
	if err != nil {
		return err
	}
	if v < math.MinInt32 || v > math.MaxInt32 {
		return fmt.Errorf("cuda: function attribute %d: value %d does not fit a C int: %w", a, v, ErrInvalidValue)
	}
	return check("cuFuncSetAttribute", d.cuFuncSetAttribute(f, a, int32(v)))
}

// Param is one kernel parameter's place in the argument buffer.
type Param struct {
	Offset, Size uint64
}

// ParamInfoSupported reports whether the loaded driver exports
// cuFuncGetParamInfo (driver 12.4 and later).
func ParamInfoSupported() bool {
	d, err := api()
	return err == nil && d.cuFuncGetParamInfo != nil
}

// ParamInfo returns the offset and size of parameter i (cuFuncGetParamInfo).
// An index past the last parameter is an *Error with ErrInvalidValue. Without
// the entry point it is an *UnavailableError (errors.Is ErrNotSupported).
func (f Function) ParamInfo(i int) (Param, error) {
	d, err := api()
	if err != nil {
		return Param{}, err
	}
	if d.cuFuncGetParamInfo == nil {
		return Param{}, &UnavailableError{Symbol: funcGetParamInfoSymbol, Since: paramInfoSince, Path: d.lib.Path}
	}
	if i < 0 {
		return Param{}, fmt.Errorf("cuda: parameter index %d: %w", i, ErrInvalidValue)
	}
	var off, size uintptr
	if err := check(funcGetParamInfoSymbol, d.cuFuncGetParamInfo(f, uintptr(i), &off, &size)); err != nil {
		return Param{}, err
	}
	return Param{Offset: uint64(off), Size: uint64(size)}, nil
}

// Params returns every parameter of the kernel. The 13.0 driver has no
// cuFuncGetParamCount (anchors.md §3), so it probes indexes until the driver
// answers CUDA_ERROR_INVALID_VALUE.
func (f Function) Params() ([]Param, error) {
	var ps []Param
	for i := 0; i < maxKernelParams; i++ {
		p, err := f.ParamInfo(i)
		if errors.Is(err, ErrInvalidValue) {
			return ps, nil
		}
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return nil, fmt.Errorf("cuda: cuFuncGetParamInfo answered for %d parameters, more than a kernel can take", maxKernelParams)
}
