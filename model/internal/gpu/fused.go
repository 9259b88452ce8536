package gpu

import (
	"fmt"

	"github.com/hipgo/hipgo/model/internal/quant"
	"github.com/hipgo/hipgo/runtime"
)

// The fused decode kernels of kernels/src/forward.cu (rmsnorm_matmul_W,
// rmsnorm_matmul_silu_W, rope_kv_store_f32) each stand for two or three
// launches of the plain ones with the same bytes as the result, so a layer
// of a decode step is 6 launches instead of 10: rmsnorm+qkv, rope+kv store,
// attention, o (+residual), rmsnorm+gate|up+silu, down (+residual). The
// norm-fused ones always run matmul_W's matvec path, so they serve chunks
// of at most fusedRows tokens; rope_kv_store_f32 serves any chunk.

// fusedRows is the most tokens a chunk may have for the norm-fused
// kernels: one matvec row tile (FW_FUSED_ROWS, FW_MM_VEC_ROWS in
// forward.cu), batch-1 and small-batch decode.
const fusedRows = mmVecRows

// siluOuts mirrors FW_SILU_OUTS: the activation columns of one block of
// rmsnorm_matmul_silu_W.
const siluOuts = 4

// fusesNorm: rmsnorm with norm, then the product with m, can be one
// rmsnorm_matmul launch for rows tokens: fusion is on, the chunk is small,
// m is one float-typed matrix (not parts, not quantized) and the norm
// weight is f32 (uploadNorm makes every float norm so).
func (b *Backend) fusesNorm(norm, m matrix, parts []matrix, rows int) bool {
	return b.fuse && rows <= fusedRows && parts == nil && norm.dtype == F32 && m.dtype.Size() > 0
}

// rmsnormMatmul is rmsnorm_W(x, norm) then matmul_W with w, in one launch
// (fusesNorm must hold).
func (b *Backend) rmsnormMatmul(y, x runtime.DevicePtr, norm, w matrix, bias *runtime.Buffer, rows, in, out int, accumulate bool) error {
	var bp runtime.DevicePtr
	if bias != nil {
		bp = bias.Ptr()
	}
	acc := uint32(0)
	if accumulate {
		acc = 1
	}
	grid := ceilDiv(out, mmVecRows) * ceilDiv(rows, mmVecRows)
	return b.launch("rmsnorm_matmul_"+w.dtype.Suffix(), g1(grid), y, x, norm.buf, w.buf, bp, u32(rows), u32(in), u32(out), acc, b.cfg.Eps)
}

// rmsnormMatmulSiLU is rmsnorm_W(x, norm), matmul_W with the gate|up
// matrix w and silu_mul_f32 into act, in one launch (fusesNorm must hold).
func (b *Backend) rmsnormMatmulSiLU(act, x runtime.DevicePtr, norm, w matrix, bias *runtime.Buffer, rows int) error {
	c := b.cfg
	var bp runtime.DevicePtr
	if bias != nil {
		bp = bias.Ptr()
	}
	grid := ceilDiv(c.Intermediate, siluOuts) * ceilDiv(rows, mmVecRows)
	return b.launch("rmsnorm_matmul_silu_"+w.dtype.Suffix(), g1(grid), act, x, norm.buf, w.buf, bp, u32(rows), u32(c.Hidden), u32(c.Intermediate), c.Eps)
}

// ropeKVStore is rope (q's and k's heads) then kvStore, in one launch.
func (b *Backend) ropeKVStore(layer int, qkv, pos, slots runtime.DevicePtr, tokens int) error {
	c := b.cfg
	return b.launch("rope_kv_store_f32", g1(tokens), qkv, b.kc[layer], b.vc[layer], pos, b.invFreq, slots, u32(tokens),
		u32(c.Heads), u32(c.KVHeads), u32(c.HeadDim), u32(c.qkvDim()), u32(b.numBlocks*BlockSize))
}

// attnIn is the attention block's input: qkv = rmsnorm(x) . w_qkv^T.
func (b *Backend) attnIn(qkv, xb, x runtime.DevicePtr, w *deviceLayer, n int) error {
	c := b.cfg
	if b.fusesNorm(w.attnNorm, w.qkv, w.qkvParts, n) {
		return b.rmsnormMatmul(qkv, x, w.attnNorm, w.qkv, w.qkvBias, n, c.Hidden, c.qkvDim(), false)
	}
	if err := b.rmsnorm(xb, x, w.attnNorm, n); err != nil {
		return err
	}
	return b.projection(qkv, xb, w.qkv, w.qkvParts, c.qkvRows(), w.qkvBias, n, c.Hidden)
}

// positions rotates q and k and stores k and v in layer's cache.
func (b *Backend) positions(layer int, qkv, pos, slots runtime.DevicePtr, n int) error {
	c := b.cfg
	if b.fuse {
		return b.ropeKVStore(layer, qkv, pos, slots, n)
	}
	// q's heads and then k's lie back to back in each qkv row: one launch
	// rotates both.
	if err := b.rope(qkv, pos, n, c.Heads+c.KVHeads, c.qkvDim()); err != nil {
		return err
	}
	return b.kvStore(layer, qkv, slots, n)
}

// mlpIn is the MLP's activation: act = silu(gate) * up over rmsnorm(x).
func (b *Backend) mlpIn(act, gu, xb, x runtime.DevicePtr, w *deviceLayer, n int) error {
	c := b.cfg
	if b.fusesNorm(w.mlpNorm, w.gateUp, w.gateUpParts, n) {
		return b.rmsnormMatmulSiLU(act, x, w.mlpNorm, w.gateUp, w.gateUpBias, n)
	}
	if err := b.rmsnorm(xb, x, w.mlpNorm, n); err != nil {
		return err
	}
	if err := b.projection(gu, xb, w.gateUp, w.gateUpParts, c.gateUpRows(), w.gateUpBias, n, c.Hidden); err != nil {
		return err
	}
	return b.siluMul(act, gu, n)
}

// head is the final norm and the LM head over the rows gathered in last
// (normalized in place when not fused).
func (b *Backend) head(logits, last runtime.DevicePtr, rows int) error {
	c := b.cfg
	if b.fusesNorm(b.w.norm, b.w.lmHead, nil, rows) {
		return b.rmsnormMatmul(logits, last, b.w.norm, b.w.lmHead, nil, rows, c.Hidden, c.Vocab, false)
	}
	if err := b.rmsnorm(last, last, b.w.norm, rows); err != nil {
		return err
	}
	return b.matmul(logits, last, b.w.lmHead, nil, rows, c.Hidden, c.Vocab, false)
}

// uploadNorm uploads a norm weight widened to f32, the type the fused
// kernels take it in. The widening is exact (every f16 and bf16 value is a
// float32), so rmsnorm_f32 over it writes rmsnorm_bf16's bytes.
func (b *Backend) uploadNorm(name string, t Tensor) (matrix, error) {
	if t.DType != F16 && t.DType != BF16 {
		return b.uploadTensor(name, t)
	}
	v := make([]float32, len(t.Data)/2)
	if err := quant.DequantizeRow(dtypes[t.DType].q, t.Data, v); err != nil {
		return matrix{}, fmt.Errorf("gpu: %s: %w", name, err)
	}
	return b.uploadTensor(name, F32Tensor(v))
}

// fusedKernelNames are the fused kernels a model with these weights
// launches (for kernelNames).
func (b *Backend) fusedKernelNames() []string {
	if !b.fuse {
		return nil
	}
	names := []string{"rope_kv_store_f32"}
	if b.w.norm.dtype == F32 && b.w.lmHead.dtype.Size() > 0 {
		names = append(names, "rmsnorm_matmul_"+b.w.lmHead.dtype.Suffix())
	}
	for i := range b.w.layers {
		l := &b.w.layers[i]
		if l.qkvParts == nil && l.attnNorm.dtype == F32 && l.qkv.dtype.Size() > 0 {
			names = append(names, "rmsnorm_matmul_"+l.qkv.dtype.Suffix())
		}
		if l.gateUpParts == nil && l.mlpNorm.dtype == F32 && l.gateUp.dtype.Size() > 0 {
			names = append(names, "rmsnorm_matmul_silu_"+l.gateUp.dtype.Suffix())
		}
	}
	return names
}
