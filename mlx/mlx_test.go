package mlx

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/testenv"
)

// The TestMLX* tests need a real libmlxc (HIPGO_MLX_LIBRARY, or one on the
// loader's path): they skip without it, and fail under HIPGO_REQUIRE_MLX=1.

func needMLX(t *testing.T) *Stream {
	t.Helper()
	testenv.NeedMLX(t, Load())
	s, err := DefaultCPUStream()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Free()) })
	return s
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		require.NoError(t, err)
		return v
	}
}

func TestMLXVersionAndDevices(t *testing.T) {
	needMLX(t)
	v, err := Version()
	require.NoError(t, err)
	require.Regexp(t, `^\d+\.\d+\.\d+`, v)
	t.Logf("MLX %s from %s", v, LibraryPath())
	n, err := DeviceCount(CPU)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Logf("this libmlxc predates mlx_device_count: %v", err)
		return
	}
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, 1)
	d := must[*Device](t)(NewDevice(CPU, 0))
	defer func() { require.NoError(t, d.Free()) }()
	ok, err := d.Available()
	require.NoError(t, err)
	require.True(t, ok)
	info, err := d.Info()
	require.NoError(t, err)
	require.NotEmpty(t, info.Strings["device_name"])
	t.Logf("%s: %v %v; gpus: %v", d, info.Strings, info.Sizes, must[int](t)(DeviceCount(GPU)))
}

// Values round-trip, and a small graph (matmul, add, softmax) evaluates to
// what Go computes.
func TestMLXArithmeticMatchesGo(t *testing.T) {
	s := needMLX(t)
	a := must[*Array](t)(FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3))
	b := must[*Array](t)(FromSlice([]float32{1, 0, -1, 2, 0.5, 1}, 3, 2))
	ab := must[*Array](t)(Matmul(a, b, s))
	sum := must[*Array](t)(Add(ab, ab, s))
	sm := must[*Array](t)(Softmax(sum, 1, true, s))
	for _, x := range []*Array{a, b, ab, sum, sm} {
		defer func() { require.NoError(t, x.Free()) }()
	}
	require.Equal(t, []int{2, 2}, must[[]int](t)(ab.Shape()))
	got := must[[]float32](t)(Data[float32](sum))
	// [1 2 3]·[[1 0] [-1 2] [0.5 1]] = [0.5, 7] and [4 5 6]· = [2, 16]; sum doubles them.
	want := []float32{1, 14, 4, 32}
	require.Equal(t, want, got)
	p := must[[]float32](t)(Data[float32](sm))
	e := float32(math.Exp(-13))
	require.InDelta(t, e/(1+e), p[0], 1e-6)
	_, err := Data[int32](sum)
	require.ErrorContains(t, err, "holds float32")
}

// A failing op returns a Go error with MLX's message, and the process (and
// MLX) carries on: the next op works.
func TestMLXFailingOpsAreErrorsAndTheProcessLivesOn(t *testing.T) {
	s := needMLX(t)
	a := must[*Array](t)(FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3))
	defer func() { require.NoError(t, a.Free()) }()
	_, err := Matmul(a, a, s) // [2,3]x[2,3]
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "mlx_matmul", e.Call)
	require.Contains(t, strings.ToLower(e.Message), "shape")
	t.Logf("shape mismatch: %v", err)

	_, err = Softmax(a, 5, false, s)
	require.ErrorAs(t, err, &e)
	require.Equal(t, "mlx_softmax_axis", e.Call)
	require.Contains(t, strings.ToLower(e.Message), "axis")
	t.Logf("axis out of range: %v", err)

	_, err = Reshape(a, []int{4, 4}, s)
	require.ErrorAs(t, err, &e)
	t.Logf("bad reshape: %v", err)

	ok := must[*Array](t)(Add(a, a, s))
	defer func() { require.NoError(t, ok.Free()) }()
	require.Equal(t, []float32{2, 4, 6, 8, 10, 12}, must[[]float32](t)(Data[float32](ok)))
}

// Handles are freed once: a second Free and a use after Free are errors,
// not crashes.
func TestMLXFreeTwiceAndUseAfterFreeAreErrors(t *testing.T) {
	s := needMLX(t)
	a := must[*Array](t)(FromSlice([]float32{1}, 1))
	require.NoError(t, a.Free())
	require.ErrorContains(t, a.Free(), "after Free")
	_, err := Add(a, a, s)
	require.ErrorContains(t, err, "after Free")
}
