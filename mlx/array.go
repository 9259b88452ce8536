package mlx

import (
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"unsafe"
)

// leaked counts handles whose Go value became unreachable without Free.
var leaked atomic.Int64

// Leaked is the number of Arrays, Streams and Devices a program let go
// without calling Free. Their MLX memory is still held: a finalizer only
// counts, because freeing from a finalizer would race the caller's last use
// on another thread.
func Leaked() int64 { return leaked.Load() }

// handle is the shared part of every handle type: the mlx-c value and
// whether it was freed.
type handle struct {
	h     uintptr
	state *handleState
}

type handleState struct {
	freed atomic.Bool
	// asyncErr is the error of a failed AsyncEval of this array (arrays only).
	asyncErr atomic.Pointer[error]
}

// AsyncEvalError is the refusal of an array whose AsyncEval failed: MLX
// 0.31.2 would wait forever for it (see AsyncEval). Unwrap gives the
// AsyncEval's error.
type AsyncEvalError struct{ Err error }

func (e *AsyncEvalError) Error() string {
	return "an AsyncEval of this array failed, and MLX would wait for it forever: " + e.Err.Error()
}

func (e *AsyncEvalError) Unwrap() error { return e.Err }

// asyncFailure is the array's *AsyncEvalError, or nil.
func (a *Array) asyncFailure() error {
	if p := a.state.asyncErr.Load(); p != nil {
		return &AsyncEvalError{Err: *p}
	}
	return nil
}

func newHandle[T any](owner *T, h uintptr) handle {
	st := &handleState{}
	runtime.AddCleanup(owner, func(st *handleState) {
		if !st.freed.Load() {
			leaked.Add(1)
		}
	}, st)
	return handle{h: h, state: st}
}

// live returns the mlx-c value, or an error once freed.
func (h handle) live(what string) (uintptr, error) {
	if h.state == nil || h.h == 0 {
		return 0, fmt.Errorf("mlx: %s is empty", what)
	}
	if h.state.freed.Load() {
		return 0, fmt.Errorf("mlx: %s used after Free", what)
	}
	return h.h, nil
}

// release marks the handle freed exactly once and reports whether this call did.
func (h handle) release() bool {
	return h.state != nil && h.state.freed.CompareAndSwap(false, true)
}

// free is every handle's Free: a freed or empty handle is an error, and
// the mlx-c free function (picked from the library) runs exactly once.
func (h handle) free(what, name string, pick func(*library) func(uintptr) int32) error {
	l, err := api()
	if err != nil {
		return err
	}
	v, err := h.live(what)
	if err != nil {
		return err
	}
	if !h.release() {
		return fmt.Errorf("mlx: %s freed twice", what)
	}
	return call(name, func() int32 { return pick(l)(v) })
}

// describe is every handle's String: MLX's rendering through its
// *_tostring function, or the reason there is none, in angle brackets.
func (h handle) describe(what, name string, pick func(*library) func(*uintptr, uintptr) int32) string {
	l, err := api()
	if err != nil {
		return "<mlx: " + err.Error() + ">"
	}
	v, err := h.live(what)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	s, err := toString(name, func(str *uintptr) int32 { return pick(l)(str, v) })
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return s
}

// Array is an mlx_array: a lazily evaluated n-dimensional array.
type Array struct{ handle }

func newArray(h uintptr) *Array {
	a := &Array{}
	a.handle = newHandle(a, h)
	return a
}

// FromSlice copies data into a new array of the given shape (a scalar when
// shape is empty). The product of shape must equal len(data).
func FromSlice[T Element](data []T, shape ...int) (*Array, error) {
	l, err := api()
	if err != nil {
		return nil, err
	}
	n := 1
	dims := make([]int32, len(shape))
	for i, d := range shape {
		if d < 0 || d > 1<<31-1 {
			return nil, fmt.Errorf("mlx: FromSlice: dimension %d is %d", i, d)
		}
		n *= d
		dims[i] = int32(d)
	}
	if n != len(data) {
		return nil, fmt.Errorf("mlx: FromSlice: shape %v holds %d elements, data has %d", shape, n, len(data))
	}
	if err := checkSize("mlx_array_new_data", shape, dtypeOf[T]()); err != nil {
		return nil, err
	}
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(&data[0])
	} else {
		var zero T
		p = unsafe.Pointer(&zero)
	}
	var shp *int32
	if len(dims) > 0 {
		shp = &dims[0]
	}
	h, err := callHandle("mlx_array_new_data", func() uintptr {
		return l.arrayNewData(p, shp, int32(len(dims)), int32(dtypeOf[T]()))
	})
	runtime.KeepAlive(data)
	if err != nil {
		return nil, err
	}
	return newArray(h), nil
}

// Scalar is a float32 scalar array.
func Scalar(v float32) (*Array, error) {
	l, err := api()
	if err != nil {
		return nil, err
	}
	h, err := callHandle("mlx_array_new_float32", func() uintptr { return l.arrayNewFloat32(v) })
	if err != nil {
		return nil, err
	}
	return newArray(h), nil
}

// Free releases the array. Freeing twice is an error, not a double free.
func (a *Array) Free() error {
	return a.free("array", "mlx_array_free", func(l *library) func(uintptr) int32 { return l.arrayFree })
}

// Shape is the array's dimensions.
func (a *Array) Shape() ([]int, error) {
	l, err := api()
	if err != nil {
		return nil, err
	}
	h, err := a.live("array")
	if err != nil {
		return nil, err
	}
	var out []int
	err = call("mlx_array_shape", func() int32 {
		n := int(l.arrayNdim(h))
		if n == 0 {
			out = []int{}
			return 0
		}
		p := l.arrayShape(h)
		if p == nil {
			return 1
		}
		for _, d := range unsafe.Slice(p, n) {
			out = append(out, int(d))
		}
		return 0
	})
	return out, err
}

// DType is the array's element type.
func (a *Array) DType() (DType, error) {
	l, err := api()
	if err != nil {
		return 0, err
	}
	h, err := a.live("array")
	if err != nil {
		return 0, err
	}
	var d DType
	err = call("mlx_array_dtype", func() int32 { d = DType(l.arrayDtype(h)); return 0 })
	return d, err
}

// String is MLX's rendering of the array (it evaluates it).
func (a *Array) String() string {
	if a.state != nil {
		if err := a.asyncFailure(); err != nil {
			return "<mlx: " + err.Error() + ">"
		}
	}
	return a.describe("array", "mlx_array_tostring", func(l *library) func(*uintptr, uintptr) int32 { return l.arrayToString })
}

// Data evaluates the array and copies its elements out. T must be the
// array's dtype (convert with AsType first).
func Data[T Element](a *Array) ([]T, error) {
	l, err := api()
	if err != nil {
		return nil, err
	}
	h, err := a.live("array")
	if err != nil {
		return nil, err
	}
	if err := a.asyncFailure(); err != nil {
		return nil, fmt.Errorf("mlx: Data: %w", err)
	}
	want := dtypeOf[T]()
	if got, err := a.DType(); err != nil {
		return nil, err
	} else if got != want {
		return nil, fmt.Errorf("mlx: Data: the array holds %s, not %s", got, want)
	}
	if err := callSerial("mlx_array_eval", func() int32 { return l.arrayEval(h) }); err != nil {
		return nil, err
	}
	var out []T
	err = call("mlx_array_data", func() int32 {
		n := int(l.arraySize(h))
		var p unsafe.Pointer
		switch want {
		case Float32:
			p = unsafe.Pointer(l.dataFloat32(h))
		case Int32:
			p = unsafe.Pointer(l.dataInt32(h))
		case Uint32:
			p = unsafe.Pointer(l.dataUint32(h))
		}
		if p == nil {
			return 1
		}
		out = slices.Clone(unsafe.Slice((*T)(p), n))
		return 0
	})
	return out, err
}

// toString reads an mlx_string a call fills, and frees it. It holds serial:
// mlx_array_tostring evaluates the array (the others need not, but cost
// nothing).
func toString(name string, f func(str *uintptr) int32) (string, error) {
	l, err := api()
	if err != nil {
		return "", err
	}
	str := l.stringNew() // an empty mlx_string (null ctx) that f fills
	var out string
	err = callSerial(name, func() int32 {
		if rc := f(&str); rc != 0 {
			return rc
		}
		out = goString(l.stringData(str))
		return 0
	})
	if ferr := call("mlx_string_free", func() int32 { return l.stringFree(str) }); err == nil {
		err = ferr
	}
	return out, err
}
