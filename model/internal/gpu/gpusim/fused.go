package gpusim

import (
	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/model/internal/cpu"
	"github.com/hipgo/hipgo/runtime/driver"
)

// fusedKernels are the fused decode kernels of forward.cu, each as the
// unfused kernels it equals run one after the other.
func fusedKernels() []simgpu.KernelDef {
	ks := []simgpu.KernelDef{
		{Name: "rope_kv_store_f32", ParamSizes: []int{8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4}, Run: ropeKVStore},
	}
	for _, dt := range []wtype{wF32, wF16, wBF16} {
		ks = append(ks,
			simgpu.KernelDef{Name: "rmsnorm_matmul_" + dt.suffix(), ParamSizes: []int{8, 8, 8, 8, 8, 4, 4, 4, 4, 4}, Run: rmsnormMatmul(dt)},
			simgpu.KernelDef{Name: "rmsnorm_matmul_silu_" + dt.suffix(), ParamSizes: []int{8, 8, 8, 8, 8, 4, 4, 4, 4}, Run: rmsnormMatmulSiLU(dt)})
	}
	return ks
}

// normRows returns rmsnorm(x; nw, eps) of rows rows of in values at x (nw
// f32, as the fused kernels take it), in a fresh host slice.
func normRows(d *simgpu.Device, x, nw uint64, rows, in int, eps float32) ([]float32, error) {
	xs, err := f32s(d, x, rows*in)
	if err != nil {
		return nil, err
	}
	w, err := f32s(d, nw, in)
	if err != nil {
		return nil, err
	}
	out := make([]float32, rows*in)
	for r := range rows {
		cpu.RMSNorm(out[r*in:(r+1)*in], xs[r*in:(r+1)*in], w, eps)
	}
	return out, nil
}

// rmsnorm_matmul_W: y, x, nw, w, bias, rows, in, out, accumulate, eps.
func rmsnormMatmul(t wtype) simgpu.KernelFunc {
	return func(d *simgpu.Device, _, _ driver.Dim3, a []uint64, _ <-chan struct{}) error {
		rows, in, out := int(a[5]), int(a[6]), int(a[7])
		xn, err := normRows(d, a[1], a[2], rows, in, f32arg(a[9]))
		if err != nil {
			return err
		}
		y, err := f32s(d, a[0], rows*out)
		if err != nil {
			return err
		}
		return matmulHost(d, t, y, xn, a[3], a[4], rows, in, out, a[8] != 0)
	}
}

// rmsnorm_matmul_silu_W: act, x, nw, w, bias, rows, in, inter, eps.
func rmsnormMatmulSiLU(t wtype) simgpu.KernelFunc {
	return func(d *simgpu.Device, _, _ driver.Dim3, a []uint64, _ <-chan struct{}) error {
		rows, in, inter := int(a[5]), int(a[6]), int(a[7])
		xn, err := normRows(d, a[1], a[2], rows, in, f32arg(a[8]))
		if err != nil {
			return err
		}
		act, err := f32s(d, a[0], rows*inter)
		if err != nil {
			return err
		}
		gu := make([]float32, rows*2*inter)
		if err := matmulHost(d, t, gu, xn, a[3], a[4], rows, in, 2*inter, false); err != nil {
			return err
		}
		for r := range rows {
			g := gu[r*2*inter : (r*2+1)*inter]
			cpu.SwiGLU(act[r*inter:(r+1)*inter], g, gu[(r*2+1)*inter:(r+1)*2*inter])
		}
		return nil
	}
}

// rope_kv_store_f32: qkv, k_cache, v_cache, pos, inv_freq, slots, tokens,
// heads, kv_heads, headdim, stride, num_slots.
func ropeKVStore(d *simgpu.Device, g, b driver.Dim3, a []uint64, stop <-chan struct{}) error {
	H, KV, hd := a[7], a[8], a[9]
	if err := rope(d, g, b, []uint64{a[0], a[3], a[4], a[6], H + KV, hd, a[10]}, stop); err != nil {
		return err
	}
	return kvStore(d, g, b, []uint64{a[1], a[2], a[0], a[5], a[6], KV * hd, H * hd, (H + KV) * hd, a[10], a[11]}, stop)
}
