// Package gpusim is test support for the GPU backend: the forward kernels of
// the ABI (kernels/src/forward.cu, and the quantized ones of
// kernels/src/qforward.cu) and the sampler kernels as Go functions
// on internal/simgpu's simulated device, doing the math with the CPU
// backend's own operations (model/internal/cpu) over the device's bytes.
//
// The simulated device poses as CUDA sm_90, so the runtime loads the real
// PTX artifacts' metadata and checks every launch's argument list against
// it, while the kernels run here. It proves the backend's plumbing (uploads,
// block tables, token layout, batching, sampling on the device, error
// paths), never the kernels' numerics: those run on a real GPU.
package gpusim

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/model/internal/cpu"
	"github.com/hipgo/hipgo/model/safetensors"
	"github.com/hipgo/hipgo/runtime/driver"
	"github.com/hipgo/hipgo/sampling"
)

// Faults injects failures into forward-kernel launches: the launch numbered
// At (counting from 1 over every forward kernel) fails, asynchronously with
// Code when Code is sticky, or synchronously (a launch rejection) otherwise.
// Zero At injects nothing. Safe for concurrent use.
type Faults struct {
	mu       sync.Mutex
	at       int64
	code     simgpu.Code
	launches atomic.Int64
	hook     func(n int64)
	byName   sync.Map // kernel name -> *atomic.Int64
}

// Launched counts the launches of forward kernel name so far (rejected
// ones included), for tests of which kernel the backend picks.
func (f *Faults) Launched(name string) int64 {
	if c, ok := f.byName.Load(name); ok {
		return c.(*atomic.Int64).Load()
	}
	return 0
}

// OnLaunch calls fn with the number of each forward launch as it is
// submitted (on the launching goroutine); nil removes it.
func (f *Faults) OnLaunch(fn func(n int64)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = fn
}

// Arm makes the n-th forward launch from now fail with code.
func (f *Faults) Arm(n int64, code simgpu.Code) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.at, f.code = f.launches.Load()+n, code
}

// Launches counts forward-kernel launches so far (rejected ones included).
func (f *Faults) Launches() int64 { return f.launches.Load() }

func (f *Faults) hit() (simgpu.Code, bool) {
	n := f.launches.Add(1)
	f.mu.Lock()
	hook := f.hook
	f.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.at != 0 && n == f.at {
		f.at = 0
		return f.code, true
	}
	return 0, false
}

// Driver is a simulated CUDA sm_90 device with the forward and sampler
// kernels. memory is its size in bytes.
func Driver(memory uint64, faults *Faults) *simgpu.Driver {
	return DriverWith(memory, faults, nil)
}

// DriverWith is Driver with its simulated device's configuration changed
// by edit (e.g. NoGraphs) when edit is not nil.
func DriverWith(memory uint64, faults *Faults, edit func(*simgpu.Config)) *simgpu.Driver {
	if faults == nil {
		faults = &Faults{}
	}
	var ks []simgpu.KernelDef
	for _, k := range forwardKernels() {
		ks = append(ks, faults.wrap(k))
	}
	ks = append(ks, samplerKernels()...)
	ks = append(ks, simgpu.OOBWriteU32) // module testkernels' faulting store, for fault tests
	cfg := simgpu.Config{Devices: 1, Kind: driver.CUDA, Format: driver.PTX, Arch: "sm_90", Memory: memory, Kernels: ks}
	if edit != nil {
		edit(&cfg)
	}
	return simgpu.New(cfg)
}

// wrap makes a kernel fail when faults says so. A sticky code fails the
// kernel as it runs (an asynchronous fault); another is a synchronous
// rejection from Launch. The rejected launch still counts, so a retry does
// not hit the same number.
func (f *Faults) wrap(k simgpu.KernelDef) simgpu.KernelDef {
	run := k.Run
	var pendingFault atomic.Pointer[simgpu.Code]
	count, _ := f.byName.LoadOrStore(k.Name, new(atomic.Int64))
	k.Reject = func(_, _ driver.Dim3) error {
		count.(*atomic.Int64).Add(1)
		code, ok := f.hit()
		if !ok {
			return nil
		}
		if code.Sticky() {
			pendingFault.Store(&code)
			return nil
		}
		return code
	}
	k.Run = func(d *simgpu.Device, g, b driver.Dim3, a []uint64, stop <-chan struct{}) error {
		if c := pendingFault.Swap(nil); c != nil {
			return *c
		}
		return run(d, g, b, a, stop)
	}
	return k
}

// Names are the forward kernels the simulation provides.
func Names() []string {
	var out []string
	for _, k := range forwardKernels() {
		out = append(out, k.Name)
	}
	return out
}

func forwardKernels() []simgpu.KernelDef {
	ks := []simgpu.KernelDef{
		{Name: "rope_f32", ParamSizes: []int{8, 8, 8, 4, 4, 4, 4}, Run: rope},
		{Name: "attention_gqa_f32", ParamSizes: []int{8, 8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4, 4, 4}, Run: perKVHeadAttention(4, 128, 1024, false)},
		{Name: "attention_merge_f32", ParamSizes: []int{8, 8, 8, 4, 4, 4, 4}, Run: attentionMerge},
		{Name: "silu_mul_f32", ParamSizes: []int{8, 8, 4, 4}, Run: siluMul},
		{Name: "add_f32", ParamSizes: []int{8, 8, 4}, Run: add},
		{Name: "copy_rows_f32", ParamSizes: []int{8, 8, 8, 4, 4}, Run: copyRows},
	}
	for _, dt := range []wtype{wF32, wF16, wBF16} {
		ks = append(ks,
			simgpu.KernelDef{Name: "embed_" + dt.suffix(), ParamSizes: []int{8, 8, 8, 4, 4, 4}, Run: embed(dt)},
			simgpu.KernelDef{Name: "rmsnorm_" + dt.suffix(), ParamSizes: []int{8, 8, 8, 4, 4, 4}, Run: rmsnorm(dt)},
			simgpu.KernelDef{Name: "rmsnorm_fused_" + dt.suffix(), ParamSizes: []int{8, 8, 8, 8, 8, 4, 4, 4, 4, 8, 4}, Run: rmsnormFused(dt)},
			simgpu.KernelDef{Name: "matmul_" + dt.suffix(), ParamSizes: []int{8, 8, 8, 8, 4, 4, 4, 4}, Run: matmul(dt)},
			simgpu.KernelDef{Name: "norm_matvec_" + dt.suffix(), ParamSizes: []int{8, 8, 8, 8, 8, 4, 4, 4, 4}, Run: normMatvec(dt)})
	}
	// matmul_tc_W: matmul_W's semantics on the tensor cores (16-bit weights;
	// the backend launches it on CUDA from 512 rows).
	// tc_split_x_W + matmul_tcx_W: the same in two launches (from 2 rows to
	// 511).
	// The split buffer is the pair's private format: here it holds x's f32
	// rows as they are (it is at least that large; the fragment layout is
	// forward.cu's, checked by model/internal/hostkern).
	// wg_split_x_W + matmul_wg_W or matmul_wgs_W (sm_90a: up to 64 rows
	// where the backend finds a split of in; the two give the same sums):
	// the image is private to the pair as well.
	// The kernels over the KV cache, over an f32 cache and over an f16 one
	// (*_kv16: each value stored rounded to nearest even).
	for _, half := range []bool{false, true} {
		suf := ""
		if half {
			suf = "_kv16"
		}
		ks = append(ks, simgpu.KernelDef{Name: "kv_store_f32" + suf, ParamSizes: []int{8, 8, 8, 8, 4, 4, 4, 4, 4, 4}, Run: kvStore(half)},
			simgpu.KernelDef{Name: "rope_kv_store_f32" + suf, ParamSizes: []int{8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4}, Run: ropeKVStore(half)},
			simgpu.KernelDef{Name: "attention_f32" + suf, ParamSizes: []int{8, 8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4, 4, 4}, Run: attention(half)},
			simgpu.KernelDef{Name: "attention_warps_f32" + suf, ParamSizes: []int{8, 8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4, 4, 4}, Run: perKVHeadAttention(8, 256, 256, half)},
			simgpu.KernelDef{Name: "rope_attention_warps_f32" + suf, ParamSizes: []int{8, 8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4, 4, 4, 8, 8, 4, 8, 8, 4, 8, 4}, Run: ropeAttentionWarps(half)},
			simgpu.KernelDef{Name: "attention_split_f32" + suf, ParamSizes: []int{8, 8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4, 4, 4, 8, 4}, Run: attentionSplit(half)},
			simgpu.KernelDef{Name: "attention_prefill_f32" + suf, ParamSizes: []int{8, 8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4, 4, 4}, Run: attentionPrefill(half)})
	}
	for _, dt := range []wtype{wF16, wBF16} {
		ks = append(ks, simgpu.KernelDef{Name: "matmul_tc_" + dt.suffix(), ParamSizes: []int{8, 8, 8, 8, 4, 4, 4, 4}, Run: matmul(dt)},
			simgpu.KernelDef{Name: "tc_split_x_" + dt.suffix(), ParamSizes: []int{8, 8, 4, 4}, Run: tcSplitX},
			simgpu.KernelDef{Name: "matmul_tcx_" + dt.suffix(), ParamSizes: []int{8, 8, 8, 8, 4, 4, 4, 4}, Run: matmul(dt)},
			simgpu.KernelDef{Name: "wg_split_x_" + dt.suffix(), ParamSizes: []int{8, 8, 4, 4}, Run: wgSplitX},
			simgpu.KernelDef{Name: "wg_silu_split_x_" + dt.suffix(), ParamSizes: []int{8, 8, 4, 4}, Run: wgSiluSplitX},
			simgpu.KernelDef{Name: "matmul_wg_" + dt.suffix(), ParamSizes: []int{8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4}, Run: matmulWG(dt, 256)},
			simgpu.KernelDef{Name: "matmul_wgs_" + dt.suffix(), ParamSizes: []int{8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4}, Run: matmulWG(dt, 384)})
	}
	return append(ks, quantKernels()...)
}

type wtype int

const (
	wF32 wtype = iota
	wF16
	wBF16
)

func (t wtype) suffix() string { return [...]string{"f32", "f16", "bf16"}[t] }
func (t wtype) size() int {
	if t == wF32 {
		return 4
	}
	return 2
}

// mem returns n bytes at p, or the simulated illegal address.
func mem(d *simgpu.Device, p uint64, n int) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	return d.Bytes(driver.Ptr(p), uint64(n))
}

func f32s(d *simgpu.Device, p uint64, n int) ([]float32, error) {
	b, err := mem(d, p, 4*n)
	if err != nil || n == 0 {
		return nil, err
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n), nil
}

func u32s(d *simgpu.Device, p uint64, n int) ([]uint32, error) {
	b, err := mem(d, p, 4*n)
	if err != nil || n == 0 {
		return nil, err
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), n), nil
}

// cacheRow reads n values of a KV cache at element offset off: f32 values
// as they are (a view), or f16 ones (half) widened exactly (a copy).
func cacheRow(d *simgpu.Device, p uint64, off, n int, half bool) ([]float32, error) {
	if !half {
		return f32s(d, p+uint64(4*off), n)
	}
	b, err := mem(d, p+uint64(2*off), 2*n)
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = safetensors.F16ToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return out, nil
}

// putCacheRow writes v into a KV cache at element offset off: as f32, or
// (half) rounded to f16, nearest even.
func putCacheRow(d *simgpu.Device, p uint64, off int, v []float32, half bool) error {
	if !half {
		dst, err := f32s(d, p+uint64(4*off), len(v))
		if err == nil {
			copy(dst, v)
		}
		return err
	}
	b, err := mem(d, p+uint64(2*off), 2*len(v))
	if err != nil {
		return err
	}
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], safetensors.Float32ToF16(x))
	}
	return nil
}

// widen reads n weights of type t at p as float32 (a copy).
func widen(d *simgpu.Device, t wtype, p uint64, n int) ([]float32, error) {
	b, err := mem(d, p, n*t.size())
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	for i := range out {
		switch t {
		case wF32:
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		case wF16:
			out[i] = safetensors.F16ToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
		case wBF16:
			out[i] = safetensors.BF16ToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
		}
	}
	return out, nil
}

func f32arg(a uint64) float32 { return math.Float32frombits(uint32(a)) }

// embed_W: out, table, tokens, n, hidden, vocab.
func embed(t wtype) simgpu.KernelFunc {
	return func(d *simgpu.Device, _, _ driver.Dim3, a []uint64, _ <-chan struct{}) error {
		n, D, V := int(a[3]), int(a[4]), int(a[5])
		out, err := f32s(d, a[0], n*D)
		if err != nil {
			return err
		}
		toks, err := u32s(d, a[2], n)
		if err != nil {
			return err
		}
		for i, id := range toks {
			row := out[i*D : (i+1)*D]
			if int(id) >= V {
				clear(row)
				continue
			}
			w, err := widen(d, t, a[1]+uint64(int(id)*D*t.size()), D)
			if err != nil {
				return err
			}
			copy(row, w)
		}
		return nil
	}
}

// rmsnorm_fused_W: out, x, ws, bias, weight, parts, rows, dim, eps, xs,
// split: with parts >= 1, x[r] += the parts' sum in part order (then the
// bias, as forward.cu's fw_mm_store); rmsnorm_W; with split 1 to 4 the
// image of out as tcSplitX or wgSplitX keeps it (out's f32 rows), after
// forward.cu's grid rule (rows, or with a split rows rounded up to 16; the
// wg splits up to 64 rows).
func rmsnormFused(t wtype) simgpu.KernelFunc {
	norm := rmsnorm(t)
	return func(d *simgpu.Device, g, b driver.Dim3, a []uint64, stop <-chan struct{}) error {
		parts, rows, D, split := int(a[5]), int(a[6]), int(a[7]), a[10]
		grid := rows
		if split != 0 {
			grid = (rows + 15) / 16 * 16
		}
		if split > 4 || split >= 3 && rows > 64 || int(g.X)*int(g.Y)*int(g.Z) != grid || b.X*b.Y*b.Z != 256 {
			return simgpu.CodeLaunchFailure
		}
		if parts > 0 {
			if err := sumPartials(d, a[1], a[2], a[3], parts, rows, D, true); err != nil {
				return err
			}
		}
		if err := norm(d, g, b, []uint64{a[0], a[1], a[4], a[6], a[7], a[8]}, stop); err != nil {
			return err
		}
		if split == 0 {
			return nil
		}
		return tcSplitX(d, g, b, []uint64{a[9], a[0], a[6], a[7]}, stop)
	}
}

// rmsnorm_W: out, x, weight, rows, dim, eps.
func rmsnorm(t wtype) simgpu.KernelFunc {
	return func(d *simgpu.Device, _, _ driver.Dim3, a []uint64, _ <-chan struct{}) error {
		rows, D := int(a[3]), int(a[4])
		out, err := f32s(d, a[0], rows*D)
		if err != nil {
			return err
		}
		x, err := f32s(d, a[1], rows*D)
		if err != nil {
			return err
		}
		w, err := widen(d, t, a[2], D)
		if err != nil {
			return err
		}
		for r := range rows {
			cpu.RMSNorm(out[r*D:(r+1)*D], x[r*D:(r+1)*D], w, f32arg(a[5]))
		}
		return nil
	}
}

var pool = cpu.NewPool(1)

// norm_matvec_W: y, x, w, bias, nw, in, n, eps, silu. rmsnorm_W's twin of
// x's one row, then matmul_W's of it into n outputs (silu: 2n, and
// silu_mul_f32's twin of them into y), as the three launches would. Its
// grid must be ceil(n / 8) blocks of 256 threads; past in 4096 it writes
// nothing, as forward.cu's.
func normMatvec(t wtype) simgpu.KernelFunc {
	return func(d *simgpu.Device, g, b driver.Dim3, a []uint64, _ <-chan struct{}) error {
		K, n, silu := int(a[5]), int(a[6]), a[8] != 0
		if int(g.X)*int(g.Y)*int(g.Z) != (n+7)/8 || b.X*b.Y*b.Z != 256 {
			return simgpu.CodeLaunchFailure
		}
		if K > 4096 {
			return nil
		}
		N := n
		if silu {
			N = 2 * n
		}
		y, err := f32s(d, a[0], n)
		if err != nil {
			return err
		}
		x, err := f32s(d, a[1], K)
		if err != nil {
			return err
		}
		m, err := weights(d, t, a[2], N, K)
		if err != nil {
			return err
		}
		var bias []float32
		if a[3] != 0 {
			if bias, err = f32s(d, a[3], N); err != nil {
				return err
			}
		}
		nw, err := widen(d, t, a[4], K)
		if err != nil {
			return err
		}
		xn := make([]float32, K)
		cpu.RMSNorm(xn, x, nw, f32arg(a[7]))
		if !silu {
			pool.MatMul(y, xn, 1, m, bias)
			return nil
		}
		gu := make([]float32, N)
		pool.MatMul(gu, xn, 1, m, bias)
		cpu.SwiGLU(y, gu[:n], gu[n:])
		return nil
	}
}

// matmul_W: y, x, w, bias, rows, in, out, accumulate. Each row is its own
// product (as on a GPU, a row's result does not depend on the others).
func matmul(t wtype) simgpu.KernelFunc {
	return func(d *simgpu.Device, _, _ driver.Dim3, a []uint64, _ <-chan struct{}) error {
		rows, K, N := int(a[4]), int(a[5]), int(a[6])
		y, err := f32s(d, a[0], rows*N)
		if err != nil {
			return err
		}
		x, err := f32s(d, a[1], rows*K)
		if err != nil {
			return err
		}
		m, err := weights(d, t, a[2], N, K)
		if err != nil {
			return err
		}
		return matmulRows(d, a, m, x, y)
	}
}

// weights is the [n, k] weight matrix of type t at addr.
func weights(d *simgpu.Device, t wtype, addr uint64, n, k int) (*cpu.Matrix, error) {
	m := &cpu.Matrix{Rows: n, Cols: k}
	var err error
	switch t {
	case wF32:
		m.F32, err = f32s(d, addr, n*k)
	case wBF16:
		var b []byte
		if b, err = mem(d, addr, 2*n*k); err == nil {
			m.BF16 = unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), n*k)
		}
	case wF16:
		m.F32, err = widen(d, t, addr, n*k)
	}
	return m, err
}

// tcSplitX is tc_split_x_W's twin: xs (a[0]) gets x (a[1], [a[2], a[3]]
// f32) as it is, which matmul_tcx_W's twin (matmul) reads as its x.
func tcSplitX(d *simgpu.Device, _, _ driver.Dim3, a []uint64, _ <-chan struct{}) error {
	n := int(a[2]) * int(a[3])
	xs, err := f32s(d, a[0], n)
	if err != nil {
		return err
	}
	x, err := f32s(d, a[1], n)
	if err != nil {
		return err
	}
	copy(xs, x)
	return nil
}

// wgSplitX is wg_split_x_W's twin: as tcSplitX, with forward.cu's grid
// rule (a thread per 16 bytes of the hi part: ceil(in/64) * 8 * R threads,
// R = rows rounded up to 16) and its 64-row limit.
func wgSplitX(d *simgpu.Device, g, b driver.Dim3, a []uint64, stop <-chan struct{}) error {
	if !wgSplitLaunch(g, b, int(a[2]), int(a[3])) {
		return simgpu.CodeLaunchFailure
	}
	return tcSplitX(d, g, b, a, stop)
}

// wgSplitLaunch: g and b are wg_split_x_W's grid and block for rows x in.
func wgSplitLaunch(g, b driver.Dim3, rows, in int) bool {
	R := (rows + 15) / 16 * 16
	return rows <= 64 && int(g.X)*int(g.Y)*int(g.Z) == ((in+63)/64*8*R+255)/256 && b.X*b.Y*b.Z == 256
}

// wgSiluSplitX is wg_silu_split_x_W's twin: wgSplitX's launch rules for
// in = inter, and the image holds silu_mul_f32's output rows.
func wgSiluSplitX(d *simgpu.Device, g, b driver.Dim3, a []uint64, stop <-chan struct{}) error {
	if !wgSplitLaunch(g, b, int(a[2]), int(a[3])) {
		return simgpu.CodeLaunchFailure
	}
	return siluMul(d, g, b, a, stop)
}

// matmulWG is matmul_wg_W's twin (and matmul_wgs_W's, with 384 threads):
// y, xs, w, bias, ws, cnt, rows, in, out, accumulate, ks, as matmul_W over
// the image (tcSplitX's copy of x), with forward.cu's launch rules: 1 to 64
// rows, ks a nonzero multiple of 64, the grid ceil(out/128) *
// ceil(in/ks), the kernel's threads; with accumulate 2, partials in ws
// only (see below); with 4, down's image of silu(gate) * up in y
// (wgSiluProduct); and where in is split, the group
// counts it works through must start at zero (the backend zeroes them
// once, every launch leaves them so).
func matmulWG(t wtype, threads uint32) simgpu.KernelFunc {
	mm := matmul(t)
	return func(d *simgpu.Device, g, b driver.Dim3, a []uint64, stop <-chan struct{}) error {
		rows, in, out, ks := int(a[6]), int(a[7]), int(a[8]), int(a[10])
		if rows < 1 || rows > 64 || ks == 0 || ks%64 != 0 || b.X*b.Y*b.Z != threads {
			return simgpu.CodeLaunchFailure
		}
		groups, splits := (out+127)/128, (in+ks-1)/ks
		if int(g.X)*int(g.Y)*int(g.Z) != groups*splits {
			return simgpu.CodeLaunchFailure
		}
		if splits > 1 {
			cnt, err := u32s(d, a[5], groups)
			if err != nil {
				return err
			}
			for _, c := range cnt {
				if c != 0 {
					return simgpu.CodeLaunchFailure
				}
			}
			if _, err := f32s(d, a[4], splits*rows*out); err != nil {
				return err
			}
		}
		if a[9] == 4 {
			// FW_WG_SILU: gate|up (in whole, out a multiple of 128) writes
			// down's image of silu(gate) * up into y: here its f32 rows.
			if splits != 1 || out%128 != 0 {
				return simgpu.CodeLaunchFailure
			}
			return wgSiluProduct(d, t, a, rows, in, out)
		}
		if a[9]&2 != 0 {
			// FW_WG_LEAVE_PARTS: the partials for rmsnorm_fused_W, no y. Here
			// the whole sum is part 0 and the others are +0, which adds the
			// same value.
			ws, err := f32s(d, a[4], splits*rows*out)
			if err != nil {
				return err
			}
			clear(ws[rows*out:])
			return mm(d, g, b, []uint64{a[4], a[1], a[2], 0, a[6], a[7], a[8], 0}, stop)
		}
		return mm(d, g, b, []uint64{a[0], a[1], a[2], a[3], a[6], a[7], a[8], a[9]}, stop)
	}
}

// wgSiluProduct is matmulWG's FW_WG_SILU: y = x . w^T + bias [rows, out]
// over the image (a[1], x's f32 rows), then silu_mul_f32's rows of it into
// the image a[0] [rows, out/2].
func wgSiluProduct(d *simgpu.Device, t wtype, a []uint64, rows, in, out int) error {
	x, err := f32s(d, a[1], rows*in)
	if err != nil {
		return err
	}
	img, err := f32s(d, a[0], rows*out/2)
	if err != nil {
		return err
	}
	m, err := weights(d, t, a[2], out, in)
	if err != nil {
		return err
	}
	gu := make([]float32, rows*out)
	if err := matmulRows(d, []uint64{0, 0, 0, a[3], uint64(rows), uint64(in), uint64(out), 0}, m, x, gu); err != nil {
		return err
	}
	I := out / 2
	for r := range rows {
		cpu.SwiGLU(img[r*I:(r+1)*I], gu[r*out:r*out+I], gu[r*out+I:(r+1)*out])
	}
	return nil
}

// matmulRows finishes a matmul_W, matvec_Q or matmul_Q twin once its weights are in m:
// bias (a[3], 0 for none), then each row's product into y, added when
// a[7] (accumulate) is set.
func matmulRows(d *simgpu.Device, a []uint64, m *cpu.Matrix, x, y []float32) error {
	rows, K, N, acc := int(a[4]), int(a[5]), int(a[6]), a[7] != 0
	var bias []float32
	if a[3] != 0 {
		var err error
		if bias, err = f32s(d, a[3], N); err != nil {
			return err
		}
	}
	r := make([]float32, N)
	for row := range rows {
		pool.MatMul(r, x[row*K:(row+1)*K], 1, m, bias)
		yr := y[row*N : (row+1)*N]
		if acc {
			for i := range yr {
				yr[i] += r[i]
			}
		} else {
			copy(yr, r)
		}
	}
	return nil
}

// rope_f32: x, pos, inv_freq, tokens, heads, headdim, stride. Angles as the
// CPU backend computes them.
func rope(d *simgpu.Device, _, _ driver.Dim3, a []uint64, _ <-chan struct{}) error {
	T, H, hd, stride := int(a[3]), int(a[4]), int(a[5]), int(a[6])
	pos, err := u32s(d, a[1], T)
	if err != nil {
		return err
	}
	inv, err := f32s(d, a[2], hd/2)
	if err != nil {
		return err
	}
	cos, sin := make([]float32, hd/2), make([]float32, hd/2)
	for t := range T {
		p := float32(pos[t])
		for i, f := range inv {
			ang := float64(f * p)
			cos[i], sin[i] = float32(math.Cos(ang)), float32(math.Sin(ang))
		}
		x, err := f32s(d, a[0]+uint64(4*t*stride), H*hd)
		if err != nil {
			return err
		}
		cpu.RoPE(x, H, hd, cos, sin)
	}
	return nil
}

// kv_store_f32: k_cache, v_cache, qkv, slots, tokens, kv_dim, k_off, v_off,
// stride, num_slots; over an f16 cache with half.
func kvStore(half bool) simgpu.KernelFunc {
	return func(d *simgpu.Device, _, _ driver.Dim3, a []uint64, _ <-chan struct{}) error {
		return storeKV(d, a, half)
	}
}

func storeKV(d *simgpu.Device, a []uint64, half bool) error {
	T, kvD, kOff, vOff, stride, slots := int(a[4]), int(a[5]), int(a[6]), int(a[7]), int(a[8]), int(a[9])
	elem := 4
	if half {
		elem = 2
	}
	for _, p := range a[:2] { // both caches hold every slot
		if _, err := mem(d, p, elem*slots*kvD); err != nil {
			return err
		}
	}
	qkv, err := f32s(d, a[2], (T-1)*stride+max(kOff, vOff)+kvD)
	if err != nil {
		return err
	}
	sl, err := u32s(d, a[3], T)
	if err != nil {
		return err
	}
	for t, s := range sl {
		if int(s) >= slots {
			continue
		}
		if err := putCacheRow(d, a[0], int(s)*kvD, qkv[t*stride+kOff:t*stride+kOff+kvD], half); err != nil {
			return err
		}
		if err := putCacheRow(d, a[1], int(s)*kvD, qkv[t*stride+vOff:t*stride+vOff+kvD], half); err != nil {
			return err
		}
	}
	return nil
}

// rope_kv_store_f32: qkv, k_cache, v_cache, pos, inv_freq, slots, tokens,
// heads, kv_heads, headdim, stride, num_slots: rope_f32 of q's and k's
// heads, then kv_store_f32, one after the other.
func ropeKVStore(half bool) simgpu.KernelFunc {
	return func(d *simgpu.Device, g, b driver.Dim3, a []uint64, stop <-chan struct{}) error {
		H, KV, hd := a[7], a[8], a[9]
		if err := rope(d, g, b, []uint64{a[0], a[3], a[4], a[6], H + KV, hd, a[10]}, stop); err != nil {
			return err
		}
		return storeKV(d, []uint64{a[1], a[2], a[0], a[5], a[6], KV * hd, H * hd, (H + KV) * hd, a[10], a[11]}, half)
	}
}

// attention_f32: out, qkv, k_cache, v_cache, q_seq, q_pos, block_tables,
// max_blocks, block_size, tokens, heads, kv_heads, headdim, stride, scale.
// The CPU backend's attention, key by key through the block table; over an
// f16 cache with half (its values widened exactly).
func attention(half bool) simgpu.KernelFunc {
	return func(d *simgpu.Device, _, _ driver.Dim3, a []uint64, _ <-chan struct{}) error {
		return attend(d, a, half)
	}
}

// queries reads an attention launch's q|k|v rows and its tokens'
// sequences and positions (attention_f32's arguments).
func queries(d *simgpu.Device, a []uint64) (qkv []float32, qSeq, qPos []uint32, err error) {
	T, stride := int(a[9]), int(a[13])
	if qkv, err = f32s(d, a[1], T*stride); err != nil {
		return nil, nil, nil, err
	}
	if qSeq, err = u32s(d, a[4], T); err != nil {
		return nil, nil, nil, err
	}
	qPos, err = u32s(d, a[5], T)
	return qkv, qSeq, qPos, err
}

func attend(d *simgpu.Device, a []uint64, half bool) error {
	maxBlocks, bs, T, H, KV, hd, stride := int(a[7]), int(a[8]), int(a[9]), int(a[10]), int(a[11]), int(a[12]), int(a[13])
	scale := f32arg(a[14])
	kvD := KV * hd
	out, err := f32s(d, a[0], T*H*hd)
	if err != nil {
		return err
	}
	qkv, qSeq, qPos, err := queries(d, a)
	if err != nil {
		return err
	}
	nseq := 0
	for _, s := range qSeq {
		nseq = max(nseq, int(s)+1)
	}
	tables, err := u32s(d, a[6], nseq*maxBlocks)
	if err != nil {
		return err
	}
	group := H / KV
	for t := range T {
		n := int(qPos[t]) + 1
		table := tables[int(qSeq[t])*maxBlocks : (int(qSeq[t])+1)*maxBlocks]
		keys, vals := make([][]float32, n), make([][]float32, n)
		for j := range n {
			slot := int(table[j/bs])*bs + j%bs
			if keys[j], err = cacheRow(d, a[2], slot*kvD, kvD, half); err != nil {
				return err
			}
			if vals[j], err = cacheRow(d, a[3], slot*kvD, kvD, half); err != nil {
				return err
			}
		}
		sc := make([]float32, n)
		for h := range H {
			qh := qkv[t*stride+h*hd : t*stride+(h+1)*hd]
			off := (h / group) * hd
			for j := range n {
				sc[j] = cpu.Dot(qh, keys[j][off:off+hd]) * scale
			}
			cpu.Softmax(sc)
			o := out[t*H*hd+h*hd : t*H*hd+(h+1)*hd]
			clear(o)
			for j, p := range sc {
				cpu.Axpy(p, vals[j][off:off+hd], o)
			}
		}
	}
	return nil
}

// attPrefillRows is FW_ATTP_ROWS: attention_prefill_f32's query tokens per
// block.
const attPrefillRows = 16

// attention_prefill_f32: attention_f32's arguments and semantics, tiled on
// the GPU; here the same CPU attention, after checking the launch against
// forward.cu's grid rule (ceil(tokens/16) * heads blocks of 256 threads),
// since a launcher that got it wrong would leave query tokens unwritten (or
// blocks idle) on a GPU: another launch shape faults the device
// (CodeLaunchFailure), so the step fails where a test can see it.
func attentionPrefill(half bool) simgpu.KernelFunc {
	return func(d *simgpu.Device, g, b driver.Dim3, a []uint64, _ <-chan struct{}) error {
		T, H := int(a[9]), int(a[10])
		want := (T + attPrefillRows - 1) / attPrefillRows * H
		if int(g.X)*int(g.Y)*int(g.Z) != want || b.X*b.Y*b.Z != 256 {
			return simgpu.CodeLaunchFailure
		}
		return attend(d, a, half)
	}
}

// perKVHeadAttention is the twin of a decode attention kernel with
// attention_f32's arguments and semantics and one block of threads per
// token and kv head, for at most maxGroup query heads a kv head and
// head_dim at most maxHeadDim: attention_gqa_f32 (4, 128, 1024) and
// attention_warps_f32 (8, 256, 256). Here the CPU attention, after
// checking the launch against that rule and the shapes the kernel takes
// (forward.cu writes nothing for others: here a launch failure, so a
// launcher that routed one there fails its step).
func perKVHeadAttention(maxGroup, maxHeadDim int, threads uint32, half bool) simgpu.KernelFunc {
	return func(d *simgpu.Device, g, b driver.Dim3, a []uint64, _ <-chan struct{}) error {
		T, H, KV, hd := int(a[9]), int(a[10]), int(a[11]), int(a[12])
		if KV <= 0 || H%KV != 0 || H/KV > maxGroup || hd <= 0 || hd > maxHeadDim {
			return simgpu.CodeLaunchFailure
		}
		if int(g.X)*int(g.Y)*int(g.Z) != T*KV || b.X*b.Y*b.Z != threads {
			return simgpu.CodeLaunchFailure
		}
		return attend(d, a, half)
	}
}

// attention_split_f32: attention_f32's arguments with part for out, then
// ml, ranges. For token t, head h and range r (of ranges), over the
// token's keys r c .. r c + c - 1 with c = ceil(n / ranges) (n its keys):
// part[(t*heads+h)*ranges+r] = sum_j exp(s_j - m) v_j, ml[2 that] = m, the
// largest score s_j (-inf with no key), and ml[2 that + 1] = sum_j exp(s_j
// - m). The launch is checked as attention_warps_f32's, with ranges times
// its blocks.
func attentionSplit(half bool) simgpu.KernelFunc {
	return func(d *simgpu.Device, g, b driver.Dim3, a []uint64, _ <-chan struct{}) error {
		return attendSplit(d, g, b, a, half)
	}
}

func attendSplit(d *simgpu.Device, g, b driver.Dim3, a []uint64, half bool) error {
	maxBlocks, bs, T, H, KV, hd, stride := int(a[7]), int(a[8]), int(a[9]), int(a[10]), int(a[11]), int(a[12]), int(a[13])
	scale, R := f32arg(a[14]), int(a[16])
	if KV <= 0 || H%KV != 0 || H/KV > 8 || hd <= 0 || hd > 256 || R <= 0 ||
		int(g.X)*int(g.Y)*int(g.Z) != T*KV*R || b.X*b.Y*b.Z != 256 {
		return simgpu.CodeLaunchFailure
	}
	kvD := KV * hd
	part, err := f32s(d, a[0], T*H*R*hd)
	if err != nil {
		return err
	}
	ml, err := f32s(d, a[15], T*H*R*2)
	if err != nil {
		return err
	}
	qkv, qSeq, qPos, err := queries(d, a)
	if err != nil {
		return err
	}
	for t := range T {
		table, err := u32s(d, a[6]+uint64(4*int(qSeq[t])*maxBlocks), maxBlocks)
		if err != nil {
			return err
		}
		n := min(int(qPos[t])+1, maxBlocks*bs)
		c := (n + R - 1) / R
		for h := range H {
			qh := qkv[t*stride+h*hd : t*stride+(h+1)*hd]
			off := (h / (H / KV)) * hd
			for r := range R {
				slot := (t*H+h)*R + r
				o := part[slot*hd : (slot+1)*hd]
				clear(o)
				j0, j1 := min(r*c, n), min(r*c+c, n)
				sc := make([]float32, j1-j0)
				m := float32(math.Inf(-1))
				rows := make([][]float32, len(sc))
				for i := range sc {
					j := j0 + i
					kslot := int(table[j/bs])*bs + j%bs
					k, err := cacheRow(d, a[2], kslot*kvD+off, hd, half)
					if err != nil {
						return err
					}
					if rows[i], err = cacheRow(d, a[3], kslot*kvD+off, hd, half); err != nil {
						return err
					}
					sc[i] = cpu.Dot(qh, k) * scale
					m = max(m, sc[i])
				}
				var l float32
				for i, s := range sc {
					w := float32(math.Exp(float64(s - m)))
					l += w
					cpu.Axpy(w, rows[i], o)
				}
				ml[2*slot], ml[2*slot+1] = m, l
			}
		}
	}
	return nil
}

// attention_merge_f32: out, part, ml, tokens, heads, headdim, ranges: for
// token t and head h, attention_split_f32's shares of the ranges with keys
// weighted by exp(m_r - M), M their largest m_r, over the same weighted sum
// of their l_r. Grid tokens * heads, block 128.
func attentionMerge(d *simgpu.Device, g, b driver.Dim3, a []uint64, _ <-chan struct{}) error {
	T, H, hd, R := int(a[3]), int(a[4]), int(a[5]), int(a[6])
	if R <= 0 || int(g.X)*int(g.Y)*int(g.Z) != T*H || b.X*b.Y*b.Z != 128 {
		return simgpu.CodeLaunchFailure
	}
	out, err := f32s(d, a[0], T*H*hd)
	if err != nil {
		return err
	}
	part, err := f32s(d, a[1], T*H*R*hd)
	if err != nil {
		return err
	}
	ml, err := f32s(d, a[2], T*H*R*2)
	if err != nil {
		return err
	}
	for th := range T * H {
		M := float32(math.Inf(-1))
		for r := range R {
			if ml[2*(th*R+r)+1] != 0 {
				M = max(M, ml[2*(th*R+r)])
			}
		}
		o := out[th*hd : (th+1)*hd]
		clear(o)
		var L float32
		for r := range R {
			if l := ml[2*(th*R+r)+1]; l != 0 {
				w := float32(math.Exp(float64(ml[2*(th*R+r)] - M)))
				L += l * w
				cpu.Axpy(w, part[(th*R+r)*hd:(th*R+r+1)*hd], o)
			}
		}
		for i := range o {
			o[i] /= L
		}
	}
	return nil
}

// sumPartials writes into y [rows, width] a split product's partial sums
// ws [parts, rows, width] in part order, then the bias (0: none), then,
// with add, y itself: what matmul_wg_W's last block writes (accumulate
// with add).
func sumPartials(d *simgpu.Device, yAddr, wsAddr, biasAddr uint64, parts, rows, width int, add bool) error {
	y, err := f32s(d, yAddr, rows*width)
	if err != nil {
		return err
	}
	ws, err := f32s(d, wsAddr, parts*rows*width)
	if err != nil {
		return err
	}
	var bias []float32
	if biasAddr != 0 {
		if bias, err = f32s(d, biasAddr, width); err != nil {
			return err
		}
	}
	for i := range y {
		v := ws[i]
		for s := 1; s < parts; s++ {
			v += ws[s*rows*width+i]
		}
		if bias != nil {
			v += bias[i%width]
		}
		if add {
			v += y[i]
		}
		y[i] = v
	}
	return nil
}

// rope_attention_warps_f32: attention_warps_f32's arguments, then
// inv_freq, slots, num_slots, ws, bias, parts, xs, split: with parts >= 1
// each qkv row is first the sum of the q|k|v product's partials (in part
// order, then the bias), then rope_kv_store_f32 and attention_warps_f32,
// one after the other; with split 3 or 4 the output goes to o's image xs
// (here, as wgSplitX's, its f32 rows) and out is not written. The launch
// is checked as attention_warps_f32's (with a split, also head_dim a
// multiple of 8 and at most 64 tokens), and its tokens must be of distinct
// sequences (a decode step: forward.cu's block writes the only new key its
// attention reads); another is a launch failure.
func ropeAttentionWarps(half bool) simgpu.KernelFunc {
	return func(d *simgpu.Device, g, b driver.Dim3, a []uint64, stop <-chan struct{}) error {
		return ropeAttendWarps(d, g, b, a, stop, half)
	}
}

func ropeAttendWarps(d *simgpu.Device, g, b driver.Dim3, a []uint64, stop <-chan struct{}, half bool) error {
	T, H, KV, hd, stride, parts := int(a[9]), int(a[10]), int(a[11]), int(a[12]), int(a[13]), int(a[20])
	split := a[22]
	if split != 0 && (split < 3 || split > 4 || hd%8 != 0 || T > 64) {
		return simgpu.CodeLaunchFailure
	}
	seqs, err := u32s(d, a[4], T)
	if err != nil {
		return err
	}
	seen := map[uint32]bool{}
	for _, s := range seqs {
		if seen[s] {
			return simgpu.CodeLaunchFailure
		}
		seen[s] = true
	}
	if KV <= 0 || H%KV != 0 || H/KV > 8 || hd <= 0 || hd > 256 || int(g.X)*int(g.Y)*int(g.Z) != T*KV || b.X*b.Y*b.Z != 256 {
		return simgpu.CodeLaunchFailure
	}
	if parts > 0 {
		if err := sumPartials(d, a[1], a[18], a[19], parts, T, stride, false); err != nil {
			return err
		}
	}
	if err := ropeKVStore(half)(d, g, b, []uint64{a[1], a[2], a[3], a[5], a[15], a[16], a[9], a[10], a[11], a[12], a[13], a[17]}, stop); err != nil {
		return err
	}
	att := slices.Clone(a[:15])
	if split != 0 {
		att[0] = a[21] // the image holds the output's rows as they are
	}
	return attend(d, att, half)
}

// silu_mul_f32: out, gu, rows, inter.
func siluMul(d *simgpu.Device, _, _ driver.Dim3, a []uint64, _ <-chan struct{}) error {
	rows, I := int(a[2]), int(a[3])
	out, err := f32s(d, a[0], rows*I)
	if err != nil {
		return err
	}
	gu, err := f32s(d, a[1], rows*2*I)
	if err != nil {
		return err
	}
	for r := range rows {
		cpu.SwiGLU(out[r*I:(r+1)*I], gu[r*2*I:r*2*I+I], gu[r*2*I+I:(r+1)*2*I])
	}
	return nil
}

// add_f32: y, x, n.
func add(d *simgpu.Device, _, _ driver.Dim3, a []uint64, _ <-chan struct{}) error {
	y, err := f32s(d, a[0], int(a[2]))
	if err != nil {
		return err
	}
	x, err := f32s(d, a[1], int(a[2]))
	if err != nil {
		return err
	}
	for i := range y {
		y[i] += x[i]
	}
	return nil
}

// copy_rows_f32: dst, src, rows, n, dim.
func copyRows(d *simgpu.Device, _, _ driver.Dim3, a []uint64, _ <-chan struct{}) error {
	n, dim := int(a[3]), int(a[4])
	rows, err := u32s(d, a[2], n)
	if err != nil {
		return err
	}
	dst, err := f32s(d, a[0], n*dim)
	if err != nil {
		return err
	}
	for i, r := range rows {
		src, err := f32s(d, a[1]+uint64(4*int(r)*dim), dim)
		if err != nil {
			return err
		}
		copy(dst[i*dim:(i+1)*dim], src)
	}
	return nil
}

// samplerKernels are sampling.cu's entry points through the sampling
// package's bit-exact CPU references, f32 logits (the only dtype the
// forward pass writes).
func samplerKernels() []simgpu.KernelDef {
	return []simgpu.KernelDef{
		{Name: "gumbel_max_f32", ParamSizes: []int{8, 4, 4, 4, 4, 4, 4, 4, 8, 8, 8, 8, 8}, Run: gumbel},
		{Name: "rejection_f32", ParamSizes: []int{8, 4, 4, 4, 8, 4, 4, 4, 8, 8, 8}, Run: rejection},
	}
}

func rowsOf(d *simgpu.Device, p uint64, B, V, ld int) ([]float32, error) {
	out := make([]float32, 0, B*V)
	for r := range B {
		row, err := f32s(d, p+uint64(4*r*ld), V)
		if err != nil {
			return nil, err
		}
		out = append(out, row...)
	}
	return out, nil
}

// gumbel_max_f32: logits, B, V, ld, inv_temp, key0, key1, splits, part_val,
// part_idx, arrivals, tokens, status.
func gumbel(d *simgpu.Device, _, _ driver.Dim3, a []uint64, _ <-chan struct{}) error {
	B, V, ld := int(a[1]), int(a[2]), int(a[3])
	rows, err := rowsOf(d, a[0], B, V, ld)
	if err != nil {
		return err
	}
	var temp float32
	if inv := f32arg(a[4]); inv > 0 {
		temp = 1 / inv
	}
	toks, err := u32s(d, a[11], B)
	if err != nil {
		return err
	}
	st, err := u32s(d, a[12], B)
	if err != nil {
		return err
	}
	if err := sampling.GumbelMaxCPU(toks, rows, B, V, temp, sampling.Key{uint32(a[5]), uint32(a[6])}); err != nil {
		return fmt.Errorf("simulated gumbel_max: %w", err)
	}
	for i := range st {
		st[i] = uint32(sampling.StatusOK)
	}
	return nil
}

// rejection_f32: logits, B, V, ld, params, key0, key1, max_rounds, tokens, ok, rounds.
func rejection(d *simgpu.Device, _, _ driver.Dim3, a []uint64, _ <-chan struct{}) error {
	B, V, ld := int(a[1]), int(a[2]), int(a[3])
	rows, err := rowsOf(d, a[0], B, V, ld)
	if err != nil {
		return err
	}
	prm, err := f32s(d, a[4], 4*B)
	if err != nil {
		return err
	}
	params := make([]sampling.Params, B)
	for r := range params {
		p := sampling.Params{Temperature: prm[4*r], TopK: int(prm[4*r+1]), TopP: prm[4*r+2], MinP: prm[4*r+3]}
		params[r] = p
	}
	res := sampling.RejectionResult{}
	if res.Tokens, err = u32s(d, a[8], B); err != nil {
		return err
	}
	if res.OK, err = u32s(d, a[9], B); err != nil {
		return err
	}
	if res.Rounds, err = u32s(d, a[10], B); err != nil {
		return err
	}
	if err := sampling.RejectionCPU(res, rows, B, V, params, sampling.Key{uint32(a[5]), uint32(a[6])}, int(a[7])); err != nil {
		return fmt.Errorf("simulated rejection: %w", err)
	}
	return nil
}
