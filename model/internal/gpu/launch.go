package gpu

import (
	"fmt"

	"github.com/hipgo/hipgo/runtime"
)

// defaultThreads is the block size for a kernel whose metadata declares no
// bound (the forward kernels all declare one).
const defaultThreads = 256

// launch enqueues kernel name with a grid of grid blocks; the block is the
// size the kernel was built for (its KBOUNDS, read from the metadata): the
// forward kernels take their block size from their defines, so a launch
// must use exactly that many threads.
func (b *Backend) launch(name string, grid runtime.Dim3, args ...any) error {
	return b.launchShared(name, grid, 0, args...)
}

// launchShared is launch with shmem bytes of dynamic shared memory.
func (b *Backend) launchShared(name string, grid runtime.Dim3, shmem int, args ...any) error {
	k, err := b.kernel(name)
	if err != nil {
		return err
	}
	threads := k.Spec().MaxThreads
	if threads <= 0 {
		threads = defaultThreads
	}
	// Every forward and qforward kernel opens with fw_early_start/
	// qf_early_start (it waits for the kernels ahead of it itself), so each
	// may be scheduled while the one before it finishes: on sm_90 that hides
	// most of the gap between the ~180 launches of a decode step.
	cfg := runtime.LaunchConfig{Grid: grid, Block: runtime.Dim3{X: uint32(threads), Y: 1, Z: 1}, SharedMem: shmem,
		EarlyStart: b.earlyStart}
	if err := b.s.Launch(k, cfg, args...); err != nil {
		return fmt.Errorf("gpu: %s: %w", name, err)
	}
	if b.launched == nil {
		b.launched = map[string]int64{}
	}
	b.launched[name]++
	return nil
}

// Launched counts the launches of kernel name this backend has enqueued
// (a decode graph's kernels count once, when captured), to see which
// kernels a model runs on a real device.
func (b *Backend) Launched(name string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.launched[name]
}

func g1(x int) runtime.Dim3 { return runtime.Dim3{X: uint32(max(x, 1)), Y: 1, Z: 1} }

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Launch-shape constants mirrored from kernels/src/forward.cu (FW_MM_*,
// FW_EW_THREADS): the launchers below follow the 1-D grid rule each kernel
// states above itself there.
const (
	mmVecRows  = 8  // FW_MM_VEC_ROWS: the matvec path's outputs and input rows per block
	mmGemmRows = 64 // FW_MM_GEMM_ROWS: from this many rows on, the tiled path
	mmTile     = 64 // FW_MM_TILE
	// qfDequantThreads: dequant_Q's block (QF_DEQUANT_THREADS, qforward.cu).
	qfDequantThreads = 256
	// quantDeqRows, quantDeqSeqs: a chunk of this many rows, or of this
	// many sequences (a batched step), decodes each quantized layer matrix
	// to float16 once and multiplies it on the tensor cores (dequantized)
	// instead of by matvec_Q, which decodes it again for every 8 rows; the
	// LM head likewise (headDequantized). One sequence's prompt below
	// quantDeqRows keeps the exact products, so a single conversation gets
	// the CPU's tokens. From 2 sequences one decoding beats decoding every
	// 8 rows (docs/performance.md).
	quantDeqRows = 64
	quantDeqSeqs = 2
	// tcRows: from this many rows on, bf16 and f16 weights go through the
	// tensor cores on CUDA (tc_split_x_W + matmul_tcx_W below tcxMaxRows,
	// matmul_tc_W from it; the warpgroup MMA from wgMinRows). One row
	// keeps matmul_W's matvec path, which streams each weight once; from
	// 2 rows the MMA tiles' idle rows cost less than the matvec path's
	// per-row FMAs. ROCm keeps matmul_W: there the MMA is emulated through
	// lane exchanges (forward.cu).
	tcRows        = 2
	tcBigRows     = 64    // FW_TC_BIG_ROWS: from this many rows on, matmul_tc_W's 128-row tile
	tcTileRows    = 32    // matmul_tc_W's row tile below tcBigRows, and matmul_tcx_W's
	tcBigTileRows = 128   // and from it
	tcWideOut     = 16384 // FW_TC_WIDE_OUT: below tcBigRows, from this many outputs on, the 64-wide tile
	tcNarrowOut   = 16    // outputs per tile below tcBigRows and tcWideOut
	tcTileOut     = 64    // outputs per tile otherwise
	// Below tcxMaxRows the backend splits x once (tc_split_x_W) and runs
	// matmul_tcx_W, whose output tile is tcxSmallOut wide up to tcxMidOut
	// outputs, tcNarrowOut below tcWideOut, tcTileOut from it
	// (FW_TCX_MID_OUT). Splitting x once, not in every warp that reads it,
	// beats matmul_tc_W below tcxMaxRows; from there the two are level.
	tcxMaxRows  = 512
	tcxMidOut   = 2048
	tcxSmallOut = 8
	tcxRowTile  = 16 // xs holds x in 16-row tiles of 32-wide chunks,
	tcxChunk    = 32 // 2 KB each (forward.cu)
	// The warpgroup MMA (sm_90a; x split once into an image by
	// wg_split_x_W; forward.cu) replaces the pair above when the forward
	// module is the sm_90a PTX, for wgMinRows to wgMaxRows rows, where
	// wgSplitK finds a split of in: blocks of wgOutTile outputs, in split
	// into the fewest parts (of whole wgStage-wide stages) that make
	// wgBlocks blocks or more, and every part at least wgMinSplitK wide
	// (narrower parts lose to the pair: their adds cost more than the
	// extra blocks gain). From wgMinRows it beats or matches the pair at
	// every row count, the LM head included; from 33 rows the pair's
	// 32-row tiles read every weight twice, where these read it once up
	// to 64.
	// Every such product runs matmul_wgs_W, matmul_wg_W warp-specialized
	// (the same sums), which copies its first weights before its wait and
	// streams them evict-first; the backend no longer launches matmul_wg_W.
	wgMinRows   = tcRows
	wgMaxRows   = 64  // FW_WG_MAX_ROWS
	wgOutTile   = 128 // FW_WG_TN
	wgStage     = 64  // FW_WG_KC
	wgBlocks    = 128 // about one block an SM (the H200 has 132)
	wgMinSplitK = 1024
	// wgFoldMinSplitK: the narrowest part of in where the norm after the
	// product adds the parts (residualProduct): with the product's own adds
	// gone, parts narrower than wgMinSplitK pay.
	wgFoldMinSplitK = 256
	// wgLeaveParts: matmul_wg_W's accumulate that leaves the split
	// partials in ws (FW_WG_LEAVE_PARTS).
	wgLeaveParts = 2
	// wgSilu: the accumulate with which gate|up writes down's image of
	// silu(gate) * up instead of its output (FW_WG_SILU; siluImage).
	wgSilu = 4
	// rmsnorm_fused_W's split codes (FW_SPLIT_*): tc_split_x_W's fragments
	// or wg_split_x_W's image, in bf16 or (the code after it) f16.
	splitTCBF16 = 1
	splitTCF16  = 2
	splitWGBF16 = 3
	splitWGF16  = 4
	// matmul_wgs_W (forward.cu: matmul_wg_W warp-specialized, the same
	// sums) runs wgSplitK's products, its ring as deep as an sm_90 block's
	// shared memory allows (wgsStages).
	wgsMaxStages = 8      // FW_WGS_MAX_STAGES
	wgsMaxShared = 232448 // the dynamic shared memory an sm_90 block may ask for (227 KB)
	// attpRows: attention_prefill_f32's query tokens per block
	// (FW_ATTP_ROWS); attpMinTokens: the fewest tokens in a chunk for which
	// the backend launches it (chunk.tiledAttention).
	attpRows      = 16
	attpMinTokens = 16
	// attention_gqa_f32 (1024 threads, one block per token and kv head for
	// its 2 to gqaMaxGroup query heads, head_dim at most gqaMaxHeadDim,
	// FW_GQA_*) replaces attention_warps_f32 on CUDA for decode launches
	// over an f32 cache of gqaMinBlocks blocks or more (tokens * kv_heads)
	// that the key ranges do not take, over tables of gqaMinKeys keys or
	// more (the tables' stride is padded to a power of two, so this means
	// more than half as many cached), for heads of gqaMinHeadDim dims or
	// more: 32 key groups a block where attention_warps_f32 has 8 to 32
	// (measured on the H200 against the kernels before attention_warps_f32;
	// not against it).
	gqaMaxGroup   = 4
	gqaMaxHeadDim = 128
	gqaMinBlocks  = 128
	gqaMinKeys    = 512
	gqaMinHeadDim = 65
	// attention_warps_f32 (and its relatives) take up to warpsMaxGroup
	// query heads a kv head (FW_ABK_MAX_GROUP) and head_dim up to
	// attMaxHeadDim (FW_ATT_MAX_HEADDIM).
	warpsMaxGroup = 8
	attMaxHeadDim = 256
	// attention_split_f32 + attention_merge_f32 (attentionRanges) cut a
	// decode step's keys into ranges when its attention_warps_f32 blocks
	// (tokens * kv_heads) fill at most half of splitBlocksPerCU an SM (the
	// kernel's occupancy), as many ranges as fit that many blocks, each
	// keeping at least splitMinKeys of the keys the tables can hold; at
	// most splitMaxRanges.
	splitBlocksPerCU = 2
	splitMinKeys     = 256
	splitMaxRanges   = 64

	// norm_matvec_W (forward.cu): in at most FW_NV_MAX_IN (its row in
	// shared memory), one output per 32-lane group, 8 a block.
	nvMaxIn   = 4096
	nvOutputs = 8

	ewThreads = 256
	maxEWGrid = 65535 // the elementwise kernels stride over the grid
)

// embed gathers token rows; a quantized table runs embed_q4_0 etc., whose
// grid is embed_W's.
func (b *Backend) embed(out runtime.DevicePtr, tokens runtime.DevicePtr, n int) error {
	c := b.cfg
	return b.launch("embed_"+b.w.embed.dtype.Suffix(), g1(n), out, b.w.embed.buf, tokens, u32(n), u32(c.Hidden), u32(c.Vocab))
}

// rmsnorm normalizes x's rows into out. With parts from residualProduct
// it first adds the product's partial sums into x, and with split
// (normSplit's) it also writes the image of out that the product after it
// reads, in one launch (rmsnorm_fused_W): the bytes of the product's own
// adds, rmsnorm_W and the split launch.
func (b *Backend) rmsnorm(out, x runtime.DevicePtr, w matrix, rows int, p partials, split uint32) error {
	c := b.cfg
	if p.n > 0 || split != 0 {
		var ws, xs runtime.DevicePtr
		if p.n > 0 {
			ws = b.sc.wgPart.Ptr()
		}
		grid := rows
		if split != 0 {
			xs, grid = b.sc.xs.Ptr(), ceilDiv(rows, 16)*16
		}
		return b.launch("rmsnorm_fused_"+w.dtype.Suffix(), g1(grid), out, x, ws, p.bias, w.buf,
			u32(p.n), u32(rows), u32(c.Hidden), c.Eps, xs, split)
	}
	return b.launch("rmsnorm_"+w.dtype.Suffix(), g1(rows), out, x, w.buf, u32(rows), u32(c.Hidden), c.Eps)
}

// normSplit is the split image (rmsnorm_fused_W's FW_SPLIT_* code) that
// the product of rows x in by out over w reads, for the norm before it to
// write, or 0 where it reads x itself or the fused kernels are off
// (Options.NoFusedKernels). It follows matmulPtr's routes: the warpgroup
// MMA's image where wgSplitK finds a split, the pair's fragments below
// tcxMaxRows.
func (b *Backend) normSplit(rows, in, out int, w matrix) uint32 {
	return b.splitCode(b.productRoute(rows, in, out, w).kind, w.dtype)
}

// splitCode is the split image for a product on route kind over weights of
// type t (normSplit's).
func (b *Backend) splitCode(kind routeKind, t DType) uint32 {
	if !b.fuse {
		return 0
	}
	var code uint32
	switch kind {
	case routeWG:
		code = splitWGBF16
	case routePair:
		code = splitTCBF16
	default:
		return 0
	}
	if t == F16 {
		code++ // the f16 twin of each
	}
	return code
}

// route is how matmulPtr runs a product: its kind and, on the warpgroup
// MMA, wgSplitK's part of in.
type route struct {
	kind routeKind
	ks   int
}

type routeKind int

const (
	routeMatmul routeKind = iota // matmul_W (or a quantized kernel)
	routeTC                      // matmul_tc_W, from tcxMaxRows rows
	routePair                    // tc_split_x_W + matmul_tcx_W
	routeWG                      // wg_split_x_W + matmul_wg_W or matmul_wgs_W
)

// productRoute is the one place that picks a product's kernels by its
// shape (see the constants above); normSplit and residualRoute follow it.
func (b *Backend) productRoute(rows, in, out int, w matrix) route {
	if rows < tcRows || !b.tcCapable(w.dtype) {
		return route{kind: routeMatmul}
	}
	if ks := b.wgSplitK(rows, in, out, w.buf.Ptr()); ks > 0 {
		return route{routeWG, ks}
	}
	if rows >= tcxMaxRows {
		return route{kind: routeTC}
	}
	return route{kind: routePair}
}

// normMatvec: a product of rows rows over w, after the norm of its x with
// nw, runs in one launch with that norm (norm_matvec_W; normMatvecLaunch):
// one row on matmul_W's route (productRoute), in at most nvMaxIn, w and nw
// of one unquantized type, and the fused kernels on. The backend asks it
// for a batch-1 step's q|k|v and gate|up (that one with silu_mul_f32 too),
// not for the LM head, where each of its thousands of blocks would read
// and sum the row again, which costs more than the launch it saves.
func (b *Backend) normMatvec(rows, in int, w, nw matrix) bool {
	return b.fuse && rows == 1 && in <= nvMaxIn && w.dtype == nw.dtype && !w.dtype.Quantized() &&
		b.productRoute(rows, in, 0, w).kind == routeMatmul
}

// normMatvecLaunch writes y [n] = rmsnorm(x [in], nw) . w^T (+ bias) for
// one row, or with silu (w [2n, in], gate then up) silu_mul_f32's output
// of that product: the bytes of rmsnorm_W, matmul_W (and silu_mul_f32).
func (b *Backend) normMatvecLaunch(y, x runtime.DevicePtr, w matrix, bias runtime.DevicePtr, nw matrix, in, n int, silu bool) error {
	s := uint32(0)
	if silu {
		s = 1
	}
	return b.launch("norm_matvec_"+w.dtype.Suffix(), g1(ceilDiv(n, nvOutputs)), y, x, w.buf, bias, nw.buf,
		u32(in), u32(n), b.cfg.Eps, s)
}

// partials is a residual product's partial sums left in b.sc.wgPart for the
// norm after it: n of them (0: none; the product wrote x), and its bias.
type partials struct {
	n    int
	bias runtime.DevicePtr
}

// residualProduct adds x . w^T (+ bias) into the residual y: a layer's o
// or down product. With fold (the next launch is the norm of y, and
// nothing reads y before it) where the product runs as a warpgroup
// product split over in (wgFoldSplitK), it leaves its partial sums for
// that norm (FW_WG_LEAVE_PARTS) and returns them: the norm adds them into
// y as the product's last block would have (the same bytes), without the
// product's fence, count and second round of loads.
//
// With gu (down's gate|up; residualRoute must put the product on the
// warpgroup MMA) it splits x from gu itself, as silu_mul_f32's output
// (wg_silu_split_x_W), and x is not read.
//
// With img nonzero a kernel before it wrote x's image there (oImage's
// attention into b.sc.xs, or gate|up into b.sc.silu: siluImage), and x is
// not read; residualRoute must put the product on the warpgroup MMA.
func (b *Backend) residualProduct(y, x runtime.DevicePtr, w matrix, bias *runtime.Buffer, rows, in, out int, fold bool, gu, img runtime.DevicePtr) (partials, error) {
	bp := ptrOf(bias)
	switch ks, leave := b.residualRoute(rows, in, out, w, fold); {
	case leave:
		return b.leaveParts(x, gu, w, bp, rows, in, out, ks, img)
	case ks > 0:
		return partials{}, b.matmulWG(y, x, gu, w, bp, rows, in, out, ks, 1, img)
	case gu != 0:
		return partials{}, fmt.Errorf("gpu: silu split for a [%d, %d] product off the warpgroup MMA", rows, in)
	case img != 0:
		return partials{}, fmt.Errorf("gpu: an image for a [%d, %d] product off the warpgroup MMA", rows, in)
	}
	return partials{}, b.matmulPtr(y, x, w, bp, rows, in, out, true)
}

// residualRoute is residualProduct's route: the warpgroup MMA's split of
// in (0: another product) and whether the product leaves its partials.
func (b *Backend) residualRoute(rows, in, out int, w matrix, fold bool) (ks int, leave bool) {
	r := b.productRoute(rows, in, out, w)
	if r.kind == routeMatmul {
		return 0, false
	}
	if fold && b.foldAdds {
		if ks := b.wgFoldSplitK(rows, in, out, w.buf.Ptr()); ks > 0 && ceilDiv(in, ks) > 1 {
			return ks, true
		}
	}
	return r.ks, false
}

// leaveParts runs x . w^T as a warpgroup product split over in (ks) that
// leaves its partial sums in b.sc.wgPart (FW_WG_LEAVE_PARTS), and returns
// them with the bias (0: none) for the kernel that adds them: the norm
// after a residual product (residualProduct), rope_attention_warps_f32
// after q|k|v. gu and img are matmulWG's.
func (b *Backend) leaveParts(x, gu runtime.DevicePtr, w matrix, bias runtime.DevicePtr, rows, in, out, ks int, img runtime.DevicePtr) (partials, error) {
	return partials{ceilDiv(in, ks), bias}, b.matmulWG(0, x, gu, w, 0, rows, in, out, ks, wgLeaveParts, img)
}

// siluImage: layer l's gate|up product of rows rows writes down's image of
// silu(gate) * up into b.sc.silu itself (gateUpSilu), so that neither gu
// nor wg_silu_split_x_W is written or launched: where gate|up, fused, runs
// on the warpgroup MMA with in whole, down runs on it too, intermediate is
// a multiple of 64 and both are of one type, unless Options.NoFusedKernels.
//
// With oImage, at every row count the warpgroup MMA takes: the two
// together leave out the split launches between the products, and since
// matmul_wgs_W copies its first weights before its wait and gate|up lets
// down launch early, that pays up to wgMaxRows rows.
func (b *Backend) siluImage(rows int, l *deviceLayer, foldDown bool) bool {
	c := b.cfg
	if !b.fuse || l.gateUpParts != nil || c.Intermediate%64 != 0 || l.gateUp.dtype != l.down.dtype {
		return false
	}
	if r := b.productRoute(rows, c.Hidden, 2*c.Intermediate, l.gateUp); r.kind != routeWG || r.ks < c.Hidden {
		return false
	}
	ks, _ := b.residualRoute(rows, c.Intermediate, c.Hidden, l.down, foldDown)
	return ks > 0
}

// gateUpSilu runs layer l's gate|up product of x (with presplit, the
// norm's image of it in b.sc.xs) with FW_WG_SILU: down's image into img
// (siluImage).
func (b *Backend) gateUpSilu(img, x runtime.DevicePtr, l *deviceLayer, rows int, presplit bool) error {
	c := b.cfg
	if b.sc.silu == nil || b.sc.silu.Size() < wgImageBytes(rows, c.Intermediate) {
		return fmt.Errorf("gpu: gate|up: no image buffer for [%d, %d]", rows, c.Intermediate)
	}
	ks := b.productRoute(rows, c.Hidden, 2*c.Intermediate, l.gateUp).ks
	return b.matmulWG(img, x, 0, l.gateUp, ptrOf(l.gateUpBias), rows, c.Hidden, 2*c.Intermediate, ks, wgSilu, b.normImage(presplit))
}

// siluInSplit: the down product of rows rows splits its x from gate|up
// itself (residualProduct's gu), so silu_mul_f32 is not launched: where it
// runs on the warpgroup MMA, unless Options.NoFusedKernels.
func (b *Backend) siluInSplit(rows int, down matrix, fold bool) bool {
	ks, _ := b.residualRoute(rows, b.cfg.Intermediate, b.cfg.Hidden, down, fold)
	return b.fuse && ks > 0
}

// matmulGrid is matmul_W's grid: ceil(out/8)*ceil(rows/8) blocks below 64
// rows (matvec path), ceil(out/64)*ceil(rows/64) from 64 rows (tiled path).
func matmulGrid(rows, out int) int {
	if rows < mmGemmRows {
		return ceilDiv(out, mmVecRows) * ceilDiv(rows, mmVecRows)
	}
	return ceilDiv(out, mmTile) * ceilDiv(rows, mmTile)
}

// tcGrid is matmul_tc_W's grid: below 64 rows ceil(rows/32)*ceil(out/16)
// blocks (out < 16384) or ceil(rows/32)*ceil(out/64); from 64 rows
// ceil(rows/128)*ceil(out/64).
func tcGrid(rows, out int) int {
	if rows < tcBigRows {
		if out < tcWideOut {
			return ceilDiv(rows, tcTileRows) * ceilDiv(out, tcNarrowOut)
		}
		return ceilDiv(rows, tcTileRows) * ceilDiv(out, tcTileOut)
	}
	return ceilDiv(rows, tcBigTileRows) * ceilDiv(out, tcTileOut)
}

// tcxGrid is matmul_tcx_W's grid: ceil(rows/32) row tiles times
// ceil(out/8) (out <= 2048), ceil(out/16) (below 16384) or ceil(out/64)
// output tiles.
func tcxGrid(rows, out int) int {
	n := tcTileOut
	switch {
	case out <= tcxMidOut:
		n = tcxSmallOut
	case out < tcWideOut:
		n = tcNarrowOut
	}
	return ceilDiv(rows, tcTileRows) * ceilDiv(out, n)
}

// tcxSplitBytes is the size of tc_split_x_W's output for x [rows, in].
func tcxSplitBytes(rows, in int) int { return ceilDiv(rows, tcxRowTile) * ceilDiv(in, tcxChunk) * 2048 }

// tcxSplitGrid is tc_split_x_W's grid: one thread per 32 bytes of hi and lo.
func tcxSplitGrid(rows, in int) int {
	return ceilDiv(ceilDiv(rows, tcxRowTile)*ceilDiv(in, tcxChunk)*64, defaultThreads)
}

// wgRows is rows rounded up to 16: matmul_wg_W's image holds 2 wgRows
// rows (x's hi and lo parts).
func wgRows(rows int) int { return ceilDiv(rows, 16) * 16 }

// wgImageBytes is the size of wg_split_x_W's image of x [rows, in]: per
// 64-wide stage of in, 2 wgRows(rows) rows of 128 bytes.
func wgImageBytes(rows, in int) int { return ceilDiv(in, wgStage) * 2 * wgRows(rows) * 128 }

// wgSplitGrid is wg_split_x_W's grid: a thread per 16 bytes of hi (and lo).
func wgSplitGrid(rows, in int) int {
	return ceilDiv(ceilDiv(in, wgStage)*8*wgRows(rows), defaultThreads)
}

// wgStageBytes is one stage of the warpgroup kernels' ring: wgOutTile rows
// of weights and 2 wgRows(rows) of x, 128 bytes each.
func wgStageBytes(rows int) int { return (wgOutTile + 2*wgRows(rows)) * 128 }

// wgsStages is matmul_wgs_W's ring depth for rows rows: as many stages as
// fit in wgsMaxShared with the 1 KB to align them, up to wgsMaxStages.
func wgsStages(rows int) int { return min(wgsMaxStages, (wgsMaxShared-1024)/wgStageBytes(rows)) }

// wgsSharedBytes is matmul_wgs_W's dynamic shared memory for rows rows.
func wgsSharedBytes(rows int) int { return 1024 + wgsStages(rows)*wgStageBytes(rows) }

// wgPartBytes is the size of matmul_wg_W's partial sums for up to rows
// rows: a split product has at most wgBlocks blocks of wgOutTile outputs.
func wgPartBytes(rows int) int { return 4 * wgBlocks * wgOutTile * rows }

// wgSplitK returns the part of in each matmul_wg_W (or matmul_wgs_W) block sums (ks) for a
// product of rows x in by out, or 0 where the tc_split_x_W + matmul_tcx_W
// pair runs instead (see wgMinSplitK). The grid is ceil(out/wgOutTile) *
// ceil(in/ks) blocks, at most wgBlocks of them when in is split.
func (b *Backend) wgSplitK(rows, in, out int, w runtime.DevicePtr) int {
	return b.wgSplitKOver(rows, in, out, w, wgMinSplitK)
}

// wgFoldSplitK is wgSplitK for a product whose split partials the norm
// after it adds (residualProduct): parts down to wgFoldMinSplitK wide,
// since the adds that made narrower parts lose are gone.
func (b *Backend) wgFoldSplitK(rows, in, out int, w runtime.DevicePtr) int {
	return b.wgSplitKOver(rows, in, out, w, wgFoldMinSplitK)
}

func (b *Backend) wgSplitKOver(rows, in, out int, w runtime.DevicePtr, minK int) int {
	if !b.wg || rows < wgMinRows || rows > wgMaxRows || in%8 != 0 || w%16 != 0 {
		return 0
	}
	splits := max(1, wgBlocks/ceilDiv(out, wgOutTile))
	ks := ceilDiv(ceilDiv(in, splits), wgStage) * wgStage
	if ks < minK {
		return 0
	}
	return ks
}

// ensureWG sizes matmul_wg_W's partial sums for up to rows rows and its
// group counts, which start at zero and which every launch leaves at zero.
func (b *Backend) ensureWG(rows int) error {
	if err := b.ensure(&b.sc.wgPart, wgPartBytes(rows)); err != nil {
		return err
	}
	if b.sc.wgCount != nil {
		return nil
	}
	if err := b.ensure(&b.sc.wgCount, 4*wgBlocks); err != nil {
		return err
	}
	return runtime.Upload(b.sc.wgCount, make([]uint32, wgBlocks))
}

// matmulWG is matmulPtr's product through wg_split_x_W and matmul_wg_W
// with ks from wgSplitK. run sized b.sc.xs, b.sc.wgPart and b.sc.wgCount.
// With gu nonzero x is silu_mul_f32's output of gu, split from gu in the
// same launch (wg_silu_split_x_W).
// With img nonzero the kernel before it wrote the image there (the norm
// into b.sc.xs: normSplit; see residualProduct), and x is not read.
func (b *Backend) matmulWG(y, x, gu runtime.DevicePtr, w matrix, bias runtime.DevicePtr, rows, in, out, ks int, acc uint32, img runtime.DevicePtr) error {
	sfx := w.dtype.Suffix()
	if b.sc.xs == nil || b.sc.xs.Size() < wgImageBytes(rows, in) || b.sc.wgPart == nil ||
		b.sc.wgPart.Size() < wgPartBytes(rows) || b.sc.wgCount == nil {
		return fmt.Errorf("gpu: matmul_wg_%s: no scratch for [%d, %d]", sfx, rows, in)
	}
	xs, split := img, "wg_split_x_"
	if gu != 0 {
		x, split = gu, "wg_silu_split_x_"
	}
	if xs == 0 {
		xs = b.sc.xs.Ptr()
		if err := b.launch(split+sfx, g1(wgSplitGrid(rows, in)), xs, x, u32(rows), u32(in)); err != nil {
			return err
		}
	}
	grid := ceilDiv(out, wgOutTile) * ceilDiv(in, ks)
	return b.launchShared("matmul_wgs_"+sfx, g1(grid), wgsSharedBytes(rows), y, xs, w.buf, bias, b.sc.wgPart.Ptr(),
		b.sc.wgCount.Ptr(), u32(rows), u32(in), u32(out), acc, u32(ks))
}

// tcCapable: weights of type t can go through matmul_tc_W on this backend.
func (b *Backend) tcCapable(t DType) bool { return b.tc && (t == BF16 || t == F16) }

// With presplit the norm before it wrote the image of x the product reads
// (normSplit), and no split is launched.
func (b *Backend) matmul(y, x runtime.DevicePtr, w matrix, bias *runtime.Buffer, rows, in, out int, accumulate, presplit bool) error {
	return b.matmulPtrSplit(y, x, w, ptrOf(bias), rows, in, out, accumulate, presplit)
}

// normImage is the image the norm before a product wrote (presplit:
// b.sc.xs), or 0 for none.
func (b *Backend) normImage(presplit bool) runtime.DevicePtr {
	if !presplit {
		return 0
	}
	return ptrOf(b.sc.xs)
}

// ptrOf is buf's device pointer, 0 for none (an optional bias).
func ptrOf(buf *runtime.Buffer) runtime.DevicePtr {
	if buf == nil {
		return 0
	}
	return buf.Ptr()
}

// matmulPtr is matmul with the bias as a device pointer (0: none).
func (b *Backend) matmulPtr(y, x runtime.DevicePtr, w matrix, bias runtime.DevicePtr, rows, in, out int, accumulate bool) error {
	return b.matmulPtrSplit(y, x, w, bias, rows, in, out, accumulate, false)
}

func (b *Backend) matmulPtrSplit(y, x runtime.DevicePtr, w matrix, bias runtime.DevicePtr, rows, in, out int, accumulate, presplit bool) error {
	acc := uint32(0)
	if accumulate {
		acc = 1
	}
	sfx := w.dtype.Suffix()
	switch r := b.productRoute(rows, in, out, w); r.kind {
	case routeWG:
		return b.matmulWG(y, x, 0, w, bias, rows, in, out, r.ks, acc, b.normImage(presplit))
	case routeTC:
		return b.launch("matmul_tc_"+sfx, g1(tcGrid(rows, out)), y, x, w.buf, bias, u32(rows), u32(in), u32(out), acc)
	case routePair:
		// Split x into the MMA's hi/lo fragments once, not in every warp
		// that reads it (forward.cu, matmul_tcx_W). run sized b.sc.xs.
		if b.sc.xs == nil || b.sc.xs.Size() < tcxSplitBytes(rows, in) {
			return fmt.Errorf("gpu: matmul_tcx_%s: no split buffer for [%d, %d]", sfx, rows, in)
		}
		xs := b.sc.xs.Ptr()
		if !presplit {
			if err := b.launch("tc_split_x_"+sfx, g1(tcxSplitGrid(rows, in)), xs, x, u32(rows), u32(in)); err != nil {
				return err
			}
		}
		return b.launch("matmul_tcx_"+sfx, g1(tcxGrid(rows, out)), y, xs, w.buf, bias, u32(rows), u32(in), u32(out), acc)
	}
	if w.dtype.Quantized() {
		if ok, err := b.headDequantized(y, x, w, bias, rows, in, out, accumulate); ok || err != nil {
			return err
		}
		if h, ok, err := b.dequantized(w, rows, in, out); !ok || err != nil {
			if err != nil {
				return err
			}
		} else {
			return b.matmulPtrSplit(y, x, h, bias, rows, in, out, accumulate, false)
		}
		name, grid := quantProduct(w.dtype, rows, out)
		return b.launch(name, g1(grid), y, x, w.buf, bias, u32(rows), u32(in), u32(out), acc)
	}
	return b.launch("matmul_"+sfx, g1(matmulGrid(rows, out)), y, x, w.buf, bias, u32(rows), u32(in), u32(out), acc)
}

// dequantized: in a chunk of quantDeqRows rows or quantDeqSeqs sequences
// (b.f16Quant), where the tensor cores take float16 weights, a layer's
// quantized matrix is decoded once into float16 (dequant_Q, into
// scratch.deq) and multiplied there: every weight rounded to the nearest
// float16 after its exact decoding (a relative change of at most 2^-11),
// against a product that decodes every weight for every 8-row tile. ok is
// false where the product stays on the quantized kernels: smaller chunks,
// no tensor cores, or the LM head (headDequantized).
func (b *Backend) dequantized(w matrix, rows, in, out int) (h matrix, ok bool, err error) {
	if !b.f16Quant || !b.tcCapable(F16) || b.isHead(w) || b.sc.deq == nil || b.sc.deq.Size() < 2*in*out {
		return matrix{}, false, nil
	}
	err = b.launch("dequant_"+w.dtype.Suffix(), g1(ceilDiv(out*in/8, qfDequantThreads)), b.sc.deq.Ptr(), w.buf, u32(out), u32(in))
	return matrix{buf: b.sc.deq, dtype: F16}, true, err
}

// headDequantized is dequantized for a quantized LM head (or tied
// embedding table), the largest matrix of a model, which scratch.deq holds
// only in slices of headSliceRows rows: each slice decoded to float16, its
// product on the tensor cores into scratch.headPart, and that placed into
// its columns of y (scatter_cols_f32). ok is false where the product stays
// on matvec_Q: b.f16Quant unset, no tensor cores, a bias or an
// accumulation (the head has neither).
func (b *Backend) headDequantized(y, x runtime.DevicePtr, w matrix, bias runtime.DevicePtr, rows, in, out int, accumulate bool) (ok bool, err error) {
	if !b.isHead(w) || !b.f16Quant || !b.tcCapable(F16) || bias != 0 || accumulate {
		return false, nil
	}
	n := b.headSliceRows()
	if b.sc.deq == nil || b.sc.headPart == nil || b.sc.deq.Size() < 2*n*in || b.sc.headPart.Size() < 4*rows*n {
		return false, nil
	}
	rb, err := w.dtype.RowBytes(in)
	if err != nil {
		return false, err
	}
	h := matrix{buf: b.sc.deq, dtype: F16}
	for r0 := 0; r0 < out; r0 += n {
		m := min(n, out-r0)
		if err := b.launch("dequant_"+w.dtype.Suffix(), g1(ceilDiv(m*in/8, qfDequantThreads)), b.sc.deq.Ptr(), w.buf.At(r0*rb), u32(m), u32(in)); err != nil {
			return true, err
		}
		part := b.sc.headPart.Ptr()
		if err := b.matmulPtrSplit(part, x, h, 0, rows, in, m, false, false); err != nil {
			return true, err
		}
		if err := b.launch("scatter_cols_f32", g1(rows), y, part, u32(rows), u32(m), u32(out), u32(r0)); err != nil {
			return true, err
		}
	}
	return true, nil
}

// isHead: w is the LM head (or the tied embedding table that serves as it).
func (b *Backend) isHead(w matrix) bool { return w.buf == b.w.lmHead.buf || w.buf == b.w.embed.buf }

// headSliceRows is how many rows of a quantized LM head headDequantized
// decodes at a time (0 where the head is not quantized): an eighth of the
// vocabulary, or as many as the largest quantized layer matrix's float16
// copy holds if more, in multiples of 64.
func (b *Backend) headSliceRows() int {
	if !b.w.lmHead.dtype.Quantized() {
		return 0
	}
	c := b.cfg
	n := max(ceilDiv(c.Vocab, 8), b.w.quantLayerElems(c)/c.Hidden)
	return min(c.Vocab, ceilDiv(n, 64)*64)
}

// quantProduct is the kernel and grid of a product over quantized weights
// of type t (kernels/src/qforward.cu): matvec1_Q, ceil(out/8) blocks, for
// one row; matvec_Q, ceil(out/8)*ceil(rows/8), below 64; matmul_Q,
// ceil(out/64)*ceil(rows/64), from 64.
func quantProduct(t DType, rows, out int) (string, int) {
	switch {
	case rows == 1:
		return "matvec1_" + t.Suffix(), ceilDiv(out, mmVecRows)
	case rows < mmGemmRows:
		return "matvec_" + t.Suffix(), ceilDiv(out, mmVecRows) * ceilDiv(rows, mmVecRows)
	}
	return "matmul_" + t.Suffix(), ceilDiv(out, mmTile) * ceilDiv(rows, mmTile)
}

// projection computes a fused projection y [rows, sum(partRows)] = x . w^T
// (+ bias): one launch of the fused matrix, or, when the layer keeps the
// parts unfused (types that differ), one launch per part, each written
// into its columns of y: directly for a single row (its columns are
// contiguous), else through b.sc.part and scatter_cols_f32.
//
// With presplit (a fused matrix only) the norm before it wrote x's image.
func (b *Backend) projection(y, x runtime.DevicePtr, w matrix, parts []matrix, partRows []int, bias *runtime.Buffer, rows, in int, presplit bool) error {
	total := 0
	for _, r := range partRows {
		total += r
	}
	if parts == nil {
		return b.matmul(y, x, w, bias, rows, in, total, false, presplit)
	}
	if presplit {
		return fmt.Errorf("gpu: a split image for a projection in %d parts", len(parts))
	}
	off := 0
	for i, p := range parts {
		var bp runtime.DevicePtr
		if bias != nil {
			bp = bias.At(4 * off)
		}
		n := partRows[i]
		if rows == 1 {
			if err := b.matmulPtr(y+runtime.DevicePtr(4*off), x, p, bp, 1, in, n, false); err != nil {
				return err
			}
		} else {
			tmp := b.sc.part.Ptr()
			if err := b.matmulPtr(tmp, x, p, bp, rows, in, n, false); err != nil {
				return err
			}
			if err := b.launch("scatter_cols_f32", g1(rows), y, tmp, u32(rows), u32(n), u32(total), u32(off)); err != nil {
				return err
			}
		}
		off += n
	}
	return nil
}

func (b *Backend) rope(x, pos runtime.DevicePtr, tokens, heads, stride int) error {
	c := b.cfg
	return b.launch("rope_f32", g1(tokens), x, pos, b.invFreq, u32(tokens), u32(heads), u32(c.HeadDim), u32(stride))
}

func (b *Backend) kvStore(layer int, qkv, slots runtime.DevicePtr, tokens int) error {
	c := b.cfg
	return b.launch(b.kvKernel("kv_store_f32"), g1(tokens), b.kc[layer], b.vc[layer], qkv, slots, u32(tokens), u32(c.kvDim()),
		u32(c.qDim()), u32(c.qDim()+c.kvDim()), u32(c.qkvDim()), u32(b.numBlocks*BlockSize))
}

// positions rotates q's and k's heads of each qkv row (back to back: one
// rope over both) and stores k and v in layer's cache: rope_kv_store_f32,
// one launch for the two and the same bytes, unless fusion is off.
func (b *Backend) positions(layer int, qkv, pos, slots runtime.DevicePtr, tokens int) error {
	c := b.cfg
	if b.fuse {
		return b.launch(b.kvKernel("rope_kv_store_f32"), g1(tokens), qkv, b.kc[layer], b.vc[layer], pos, b.invFreq, slots, u32(tokens),
			u32(c.Heads), u32(c.KVHeads), u32(c.HeadDim), u32(c.qkvDim()), u32(b.numBlocks*BlockSize))
	}
	if err := b.rope(qkv, pos, tokens, c.Heads+c.KVHeads, c.qkvDim()); err != nil {
		return err
	}
	return b.kvStore(layer, qkv, slots, tokens)
}

// attention launches attention_prefill_f32 when tiled (a chunk of mostly
// prefill tokens, chunk.tiledAttention) and attention_f32 otherwise.
// attention_f32 reads every key's k and v rows once per query and head; the
// prefill kernel reads them once per tile of attpRows query tokens
// (FW_ATTP_ROWS) and head, through shared memory, which at a 512-token
// prefill is the difference between ~2 GB and ~70 MB of cache traffic per
// layer. With few tokens (decode) its tiles would run mostly empty, and a
// tile's runs of different sequences run one after another in its block,
// so decode steps keep attention_f32, or on CUDA the decode kernels of
// attentionKernel, each with attention_f32's semantics.
func (b *Backend) attention(layer int, out, qkv, qSeq, qPos, tables runtime.DevicePtr, maxBlocks, tokens int, tiled bool, scale float32) error {
	c := b.cfg
	name, grid := b.attentionKernel(maxBlocks, tokens, tiled)
	if name == "attention_split_f32" {
		ranges := grid / (tokens * c.KVHeads)
		part, ml := b.sc.attPart.Ptr(), b.sc.attPart.Ptr()+runtime.DevicePtr(4*splitPartFloats(tokens, c.Heads, c.HeadDim, ranges))
		if err := b.launch(b.kvKernel(name), g1(grid), part, qkv, b.kc[layer], b.vc[layer], qSeq, qPos, tables,
			u32(maxBlocks), u32(BlockSize), u32(tokens), u32(c.Heads), u32(c.KVHeads), u32(c.HeadDim), u32(c.qkvDim()), scale,
			ml, u32(ranges)); err != nil {
			return err
		}
		return b.launch("attention_merge_f32", g1(tokens*c.Heads), out, part, ml, u32(tokens), u32(c.Heads), u32(c.HeadDim), u32(ranges))
	}
	return b.launch(b.kvKernel(name), g1(grid), out, qkv, b.kc[layer], b.vc[layer], qSeq, qPos, tables,
		u32(maxBlocks), u32(BlockSize), u32(tokens), u32(c.Heads), u32(c.KVHeads), u32(c.HeadDim), u32(c.qkvDim()), scale)
}

// attentionRanges is how many ranges attention_split_f32 cuts each
// token's keys into in a decode launch of tokens over tables of maxBlocks
// blocks, or 1 where attention_warps_f32 runs alone: over long tables with
// fewer of its blocks (tokens * kv_heads) than the GPU holds at once, one
// block walks a whole context per kv head while most SMs idle (batch 1 on
// the 1B shape: 8 blocks on 132 SMs). The ranges bring the blocks up to
// about splitBlocksPerCU an SM.
func (b *Backend) attentionRanges(maxBlocks, tokens int) int {
	c := b.cfg
	if !b.longAtt || !b.warpsShape() || tokens <= 0 {
		return 1
	}
	fit := splitBlocksPerCU * b.computeUnits / (tokens * c.KVHeads)
	return max(1, min(fit, maxBlocks*BlockSize/splitMinKeys, splitMaxRanges))
}

// splitPartFloats: the floats of attention_split_f32's shares (part) for
// tokens; its maxima and sums (ml) follow them, 2 a share.
func splitPartFloats(tokens, heads, headDim, ranges int) int {
	return tokens * heads * ranges * headDim
}

// splitScratchBytes: the scratch of attention_split_f32 for a launch of
// tokens over ranges.
func splitScratchBytes(tokens, heads, headDim, ranges int) int {
	return 4 * (splitPartFloats(tokens, heads, headDim, ranges) + tokens*heads*ranges*2)
}

// attentionKernel is attention's kernel and grid (see attention). On CUDA
// a decode launch of one query a token runs attention_warps_f32 (256
// threads, one block per token and kv head: key groups of 8 to 32 lanes,
// each with its own online softmax and the next keys' k and v in flight
// together, merged in group order), or its key ranges
// (attention_split_f32, attentionRanges) where its blocks are few over
// long tables, or attention_gqa_f32 (see gqaMinBlocks); a model whose
// heads it does not take, and ROCm, keep attention_f32. Over an f16 cache
// the kernel's *_kv16 twin runs (kvKernel), and attention_gqa_f32, which
// has none, does not.
func (b *Backend) attentionKernel(maxBlocks, tokens int, tiled bool) (string, int) {
	c := b.cfg
	name, grid := "attention_f32", tokens*c.Heads
	keys := maxBlocks * BlockSize // what the block tables can hold
	ranges := b.attentionRanges(maxBlocks, tokens)
	switch {
	case tiled:
		name, grid = "attention_prefill_f32", ceilDiv(tokens, attpRows)*c.Heads
	case ranges > 1:
		name, grid = "attention_split_f32", tokens*c.KVHeads*ranges // key ranges, then attention_merge_f32
	case b.longAtt && !b.kv16 && tokens*c.KVHeads >= gqaMinBlocks && keys >= gqaMinKeys && c.HeadDim >= gqaMinHeadDim && b.gqaShape():
		name, grid = "attention_gqa_f32", tokens*c.KVHeads // many blocks, long keys, wide heads: 32 key groups a block
	case b.longAtt && b.warpsShape():
		name, grid = "attention_warps_f32", tokens*c.KVHeads
	}
	return name, grid
}

// ropeInAttention: chunk ch of p rotates q and k and stores k and v in
// its attention kernel (rope_attention_warps_f32, see ropeAttention)
// instead of launching positions' kernel before it: in a decode step (one
// token a sequence, so each block writes the only new key it reads) that
// attention runs attention_warps_f32 for, unless Options.NoFusedKernels.
// Alone it gains little (rope_kv_store_f32 mostly overlapped the kernels
// around it); it is what lets q|k|v leave its partials (qkvLeaves) and
// o read its image (oImage).
func (b *Backend) ropeInAttention(p *plan, ch chunk) bool {
	if !b.fuse || !p.decode {
		return false
	}
	name, _ := b.attentionKernel(p.maxBlocks, ch.t1-ch.t0, ch.tiledAttention())
	return name == "attention_warps_f32"
}

// qkvLeaves is the split of in (ks) with which layer l's q|k|v product
// leaves its partials for rope_attention_warps_f32 to add (ropeIn), as a
// residual product leaves them to the norm after it (residualRoute's
// rule), or 0 where q|k|v writes its rows: from 33 rows, where the pair's
// 32-row tiles read every weight twice; at 32 rows or fewer the adds in
// attention cost more than they save.
func (b *Backend) qkvLeaves(rows int, l *deviceLayer, ropeIn bool) int {
	if !ropeIn || l.qkvParts != nil || rows <= tcTileRows {
		return 0
	}
	c := b.cfg
	if ks, leave := b.residualRoute(rows, c.Hidden, c.qkvDim(), l.qkv, true); leave {
		return ks
	}
	return 0
}

// ropeAttention is positions then attention in one launch for a decode
// step (ropeInAttention): rope_attention_warps_f32, which with q|k|v's
// partials (qkvLeaves) first adds them into qkv's rows.
//
// With oSplit (oImage's) it writes o's image into b.sc.xs instead of out.
func (b *Backend) ropeAttention(layer int, out, qkv, qSeq, qPos, slots, tables runtime.DevicePtr, maxBlocks, tokens int, scale float32, p partials, oSplit uint32) error {
	c := b.cfg
	var ws, xs runtime.DevicePtr
	if p.n > 0 {
		ws = b.sc.wgPart.Ptr()
	}
	if oSplit != 0 {
		if b.sc.xs == nil || b.sc.xs.Size() < wgImageBytes(tokens, c.qDim()) {
			return fmt.Errorf("gpu: rope_attention_warps_f32: no image buffer for [%d, %d]", tokens, c.qDim())
		}
		xs = b.sc.xs.Ptr()
	}
	return b.launch(b.kvKernel("rope_attention_warps_f32"), g1(tokens*c.KVHeads), out, qkv, b.kc[layer], b.vc[layer], qSeq, qPos, tables,
		u32(maxBlocks), u32(BlockSize), u32(tokens), u32(c.Heads), u32(c.KVHeads), u32(c.HeadDim), u32(c.qkvDim()), scale,
		b.invFreq, slots, u32(b.numBlocks*BlockSize), ws, p.bias, u32(p.n), xs, oSplit)
}

// oImage is the split code (0: none) with which layer l's
// rope_attention_warps_f32 (ropeIn) writes the image of its output that o
// reads, where o runs on the warpgroup MMA (wg_split_x_W is then not
// launched): head_dim a multiple of 8, unless Options.NoFusedKernels
// (ropeIn is false then). siluImage says why the images pay.
func (b *Backend) oImage(rows int, l *deviceLayer, ropeIn bool) uint32 {
	c := b.cfg
	if !ropeIn || c.HeadDim%8 != 0 {
		return 0
	}
	if ks, _ := b.residualRoute(rows, c.qDim(), c.Hidden, l.o, true); ks == 0 {
		return 0
	}
	return b.splitCode(routeWG, l.o.dtype)
}

// gqaShape: attention_gqa_f32 takes this model's heads (FW_GQA_MAX_GROUP,
// FW_GQA_MAX_HEADDIM).
func (b *Backend) gqaShape() bool {
	c := b.cfg
	if c.KVHeads <= 0 || c.Heads%c.KVHeads != 0 {
		return false
	}
	g := c.Heads / c.KVHeads
	return g >= 2 && g <= gqaMaxGroup && c.HeadDim <= gqaMaxHeadDim
}

// warpsShape: attention_warps_f32 takes this model's heads
// (FW_ABK_MAX_GROUP query heads a kv head, FW_ATT_MAX_HEADDIM).
func (b *Backend) warpsShape() bool {
	c := b.cfg
	if c.KVHeads <= 0 || c.Heads%c.KVHeads != 0 {
		return false
	}
	return c.Heads/c.KVHeads <= warpsMaxGroup && c.HeadDim > 0 && c.HeadDim <= attMaxHeadDim
}

func (b *Backend) siluMul(out, gu runtime.DevicePtr, rows int) error {
	grid := min(ceilDiv(rows*b.cfg.Intermediate, ewThreads), maxEWGrid)
	return b.launch("silu_mul_f32", g1(grid), out, gu, u32(rows), u32(b.cfg.Intermediate))
}

func (b *Backend) copyRows(dst, src, rows runtime.DevicePtr, n, dim int) error {
	return b.launch("copy_rows_f32", g1(n), dst, src, rows, u32(n), u32(dim))
}

// u32 converts a count the host has already bounded.
func u32(n int) uint32 { return uint32(n) }
