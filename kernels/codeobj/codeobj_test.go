package codeobj

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func readArtifact(t testing.TB, module, arch string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "build", module, arch+".hsaco"))
	require.NoError(t, err)
	return b
}

// TestTestKernelsMetadata checks the launch facts of the test kernels that
// the runtime's fault tests rely on, on every AMDGPU target: bounded_fill_u32
// is limited to 256 threads per block, the others keep the default 1024, no
// kernel has hidden arguments, and the argument layouts are the ones the
// source declares (pointer 8 bytes, u32 4, u64 8 at natural offsets).
func TestTestKernelsMetadata(t *testing.T) {
	type arg struct {
		offset, size int
		kind         string
	}
	want := map[string]struct {
		maxBlock int
		kernarg  int
		args     []arg
	}{
		"fill_u32":         {1024, 16, []arg{{0, 8, "global_buffer"}, {8, 4, "by_value"}, {12, 4, "by_value"}}},
		"bounded_fill_u32": {256, 16, []arg{{0, 8, "global_buffer"}, {8, 4, "by_value"}, {12, 4, "by_value"}}},
		"oob_write_u32":    {1024, 24, []arg{{0, 8, "global_buffer"}, {8, 4, "by_value"}, {16, 8, "by_value"}}},
		"spin_ns":          {1024, 16, []arg{{0, 8, "by_value"}, {8, 8, "global_buffer"}}},
		"empty":            {1024, 0, nil},
	}
	paths, err := filepath.Glob(filepath.Join("..", "build", "testkernels", "*.hsaco"))
	require.NoError(t, err)
	require.Len(t, paths, 10, "one code object per AMDGPU target")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		f, err := Parse(b)
		require.NoError(t, err, p)
		require.Equal(t, strings.TrimSuffix(filepath.Base(p), ".hsaco"), f.Processor, p)
		require.Len(t, f.Kernels, len(want), p)
		for name, w := range want {
			k, ok := f.Kernel(name)
			require.True(t, ok, "%s: kernel %s", p, name)
			require.Equal(t, w.maxBlock, k.MaxFlatWorkgroupSize, "%s %s max_flat_workgroup_size", p, name)
			require.Equal(t, w.kernarg, k.KernargSegmentSize, "%s %s kernarg size", p, name)
			require.Equal(t, 0, k.GroupSegmentFixedSize, "%s %s LDS", p, name)
			require.Equal(t, 0, k.PrivateSegmentFixedSize, "%s %s scratch", p, name)
			var got []arg
			for _, a := range k.Args {
				require.False(t, a.Hidden(), "%s %s: unexpected hidden argument %s", p, name, a.ValueKind)
				got = append(got, arg{a.Offset, a.Size, a.ValueKind})
			}
			require.Equal(t, w.args, got, "%s %s args", p, name)
		}
	}
}

// mutate returns a copy of b changed by fn.
func mutate(b []byte, fn func([]byte)) []byte {
	c := append([]byte(nil), b...)
	fn(c)
	return c
}

// noteOffset returns the file offset of the first note section's contents.
func noteOffset(t *testing.T, b []byte) int {
	ef, err := parseELF(b)
	require.NoError(t, err)
	for _, s := range ef.sections {
		if s.typ == shtNote {
			return int(s.offset)
		}
	}
	t.Fatal("no note section")
	return 0
}

// symbolOffset returns the file offset of a dynamic symbol's bytes.
func symbolOffset(t *testing.T, b []byte, name string) int {
	ef, err := parseELF(b)
	require.NoError(t, err)
	syms, err := ef.dynamicSymbols()
	require.NoError(t, err)
	for _, s := range syms {
		if s.name == name {
			sec := ef.sections[s.shndx]
			return int(sec.offset + s.value - sec.addr)
		}
	}
	t.Fatalf("no symbol %s", name)
	return 0
}

// TestParseRejectsCorruptObjects proves that each kind of damage to a real
// code object is reported as the right sentinel, with a *FormatError that
// says where, and never a panic.
func TestParseRejectsCorruptObjects(t *testing.T) {
	le := binary.LittleEndian
	for _, arch := range []string{"gfx1100", "gfx1151"} { // code object v4 and v5
		good := readArtifact(t, "testkernels", arch)
		note := noteOffset(t, good)
		kd := symbolOffset(t, good, "spin_ns.kd")
		tests := []struct {
			name  string
			data  []byte
			kind  error
			where string
		}{
			{"no ELF magic", good[1:], ErrNotCodeObject, "ELF header"},
			{"32-bit class", mutate(good, func(b []byte) { b[4] = 1 }), ErrNotCodeObject, "ELF header"},
			{"big endian", mutate(good, func(b []byte) { b[5] = 2 }), ErrNotCodeObject, "ELF header"},
			{"System V OS/ABI", mutate(good, func(b []byte) { b[7] = 0 }), ErrNotCodeObject, "ELF header"},
			{"x86-64 machine", mutate(good, func(b []byte) { le.PutUint16(b[18:], 62) }), ErrNotCodeObject, "ELF header"},
			{"code object v2", mutate(good, func(b []byte) { b[8] = 0 }), ErrUnsupportedVersion, "ELF header"},
			{"unknown ABI version", mutate(good, func(b []byte) { b[8] = 9 }), ErrUnsupportedVersion, "ELF header"},
			{"truncated header", good[:63], ErrMalformed, "ELF header"},
			{"relocatable object", mutate(good, func(b []byte) { le.PutUint16(b[16:], 1) }), ErrMalformed, "ELF header"},
			{"section table past the end", mutate(good, func(b []byte) { le.PutUint64(b[40:], uint64(len(b))) }), ErrMalformed, "section header table"},
			{"65535 sections", mutate(good, func(b []byte) { le.PutUint16(b[60:], 0xffff) }), ErrMalformed, ""},
			{"odd section entry size", mutate(good, func(b []byte) { le.PutUint16(b[58:], 40) }), ErrMalformed, "ELF header"},
			{"name table index out of range", mutate(good, func(b []byte) { le.PutUint16(b[62:], 200) }), ErrMalformed, "ELF header"},
			{"program headers past the end", mutate(good, func(b []byte) { le.PutUint64(b[32:], uint64(len(b)-8)) }), ErrMalformed, "program header table"},
			{"truncated file", good[:len(good)/2], ErrMalformed, ""},
			{"metadata note of another type", mutate(good, func(b []byte) { le.PutUint32(b[note+8:], 33) }), ErrNoMetadata, "notes"},
			{"note owner renamed", mutate(good, func(b []byte) { b[note+12] = 'X' }), ErrNoMetadata, "notes"},
			{"note descriptor size huge", mutate(good, func(b []byte) { le.PutUint32(b[note+4:], 0xfffffff0) }), ErrMalformed, "note section"},
			{"msgpack damaged", mutate(good, func(b []byte) { b[note+20] = 0xc1 }), ErrMalformed, "NT_AMDGPU_METADATA"},
			{"descriptor kernarg size disagrees", mutate(good, func(b []byte) { le.PutUint32(b[kd+8:], 17) }), ErrMalformed, `kernel "spin_ns"`},
			{"e_flags name another processor", mutate(good, func(b []byte) { b[48] = 0x36 }), ErrMalformed, "amdhsa.target"},
		}
		for _, tc := range tests {
			t.Run(arch+"/"+tc.name, func(t *testing.T) {
				f, err := Parse(tc.data)
				require.Nil(t, f)
				require.ErrorIs(t, err, tc.kind)
				var fe *FormatError
				require.ErrorAs(t, err, &fe)
				require.Contains(t, fe.Where, tc.where)
				require.True(t, strings.HasPrefix(err.Error(), "codeobj: "), err.Error())
			})
		}
		t.Run(arch+"/msgpack cause is exposed", func(t *testing.T) {
			_, err := Parse(mutate(good, func(b []byte) { b[note+20] = 0xc1 }))
			var me *MsgpackError
			require.ErrorAs(t, err, &me)
		})
	}
}

// TestReadMetadataValidates proves the metadata checks on hand-written
// documents: required fields, types, ranges and argument bounds.
func TestReadMetadataValidates(t *testing.T) {
	kernel := func(edit func(map[string]any)) map[string]any {
		k := map[string]any{
			".name": "k", ".symbol": "k.kd",
			".kernarg_segment_size": int64(16), ".kernarg_segment_align": int64(8),
			".group_segment_fixed_size": int64(0), ".private_segment_fixed_size": int64(0),
			".wavefront_size": int64(32), ".max_flat_workgroup_size": int64(256),
			".sgpr_count": int64(10), ".vgpr_count": int64(4),
			".uniform_work_group_size": int64(1), ".uses_dynamic_stack": false,
			".reqd_workgroup_size": []any{int64(64), int64(1), int64(1)},
			".args": []any{
				map[string]any{".offset": int64(0), ".size": int64(8), ".value_kind": "global_buffer", ".address_space": "global", ".actual_access": "read_only"},
				map[string]any{".offset": int64(8), ".size": int64(8), ".value_kind": "hidden_block_count_x"},
			},
		}
		if edit != nil {
			edit(k)
		}
		return k
	}
	doc := func(kernels ...any) map[string]any {
		return map[string]any{
			"amdhsa.target":  "amdgcn-amd-amdhsa--gfx1100",
			"amdhsa.version": []any{int64(1), int64(2)},
			"amdhsa.kernels": kernels,
		}
	}

	var f File
	require.NoError(t, f.readMetadata(doc(kernel(nil))))
	k := f.Kernels[0]
	require.Equal(t, 16, k.KernargSegmentSize)
	require.Equal(t, 256, k.MaxFlatWorkgroupSize)
	require.True(t, k.UniformWorkGroupSize)
	require.Equal(t, []int{64, 1, 1}, k.ReqdWorkgroupSize)
	require.Equal(t, "read_only", k.Args[0].ActualAccess)
	require.False(t, k.Args[0].Hidden())
	require.True(t, k.Args[1].Hidden())

	bad := []struct {
		name string
		doc  map[string]any
		kind error
		msg  string
	}{
		{"missing name", doc(kernel(func(k map[string]any) { delete(k, ".name") })), ErrMalformed, ".name"},
		{"missing kernarg size", doc(kernel(func(k map[string]any) { delete(k, ".kernarg_segment_size") })), ErrMalformed, ".kernarg_segment_size"},
		{"size is a string", doc(kernel(func(k map[string]any) { k[".group_segment_fixed_size"] = "0" })), ErrMalformed, "want an integer"},
		{"negative size", doc(kernel(func(k map[string]any) { k[".private_segment_fixed_size"] = int64(-1) })), ErrMalformed, "out of range"},
		{"huge size", doc(kernel(func(k map[string]any) { k[".kernarg_segment_size"] = uint64(1 << 63) })), ErrMalformed, "out of range"},
		{"wavefront 48", doc(kernel(func(k map[string]any) { k[".wavefront_size"] = int64(48) })), ErrMalformed, "want 32 or 64"},
		{"alignment 3", doc(kernel(func(k map[string]any) { k[".kernarg_segment_align"] = int64(3) })), ErrMalformed, "power of two"},
		{"block of 2048", doc(kernel(func(k map[string]any) { k[".max_flat_workgroup_size"] = int64(2048) })), ErrMalformed, "out of range"},
		{"flag of 2", doc(kernel(func(k map[string]any) { k[".uniform_work_group_size"] = int64(2) })), ErrMalformed, "0/1"},
		{"two dimensions", doc(kernel(func(k map[string]any) { k[".reqd_workgroup_size"] = []any{int64(1), int64(1)} })), ErrMalformed, "want 3"},
		{"arg past kernarg segment", doc(kernel(func(k map[string]any) { k[".kernarg_segment_size"] = int64(12) })), ErrMalformed, "run past"},
		{"arg not a map", doc(kernel(func(k map[string]any) { k[".args"] = []any{int64(1)} })), ErrMalformed, "want a map"},
		{"arg without kind", doc(kernel(func(k map[string]any) { k[".args"] = []any{map[string]any{".offset": int64(0), ".size": int64(8)}} })), ErrMalformed, ".value_kind"},
		{"kernel twice", doc(kernel(nil), kernel(nil)), ErrMalformed, "appears twice"},
		{"no target", func() map[string]any { d := doc(); delete(d, "amdhsa.target"); return d }(), ErrMalformed, "amdhsa.target"},
		{"metadata major 2", func() map[string]any { d := doc(); d["amdhsa.version"] = []any{int64(2), int64(0)}; return d }(), ErrUnsupportedVersion, "major version 2"},
		{"kernels not an array", func() map[string]any { d := doc(); d["amdhsa.kernels"] = "x"; return d }(), ErrMalformed, "want an array"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			var f File
			err := f.readMetadata(tc.doc)
			require.ErrorIs(t, err, tc.kind)
			require.Contains(t, err.Error(), tc.msg)
		})
	}
}

// TestDecodeFeatures checks the xnack/sramecc decoding against the e_flags
// values llvm-readelf-19 -h prints for clang-19 objects (gfx90a v4:
// 0x53F = "xnack, sramecc", both "any"; gfx1100: 0x41, neither) and the bit
// layout of AMDGPUUsage (v4+: 0x100 any, 0x200 off, 0x300 on for xnack;
// 0x400/0x800/0xc00 for sramecc; v3: one "on" bit each).
func TestDecodeFeatures(t *testing.T) {
	tests := []struct {
		cov            int
		flags          uint32
		xnack, sramecc Feature
	}{
		{4, 0x53f, FeatureAny, FeatureAny},
		{5, 0x041, FeatureUnsupported, FeatureUnsupported},
		{4, 0x33f | 0xc00, FeatureOn, FeatureOn},
		{5, 0x23f | 0x800, FeatureOff, FeatureOff},
		{3, 0x13f, FeatureOn, FeatureOff},
		{3, 0x23f, FeatureOff, FeatureOn},
	}
	for _, tc := range tests {
		x, s := decodeFeatures(tc.cov, tc.flags)
		require.Equal(t, tc.xnack, x, "v%d %#x xnack", tc.cov, tc.flags)
		require.Equal(t, tc.sramecc, s, "v%d %#x sramecc", tc.cov, tc.flags)
	}
	f := File{Processor: "gfx90a", XNACK: FeatureOff, SRAMECC: FeatureOn}
	require.Equal(t, "gfx90a:sramecc+:xnack-", f.TargetID())
}

// TestParseAllocationIsBounded proves that headers claiming huge tables or
// documents are rejected before anything of that size is allocated.
func TestParseAllocationIsBounded(t *testing.T) {
	good := readArtifact(t, "testkernels", "gfx1100")
	inputs := [][]byte{
		mutate(good[:64], func(b []byte) { binary.LittleEndian.PutUint16(b[60:], 0xffff) }),
		mutate(good, func(b []byte) { binary.LittleEndian.PutUint16(b[56:], 0xffff) }),
		{0xdd, 0xff, 0xff, 0xff, 0xff},
		{0xdf, 0xff, 0xff, 0xff, 0xff},
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < 100; i++ {
		for j, in := range inputs {
			var err error
			if j < 2 {
				_, err = Parse(in)
			} else {
				_, err = decodeMsgpack(in)
			}
			require.Error(t, err)
		}
	}
	runtime.ReadMemStats(&after)
	perCall := (after.TotalAlloc - before.TotalAlloc) / uint64(100*len(inputs))
	require.Less(t, perCall, uint64(64<<10), "bytes allocated per rejected input")
}

// TestErrorsAreSentinels proves every package error is reachable through
// errors.Is with exactly one sentinel.
func TestErrorsAreSentinels(t *testing.T) {
	err := error(&FormatError{Where: "x", Reason: "y", Kind: ErrMalformed})
	require.True(t, errors.Is(err, ErrMalformed))
	require.False(t, errors.Is(err, ErrNoMetadata))
	require.Equal(t, "codeobj: x: y", err.Error())
}
