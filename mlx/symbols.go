package mlx

import (
	"strings"
	"unsafe"

	"github.com/hipgo/hipgo/internal/dynlib"
)

// Handles are one-pointer structs passed and returned by value (mlx_array,
// mlx_closure, mlx_stream, mlx_device, mlx_vector_array, mlx_string, mlx_device_info):
// on the SysV x86-64 and AArch64 ABIs that is exactly a pointer-sized
// integer, so they travel as uintptr. mlx_optional_float ({float; bool}, 8
// bytes, one integer register on both ABIs) travels as uint64.
type library struct {
	dl *dynlib.Library

	setErrorHandler func(handler, data, dtor uintptr)
	version         func(str *uintptr) int32

	stringNew  func() uintptr
	stringData func(s uintptr) *byte
	stringFree func(s uintptr) int32

	arrayNew        func() uintptr
	arrayFree       func(a uintptr) int32
	arrayNewData    func(data unsafe.Pointer, shape *int32, dim int32, dtype int32) uintptr
	arrayNewFloat32 func(v float32) uintptr
	arrayNewInt     func(v int32) uintptr
	arrayNdim       func(a uintptr) uintptr
	arrayShape      func(a uintptr) *int32
	arrayDtype      func(a uintptr) int32
	arraySize       func(a uintptr) uintptr
	arrayNbytes     func(a uintptr) uintptr
	arrayEval       func(a uintptr) int32
	arrayToString   func(s *uintptr, a uintptr) int32
	dataFloat32     func(a uintptr) *float32
	dataInt32       func(a uintptr) *int32
	dataUint32      func(a uintptr) *uint32

	vectorNew    func() uintptr
	vectorAppend func(v, a uintptr) int32
	vectorFree   func(v uintptr) int32
	vectorSize   func(v uintptr) uintptr
	vectorGet    func(res *uintptr, v uintptr, i uintptr) int32

	closureNew            func() uintptr
	closureFree           func(c uintptr) int32
	closureNewFuncPayload func(fun, payload, dtor uintptr) uintptr
	closureApply          func(res *uintptr, c, input uintptr) int32
	compile               func(res *uintptr, fun uintptr, shapeless bool) int32

	eval      func(v uintptr) int32
	asyncEval func(v uintptr) int32

	activeMemory func(res *uintptr) int32
	cacheMemory  func(res *uintptr) int32
	clearCache   func() int32
	memoryLimit  func(res *uintptr) int32
	setMemLimit  func(res *uintptr, limit uintptr) int32

	defaultCPUStream func() uintptr
	defaultGPUStream func() uintptr
	streamNewDevice  func(d uintptr) uintptr
	streamFree       func(s uintptr) int32
	streamToString   func(str *uintptr, s uintptr) int32
	synchronize      func(s uintptr) int32

	deviceNewType    func(typ int32, index int32) uintptr
	deviceFree       func(d uintptr) int32
	deviceToString   func(str *uintptr, d uintptr) int32
	getDefaultDevice func(d *uintptr) int32
	deviceCount      func(count *int32, typ int32) int32
	deviceAvailable  func(avail *bool, d uintptr) int32
	deviceInfoNew    func() uintptr
	deviceInfoGet    func(info *uintptr, d uintptr) int32
	deviceInfoFree   func(info uintptr) int32
	deviceInfoHasKey func(exists *bool, info uintptr, key *byte) int32
	deviceInfoIsStr  func(isString *bool, info uintptr, key *byte) int32
	deviceInfoString func(value **byte, info uintptr, key *byte) int32
	deviceInfoSize   func(value *uintptr, info uintptr, key *byte) int32

	add        func(res *uintptr, a, b, s uintptr) int32
	subtract   func(res *uintptr, a, b, s uintptr) int32
	multiply   func(res *uintptr, a, b, s uintptr) int32
	divide     func(res *uintptr, a, b, s uintptr) int32
	maximum    func(res *uintptr, a, b, s uintptr) int32
	matmul     func(res *uintptr, a, b, s uintptr) int32
	exp        func(res *uintptr, a, s uintptr) int32
	sigmoid    func(res *uintptr, a, s uintptr) int32
	rsqrt      func(res *uintptr, a, s uintptr) int32
	sqrt       func(res *uintptr, a, s uintptr) int32
	square     func(res *uintptr, a, s uintptr) int32
	negative   func(res *uintptr, a, s uintptr) int32
	reshape    func(res *uintptr, a uintptr, shape *int32, n uintptr, s uintptr) int32
	transpose  func(res *uintptr, a uintptr, axes *int32, n uintptr, s uintptr) int32
	takeAxis   func(res *uintptr, a, indices uintptr, axis int32, s uintptr) int32
	concat     func(res *uintptr, arrays uintptr, axis int32, s uintptr) int32
	slice      func(res *uintptr, a uintptr, start *int32, nStart uintptr, stop *int32, nStop uintptr, strides *int32, nStrides uintptr, s uintptr) int32
	astype     func(res *uintptr, a uintptr, dtype int32, s uintptr) int32
	softmax    func(res *uintptr, a uintptr, axis int32, precise bool, s uintptr) int32
	meanAxis   func(res *uintptr, a uintptr, axis int32, keepdims bool, s uintptr) int32
	sumAxis    func(res *uintptr, a uintptr, axis int32, keepdims bool, s uintptr) int32
	argmaxAxis func(res *uintptr, a uintptr, axis int32, keepdims bool, s uintptr) int32
	expandDims func(res *uintptr, a uintptr, axis int32, s uintptr) int32
	zeros      func(res *uintptr, shape *int32, n uintptr, dtype int32, s uintptr) int32
	arange     func(res *uintptr, start, stop, step float64, dtype int32, s uintptr) int32

	fastRMSNorm func(res *uintptr, x, weight uintptr, eps float32, s uintptr) int32
	fastRoPE    func(res *uintptr, x uintptr, dims int32, traditional bool, base uint64, scale float32, offset int32, freqs, s uintptr) int32
	fastSDPA    func(res *uintptr, q, k, v uintptr, scale float32, maskMode *byte, maskArr, sinks, s uintptr) int32
}

// sym is one bound function: its C prototype exactly as mlx-c's header
// declares it (whitespace normalized; TestSymbolTableMatchesHeaders checks
// it against every supported release), the Go func variable purego fills,
// and, for an optional one, the first mlx-c release that has it.
type sym struct {
	proto string
	fn    any
	since string
}

const since050 = "mlx-c 0.5.0 (MLX 0.30.6)"

// syms is the whole table, family by family. (mlx-c declares
// mlx_array_data_float16/bfloat16 only where the compiler has half types,
// aarch64 builds; Data reads float32, int32 and uint32, and AsType converts
// half arrays first.)
func (l *library) syms() []sym {
	return []sym{
		{"void mlx_set_error_handler(mlx_error_handler_func handler, void* data, void (*dtor)(void*))", &l.setErrorHandler, ""},
		{"int mlx_version(mlx_string* str_)", &l.version, ""},

		{"mlx_string mlx_string_new(void)", &l.stringNew, ""},
		{"const char* mlx_string_data(mlx_string str)", &l.stringData, ""},
		{"int mlx_string_free(mlx_string str)", &l.stringFree, ""},

		{"mlx_array mlx_array_new(void)", &l.arrayNew, ""},
		{"int mlx_array_free(mlx_array arr)", &l.arrayFree, ""},
		{"mlx_array mlx_array_new_data(const void* data, const int* shape, int dim, mlx_dtype dtype)", &l.arrayNewData, ""},
		{"mlx_array mlx_array_new_float32(float val)", &l.arrayNewFloat32, ""},
		{"mlx_array mlx_array_new_int(int val)", &l.arrayNewInt, ""},
		{"size_t mlx_array_ndim(const mlx_array arr)", &l.arrayNdim, ""},
		{"const int* mlx_array_shape(const mlx_array arr)", &l.arrayShape, ""},
		{"mlx_dtype mlx_array_dtype(const mlx_array arr)", &l.arrayDtype, ""},
		{"size_t mlx_array_size(const mlx_array arr)", &l.arraySize, ""},
		{"size_t mlx_array_nbytes(const mlx_array arr)", &l.arrayNbytes, ""},
		{"int mlx_array_eval(mlx_array arr)", &l.arrayEval, ""},
		{"int mlx_array_tostring(mlx_string* str, const mlx_array arr)", &l.arrayToString, ""},
		{"const float* mlx_array_data_float32(const mlx_array arr)", &l.dataFloat32, ""},
		{"const int32_t* mlx_array_data_int32(const mlx_array arr)", &l.dataInt32, ""},
		{"const uint32_t* mlx_array_data_uint32(const mlx_array arr)", &l.dataUint32, ""},

		{"mlx_vector_array mlx_vector_array_new(void)", &l.vectorNew, ""},
		{"int mlx_vector_array_append_value(mlx_vector_array vec, const mlx_array val)", &l.vectorAppend, ""},
		{"int mlx_vector_array_free(mlx_vector_array vec)", &l.vectorFree, ""},
		{"size_t mlx_vector_array_size(mlx_vector_array vec)", &l.vectorSize, ""},
		{"int mlx_vector_array_get(mlx_array* res, const mlx_vector_array vec, size_t idx)", &l.vectorGet, ""},

		{"mlx_closure mlx_closure_new(void)", &l.closureNew, ""},
		{"int mlx_closure_free(mlx_closure cls)", &l.closureFree, ""},
		{"mlx_closure mlx_closure_new_func_payload(int (*fun)(mlx_vector_array*, const mlx_vector_array, void*), void* payload, void (*dtor)(void*))", &l.closureNewFuncPayload, ""},
		{"int mlx_closure_apply(mlx_vector_array* res, mlx_closure cls, const mlx_vector_array input)", &l.closureApply, ""},
		{"int mlx_compile(mlx_closure* res, const mlx_closure fun, bool shapeless)", &l.compile, ""},

		{"int mlx_eval(const mlx_vector_array outputs)", &l.eval, ""},
		{"int mlx_async_eval(const mlx_vector_array outputs)", &l.asyncEval, ""},

		{"int mlx_get_active_memory(size_t* res)", &l.activeMemory, ""},
		{"int mlx_get_cache_memory(size_t* res)", &l.cacheMemory, ""},
		{"int mlx_clear_cache(void)", &l.clearCache, ""},
		{"int mlx_get_memory_limit(size_t* res)", &l.memoryLimit, ""},
		{"int mlx_set_memory_limit(size_t* res, size_t limit)", &l.setMemLimit, ""},

		{"mlx_stream mlx_default_cpu_stream_new(void)", &l.defaultCPUStream, ""},
		{"mlx_stream mlx_default_gpu_stream_new(void)", &l.defaultGPUStream, ""},
		{"mlx_stream mlx_stream_new_device(mlx_device dev)", &l.streamNewDevice, ""},
		{"int mlx_stream_free(mlx_stream stream)", &l.streamFree, ""},
		{"int mlx_stream_tostring(mlx_string* str, mlx_stream stream)", &l.streamToString, ""},
		{"int mlx_synchronize(mlx_stream stream)", &l.synchronize, ""},

		{"mlx_device mlx_device_new_type(mlx_device_type type, int index)", &l.deviceNewType, ""},
		{"int mlx_device_free(mlx_device dev)", &l.deviceFree, ""},
		{"int mlx_device_tostring(mlx_string* str, mlx_device dev)", &l.deviceToString, ""},
		{"int mlx_get_default_device(mlx_device* dev)", &l.getDefaultDevice, ""},
		{"int mlx_device_count(int* count, mlx_device_type type)", &l.deviceCount, since050},
		{"int mlx_device_is_available(bool* avail, mlx_device dev)", &l.deviceAvailable, since050},
		{"mlx_device_info mlx_device_info_new(void)", &l.deviceInfoNew, since050},
		{"int mlx_device_info_get(mlx_device_info* info, mlx_device dev)", &l.deviceInfoGet, since050},
		{"int mlx_device_info_free(mlx_device_info info)", &l.deviceInfoFree, since050},
		{"int mlx_device_info_has_key(bool* exists, mlx_device_info info, const char* key)", &l.deviceInfoHasKey, since050},
		{"int mlx_device_info_is_string(bool* is_string, mlx_device_info info, const char* key)", &l.deviceInfoIsStr, since050},
		{"int mlx_device_info_get_string(const char** value, mlx_device_info info, const char* key)", &l.deviceInfoString, since050},
		{"int mlx_device_info_get_size(size_t* value, mlx_device_info info, const char* key)", &l.deviceInfoSize, since050},

		{"int mlx_add(mlx_array* res, const mlx_array a, const mlx_array b, const mlx_stream s)", &l.add, ""},
		{"int mlx_subtract(mlx_array* res, const mlx_array a, const mlx_array b, const mlx_stream s)", &l.subtract, ""},
		{"int mlx_multiply(mlx_array* res, const mlx_array a, const mlx_array b, const mlx_stream s)", &l.multiply, ""},
		{"int mlx_divide(mlx_array* res, const mlx_array a, const mlx_array b, const mlx_stream s)", &l.divide, ""},
		{"int mlx_maximum(mlx_array* res, const mlx_array a, const mlx_array b, const mlx_stream s)", &l.maximum, ""},
		{"int mlx_matmul(mlx_array* res, const mlx_array a, const mlx_array b, const mlx_stream s)", &l.matmul, ""},
		{"int mlx_exp(mlx_array* res, const mlx_array a, const mlx_stream s)", &l.exp, ""},
		{"int mlx_sigmoid(mlx_array* res, const mlx_array a, const mlx_stream s)", &l.sigmoid, ""},
		{"int mlx_rsqrt(mlx_array* res, const mlx_array a, const mlx_stream s)", &l.rsqrt, ""},
		{"int mlx_sqrt(mlx_array* res, const mlx_array a, const mlx_stream s)", &l.sqrt, ""},
		{"int mlx_square(mlx_array* res, const mlx_array a, const mlx_stream s)", &l.square, ""},
		{"int mlx_negative(mlx_array* res, const mlx_array a, const mlx_stream s)", &l.negative, ""},
		{"int mlx_reshape(mlx_array* res, const mlx_array a, const int* shape, size_t shape_num, const mlx_stream s)", &l.reshape, ""},
		{"int mlx_transpose_axes(mlx_array* res, const mlx_array a, const int* axes, size_t axes_num, const mlx_stream s)", &l.transpose, ""},
		{"int mlx_take_axis(mlx_array* res, const mlx_array a, const mlx_array indices, int axis, const mlx_stream s)", &l.takeAxis, ""},
		{"int mlx_concatenate_axis(mlx_array* res, const mlx_vector_array arrays, int axis, const mlx_stream s)", &l.concat, ""},
		{"int mlx_slice(mlx_array* res, const mlx_array a, const int* start, size_t start_num, const int* stop, size_t stop_num, const int* strides, size_t strides_num, const mlx_stream s)", &l.slice, ""},
		{"int mlx_astype(mlx_array* res, const mlx_array a, mlx_dtype dtype, const mlx_stream s)", &l.astype, ""},
		{"int mlx_softmax_axis(mlx_array* res, const mlx_array a, int axis, bool precise, const mlx_stream s)", &l.softmax, ""},
		{"int mlx_mean_axis(mlx_array* res, const mlx_array a, int axis, bool keepdims, const mlx_stream s)", &l.meanAxis, ""},
		{"int mlx_sum_axis(mlx_array* res, const mlx_array a, int axis, bool keepdims, const mlx_stream s)", &l.sumAxis, ""},
		{"int mlx_argmax_axis(mlx_array* res, const mlx_array a, int axis, bool keepdims, const mlx_stream s)", &l.argmaxAxis, ""},
		{"int mlx_expand_dims(mlx_array* res, const mlx_array a, int axis, const mlx_stream s)", &l.expandDims, ""},
		{"int mlx_zeros(mlx_array* res, const int* shape, size_t shape_num, mlx_dtype dtype, const mlx_stream s)", &l.zeros, ""},
		{"int mlx_arange(mlx_array* res, double start, double stop, double step, mlx_dtype dtype, const mlx_stream s)", &l.arange, ""},

		{"int mlx_fast_rms_norm(mlx_array* res, const mlx_array x, const mlx_array weight, float eps, const mlx_stream s)", &l.fastRMSNorm, ""},
		{"int mlx_fast_rope(mlx_array* res, const mlx_array x, int dims, bool traditional, mlx_optional_float base, float scale, int offset, const mlx_array freqs, const mlx_stream s)", &l.fastRoPE, ""},
		{"int mlx_fast_scaled_dot_product_attention(mlx_array* res, const mlx_array queries, const mlx_array keys, const mlx_array values, float scale, const char* mask_mode, const mlx_array mask_arr, const mlx_array sinks, const mlx_stream s)", &l.fastSDPA, ""},
	}
}

// symName is the C function's name in a prototype.
func symName(proto string) string {
	head := proto[:strings.IndexByte(proto, '(')]
	return strings.TrimLeft(head[strings.LastIndexAny(head, " *")+1:], "*")
}

// table is syms in dynlib's form.
func (l *library) table() []dynlib.Func {
	syms := l.syms()
	t := make([]dynlib.Func, len(syms))
	for i, s := range syms {
		t[i] = dynlib.Func{Names: []string{symName(s.proto)}, Fn: s.fn, Since: s.since}
	}
	return t
}
