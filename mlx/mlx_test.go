package mlx

import (
	"errors"
	"fmt"
	"math"
	"os"
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

// rssBytes is this process's resident set (Linux; 0 elsewhere).
func rssBytes(t *testing.T) uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, rss uint64
	_, err = fmt.Sscan(string(b), &size, &rss)
	require.NoError(t, err)
	return rss * uint64(os.Getpagesize())
}

// 10,000 allocate/evaluate/free cycles give MLX's active memory back to
// where it started, and the process's resident set stays flat.
func TestMLXAllocateEvaluateFreeCyclesLeakNothing(t *testing.T) {
	s := needMLX(t)
	data := make([]float32, 4096)
	cycle := func() {
		a := must[*Array](t)(FromSlice(data, 64, 64))
		b := must[*Array](t)(Matmul(a, a, s))
		c := must[*Array](t)(Add(b, a, s))
		_ = must[[]float32](t)(Data[float32](c))
		for _, x := range []*Array{a, b, c} {
			require.NoError(t, x.Free())
		}
	}
	for range 100 { // warm MLX's allocator and Go's heap
		cycle()
	}
	require.NoError(t, ClearCache())
	active0 := must[uint64](t)(ActiveMemory())
	rss0 := rssBytes(t)
	leaked0 := Leaked()
	for range 10_000 {
		cycle()
	}
	require.NoError(t, ClearCache())
	active1 := must[uint64](t)(ActiveMemory())
	rss1 := rssBytes(t)
	t.Logf("active memory %d -> %d bytes; RSS %.1f -> %.1f MiB; cache cleared", active0, active1, float64(rss0)/(1<<20), float64(rss1)/(1<<20))
	require.Equal(t, active0, active1, "MLX's active memory after 10,000 cycles")
	// 10,000 cycles allocate about 470 MiB through MLX: a leak of even one
	// buffer a cycle would show here. 32 MiB of margin covers Go's heap and
	// allocator noise.
	require.Less(t, int64(rss1)-int64(rss0), int64(32<<20), "resident set growth")
	require.Equal(t, leaked0, Leaked())
}
