package model

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/hipgo/hipgo/model/demo"
	"github.com/hipgo/hipgo/model/internal/cpu"
	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/model/safetensors"
	"github.com/stretchr/testify/require"
)

// fileMappings lists the address ranges at which this process maps path,
// from /proc/self/maps: independent of how the loader keeps its mapping.
func fileMappings(t *testing.T, path string) [][2]uintptr {
	t.Helper()
	path, err := filepath.Abs(path)
	require.NoError(t, err)
	path, err = filepath.EvalSymlinks(path)
	require.NoError(t, err)
	data, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	var out [][2]uintptr
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text()) // start-end perms offset dev inode path
		if len(f) < 6 || strings.Join(f[5:], " ") != path {
			continue
		}
		var lo, hi uintptr
		_, err := fmt.Sscanf(f[0], "%x-%x", &lo, &hi)
		require.NoError(t, err)
		out = append(out, [2]uintptr{lo, hi})
	}
	return out
}

// storage is where a matrix's elements lie.
func storage(m *cpu.Matrix) (uintptr, int) {
	switch {
	case m.BF16 != nil:
		return uintptr(unsafe.Pointer(unsafe.SliceData(m.BF16))), 2 * len(m.BF16)
	case m.F32 != nil:
		return uintptr(unsafe.Pointer(unsafe.SliceData(m.F32))), 4 * len(m.F32)
	}
	return 0, 0
}

func within(ranges [][2]uintptr, p uintptr, n int) bool {
	for _, r := range ranges {
		if p >= r[0] && p+uintptr(n) <= r[1] {
			return true
		}
	}
	return false
}

// matrices lists every matrix of w that holds data (q|k|v and gate|up fused
// or in parts).
func matrices(w *weights) map[string]*cpu.Matrix {
	out := map[string]*cpu.Matrix{"embed": &w.embed, "lm_head": &w.lmHead}
	for i := range w.layers {
		l := &w.layers[i]
		for name, m := range map[string]*cpu.Matrix{"qkv": &l.qkv, "o": &l.o, "gate_up": &l.gateUp, "down": &l.down} {
			if m.Rows > 0 && (m.BF16 != nil || m.F32 != nil) {
				out[fmt.Sprintf("layer %d %s", i, name)] = m
			}
		}
		for j := range l.qkvParts {
			out[fmt.Sprintf("layer %d qkv part %d", i, j)] = &l.qkvParts[j]
		}
		for j := range l.gateUpParts {
			out[fmt.Sprintf("layer %d gate_up part %d", i, j)] = &l.gateUpParts[j]
		}
	}
	return out
}

// TestWeightsAliasTheMapping proves that a checkpoint whose dtype the CPU
// forward keeps (bf16 under WeightsAuto, f32 always) is read in place: every
// matrix's elements lie inside the process's mapping of model.safetensors,
// so loading does not hold a second copy of the weights. The model still
// computes the reference logits, the mapping outlives Load (the Set is
// closed when Load returns) and garbage collections, and it is unmapped
// once the model is unreachable. Dtypes that need a conversion (f16, bf16
// under WeightsF32) are copied, and the file is unmapped when Load returns.
func TestWeightsAliasTheMapping(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/maps")
	}
	smol, llama, qwen := modeltest.SmolLMTiny(), modeltest.Llama3Tiny(), modeltest.Qwen2Tiny()
	f16 := llama
	f16.DType = safetensors.F16
	for _, tc := range []struct {
		name   string
		spec   modeltest.Spec
		format WeightFormat
		inMap  bool
	}{
		{"bf16 kept", smol, WeightsAuto, true},
		{"f32 kept", llama, WeightsAuto, true},
		{"f32 kept under WeightsF32", qwen, WeightsF32, true},
		{"bf16 widened by WeightsF32", smol, WeightsF32, false},
		{"f16 widened", f16, WeightsAuto, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			spec.NoTokenizer = true
			dir := t.TempDir()
			require.NoError(t, modeltest.Write(dir, spec))
			path := filepath.Join(dir, safetensors.SingleFile)
			checkAliasedModel(t, dir, path, spec, tc.format, tc.inMap)
			if !tc.inMap {
				require.Empty(t, fileMappings(t, path), "nothing aliases the file: it is unmapped when Load returns")
				return
			}
			// The model is unreachable now: its cleanup unmaps the file.
			deadline := time.Now().Add(10 * time.Second)
			for len(fileMappings(t, path)) > 0 && time.Now().Before(deadline) {
				runtime.GC()
				time.Sleep(10 * time.Millisecond)
			}
			require.Empty(t, fileMappings(t, path), "the mapping is released with the model")
		})
	}
}

// checkAliasedModel loads dir, checks where its matrices lie and runs it.
// It returns before its caller checks the mapping is released, so the model
// is unreachable then.
func checkAliasedModel(t *testing.T, dir, path string, spec modeltest.Spec, format WeightFormat, inMap bool) {
	m, err := Load(dir, WithoutTokenizer(), WithWeightFormat(format))
	require.NoError(t, err)
	w := m.be.(*cpuBackend).w
	// Load has closed the Set; after collections the weights must still be
	// readable (a munmapped alias would fault in the forward pass below).
	runtime.GC()
	runtime.GC()
	ranges := fileMappings(t, path)
	if inMap {
		require.NotEmpty(t, ranges, "model.safetensors stays mapped while the model lives")
	}
	for name, mat := range matrices(w) {
		p, n := storage(mat)
		require.NotZero(t, n, name)
		require.Equal(t, inMap, within(ranges, p, n), "%s lies in the file mapping", name)
	}
	if inMap {
		if spec.DType == safetensors.BF16 {
			require.NotNil(t, w.embed.BF16, "bf16 stays bf16")
		}
		// The writer sorts tensors by name, as transformers' does: gate_proj
		// and up_proj lie back to back and make one matrix; q, k and v lie
		// around o_proj and stay three parts, each in place.
		l := &w.layers[0]
		require.Nil(t, l.gateUpParts)
		require.Equal(t, 2*spec.Intermediate, l.gateUp.Rows)
		require.Len(t, l.qkvParts, 3)
		require.Zero(t, l.qkv.Rows)
		require.Len(t, w.maps, 1)
	} else {
		require.Empty(t, w.maps)
	}
	tokens := testTokens(5, spec.Vocab)
	got, err := m.NewSession().Forward(context.Background(), tokens, false)
	require.NoError(t, err)
	require.LessOrEqual(t, relDiff(t, got, newRef(spec).logits(tokens)[4]), 1e-4)
}

// TestMisalignedTensorsAreCopied proves a file whose data section starts at
// an odd offset (the format allows any header length) still loads: bf16
// elements that are not 2-byte aligned cannot be aliased as uint16s, so
// they are copied, and the model computes the reference logits.
func TestMisalignedTensorsAreCopied(t *testing.T) {
	spec := modeltest.SmolLMTiny()
	spec.NoTokenizer = true
	dir := t.TempDir()
	require.NoError(t, modeltest.Write(dir, spec))
	path := filepath.Join(dir, safetensors.SingleFile)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	n := binary.LittleEndian.Uint64(data)
	odd := binary.LittleEndian.AppendUint64(nil, n+1) // one more space after the JSON
	odd = append(odd, data[8:8+n]...)
	odd = append(odd, ' ')
	odd = append(odd, data[8+n:]...)
	require.NoError(t, os.WriteFile(path, odd, 0o644))

	m, err := Load(dir, WithoutTokenizer())
	require.NoError(t, err)
	w := m.be.(*cpuBackend).w
	require.NotNil(t, w.embed.BF16, "still bf16, in a copy")
	require.Empty(t, w.maps)
	if runtime.GOOS == "linux" {
		require.Empty(t, fileMappings(t, path), "nothing was lent: the file is unmapped when Load returns")
	}
	tokens := testTokens(5, spec.Vocab)
	got, err := m.NewSession().Forward(context.Background(), tokens, false)
	require.NoError(t, err)
	require.LessOrEqual(t, relDiff(t, got, newRef(spec).logits(tokens)[4]), 1e-4)
}

// TestDemoCheckpointInPlace loads the demo model, a file transformers wrote,
// from disk (in place: bf16 kept, gate|up back to back, q|k|v in parts) and
// from its embedded copy (read into the heap, fused), and proves both
// compute the same logits.
func TestDemoCheckpointInPlace(t *testing.T) {
	disk, err := Load("demo", WithoutTokenizer())
	require.NoError(t, err)
	heap, err := LoadFS(demo.FS(), WithoutTokenizer())
	require.NoError(t, err)
	dw, hw := disk.be.(*cpuBackend).w, heap.be.(*cpuBackend).w
	require.Len(t, dw.maps, 1)
	require.Empty(t, hw.maps)
	for i := range dw.layers {
		require.Len(t, dw.layers[i].qkvParts, 3)
		require.Nil(t, dw.layers[i].gateUpParts)
		require.Nil(t, hw.layers[i].qkvParts)
	}
	if runtime.GOOS == "linux" {
		ranges := fileMappings(t, filepath.Join("demo", safetensors.SingleFile))
		for name, mat := range matrices(dw) {
			p, n := storage(mat)
			require.True(t, within(ranges, p, n), "%s lies in the file mapping", name)
		}
	}
	tokens := testTokens(7, disk.cfg.VocabSize)
	want, err := heap.NewSession().Forward(context.Background(), tokens, false)
	require.NoError(t, err)
	got, err := disk.NewSession().Forward(context.Background(), tokens, false)
	require.NoError(t, err)
	require.Equal(t, want, got)
}
