package mlx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The eval-time error these tests raise: a compiled Function's fused kernel
// is built when it is first evaluated, on the calling thread, under
// $TMPDIR/mlx (MLX's CPU backend writes C++ there and runs g++). With TMPDIR
// naming a regular file, std::filesystem::temp_directory_path throws inside
// mlx_eval; Compile and Apply, which only trace, succeed. The in-process
// kernel cache is keyed by the graph and its constants, so every graph here
// gets a constant of its own and was never built before.

var uniqueConstant atomic.Int64

// breakTMPDIR points TMPDIR (the C library's environment too: purego's
// runtime forwards os.Setenv to setenv) at a regular file.
func breakTMPDIR(t *testing.T) {
	t.Helper()
	notDir := filepath.Join(t.TempDir(), "not-a-directory")
	require.NoError(t, os.WriteFile(notDir, nil, 0o600))
	t.Setenv("TMPDIR", notDir)
}

// buildAffine is x*c + 1 for x = [1 2 3 4] through a compiled closure,
// with c unique to this call: built, not evaluated. It returns the output
// and what it must evaluate to; an error is a failure to build.
func buildAffine(s *Stream) (out *Array, want []float32, err error) {
	c := float32(uniqueConstant.Add(1)) + 0.5
	fn, err := NewClosure(func(in []*Array) ([]*Array, error) {
		k, err := Scalar(c)
		if err != nil {
			return nil, err
		}
		defer k.Free()
		one, err := Scalar(1)
		if err != nil {
			return nil, err
		}
		defer one.Free()
		m, err := Multiply(in[0], k, s)
		if err != nil {
			return nil, err
		}
		defer m.Free()
		out, err := Add(m, one, s)
		return []*Array{out}, err
	})
	if err != nil {
		return nil, nil, err
	}
	defer func() { err = errors.Join(err, fn.Free()) }()
	compiled, err := Compile(fn, false)
	if err != nil {
		return nil, nil, fmt.Errorf("Compile only wraps, yet: %w", err)
	}
	defer func() { err = errors.Join(err, compiled.Free()) }()
	x, err := FromSlice([]float32{1, 2, 3, 4}, 4)
	if err != nil {
		return nil, nil, err
	}
	defer func() { err = errors.Join(err, x.Free()) }()
	outs, err := compiled.Apply(x)
	if err != nil {
		return nil, nil, fmt.Errorf("building the graph (tracing) failed: %w", err)
	}
	if len(outs) != 1 {
		return nil, nil, fmt.Errorf("%d outputs", len(outs))
	}
	return outs[0], []float32{1*c + 1, 2*c + 1, 3*c + 1, 4*c + 1}, nil
}

func lazyAffine(t *testing.T, s *Stream) (*Array, []float32) {
	t.Helper()
	out, want, err := buildAffine(s)
	require.NoError(t, err)
	return out, want
}

// requireEvalTimeError checks err is MLX's eval-time error from call.
func requireEvalTimeError(t *testing.T, err error, call string) {
	t.Helper()
	var e *Error
	require.ErrorAs(t, err, &e)
	require.True(t, errors.Is(err, ErrMLX))
	require.Equal(t, call, e.Call)
	require.Contains(t, e.Message, "temp_directory_path")
}

// processLivesOn: after the failure, an ordinary op evaluates correctly.
func processLivesOn(t *testing.T, s *Stream) {
	t.Helper()
	a := must[*Array](t)(FromSlice([]float32{1, 2, 3}, 3))
	b := must[*Array](t)(Add(a, a, s))
	require.Equal(t, []float32{2, 4, 6}, must[[]float32](t)(Data[float32](b)))
	require.NoError(t, errors.Join(a.Free(), b.Free()))
}

// An error MLX raises only when a lazily built graph is evaluated reaches
// the caller of every entry point that evaluates (Eval, AsyncEval, Data,
// String) as an *Error with MLX's message; the process carries on, and the
// graph itself is not spoiled: once the cause is gone it evaluates to the
// right values.
func TestMLXErrorRaisedOnlyAtEvalReachesTheCaller(t *testing.T) {
	s := needMLX(t)
	leaked0, held0 := Leaked(), heldFunctions()
	breakTMPDIR(t)
	cases := []struct {
		name string
		call string
		eval func(a *Array) error
	}{
		{"Eval", "mlx_eval", func(a *Array) error { return Eval(a) }},
		{"AsyncEval", "mlx_async_eval", func(a *Array) error { return AsyncEval(a) }},
		{"Data", "mlx_array_eval", func(a *Array) error { _, err := Data[float32](a); return err }},
		{"String", "mlx_array_tostring", func(a *Array) error {
			if str := a.String(); str[0] == '<' {
				return fmt.Errorf("%s", str)
			}
			return nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := lazyAffine(t, s)
			defer func() { require.NoError(t, out.Free()) }()
			err := tc.eval(out)
			require.Error(t, err)
			t.Logf("%s: %v", tc.name, err)
			if tc.name == "String" {
				// String has no error to return: MLX's message is in its text.
				require.Contains(t, err.Error(), "mlx_array_tostring: filesystem error: temp_directory_path")
			} else {
				requireEvalTimeError(t, err, tc.call)
			}
			processLivesOn(t, s)
		})
	}

	retry, retryWant := lazyAffine(t, s)
	defer func() { require.NoError(t, retry.Free()) }()
	requireEvalTimeError(t, Eval(retry), "mlx_eval")
	requireEvalTimeError(t, Eval(retry), "mlx_eval") // the same again: nothing half-done
	t.Setenv("TMPDIR", t.TempDir())                  // g++ may build the kernel now
	got, err := Data[float32](retry)
	require.NoError(t, err)
	require.Equal(t, retryWant, got)
	t.Logf("after TMPDIR is a directory again the same graph evaluates to %v", got)
	require.Equal(t, leaked0, Leaked())
	require.Equal(t, held0, heldFunctions(), "every Function was released with its closures")
}

// A failed AsyncEval leaves the arrays MLX 0.31.2 had already scheduled
// waiting for an event it never signals; evaluating one again would block
// forever. The binding refuses them instead, with the AsyncEval's error.
func TestMLXFailedAsyncEvalRefusesItsArraysInsteadOfHanging(t *testing.T) {
	s := needMLX(t)
	breakTMPDIR(t)
	bad, _ := lazyAffine(t, s)
	x := must[*Array](t)(FromSlice([]float32{0, 1}, 2))
	ok := must[*Array](t)(Exp(x, s))
	for _, a := range []*Array{bad, x, ok} {
		defer func() { require.NoError(t, a.Free()) }()
	}
	// MLX runs the graph from the last output back: ok is scheduled, then
	// bad's kernel fails to build.
	err := AsyncEval(bad, ok)
	requireEvalTimeError(t, err, "mlx_async_eval")

	done := make(chan error, 1)
	go func() { _, err := Data[float32](ok); done <- err }()
	select {
	case err := <-done:
		var ae *AsyncEvalError
		require.ErrorAs(t, err, &ae)
		requireEvalTimeError(t, err, "mlx_async_eval")
		t.Logf("Data after the failed AsyncEval: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("Data of an array the failed AsyncEval had scheduled hung (20 s)")
	}
	var ae *AsyncEvalError
	require.ErrorAs(t, Eval(ok), &ae)
	require.ErrorAs(t, AsyncEval(bad), &ae)
	require.Contains(t, ok.String(), "an AsyncEval of this array failed")
	processLivesOn(t, s)
}

// Eight goroutines at once, each failing at eval and computing correctly in
// turn: every failure comes back as its own *Error, every result is right,
// and the process carries on (run it under -race).
func TestMLXEvalTimeErrorsFromEightGoroutines(t *testing.T) {
	s := needMLX(t)
	breakTMPDIR(t)
	const goroutines, rounds = 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*rounds)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				out, _, err := buildAffine(s)
				if err != nil {
					errs <- fmt.Errorf("goroutine %d round %d: %w", g, r, err)
					continue
				}
				err = Eval(out)
				var e *Error
				if !errors.As(err, &e) || e.Call != "mlx_eval" || e.Message == "" {
					errs <- fmt.Errorf("goroutine %d round %d: want an *Error from mlx_eval, got %v", g, r, err)
				}
				if ferr := out.Free(); ferr != nil {
					errs <- ferr
				}
				a, err := FromSlice([]float32{float32(g), float32(r)}, 2)
				if err != nil {
					errs <- err
					continue
				}
				b, err := Multiply(a, a, s)
				if err == nil {
					var got []float32
					if got, err = Data[float32](b); err == nil && (got[0] != float32(g*g) || got[1] != float32(r*r)) {
						err = fmt.Errorf("goroutine %d round %d: %v squared is %v", g, r, []int{g, r}, got)
					}
					err = errors.Join(err, b.Free())
				}
				if err = errors.Join(err, a.Free()); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	processLivesOn(t, s)
}

// An array larger than MLX's memory limit is refused when the graph is
// built. MLX 0.31.2's CPU allocator does not fail such an allocation: the
// kernel gets a null buffer and the process dies of SIGSEGV at eval (seen
// with zeros [65536 1048576] plus 1). A size that overflows 64 bits is
// refused too.
func TestMLXArraysLargerThanTheMemoryLimitAreRefusedWhenBuilt(t *testing.T) {
	s := needMLX(t)
	lim := must[uint64](t)(MemoryLimit())
	t.Logf("MLX's memory limit: %d bytes (%.1f GiB)", lim, float64(lim)/(1<<30))
	const cols = 1 << 20
	rows := int(lim/(4*cols)) + 1 // rows x cols float32 is just over the limit
	col := must[*Array](t)(Zeros([]int{rows, 1}, Float32, s))
	row := must[*Array](t)(Zeros([]int{1, cols}, Float32, s))
	defer func() { require.NoError(t, errors.Join(col.Free(), row.Free())) }()
	big := 1<<31 - 1
	cases := []struct {
		name, call string
		build      func() (*Array, error)
		overflow   bool
	}{
		{"zeros", "mlx_zeros", func() (*Array, error) { return Zeros([]int{rows, cols}, Float32, s) }, false},
		{"broadcast add of small inputs", "mlx_add", func() (*Array, error) { return Add(col, row, s) }, false},
		{"matmul", "mlx_matmul", func() (*Array, error) { return Matmul(col, row, s) }, false},
		{"size overflowing 64 bits", "mlx_zeros", func() (*Array, error) { return Zeros([]int{big, big, big}, Float32, s) }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := tc.build()
			require.ErrorIs(t, err, ErrTooLarge)
			require.Nil(t, a)
			var e *TooLargeError
			require.ErrorAs(t, err, &e)
			require.Equal(t, tc.call, e.Call)
			require.Equal(t, tc.overflow, e.Overflow)
			if !tc.overflow {
				require.Equal(t, []int{rows, cols}, e.Shape)
				require.Greater(t, e.Bytes, lim)
			}
			t.Log(err)
			processLivesOn(t, s)
		})
	}

	// The check follows SetMemoryLimit: under a 1 MiB limit a 2 MiB array
	// is refused, before MLX copies the slice; under the old one it is made.
	prev := must[uint64](t)(SetMemoryLimit(1 << 20))
	data := make([]float32, 1<<19)
	_, err := FromSlice(data, len(data))
	var e *TooLargeError
	require.ErrorAs(t, err, &e)
	require.Equal(t, "mlx_array_new_data", e.Call)
	require.Equal(t, uint64(1<<20), must[uint64](t)(SetMemoryLimit(prev)))
	a := must[*Array](t)(FromSlice(data, len(data)))
	require.NoError(t, a.Free())
}

// A Function's own failures come back from the Apply that traced it: an
// error it returns (wrapped), a failing op inside it (MLX's message), and an
// Eval inside it, which MLX refuses while it traces (and which must not
// deadlock on the binding's evaluation lock, held by the Apply).
func TestMLXFunctionFailuresComeBackFromApply(t *testing.T) {
	s := needMLX(t)
	held0 := heldFunctions()
	errBoom := errors.New("boom")
	cases := []struct {
		name string
		fn   Function
		want []string
	}{
		{"returned error", func(in []*Array) ([]*Array, error) { return nil, errBoom },
			[]string{"mlx_closure returned a non-zero value", "boom"}},
		{"failing op", func(in []*Array) ([]*Array, error) {
			out, err := Matmul(in[0], in[0], s) // [2,3] x [2,3]
			return []*Array{out}, err
		}, []string{"[matmul] Last dimension of first input with shape (2,3)"}},
		{"eval while traced", func(in []*Array) ([]*Array, error) {
			out, err := Exp(in[0], s)
			if err != nil {
				return nil, err
			}
			return []*Array{out}, Eval(out)
		}, []string{"[eval] Attempting to eval an array during function transformations"}},
	}
	x := must[*Array](t)(FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3))
	defer func() { require.NoError(t, x.Free()) }()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fn := must[*Closure](t)(NewClosure(tc.fn))
			defer func() { require.NoError(t, fn.Free()) }()
			compiled := must[*Closure](t)(Compile(fn, false))
			defer func() { require.NoError(t, compiled.Free()) }()
			outs, err := compiled.Apply(x)
			require.Nil(t, outs)
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, "mlx_closure_apply", e.Call)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
			if tc.name == "returned error" {
				require.ErrorIs(t, err, errBoom)
			}
			t.Log(err)
			processLivesOn(t, s)
		})
	}
	// Uncompiled, a closure just calls its Function.
	fn := must[*Closure](t)(NewClosure(func(in []*Array) ([]*Array, error) {
		out, err := Add(in[0], in[0], s)
		return []*Array{out, in[0]}, err // an input may be an output
	}))
	outs := must[[]*Array](t)(fn.Apply(x))
	require.Len(t, outs, 2)
	require.Equal(t, []float32{2, 4, 6, 8, 10, 12}, must[[]float32](t)(Data[float32](outs[0])))
	require.Equal(t, []float32{1, 2, 3, 4, 5, 6}, must[[]float32](t)(Data[float32](outs[1])))
	require.NoError(t, errors.Join(outs[0].Free(), outs[1].Free(), fn.Free()))
	require.Equal(t, held0, heldFunctions())
}
