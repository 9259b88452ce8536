package model

import (
	"encoding/binary"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/hipgo/hipgo/model/internal/cpu"
	"github.com/hipgo/hipgo/model/safetensors"
)

// weights are a loaded checkpoint, shared read-only by every session.
// Projections are fused at load (q|k|v and gate|up) so each layer needs
// fewer parallel regions per token, unless they are used in place from the
// file (see loader.inPlace), where they are fused only if the file stores
// them back to back.
//
// Matrices may alias a safetensors file's read-only memory map: nothing may
// ever write to a weight's storage (the write would fault).
type weights struct {
	embed  cpu.Matrix // [vocab, hidden]
	lmHead cpu.Matrix // [vocab, hidden]; shares embed's data when tied
	tied   bool
	norm   []float32
	layers []layerWeights
	// maps are the file mappings matrices alias; holding them here keeps the
	// files mapped exactly as long as the weights are reachable (package
	// safetensors unmaps a lent mapping when its *Mapping is collected).
	maps []*safetensors.Mapping
}

type layerWeights struct {
	attnNorm, mlpNorm []float32
	// postAttnNorm and postMLPNorm normalise attention's and the MLP's
	// outputs before their residual adds (Config.Gemma), else nil. Gemma's
	// norms hold 1+w, the factor its RMSNorm applies.
	postAttnNorm, postMLPNorm []float32
	qNorm, kNorm              []float32  // [headDim] each, or nil (Config.QKNorm)
	qkv                       cpu.Matrix // [(heads + 2*kvHeads) * headDim, hidden]
	qkvBias                   []float32  // nil without biases
	o                         cpu.Matrix // [hidden, heads*headDim]
	oBias                     []float32
	gateUp                    cpu.Matrix // [2*intermediate, hidden]
	gateUpBias                []float32
	down                      cpu.Matrix // [hidden, intermediate]
	downBias                  []float32
	// qkvParts and gateUpParts hold q, k, v (gate, up) unfused, and qkv
	// (gateUp) is then empty, when a GGUF stores them in different block
	// formats: llama.cpp's Q4_K_M recipe, ollama's default, keeps attn_v
	// in Q6_K and attn_q/attn_k in Q4_K, and a Matrix holds one format.
	qkvParts, gateUpParts []cpu.Matrix
}

// WeightFormat chooses how matrices are held in memory.
type WeightFormat int

const (
	// WeightsAuto keeps BF16 checkpoints in bfloat16 (half the memory and
	// memory traffic; products still accumulate in float32) and widens F16
	// and F32 to float32.
	WeightsAuto WeightFormat = iota
	// WeightsF32 widens everything to float32.
	WeightsF32
)

// loader reads tensors from a checkpoint, checking shapes against the config.
type loader struct {
	set      *safetensors.Set
	format   WeightFormat
	progress func(done, total int64)
	done     int64
	total    int64
	used     map[string]bool        // every tensor looked up (see unused)
	maps     []*safetensors.Mapping // mappings the weights alias
}

func (l *loader) info(name string, want []int) (safetensors.TensorInfo, *safetensors.File, error) {
	info, f, ok := l.set.Info(name)
	if ok {
		if l.used == nil {
			l.used = map[string]bool{}
		}
		l.used[name] = true
	}
	if !ok {
		var files []string
		for _, f := range l.set.Files() {
			files = append(files, f.Name())
		}
		return info, nil, &TensorError{File: strings.Join(files, ", "), Tensor: name, Want: want, Reason: "missing from the checkpoint"}
	}
	if !slices.Equal(info.Shape, want) {
		return info, nil, &TensorError{File: f.Name(), Tensor: name, Want: want, Got: info.Shape, Reason: "shape does not match config.json"}
	}
	switch info.DType {
	case safetensors.F32, safetensors.F16, safetensors.BF16:
	default:
		return info, nil, &TensorError{File: f.Name(), Tensor: name, Reason: fmt.Sprintf("dtype %s is not F32, F16 or BF16", info.DType)}
	}
	return info, f, nil
}

func (l *loader) advance(n int64) {
	l.done += n
	if l.progress != nil {
		l.progress(l.done, l.total)
	}
}

// vector reads a 1-D float tensor (norm weights, biases) as float32.
func (l *loader) vector(name string, n int) ([]float32, error) {
	info, f, err := l.info(name, []int{n})
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	if err := f.ReadFloat32(name, out); err != nil {
		return nil, &TensorError{File: f.Name(), Tensor: name, Reason: "unreadable", Err: err}
	}
	l.advance(info.Size)
	return out, nil
}

// matrix reads a [rows, cols] tensor.
func (l *loader) matrix(cols int, name string, rows int) (cpu.Matrix, error) {
	m, _, err := l.stacked(cols, []string{name}, []int{rows})
	return m, err
}

// stacked reads [rows_i, cols] tensors stacked into one matrix (q|k|v,
// gate|up). When they can be used in place but do not lie back to back in
// one file, it returns them as parts (rows in the same order) and an empty
// matrix instead, as gguf_weights.go does for parts of different formats.
func (l *loader) stacked(cols int, names []string, rows []int) (cpu.Matrix, []cpu.Matrix, error) {
	infos := make([]safetensors.TensorInfo, len(names))
	files := make([]*safetensors.File, len(names))
	allBF16, allF32 := true, true
	total := 0
	for i, n := range names {
		var err error
		if infos[i], files[i], err = l.info(n, []int{rows[i], cols}); err != nil {
			return cpu.Matrix{}, nil, err
		}
		allBF16 = allBF16 && infos[i].DType == safetensors.BF16
		allF32 = allF32 && infos[i].DType == safetensors.F32
		total += rows[i]
	}
	useBF16 := allBF16 && l.format == WeightsAuto
	if useBF16 || allF32 {
		m, parts, ok, err := l.inPlace(cols, names, rows, total, infos, files, useBF16)
		if err != nil {
			return cpu.Matrix{}, nil, err
		}
		if ok {
			for i := range infos {
				l.advance(infos[i].Size)
			}
			return m, parts, nil
		}
	}
	m := cpu.Matrix{Rows: total, Cols: cols}
	if useBF16 {
		m.BF16 = make([]uint16, total*cols)
	} else {
		m.F32 = make([]float32, total*cols)
	}
	off := 0
	for i, n := range names {
		size := rows[i] * cols
		var err error
		if useBF16 {
			err = files[i].ReadBF16(n, m.BF16[off:off+size])
		} else {
			err = files[i].ReadFloat32(n, m.F32[off:off+size])
		}
		if err != nil {
			return cpu.Matrix{}, nil, &TensorError{File: files[i].Name(), Tensor: n, Reason: "unreadable", Err: err}
		}
		off += size
		l.advance(infos[i].Size)
	}
	return m, nil, nil
}

// nativeLE: the host's byte order is the file's, so a tensor's bytes are its
// uint16s (bf16) or float32s as they are.
var nativeLE = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// inPlace makes the tensors' matrix alias the file's memory map when the file
// already holds what the forward pass keeps (bf16 as bf16, f32 as f32),
// instead of copying them to the heap: the weights then take no memory of
// their own beyond the page cache, and loading no longer peaks at the file
// plus a copy of it. ok is false, and the caller copies, when a file is not
// memory-mapped (an fs.FS, a platform without Mapped), a tensor is not
// aligned for its element type (the format does not promise it), or the
// host is big-endian. The mapping is read-only and stays mapped as long as
// the weights hold it (weights.maps).
func (l *loader) inPlace(cols int, names []string, rows []int, total int, infos []safetensors.TensorInfo, files []*safetensors.File, bf16 bool) (m cpu.Matrix, parts []cpu.Matrix, ok bool, err error) {
	es := uintptr(4)
	if bf16 {
		es = 2
	}
	if !nativeLE {
		return cpu.Matrix{}, nil, false, nil
	}
	for _, info := range infos {
		// Mappings start on a page, so this is the data's alignment; checked
		// before lending, so a misaligned tensor leaves its file unlent
		// (unmapped when Load closes it).
		if info.Offset%int64(es) != 0 {
			return cpu.Matrix{}, nil, false, nil
		}
	}
	views := make([][]byte, len(names))
	maps := make([]*safetensors.Mapping, len(names))
	for i, n := range names {
		b, mp, err := files[i].Mapped(n)
		if err != nil {
			return cpu.Matrix{}, nil, false, &TensorError{File: files[i].Name(), Tensor: n, Reason: "unreadable", Err: err}
		}
		if mp == nil || len(b) == 0 || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%es != 0 {
			return cpu.Matrix{}, nil, false, nil
		}
		views[i], maps[i] = b, mp
	}
	for _, mp := range maps {
		if !slices.Contains(l.maps, mp) {
			l.maps = append(l.maps, mp)
		}
	}
	// Back to back in one mapping (gate_proj then up_proj, as the files sort
	// them): one matrix over the whole run.
	whole := len(views[0])
	for i := 1; i < len(views); i++ {
		end := unsafe.Add(unsafe.Pointer(unsafe.SliceData(views[i-1])), len(views[i-1]))
		if maps[i] != maps[0] || end != unsafe.Pointer(unsafe.SliceData(views[i])) {
			whole = -1
			break
		}
		whole += len(views[i])
	}
	matrix := func(b []byte, rows int) cpu.Matrix {
		m := cpu.Matrix{Rows: rows, Cols: cols}
		p := unsafe.Pointer(unsafe.SliceData(b))
		if bf16 {
			m.BF16 = unsafe.Slice((*uint16)(p), len(b)/2)
		} else {
			m.F32 = unsafe.Slice((*float32)(p), len(b)/4)
		}
		return m
	}
	if whole >= 0 {
		return matrix(unsafe.Slice(unsafe.SliceData(views[0]), whole), total), nil, true, nil
	}
	// Apart (q_proj, k_proj and v_proj sort around o_proj): parts, which cost
	// a parallel region each per token but no copy.
	parts = make([]cpu.Matrix, len(views))
	for i, b := range views {
		parts[i] = matrix(b, rows[i])
	}
	return cpu.Matrix{}, parts, true, nil
}

// biases reads optional biases stacked like matrix; nil when has is false.
func (l *loader) biases(has bool, names []string, sizes []int) ([]float32, error) {
	if !has {
		return nil, nil
	}
	var out []float32
	for i, n := range names {
		v, err := l.vector(n, sizes[i])
		if err != nil {
			return nil, err
		}
		out = append(out, v...)
	}
	return out, nil
}

// loadWeights reads and checks every tensor the config calls for.
func loadWeights(cfg *Config, set *safetensors.Set, format WeightFormat, progress func(done, total int64)) (*weights, error) {
	l := &loader{set: set, format: format, progress: progress}
	for _, n := range set.Names() {
		info, _, _ := set.Info(n)
		l.total += info.Size
	}
	D, V, I := cfg.HiddenSize, cfg.VocabSize, cfg.IntermediateSize
	qD, kvD := cfg.NumHeads*cfg.HeadDim, cfg.NumKVHeads*cfg.HeadDim
	w := &weights{layers: make([]layerWeights, cfg.NumLayers)}
	var err error
	pre := "model."
	if cfg.VisionSkipped {
		pre = textPrefixes[0]
		for _, p := range textPrefixes {
			if _, _, ok := set.Info(p + "embed_tokens.weight"); ok {
				pre = p
			}
		}
	}
	if w.embed, err = l.matrix(D, pre+"embed_tokens.weight", V); err != nil {
		return nil, err
	}
	// Gemma's RMSNorm multiplies by 1+w, computed in float32 as
	// transformers' Gemma3RMSNorm does.
	norm := func(name string, n int) ([]float32, error) {
		v, err := l.vector(name, n)
		if cfg.Gemma {
			for i := range v {
				v[i]++
			}
		}
		return v, err
	}
	mlpNorm := "post_attention_layernorm.weight" // llama's pre-MLP norm
	if cfg.Gemma {
		mlpNorm = "pre_feedforward_layernorm.weight"
	}
	for i := range w.layers {
		p := fmt.Sprintf("%slayers.%d.", pre, i)
		lw := &w.layers[i]
		if lw.attnNorm, err = norm(p+"input_layernorm.weight", D); err != nil {
			return nil, err
		}
		if cfg.Gemma {
			if lw.postAttnNorm, err = norm(p+"post_attention_layernorm.weight", D); err != nil {
				return nil, err
			}
			if lw.postMLPNorm, err = norm(p+"post_feedforward_layernorm.weight", D); err != nil {
				return nil, err
			}
		}
		qkv := []string{p + "self_attn.q_proj.", p + "self_attn.k_proj.", p + "self_attn.v_proj."}
		qkvRows := []int{qD, kvD, kvD}
		if cfg.Architecture == Phi3 { // fused in the checkpoint, in our order
			lw.qkv, err = l.matrix(D, p+"self_attn.qkv_proj.weight", qD+2*kvD)
		} else {
			lw.qkv, lw.qkvParts, err = l.stacked(D, suffix(qkv, "weight"), qkvRows)
		}
		if err != nil {
			return nil, err
		}
		if lw.qkvBias, err = l.biases(cfg.QKVBias, suffix(qkv, "bias"), qkvRows); err != nil {
			return nil, err
		}
		if cfg.QKNorm {
			if lw.qNorm, err = norm(p+"self_attn.q_norm.weight", cfg.HeadDim); err != nil {
				return nil, err
			}
			if lw.kNorm, err = norm(p+"self_attn.k_norm.weight", cfg.HeadDim); err != nil {
				return nil, err
			}
		}
		if lw.o, err = l.matrix(qD, p+"self_attn.o_proj.weight", D); err != nil {
			return nil, err
		}
		if lw.oBias, err = l.biases(cfg.OBias, []string{p + "self_attn.o_proj.bias"}, []int{D}); err != nil {
			return nil, err
		}
		if lw.mlpNorm, err = norm(p+mlpNorm, D); err != nil {
			return nil, err
		}
		gu := []string{p + "mlp.gate_proj.", p + "mlp.up_proj."}
		if cfg.Architecture == Phi3 { // gate rows then up rows, as ours
			lw.gateUp, err = l.matrix(D, p+"mlp.gate_up_proj.weight", 2*I)
		} else {
			lw.gateUp, lw.gateUpParts, err = l.stacked(D, suffix(gu, "weight"), []int{I, I})
		}
		if err != nil {
			return nil, err
		}
		if lw.gateUpBias, err = l.biases(cfg.MLPBias, suffix(gu, "bias"), []int{I, I}); err != nil {
			return nil, err
		}
		if lw.down, err = l.matrix(I, p+"mlp.down_proj.weight", D); err != nil {
			return nil, err
		}
		if lw.downBias, err = l.biases(cfg.MLPBias, []string{p + "mlp.down_proj.bias"}, []int{D}); err != nil {
			return nil, err
		}
	}
	if w.norm, err = norm(pre+"norm.weight", D); err != nil {
		return nil, err
	}
	if cfg.TieWordEmbeddings {
		// transformers ties lm_head to the embeddings even when the file has both.
		w.lmHead, w.tied = w.embed, true
	} else {
		head := "lm_head.weight"
		if _, _, ok := set.Info(head); !ok && cfg.VisionSkipped {
			head = "language_model.lm_head.weight" // the published checkpoints' name
		}
		if w.lmHead, err = l.matrix(D, head, V); err != nil {
			return nil, err
		}
	}
	if err := l.unused(cfg); err != nil {
		return nil, err
	}
	w.maps = l.maps
	if l.progress != nil && l.done < l.total {
		// Tensors the model does not use (a tied lm_head, rotary caches) were
		// counted in the total but not read.
		l.progress(l.total, l.total)
	}
	return w, nil
}

// unused fails on tensors in the checkpoint that no lookup asked for: a
// config that declares fewer layers than the file holds, or no biases where
// the file has them, would otherwise load a different model than the
// checkpoint's, silently. transformers ignores the same two kinds of extra
// that pass here: lm_head.weight when tie_word_embeddings is set (the head
// is the embedding matrix whatever the file holds), and rotary caches
// (rotary_emb.inv_freq, saved by older llama checkpoints; recomputed from
// the config).
func (l *loader) unused(cfg *Config) error {
	var extra []string
	for _, n := range l.set.Names() {
		if l.used[n] || (n == "lm_head.weight" && cfg.TieWordEmbeddings) || strings.HasSuffix(n, "rotary_emb.inv_freq") {
			continue
		}
		if cfg.VisionSkipped && (n == "language_model.lm_head.weight" && cfg.TieWordEmbeddings ||
			slices.ContainsFunc(visionPrefixes, func(p string) bool { return strings.HasPrefix(n, p) })) {
			continue
		}
		extra = append(extra, n)
	}
	if len(extra) == 0 {
		return nil
	}
	reason := "not used by config.json"
	if m := layerIndex.FindStringSubmatch(extra[0]); m != nil {
		if i, err := strconv.Atoi(m[1]); err != nil || i >= cfg.NumLayers {
			reason = fmt.Sprintf("not used by config.json's %d layers", cfg.NumLayers)
		}
	}
	const shown = 3
	if rest := extra[1:]; len(rest) > 0 {
		q := make([]string, min(len(rest), shown))
		for i := range q {
			q[i] = strconv.Quote(rest[i])
		}
		reason += "; nor are " + strings.Join(q, ", ")
		if len(rest) > shown {
			reason += fmt.Sprintf(" and %d more", len(rest)-shown)
		}
	}
	f, _ := l.set.File(extra[0])
	return &TensorError{File: f.Name(), Tensor: extra[0], Reason: reason}
}

// textPrefixes name a Gemma3ForConditionalGeneration's text model tensors:
// as the published checkpoints (and transformers 5's save_pretrained) name
// them, and as transformers 5 names them in memory.
var textPrefixes = []string{"language_model.model.", "model.language_model."}

// visionPrefixes name the tensors of its vision tower and projector, which
// are not loaded (Config.VisionSkipped).
var visionPrefixes = []string{"vision_tower.", "multi_modal_projector.", "model.vision_tower.", "model.multi_modal_projector."}

// layerIndex matches a decoder layer's tensor name.
var layerIndex = regexp.MustCompile(`^model\.layers\.(\d+)\.`)

func suffix(prefixes []string, s string) []string {
	out := make([]string, len(prefixes))
	for i, p := range prefixes {
		out[i] = p + s
	}
	return out
}
