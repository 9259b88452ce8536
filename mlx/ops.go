package mlx

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// op runs one mlx-c operation on s over the live handles of in and returns
// its result array. Every op checks its handles first, so a freed or nil
// input is an error before MLX sees it, and its result's size after, so an
// array larger than MLX's memory limit is a *TooLargeError when the graph
// is built rather than a crash when it is evaluated.
func op(name string, s *Stream, in []*Array, f func(l *library, res *uintptr, h []uintptr, sh uintptr) int32) (*Array, error) {
	l, err := api()
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, fmt.Errorf("mlx: %s: nil stream", name)
	}
	sh, err := s.live("stream")
	if err != nil {
		return nil, fmt.Errorf("mlx: %s: %w", name, err)
	}
	hs := make([]uintptr, len(in))
	for i, a := range in {
		if a == nil {
			return nil, fmt.Errorf("mlx: %s: argument %d is nil", name, i)
		}
		if hs[i], err = a.live("array"); err != nil {
			return nil, fmt.Errorf("mlx: %s: argument %d: %w", name, i, err)
		}
	}
	var res uintptr // an empty mlx_array (null ctx) that the op fills
	var shape []int
	var dtype DType
	err = call(name, func() int32 {
		if rc := f(l, &res, hs, sh); rc != 0 {
			return rc
		}
		dtype = DType(l.arrayDtype(res))
		shape = make([]int, l.arrayNdim(res))
		if len(shape) > 0 {
			for i, d := range unsafe.Slice(l.arrayShape(res), len(shape)) {
				shape[i] = int(d)
			}
		}
		return 0
	})
	if err == nil {
		// A result too large to allocate would crash the process at eval.
		err = checkSize(name, shape, dtype)
	}
	if err != nil {
		if res != 0 {
			err = errors.Join(err, call("mlx_array_free", func() int32 { return l.arrayFree(res) }))
		}
		return nil, err
	}
	return newArray(res), nil
}

func binaryOp(name string, pick func(*library) func(res *uintptr, a, b, s uintptr) int32) func(a, b *Array, s *Stream) (*Array, error) {
	return func(a, b *Array, s *Stream) (*Array, error) {
		return op(name, s, []*Array{a, b}, func(l *library, res *uintptr, h []uintptr, sh uintptr) int32 {
			return pick(l)(res, h[0], h[1], sh)
		})
	}
}

func unaryOp(name string, pick func(*library) func(res *uintptr, a, s uintptr) int32) func(a *Array, s *Stream) (*Array, error) {
	return func(a *Array, s *Stream) (*Array, error) {
		return op(name, s, []*Array{a}, func(l *library, res *uintptr, h []uintptr, sh uintptr) int32 {
			return pick(l)(res, h[0], sh)
		})
	}
}

// Elementwise arithmetic with NumPy broadcasting, and matrix products.
var (
	Add      = binaryOp("mlx_add", func(l *library) func(*uintptr, uintptr, uintptr, uintptr) int32 { return l.add })
	Subtract = binaryOp("mlx_subtract", func(l *library) func(*uintptr, uintptr, uintptr, uintptr) int32 { return l.subtract })
	Multiply = binaryOp("mlx_multiply", func(l *library) func(*uintptr, uintptr, uintptr, uintptr) int32 { return l.multiply })
	Divide   = binaryOp("mlx_divide", func(l *library) func(*uintptr, uintptr, uintptr, uintptr) int32 { return l.divide })
	Maximum  = binaryOp("mlx_maximum", func(l *library) func(*uintptr, uintptr, uintptr, uintptr) int32 { return l.maximum })
	// Matmul is the matrix product of the last two axes, batched over the rest.
	Matmul = binaryOp("mlx_matmul", func(l *library) func(*uintptr, uintptr, uintptr, uintptr) int32 { return l.matmul })

	Exp      = unaryOp("mlx_exp", func(l *library) func(*uintptr, uintptr, uintptr) int32 { return l.exp })
	Sigmoid  = unaryOp("mlx_sigmoid", func(l *library) func(*uintptr, uintptr, uintptr) int32 { return l.sigmoid })
	Rsqrt    = unaryOp("mlx_rsqrt", func(l *library) func(*uintptr, uintptr, uintptr) int32 { return l.rsqrt })
	Sqrt     = unaryOp("mlx_sqrt", func(l *library) func(*uintptr, uintptr, uintptr) int32 { return l.sqrt })
	Square   = unaryOp("mlx_square", func(l *library) func(*uintptr, uintptr, uintptr) int32 { return l.square })
	Negative = unaryOp("mlx_negative", func(l *library) func(*uintptr, uintptr, uintptr) int32 { return l.negative })
)

// ints converts Go ints for mlx-c, checking they fit in a C int.
func ints(name string, v []int) ([]int32, *int32, error) {
	out := make([]int32, len(v))
	for i, x := range v {
		if x < math.MinInt32 || x > math.MaxInt32 {
			return nil, nil, fmt.Errorf("mlx: %s: %d does not fit in a C int", name, x)
		}
		out[i] = int32(x)
	}
	if len(out) == 0 {
		return out, nil, nil
	}
	return out, &out[0], nil
}

// Reshape gives a the shape (one entry may be -1).
func Reshape(a *Array, shape []int, s *Stream) (*Array, error) {
	v, p, err := ints("mlx_reshape", shape)
	if err != nil {
		return nil, err
	}
	return op("mlx_reshape", s, []*Array{a}, func(l *library, res *uintptr, h []uintptr, sh uintptr) int32 {
		return l.reshape(res, h[0], p, uintptr(len(v)), sh)
	})
}

// Transpose permutes a's axes.
func Transpose(a *Array, axes []int, s *Stream) (*Array, error) {
	v, p, err := ints("mlx_transpose_axes", axes)
	if err != nil {
		return nil, err
	}
	return op("mlx_transpose_axes", s, []*Array{a}, func(l *library, res *uintptr, h []uintptr, sh uintptr) int32 {
		return l.transpose(res, h[0], p, uintptr(len(v)), sh)
	})
}

// Take gathers a's slices at indices along axis (an embedding lookup with axis 0).
func Take(a, indices *Array, axis int, s *Stream) (*Array, error) {
	return op("mlx_take_axis", s, []*Array{a, indices}, func(l *library, res *uintptr, h []uintptr, sh uintptr) int32 {
		return l.takeAxis(res, h[0], h[1], int32(axis), sh)
	})
}

// Concatenate joins arrays along axis.
func Concatenate(arrays []*Array, axis int, s *Stream) (*Array, error) {
	return op("mlx_concatenate_axis", s, arrays, func(l *library, res *uintptr, h []uintptr, sh uintptr) int32 {
		vec := l.vectorNew()
		rc := appendAll(l, vec, h)
		if rc == 0 {
			rc = l.concat(res, vec, int32(axis), sh)
		}
		// The first failure is the one reported (its message is the slot's).
		if frc := l.vectorFree(vec); rc == 0 {
			rc = frc
		}
		return rc
	})
}

// Slice is a[start:stop:strides] per axis (strides nil: all 1).
func Slice(a *Array, start, stop, strides []int, s *Stream) (*Array, error) {
	if strides == nil {
		strides = make([]int, len(start))
		for i := range strides {
			strides[i] = 1
		}
	}
	if len(stop) != len(start) || len(strides) != len(start) {
		return nil, fmt.Errorf("mlx: mlx_slice: start, stop and strides have %d, %d and %d entries", len(start), len(stop), len(strides))
	}
	v0, p0, err := ints("mlx_slice", start)
	if err != nil {
		return nil, err
	}
	_, p1, err := ints("mlx_slice", stop)
	if err != nil {
		return nil, err
	}
	_, p2, err := ints("mlx_slice", strides)
	if err != nil {
		return nil, err
	}
	n := uintptr(len(v0))
	return op("mlx_slice", s, []*Array{a}, func(l *library, res *uintptr, h []uintptr, sh uintptr) int32 {
		return l.slice(res, h[0], p0, n, p1, n, p2, n, sh)
	})
}

// AsType converts a's elements to dtype.
func AsType(a *Array, dtype DType, s *Stream) (*Array, error) {
	return op("mlx_astype", s, []*Array{a}, func(l *library, res *uintptr, h []uintptr, sh uintptr) int32 {
		return l.astype(res, h[0], int32(dtype), sh)
	})
}

// Softmax along axis (precise: accumulate in float32 for half inputs).
func Softmax(a *Array, axis int, precise bool, s *Stream) (*Array, error) {
	return op("mlx_softmax_axis", s, []*Array{a}, func(l *library, res *uintptr, h []uintptr, sh uintptr) int32 {
		return l.softmax(res, h[0], int32(axis), precise, sh)
	})
}

// Mean along axis.
func Mean(a *Array, axis int, keepDims bool, s *Stream) (*Array, error) {
	return op("mlx_mean_axis", s, []*Array{a}, func(l *library, res *uintptr, h []uintptr, sh uintptr) int32 {
		return l.meanAxis(res, h[0], int32(axis), keepDims, sh)
	})
}

// Sum along axis.
func Sum(a *Array, axis int, keepDims bool, s *Stream) (*Array, error) {
	return op("mlx_sum_axis", s, []*Array{a}, func(l *library, res *uintptr, h []uintptr, sh uintptr) int32 {
		return l.sumAxis(res, h[0], int32(axis), keepDims, sh)
	})
}

// Argmax along axis (uint32 indices).
func Argmax(a *Array, axis int, keepDims bool, s *Stream) (*Array, error) {
	return op("mlx_argmax_axis", s, []*Array{a}, func(l *library, res *uintptr, h []uintptr, sh uintptr) int32 {
		return l.argmaxAxis(res, h[0], int32(axis), keepDims, sh)
	})
}

// ExpandDims inserts a unit axis.
func ExpandDims(a *Array, axis int, s *Stream) (*Array, error) {
	return op("mlx_expand_dims", s, []*Array{a}, func(l *library, res *uintptr, h []uintptr, sh uintptr) int32 {
		return l.expandDims(res, h[0], int32(axis), sh)
	})
}

// Zeros is an array of zeros.
func Zeros(shape []int, dtype DType, s *Stream) (*Array, error) {
	v, p, err := ints("mlx_zeros", shape)
	if err != nil {
		return nil, err
	}
	return op("mlx_zeros", s, nil, func(l *library, res *uintptr, _ []uintptr, sh uintptr) int32 {
		return l.zeros(res, p, uintptr(len(v)), int32(dtype), sh)
	})
}

// Arange is start, start+step, ... below stop.
func Arange(start, stop, step float64, dtype DType, s *Stream) (*Array, error) {
	return op("mlx_arange", s, nil, func(l *library, res *uintptr, _ []uintptr, sh uintptr) int32 {
		return l.arange(res, start, stop, step, int32(dtype), sh)
	})
}

// RMSNorm is x * rsqrt(mean(x², last axis) + eps) * weight (mlx::core::fast).
func RMSNorm(x, weight *Array, eps float32, s *Stream) (*Array, error) {
	return op("mlx_fast_rms_norm", s, []*Array{x, weight}, func(l *library, res *uintptr, h []uintptr, sh uintptr) int32 {
		return l.fastRMSNorm(res, h[0], h[1], eps, sh)
	})
}

// RoPE rotates the first dims features of x's last axis by position
// offset+i along the second-to-last axis (mlx::core::fast::rope).
// traditional selects adjacent-pair rotation; false is the rotate_half
// layout Llama checkpoints use. With freqs nil the frequencies are
// base^(-2i/dims); otherwise freqs gives them (base is then ignored).
func RoPE(x *Array, dims int, traditional bool, base, scale float32, offset int, freqs *Array, s *Stream) (*Array, error) {
	in := []*Array{x}
	if freqs != nil {
		in = append(in, freqs)
	}
	// mlx_optional_float {float value; bool has_value} in one register.
	optBase := uint64(math.Float32bits(base)) | 1<<32
	if freqs != nil {
		optBase = 0
	}
	return op("mlx_fast_rope", s, in, func(l *library, res *uintptr, h []uintptr, sh uintptr) int32 {
		var fh uintptr
		if len(h) > 1 {
			fh = h[1]
		}
		return l.fastRoPE(res, h[0], int32(dims), traditional, optBase, scale, int32(offset), fh, sh)
	})
}

// ScaledDotProductAttention is softmax(q·kᵀ·scale + mask)·v over [B, heads,
// L, D] arrays, with grouped-query heads (mlx::core::fast). mask is "" (none)
// or "causal".
func ScaledDotProductAttention(q, k, v *Array, scale float32, mask string, s *Stream) (*Array, error) {
	if mask != "" && mask != "causal" {
		return nil, fmt.Errorf("mlx: ScaledDotProductAttention: mask %q is not \"\" or \"causal\"", mask)
	}
	m := append([]byte(mask), 0)
	return op("mlx_fast_scaled_dot_product_attention", s, []*Array{q, k, v}, func(l *library, res *uintptr, h []uintptr, sh uintptr) int32 {
		return l.fastSDPA(res, h[0], h[1], h[2], scale, &m[0], 0, 0, sh)
	})
}

// Eval evaluates the arrays' graphs and waits. An error MLX raises while it
// runs the graph on the calling thread (a compiled kernel that cannot be
// built, say) is returned here with MLX's message, and the process carries
// on; arrays the failed Eval did not reach are still lazy and a later Eval
// may retry them. Errors MLX 0.31.2 raises on its stream threads instead
// end the process: docs/mlx.md lists them.
func Eval(arrays ...*Array) error { return evalWith("mlx_eval", arrays) }

// AsyncEval schedules the arrays' evaluation and returns without waiting;
// a later Eval or Data waits for it. When it fails, MLX 0.31.2 leaves the
// arrays it had already scheduled waiting for an event nobody signals, so
// that evaluating them again would block forever: the arrays passed are
// marked, and Eval, AsyncEval and Data refuse them from then on with the
// first error. Intermediate arrays of that graph are not marked: free them
// unread.
func AsyncEval(arrays ...*Array) error { return evalWith("mlx_async_eval", arrays) }

// liveArrays is the mlx-c handles of arrays, or why one cannot be used.
func liveArrays(name string, arrays []*Array) ([]uintptr, error) {
	hs := make([]uintptr, len(arrays))
	for i, a := range arrays {
		if a == nil {
			return nil, fmt.Errorf("mlx: %s: argument %d is nil", name, i)
		}
		h, err := a.live("array")
		if err != nil {
			return nil, fmt.Errorf("mlx: %s: argument %d: %w", name, i, err)
		}
		if err := a.asyncFailure(); err != nil {
			return nil, fmt.Errorf("mlx: %s: argument %d: %w", name, i, err)
		}
		hs[i] = h
	}
	return hs, nil
}

func evalWith(name string, arrays []*Array) error {
	l, err := api()
	if err != nil {
		return err
	}
	hs, err := liveArrays(name, arrays)
	if err != nil {
		return err
	}
	f := l.eval
	if name == "mlx_async_eval" {
		f = l.asyncEval
	}
	err = callSerial(name, func() int32 {
		vec := l.vectorNew()
		rc := appendAll(l, vec, hs)
		if rc == 0 {
			rc = f(vec)
		}
		// The first failure is the one reported (its message is the slot's).
		if frc := l.vectorFree(vec); rc == 0 {
			rc = frc
		}
		return rc
	})
	if err != nil && name == "mlx_async_eval" {
		for _, a := range arrays {
			a.state.asyncErr.CompareAndSwap(nil, &err)
		}
	}
	return err
}

// appendAll appends every handle to vec, stopping at the first failure.
func appendAll(l *library, vec uintptr, hs []uintptr) int32 {
	for _, h := range hs {
		if rc := l.vectorAppend(vec, h); rc != 0 {
			return rc
		}
	}
	return 0
}
