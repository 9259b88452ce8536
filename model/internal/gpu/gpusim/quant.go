package gpusim

import (
	"encoding/binary"
	"fmt"

	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/model/internal/cpu"
	"github.com/hipgo/hipgo/model/internal/quant"
	"github.com/hipgo/hipgo/model/safetensors"
	"github.com/hipgo/hipgo/runtime/driver"
)

// quantTypes are module qforward's block formats by kernel suffix.
var quantTypes = []struct {
	suffix string
	t      quant.Type
}{{"q4_0", quant.Q4_0}, {"q4_1", quant.Q4_1}, {"q5_0", quant.Q5_0}, {"q5_1", quant.Q5_1}, {"q8_0", quant.Q8_0}, {"q4_k", quant.Q4_K}, {"q5_k", quant.Q5_K}, {"q6_k", quant.Q6_K}}

// quantKernels are the twins of kernels/src/qforward.cu: embed_Q decodes
// rows with quant.DequantizeRow, matvec_Q, matvec1_Q and matmul_Q (which
// compute the same, by different tilings) run the CPU backend's product over the
// blocks (cpu.Matrix.Q, decoded inside the product), dequant_Q writes the
// decoded matrix as float16, scatter_cols_f32 copies columns.
func quantKernels() []simgpu.KernelDef {
	ks := []simgpu.KernelDef{{Name: "scatter_cols_f32", ParamSizes: []int{8, 8, 4, 4, 4, 4}, Run: scatterCols}}
	for _, q := range quantTypes {
		ks = append(ks,
			simgpu.KernelDef{Name: "embed_" + q.suffix, ParamSizes: []int{8, 8, 8, 4, 4, 4}, Run: qembed(q.t)},
			simgpu.KernelDef{Name: "matvec_" + q.suffix, ParamSizes: []int{8, 8, 8, 8, 4, 4, 4, 4}, Run: qmatmul(q.t)},
			simgpu.KernelDef{Name: "matvec1_" + q.suffix, ParamSizes: []int{8, 8, 8, 8, 4, 4, 4, 4}, Run: qmatmul(q.t)},
			simgpu.KernelDef{Name: "matmul_" + q.suffix, ParamSizes: []int{8, 8, 8, 8, 4, 4, 4, 4}, Run: qmatmul(q.t)},
			simgpu.KernelDef{Name: "dequant_" + q.suffix, ParamSizes: []int{8, 8, 4, 4}, Run: qdequant(q.t)})
	}
	return ks
}

// embed_Q: out, table, tokens, n, hidden, vocab.
func qembed(t quant.Type) simgpu.KernelFunc {
	return func(d *simgpu.Device, _, _ driver.Dim3, a []uint64, _ <-chan struct{}) error {
		n, D, V := int(a[3]), int(a[4]), int(a[5])
		rb, err := quant.RowBytes(t, D)
		if err != nil {
			return fmt.Errorf("gpusim: embed_%v: %w", t, err)
		}
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
			src, err := mem(d, a[1]+uint64(int(id)*rb), rb)
			if err != nil {
				return err
			}
			if err := quant.DequantizeRow(t, src, row); err != nil {
				return err
			}
		}
		return nil
	}
}

// dequant_Q: dst, w, out, in; each weight quant.DequantizeRow's, rounded
// to the nearest float16.
func qdequant(t quant.Type) simgpu.KernelFunc {
	return func(d *simgpu.Device, _, _ driver.Dim3, a []uint64, _ <-chan struct{}) error {
		N, K := int(a[2]), int(a[3])
		rb, err := quant.RowBytes(t, K)
		if err != nil {
			return fmt.Errorf("gpusim: dequant_%v: %w", t, err)
		}
		src, err := mem(d, a[1], N*rb)
		if err != nil {
			return err
		}
		dst, err := mem(d, a[0], 2*N*K)
		if err != nil {
			return err
		}
		row := make([]float32, K)
		for o := range N {
			if err := quant.DequantizeRow(t, src[o*rb:(o+1)*rb], row); err != nil {
				return err
			}
			for k, v := range row {
				binary.LittleEndian.PutUint16(dst[2*(o*K+k):], safetensors.Float32ToF16(v))
			}
		}
		return nil
	}
}

// matvec_Q and matmul_Q: y, x, w, bias, rows, in, out, accumulate; each
// row its own product, as matmul_W's twin.
func qmatmul(t quant.Type) simgpu.KernelFunc {
	return func(d *simgpu.Device, _, _ driver.Dim3, a []uint64, _ <-chan struct{}) error {
		rows, K, N := int(a[4]), int(a[5]), int(a[6])
		rb, err := quant.RowBytes(t, K)
		if err != nil {
			return fmt.Errorf("gpusim: matmul_%v: %w", t, err)
		}
		y, err := f32s(d, a[0], rows*N)
		if err != nil {
			return err
		}
		x, err := f32s(d, a[1], rows*K)
		if err != nil {
			return err
		}
		m := cpu.Matrix{Rows: N, Cols: K, QType: t}
		if m.Q, err = mem(d, a[2], N*rb); err != nil {
			return err
		}
		return matmulRows(d, a, &m, x, y)
	}
}

// scatter_cols_f32: dst, src, rows, cols, dst_stride, dst_off.
func scatterCols(d *simgpu.Device, _, _ driver.Dim3, a []uint64, _ <-chan struct{}) error {
	rows, cols, stride, off := int(a[2]), int(a[3]), int(a[4]), int(a[5])
	src, err := f32s(d, a[1], rows*cols)
	if err != nil {
		return err
	}
	for r := range rows {
		dst, err := f32s(d, a[0]+uint64(4*(r*stride+off)), cols)
		if err != nil {
			return err
		}
		copy(dst, src[r*cols:(r+1)*cols])
	}
	return nil
}
