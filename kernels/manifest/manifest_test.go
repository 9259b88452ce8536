package manifest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/kernels/codeobj"
	"github.com/hipgo/hipgo/kernels/ptx"
)

const digest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func sample() *Manifest {
	return &Manifest{
		Schema:    Schema,
		Toolchain: "clang version 19.1.7",
		Artifacts: []Artifact{
			{Module: "m", Format: FormatHSACO, Arch: "gfx1100", Path: "m/gfx1100.hsaco", Size: 10, SHA256: digest,
				CodeObjectVersion: 4, Target: "amdgcn-amd-amdhsa--gfx1100",
				Kernels: []KernelInfo{{Name: "k", Symbol: "k.kd", Params: []Param{{Offset: 0, Size: 8, Align: 8, Kind: "global_buffer", AddressSpace: "global"}},
					KernargSize: 8, KernargAlign: 8, MaxThreadsPerBlock: 256, RequiredBlock: []int{64, 1, 1}, WavefrontSize: 32}}},
			{Module: "m", Format: FormatPTX, Arch: "sm_90", Path: "m/sm_90.ptx", Size: 20, SHA256: digest, Target: "sm_90", PTXVersion: "7.8",
				Kernels: []KernelInfo{{Name: "e", Params: []Param{}, WavefrontSize: 32}}},
			{Module: "m", Format: FormatMSL, Arch: MSLArch, Path: "m/metal.metal", Size: 30, SHA256: digest},
		},
	}
}

// TestEncodeRoundTrip proves Encode writes what Parse reads back unchanged,
// that the compact layout is still the same JSON value as MarshalIndent's,
// and that encoding is deterministic.
func TestEncodeRoundTrip(t *testing.T) {
	m := sample()
	b, err := m.Encode()
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(string(b), "}\n"))
	back, err := Parse(b)
	require.NoError(t, err)
	require.Equal(t, m, back)

	plain, err := json.Marshal(m)
	require.NoError(t, err)
	var a, c any
	require.NoError(t, json.Unmarshal(plain, &a))
	require.NoError(t, json.Unmarshal(b, &c))
	require.Equal(t, a, c)
	require.Contains(t, string(b), `{"offset": 0, "size": 8, "align": 8, "kind": "global_buffer", "address_space": "global"}`,
		"a parameter stays on one line")

	again, err := m.Encode()
	require.NoError(t, err)
	require.Equal(t, b, again)
}

// TestParseRejects proves every malformed manifest is an ErrInvalid error.
func TestParseRejects(t *testing.T) {
	edit := func(fn func(*Manifest)) string {
		m := sample()
		fn(m)
		b, err := json.Marshal(m)
		require.NoError(t, err)
		return string(b)
	}
	tests := []struct{ name, in, msg string }{
		{"not JSON", "{", "unexpected EOF"},
		{"unknown field", `{"schema":1,"toolchain":"x","artifacts":[],"extra":1}`, "unknown field"},
		{"trailing data", `{"schema":1,"toolchain":"x","artifacts":[]} {}`, "after the JSON"},
		{"future schema", edit(func(m *Manifest) { m.Schema = 2 }), "schema 2"},
		{"unknown format", edit(func(m *Manifest) { m.Artifacts[0].Format = "spirv" }), "unknown format"},
		{"parent path", edit(func(m *Manifest) { m.Artifacts[0].Path = "../x" }), "clean relative"},
		{"absolute path", edit(func(m *Manifest) { m.Artifacts[0].Path = "/etc/x" }), "clean relative"},
		{"unclean path", edit(func(m *Manifest) { m.Artifacts[0].Path = "m//x" }), "clean relative"},
		{"backslash path", edit(func(m *Manifest) { m.Artifacts[0].Path = `m\x` }), "clean relative"},
		{"short digest", edit(func(m *Manifest) { m.Artifacts[0].SHA256 = "abc" }), "64 lowercase hex"},
		{"upper-case digest", edit(func(m *Manifest) { m.Artifacts[0].SHA256 = strings.ToUpper(digest) }), "64 lowercase hex"},
		{"negative size", edit(func(m *Manifest) { m.Artifacts[0].Size = -1 }), "negative size"},
		{"empty arch", edit(func(m *Manifest) { m.Artifacts[0].Arch = "" }), "empty module or arch"},
		{"duplicate path", edit(func(m *Manifest) { m.Artifacts[1].Path = m.Artifacts[0].Path }), "duplicate"},
		{"cubin without its PTX", edit(func(m *Manifest) { m.Artifacts[0].Format = FormatCubin }), "names no source PTX"},
		{"duplicate arch", edit(func(m *Manifest) { m.Artifacts[1].Format, m.Artifacts[1].Arch = FormatHSACO, "gfx1100" }), "duplicate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			require.ErrorIs(t, err, ErrInvalid)
			require.Contains(t, err.Error(), tc.msg)
		})
	}
}

// TestFromCodeObject checks the conversion rules: value kinds kept, hidden
// arguments kept and marked, actual access preferred over access, and the
// alignment derived from offset and size (the metadata records none).
func TestFromCodeObject(t *testing.T) {
	f := &codeobj.File{Kernels: []codeobj.Kernel{{
		Name: "k", Symbol: "k.kd", KernargSegmentSize: 280, KernargSegmentAlign: 8,
		GroupSegmentFixedSize: 2048, PrivateSegmentFixedSize: 16, WavefrontSize: 64,
		MaxFlatWorkgroupSize: 256, SGPRCount: 30, VGPRCount: 12, AGPRCount: 4,
		UniformWorkGroupSize: true, ReqdWorkgroupSize: []int{256, 1, 1},
		Args: []codeobj.Arg{
			{Offset: 0, Size: 8, ValueKind: "global_buffer", AddressSpace: "global", Access: "read_write", ActualAccess: "read_only"},
			{Offset: 8, Size: 4, ValueKind: "by_value"},
			{Offset: 16, Size: 12, ValueKind: "by_value"}, // a 12-byte struct
			{Offset: 28, Size: 2, ValueKind: "by_value", Access: "write_only"},
			{Offset: 32, Size: 4, ValueKind: "hidden_block_count_x"},
		},
	}}}
	got := FromCodeObject(f)
	require.Equal(t, []KernelInfo{{
		Name: "k", Symbol: "k.kd",
		Params: []Param{
			{Offset: 0, Size: 8, Align: 8, Kind: "global_buffer", AddressSpace: "global", Access: "read_only"},
			{Offset: 8, Size: 4, Align: 4, Kind: "by_value"},
			{Offset: 16, Size: 12, Align: 4, Kind: "by_value"},
			{Offset: 28, Size: 2, Align: 2, Kind: "by_value", Access: "write_only"},
			{Offset: 32, Size: 4, Align: 4, Kind: "hidden_block_count_x"},
		},
		KernargSize: 280, KernargAlign: 8, MaxThreadsPerBlock: 256, RequiredBlock: []int{256, 1, 1},
		StaticShared: 2048, PrivateSize: 16, WavefrontSize: 64, SGPRs: 30, VGPRs: 12, AGPRs: 4,
		UniformWorkGroupSize: true,
	}}, got)
	require.True(t, got[0].Params[4].Hidden())
	require.Len(t, got[0].ExplicitParams(), 4)
}

// TestFromPTX checks the PTX conversion: the warp as wavefront, .maxntid as
// the block limit, .reqntid as the required shape, the largest parameter
// alignment as the buffer alignment.
func TestFromPTX(t *testing.T) {
	m := &ptx.Module{Kernels: []ptx.Kernel{
		{Name: "a", ParamBytes: 40, MaxNTID: []int{128, 2, 1}, StaticShared: 512,
			Params: []ptx.Param{{Type: "u64", Count: 1, Offset: 0, Size: 8, Align: 8}, {Type: "b8", Count: 24, Offset: 16, Size: 24, Align: 16}}},
		{Name: "b", ReqNTID: []int{32, 1, 1}, DynamicShared: true, Params: []ptx.Param{}},
	}}
	require.Equal(t, []KernelInfo{
		{Name: "a", Params: []Param{{Offset: 0, Size: 8, Align: 8, Kind: "u64"}, {Offset: 16, Size: 24, Align: 16, Kind: "b8"}},
			KernargSize: 40, KernargAlign: 16, MaxThreadsPerBlock: 256, StaticShared: 512, WavefrontSize: 32},
		{Name: "b", Params: []Param{}, KernargAlign: 1, MaxThreadsPerBlock: 32, RequiredBlock: []int{32, 1, 1},
			DynamicShared: true, WavefrontSize: 32},
	}, FromPTX(m))
}

// TestCloneIsDeep proves a clone shares no slices with its original.
func TestCloneIsDeep(t *testing.T) {
	m := sample()
	c := m.Clone()
	c.Artifacts[0].Kernels[0].Params[0].Size = 99
	c.Artifacts[0].Kernels[0].RequiredBlock[0] = 1
	c.Artifacts[0].Path = "x"
	require.Equal(t, sample(), m)
}
