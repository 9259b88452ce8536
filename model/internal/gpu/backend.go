package gpu

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/runtime/driver"
	"github.com/hipgo/hipgo/sampling"
)

// BlockSize is the tokens per KV-cache block.
const BlockSize = 16

// defaultStepTokens bounds the tokens one pass through the layers carries
// (a longer step runs in chunks of this many): it sizes the activation
// scratch and lets ctx interrupt a long prompt between chunks.
const defaultStepTokens = 512

// ErrCacheFull: the KV-cache pool has no free block for a sequence's new
// tokens. The step ran nothing; other sequences are untouched.
var ErrCacheFull = errors.New("gpu: KV cache full")

// Options tune a Backend.
type Options struct {
	// KVTokens is the KV-cache pool's size in tokens, over all sequences
	// (rounded up to whole blocks). Required.
	KVTokens int
	// StepTokens bounds the tokens of one pass (default 512).
	StepTokens int
	// NoGraphs launches every decode step's kernels one by one instead of
	// replaying a captured graph of them (see graph.go).
	NoGraphs bool
	// GraphsByTiming decides, for each row count of a decode step, whether
	// its steps replay graphs by timing its first steps both ways, and
	// keeps the faster (see graphTrialSteps); without it every decode step
	// replays a graph (unless NoGraphs).
	GraphsByTiming bool
	// NoEarlyStart launches the kernels plainly: each waits for the one
	// before it to finish before it is scheduled (see launch).
	NoEarlyStart bool
	// NoFusedKernels launches rope_f32 and kv_store_f32 where
	// rope_kv_store_f32 would do both (see positions), rope_kv_store_f32
	// and attention_warps_f32 where rope_attention_warps_f32 would (see
	// ropeInAttention), silu_mul_f32 and wg_split_x_W where
	// wg_silu_split_x_W (see siluInSplit) or gate|up would make down's
	// image (see siluImage), wg_split_x_W where the attention would
	// make o's (see oImage), and rmsnorm_W, matmul_W and silu_mul_f32 where
	// norm_matvec_W would do them (see normMatvec); the results are the
	// same bytes.
	NoFusedKernels bool
	// NoWarpgroupMMA keeps the tc_split_x_W + matmul_tcx_W pair where
	// matmul_wgs_W would run (see wgSplitK).
	NoWarpgroupMMA bool
	// NoLookahead makes Step wait for its tokens before anything of the
	// next step is enqueued (see lookahead.go).
	NoLookahead bool
	// HalfKVCache keeps the KV cache in f16 (each k and v value rounded to
	// nearest even), half the bytes of f32: the *_kv16 kernels store and
	// read it (kvKernel).
	HalfKVCache bool
	// NoFoldedAdds keeps a split warpgroup product's adds in its own last
	// block where rmsnorm_fused_W would add its partials into the residual
	// (see residualProduct); the same bytes.
	NoFoldedAdds bool
}

// Backend holds a model's weights, KV-cache pool and scratch on one device.
type Backend struct {
	earlyStart bool // launch with LaunchConfig.EarlyStart (Options.NoEarlyStart)
	fuse       bool // rope_kv_store_f32 for rope + kv store (Options.NoFusedKernels)
	// f16Quant: the products being launched decode quantized matrices to
	// float16 first (dequantized, headDequantized); set per chunk and for
	// the LM head by forward (plan.f16Chunk, plan.f16Head).
	f16Quant     bool
	cfg          Config
	dev          *runtime.Device
	s            *runtime.Stream
	mod          *runtime.Module // forward
	qmod         *runtime.Module // qforward: loaded when a weight is quantized or a layer unfused
	kernels      map[string]*runtime.Kernel
	tc           bool // CUDA: 16-bit weights go through the tensor cores from tcRows rows (launch.go)
	wg           bool // and the forward module is the sm_90a PTX: matmul_wgs_W where wgSplitK says (launch.go)
	longAtt      bool // CUDA: decode attention takes attention_warps_f32, its key ranges or attention_gqa_f32 (launch.go attentionKernel)
	computeUnits int  // the device's SMs or CUs (attentionRanges)
	kv16         bool // the KV cache is f16 (Options.HalfKVCache)
	foldAdds     bool // residual products leave their split partials to rmsnorm_fused_W (Options.NoFoldedAdds)
	sampler      *sampling.Sampler

	mu       sync.Mutex       // one call at a time
	launched map[string]int64 // launches enqueued so far by kernel name (Launched)
	owned    []*runtime.Buffer
	w        deviceWeights

	invFreq    *runtime.Buffer
	kc, vc     []*runtime.Buffer // per layer, [numSlots, kvDim] f32
	numBlocks  int
	free       []uint32 // free KV blocks
	stepTokens int
	sc         scratch
	dirty      bool // work of a call that returned early may still be queued
	closed     bool
	graphs     graphCache
	inject     func(*runtime.Stream) error // InjectFault's, for the next forward
	lookahead  bool                        // Step enqueues the next step's forward early (Options.NoLookahead)
	ahead      *lookahead                  // the forward Step enqueued for the step it guessed comes next
	aheadStats LookaheadStats
}

type matrix struct {
	buf   *runtime.Buffer
	dtype DType
}

type deviceLayer struct {
	attnNorm, mlpNorm, qkv, o, gateUp, down matrix
	qkvParts, gateUpParts                   []matrix        // nil: fused (Layer.QKVParts)
	qkvBias, oBias, gateUpBias, downBias    *runtime.Buffer // nil: none
}

type deviceWeights struct {
	embed, lmHead, norm matrix
	layers              []deviceLayer
}

// New uploads w to dev and allocates the KV-cache pool. ctx bounds nothing
// on the device yet (uploads are synchronous) but is checked between layers.
func New(ctx context.Context, dev *runtime.Device, cfg Config, w *Weights, opts Options) (_ *Backend, err error) {
	if err := w.check(cfg); err != nil {
		return nil, err
	}
	if opts.KVTokens <= 0 {
		return nil, fmt.Errorf("gpu: KV cache of %d tokens: %w", opts.KVTokens, runtime.ErrInvalidArgument)
	}
	b := &Backend{cfg: cfg, dev: dev, kernels: map[string]*runtime.Kernel{}, stepTokens: opts.StepTokens,
		tc: dev.Backend() == driver.CUDA, longAtt: dev.Backend() == driver.CUDA, computeUnits: max(1, dev.Info().ComputeUnits)}
	b.graphs.off, b.graphs.timed = opts.NoGraphs, opts.GraphsByTiming
	b.graphs.now = func(bool, bool) time.Time { return time.Now() }
	b.earlyStart = !opts.NoEarlyStart
	b.fuse = !opts.NoFusedKernels
	b.lookahead = !opts.NoLookahead
	b.foldAdds = !opts.NoFoldedAdds
	b.kv16 = opts.HalfKVCache
	if b.stepTokens <= 0 {
		b.stepTokens = defaultStepTokens
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.release())
		}
	}()
	if b.mod, err = dev.LoadModule("forward"); err != nil {
		return nil, err
	}
	// The warpgroup MMA exists only in the arch-specific PTX (forward.cu,
	// FW_WG_NATIVE); elsewhere matmul_wgs_W runs matmul_wg_W's emulated body.
	b.wg = b.tc && b.mod.Target() == "sm_90a" && !opts.NoWarpgroupMMA
	if w.needsQForward() {
		if b.qmod, err = dev.LoadModule("qforward"); err != nil {
			return nil, err
		}
	}
	if b.s, err = dev.NewStream(); err != nil {
		return nil, err
	}
	b.sampler = sampling.NewSampler(dev)
	// The sampler's module now, with the forward's, not at the first token
	// (where the driver compiles it, a second of the first request).
	if err := b.sampler.Preload(); err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	if err := b.upload(ctx, w); err != nil {
		return nil, err
	}
	b.numBlocks = (opts.KVTokens + BlockSize - 1) / BlockSize
	slotBytes := b.numBlocks * BlockSize * cfg.kvDim() * b.kvElemBytes()
	for range cfg.Layers {
		k, err := b.alloc(slotBytes)
		if err != nil {
			return nil, fmt.Errorf("gpu: KV cache (%d tokens): %w", b.numBlocks*BlockSize, err)
		}
		v, err := b.alloc(slotBytes)
		if err != nil {
			return nil, fmt.Errorf("gpu: KV cache (%d tokens): %w", b.numBlocks*BlockSize, err)
		}
		b.kc, b.vc = append(b.kc, k), append(b.vc, v)
	}
	b.free = make([]uint32, b.numBlocks)
	for i := range b.free {
		b.free[i] = uint32(b.numBlocks - 1 - i) // pop from the end: block 0 first
	}
	// Resolve every kernel now, so a module without one fails the load,
	// not the first generation.
	for _, name := range b.kernelNames() {
		if _, err := b.kernel(name); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// kernelNames lists the kernels this model launches.
func (b *Backend) kernelNames() []string {
	names := map[string]bool{
		"embed_" + b.w.embed.dtype.Suffix(): true, "rmsnorm_" + b.w.norm.dtype.Suffix(): true,
		"matmul_" + b.w.lmHead.dtype.Suffix(): true,
		"attention_f32":                       true, "attention_prefill_f32": true, "silu_mul_f32": true, "copy_rows_f32": true,
	}
	if b.fuse {
		names["rope_kv_store_f32"] = true
		// normMatvec's kernels, where a norm and the product after it are
		// of one unquantized type.
		var pairs [][2]matrix
		for _, l := range b.w.layers {
			if l.qkvParts == nil {
				pairs = append(pairs, [2]matrix{l.qkv, l.attnNorm})
			}
			if l.gateUpParts == nil {
				pairs = append(pairs, [2]matrix{l.gateUp, l.mlpNorm})
			}
		}
		for _, p := range pairs {
			if p[0].dtype == p[1].dtype && !p[0].dtype.Quantized() {
				names["norm_matvec_"+p[0].dtype.Suffix()] = true
			}
		}
	} else {
		names["rope_f32"], names["kv_store_f32"] = true, true
	}
	for _, l := range b.w.layers {
		for _, m := range append([]matrix{l.o, l.down}, l.projections()...) {
			names["matmul_"+m.dtype.Suffix()] = true
		}
		if l.qkvParts != nil || l.gateUpParts != nil {
			names["scatter_cols_f32"] = true
		}
		for _, m := range []matrix{l.attnNorm, l.mlpNorm} {
			names["rmsnorm_"+m.dtype.Suffix()] = true
		}
	}
	for t := Q4_0; t.Quantized(); t++ {
		if names["matmul_"+t.Suffix()] {
			names["matvec_"+t.Suffix()] = true  // below 64 rows (quantProduct)
			names["matvec1_"+t.Suffix()] = true // one row
			if b.tcCapable(F16) {
				names["dequant_"+t.Suffix()], names["matmul_f16"] = true, true // from quantDeqRows (dequantized)
			}
		}
	}
	for _, t := range []DType{F16, BF16} {
		if names["matmul_"+t.Suffix()] && b.tcCapable(t) {
			names["matmul_tc_"+t.Suffix()] = true
			names["tc_split_x_"+t.Suffix()], names["matmul_tcx_"+t.Suffix()] = true, true
			if b.wg {
				names["wg_split_x_"+t.Suffix()] = true
				names["matmul_wgs_"+t.Suffix()] = true
			}
		}
	}
	if b.longAtt {
		if b.gqaShape() && !b.kv16 { // it has no *_kv16 twin: attentionKernel does not route an f16 cache to it
			names["attention_gqa_f32"] = true
		}
		if b.warpsShape() {
			names["attention_warps_f32"], names["attention_split_f32"], names["attention_merge_f32"] = true, true, true
			if b.fuse {
				names["rope_attention_warps_f32"] = true
			}
		}
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, b.kvKernel(n))
	}
	return out
}

// halfCacheKernels are the kernels over the KV cache that have a
// half-precision twin (*_kv16).
var halfCacheKernels = map[string]bool{"kv_store_f32": true, "rope_kv_store_f32": true, "attention_f32": true,
	"attention_warps_f32": true, "rope_attention_warps_f32": true, "attention_split_f32": true, "attention_prefill_f32": true}

// kvKernel is the kernel that runs name over this backend's cache: name
// itself over an f32 cache, its *_kv16 twin over an f16 one.
func (b *Backend) kvKernel(name string) string {
	if b.kv16 && halfCacheKernels[name] {
		return name + "_kv16"
	}
	return name
}

// kvElemBytes is the size of one cached k or v value.
func (b *Backend) kvElemBytes() int {
	if b.kv16 {
		return 2
	}
	return 4
}

// projections are the layer's q|k|v and gate|up matrices, fused or not.
func (l *deviceLayer) projections() []matrix {
	var out []matrix
	if l.qkvParts != nil {
		out = append(out, l.qkvParts...)
	} else {
		out = append(out, l.qkv)
	}
	if l.gateUpParts != nil {
		return append(out, l.gateUpParts...)
	}
	return append(out, l.gateUp)
}

// quantLayerElems is the size (out * in) of the largest quantized matrix
// of any layer, 0 where none is quantized.
func (w *deviceWeights) quantLayerElems(c Config) int {
	D, I, qD, kvD := c.Hidden, c.Intermediate, c.qDim(), c.kvDim()
	n := 0
	add := func(m matrix, elems int) {
		if m.dtype.Quantized() {
			n = max(n, elems)
		}
	}
	for _, l := range w.layers {
		if l.qkvParts != nil {
			for i, r := range []int{qD, kvD, kvD} {
				add(l.qkvParts[i], r*D)
			}
		} else {
			add(l.qkv, c.qkvDim()*D)
		}
		add(l.o, D*qD)
		if l.gateUpParts != nil {
			for _, m := range l.gateUpParts {
				add(m, I*D)
			}
		} else {
			add(l.gateUp, 2*I*D)
		}
		add(l.down, D*I)
	}
	return n
}

// needsQForward: some weight is quantized or some layer unfused.
func (w *Weights) needsQForward() bool {
	if w.Embed.DType.Quantized() || (!w.Tied && w.LMHead.DType.Quantized()) {
		return true
	}
	for _, l := range w.Layers {
		if l.QKVParts != nil || l.GateUpParts != nil || l.QKV.DType.Quantized() || l.O.DType.Quantized() ||
			l.GateUp.DType.Quantized() || l.Down.DType.Quantized() {
			return true
		}
	}
	return false
}

// inQForward reports the kernels module qforward holds.
func inQForward(name string) bool {
	if name == "scatter_cols_f32" {
		return true
	}
	for t := Q4_0; t.Quantized(); t++ {
		if strings.HasSuffix(name, "_"+t.Suffix()) {
			return true
		}
	}
	return false
}

func (b *Backend) kernel(name string) (*runtime.Kernel, error) {
	if k := b.kernels[name]; k != nil {
		return k, nil
	}
	mod := b.mod
	if inQForward(name) {
		if b.qmod == nil {
			return nil, fmt.Errorf("gpu: kernel %s: module qforward not loaded", name)
		}
		mod = b.qmod
	}
	k, err := mod.Kernel(name)
	if err != nil {
		return nil, err
	}
	b.kernels[name] = k
	return k, nil
}

func (b *Backend) alloc(n int) (*runtime.Buffer, error) {
	buf, err := b.dev.Alloc(max(n, 4))
	if err != nil {
		return nil, err
	}
	b.owned = append(b.owned, buf)
	return buf, nil
}

func (b *Backend) uploadBytes(data []byte) (*runtime.Buffer, error) {
	buf, err := b.alloc(len(data))
	if err != nil {
		return nil, err
	}
	if err := buf.Write(0, data); err != nil {
		return nil, err
	}
	return buf, nil
}

func (b *Backend) uploadTensor(name string, t Tensor) (matrix, error) {
	if len(t.Data) == 0 {
		return matrix{dtype: t.DType}, nil // a fused matrix that comes as parts
	}
	buf, err := b.uploadBytes(t.Data)
	if err != nil {
		return matrix{}, fmt.Errorf("gpu: upload %s (%d bytes): %w", name, len(t.Data), err)
	}
	return matrix{buf: buf, dtype: t.DType}, nil
}

func (b *Backend) uploadBias(name string, v []float32) (*runtime.Buffer, error) {
	if v == nil {
		return nil, nil
	}
	buf, err := b.uploadBytes(F32Tensor(v).Data)
	if err != nil {
		return nil, fmt.Errorf("gpu: upload %s: %w", name, err)
	}
	return buf, nil
}

func (b *Backend) upload(ctx context.Context, w *Weights) error {
	var err error
	if b.w.embed, err = b.uploadTensor("embed", w.Embed); err != nil {
		return err
	}
	if b.w.norm, err = b.uploadTensor("norm", w.Norm); err != nil {
		return err
	}
	if w.Tied {
		b.w.lmHead = b.w.embed
	} else if b.w.lmHead, err = b.uploadTensor("lm_head", w.LMHead); err != nil {
		return err
	}
	if b.invFreq, err = b.uploadBytes(F32Tensor(b.cfg.InvFreq).Data); err != nil {
		return err
	}
	b.w.layers = make([]deviceLayer, len(w.Layers))
	for i, l := range w.Layers {
		if err := ctx.Err(); err != nil {
			return err
		}
		d := &b.w.layers[i]
		p := fmt.Sprintf("layer %d ", i)
		for _, m := range []struct {
			dst *matrix
			t   Tensor
			n   string
		}{{&d.attnNorm, l.AttnNorm, "attn norm"}, {&d.mlpNorm, l.MLPNorm, "mlp norm"}, {&d.qkv, l.QKV, "qkv"},
			{&d.o, l.O, "o"}, {&d.gateUp, l.GateUp, "gate|up"}, {&d.down, l.Down, "down"}} {
			if *m.dst, err = b.uploadTensor(p+m.n, m.t); err != nil {
				return err
			}
		}
		for _, ps := range []struct {
			dst   *[]matrix
			ts    []Tensor
			names []string
		}{{&d.qkvParts, l.QKVParts, []string{"q", "k", "v"}}, {&d.gateUpParts, l.GateUpParts, []string{"gate", "up"}}} {
			for j, t := range ps.ts {
				m, err := b.uploadTensor(p+ps.names[j], t)
				if err != nil {
					return err
				}
				*ps.dst = append(*ps.dst, m)
			}
		}
		for _, v := range []struct {
			dst **runtime.Buffer
			v   []float32
			n   string
		}{{&d.qkvBias, l.QKVBias, "qkv bias"}, {&d.oBias, l.OBias, "o bias"}, {&d.gateUpBias, l.GateUpBias, "gate|up bias"}, {&d.downBias, l.DownBias, "down bias"}} {
			if *v.dst, err = b.uploadBias(p+v.n, v.v); err != nil {
				return err
			}
		}
	}
	return nil
}

// Device is the backend's device.
func (b *Backend) Device() *runtime.Device { return b.dev }

// Sampler is the backend's device sampler (its Router counts the routes).
func (b *Backend) Sampler() *sampling.Sampler { return b.sampler }

// FreeBlocks is the number of KV-cache blocks no sequence holds.
func (b *Backend) FreeBlocks() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.free)
}

// closeWait bounds Close's wait for queued work on a device that is not
// known to be lost (a hung kernel without a watchdog).
const closeWait = 10 * time.Second

// Close waits for queued work (at most closeWait) and frees every buffer.
// The device stays open: it is the caller's.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	b.ahead = nil // the Synchronize below waits for its forward
	var errs []error
	if b.s != nil && b.dev.Lost() == nil {
		ctx, cancel := context.WithTimeout(context.Background(), closeWait)
		errs = append(errs, b.s.Synchronize(ctx))
		cancel()
	}
	errs = append(errs, b.release())
	return errors.Join(errs...)
}

func (b *Backend) release() error {
	var errs []error
	lost := b.dev.Lost() != nil
	if err := b.graphs.drop(); err != nil && !lost {
		errs = append(errs, err)
	}
	for _, buf := range b.owned {
		if !lost {
			errs = append(errs, buf.Free())
		}
	}
	b.owned = nil
	b.sc = scratch{}
	if b.s != nil {
		if err := b.s.Close(); err != nil && !lost {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Sequence is one token sequence's KV-cache state: its length and block
// table. It is used through its Backend, one call at a time.
type Sequence struct {
	b        *Backend
	n        int
	capacity int
	blocks   []uint32
	released bool
}

// NewSequence returns an empty sequence that may grow to capacity tokens.
// It holds no blocks until tokens are fed.
func (b *Backend) NewSequence(capacity int) *Sequence {
	return &Sequence{b: b, capacity: capacity}
}

// Len is the number of tokens in the sequence's cache.
func (s *Sequence) Len() int { return s.n }

// Release gives the sequence's blocks back to the pool; it must not be used
// afterwards. A second Release does nothing.
func (s *Sequence) Release() {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.released {
		return
	}
	s.released = true
	b.free = append(b.free, s.blocks...)
	s.blocks = nil
}

// Unfused reports whether some layer runs q|k|v or gate|up as separate
// matrices (parts of different types).
func (b *Backend) Unfused() bool { return b.unfused() }
