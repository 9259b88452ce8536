// Package gpu is the model's GPU backend: the llama forward pass on a
// runtime.Device through hipgo's own forward kernels (kernels/src/forward.cu,
// the ABI in its header comment; on Metal its MSL port forward.metal, with
// the same names, arguments and launch shapes), with sampling on the
// device.
//
// Weights are uploaded once in their file's dtype (f32, f16, bf16), q|k|v and
// gate|up concatenated as the CPU backend concatenates them. GGUF block
// formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K) are uploaded as their blocks
// and run by module qforward (kernels/src/qforward.cu; qforward.metal on
// Metal), which decodes them
// inside the products and the embedding gather; a layer whose q, k, v (or
// gate, up) differ in type keeps them as separate matrices, one launch each,
// written into their columns of the fused activations. The KV cache is
// a pool of fixed-size blocks (BlockSize tokens, f32) per layer on the
// device; each Sequence holds a block table whose blocks come from the
// pool's free list as it grows and go back on Release.
//
// Step advances any number of sequences together: their new tokens (a whole
// prompt for a sequence that just joined, one token for the others) are laid
// out in one token list whose attention reads each sequence's own blocks, so
// N decoding sequences make [N, hidden] matrix products. The last token of
// each sequence goes through the final norm and the LM head, the logits stay
// on the device and sampling.Sampler draws there; only the token ids (4
// bytes a sequence) come back.
//
// A layer is at most 9 launches: rope of q and k and the kv store are one,
// rope_kv_store_f32; where down runs on the warpgroup MMA (below), its x
// is split from gate|up with silu in the same launch, wg_silu_split_x_W;
// in a batch-1 step each layer norm runs in the product after it,
// norm_matvec_W, gate|up's with silu_mul_f32 too (launch.go's normMatvec)
// (Options.NoFusedKernels, or HIPGO_GPU_FUSED=0 through package model,
// launches the plain kernels for all of these; the same bytes).
//
// Matrix products: from 2 rows on CUDA the 16-bit weights go through the
// tensor cores (the tc_split_x_W + matmul_tcx_W pair below 512 rows,
// matmul_tc_W from it); where the forward module is the sm_90a PTX (a
// compute capability 9.0 GPU), products of 2 to 64 rows that split well
// over the SMs run on the warpgroup MMA instead: matmul_wgs_W, the LM
// head included (matmul_wg_W warp-specialized, the same sums; launch.go's
// wgSplitK;
// Options.NoWarpgroupMMA, or HIPGO_GPU_WGMMA=0 through package model,
// keeps the pair; the sums differ in rounding only). The o and down
// products split over in there leave their partial sums to the norm after
// them, rmsnorm_fused_W, which adds them into the residual as their last
// block would have (launch.go's residualProduct; the same bytes;
// Options.NoFoldedAdds, or HIPGO_GPU_FOLD_ADDS=0 through package model,
// keeps the adds in the products).
//
// Decode attention on CUDA takes attention_warps_f32, its key ranges
// (attention_split_f32 + attention_merge_f32) for few sequences over long
// tables, or attention_gqa_f32, by the step's shape (launch.go's
// attentionKernel).
//
// A decode step (one token per sequence) replays a graph of its forward
// launches captured the first time its shape was seen (graph.go), one
// driver call instead of 9 a layer, where the runtime can capture
// (runtime.Stream.Capture); Options.NoGraphs, or HIPGO_GPU_GRAPHS=0 through
// package model, launches every kernel from the host instead. With
// Options.GraphsByTiming (package model's default; HIPGO_GPU_GRAPHS=1
// replays graphs for every step) the first decode steps of each row count
// run plainly, then from graphs, timed one after another, and the faster way takes that row count's later
// steps. A fault in a replayed graph fails its step like one in a plain
// launch.
//
// Step enqueues the next decode step's forward before it waits for its own
// tokens (lookahead.go), on the guess that the same sequences continue with
// the tokens it samples, which the next forward's embedding reads on the
// device; the next Step uses it when the guess holds, and any other call
// discards it (waiting for it first). Options.NoLookahead, or
// HIPGO_GPU_LOOKAHEAD=0 through package model, waits for each step first;
// the tokens are the same either way.
//
// Every failure of the device (a launch the runtime rejects, a fault, a lost
// device, a watchdog) is returned from the call whose work it hit, as the
// runtime's typed error; ctx ends a call with ctx.Err(). A Backend serves one
// call at a time (calls from several goroutines are serialized).
package gpu
