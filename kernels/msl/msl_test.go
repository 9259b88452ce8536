package msl

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSamplingKernelsSignatures reads the shipped sampler source: six
// kernels through two macros, each argument's binding and size as the .cu
// twin passes it, and the threadgroup sizes from their comments.
func TestSamplingKernelsSignatures(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "src", "sampling.metal"))
	require.NoError(t, err)
	m, err := Parse(src)
	require.NoError(t, err)
	var names []string
	for _, k := range m.Kernels {
		names = append(names, k.Name)
	}
	require.Equal(t, []string{"gumbel_max_f32", "gumbel_max_bf16", "gumbel_max_f16", "rejection_f32", "rejection_bf16", "rejection_f16"}, names)

	g, _ := m.Kernel("gumbel_max_bf16")
	require.Len(t, g.Args, 13)
	require.Equal(t, Arg{Index: 0, Name: "logits", Type: "sp_bf16", AddressSpace: "device", Pointer: true, Size: 8}, g.Args[0])
	require.Equal(t, Arg{Index: 4, Name: "inv_temp", Type: "float", AddressSpace: "constant", Size: 4}, g.Args[4])
	require.Equal(t, Arg{Index: 10, Name: "arrivals", Type: "atomic_uint", AddressSpace: "device", Pointer: true, Size: 8}, g.Args[10])
	require.Equal(t, []Threadgroup{{0, "sv", 2048}, {1, "si", 2048}, {2, "last", 4}}, g.Threadgroup)

	r, _ := m.Kernel("rejection_f32")
	var sizes []int
	for _, a := range r.Args {
		sizes = append(sizes, a.Size)
	}
	require.Equal(t, []int{8, 4, 4, 4, 8, 4, 4, 4, 8, 8, 8}, sizes)
	require.Equal(t, []Threadgroup{{0, "sa", 4096}, {1, "sb", 4096}, {2, "sc", 4096}, {3, "sd", 4096}, {4, "smu", 16}}, r.Threadgroup)
}

// TestForwardKernelsSignatures reads the shipped forward source: forty-five
// kernels (some through per-dtype macros), each declaring the block of its
// .cu twin (256 threads but for the attention and matmul_wgs_W kernels), arguments sized as the .cu passes them, and the
// threadgroup buffers of the kernels that use shared memory.
func TestForwardKernelsSignatures(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "src", "forward.metal"))
	require.NoError(t, err)
	m, err := Parse(src)
	require.NoError(t, err)
	var names []string
	for _, k := range m.Kernels {
		names = append(names, k.Name)
		threads := 256
		switch k.Name {
		case "attention_gqa_f32":
			threads = 1024
		case "attention_merge_f32":
			threads = 128
		case "matmul_wgs_f16", "matmul_wgs_bf16":
			threads = 384
		}
		require.Equal(t, threads, k.MaxThreads, k.Name)
	}
	require.ElementsMatch(t, []string{"rope_f32", "kv_store_f32", "rope_kv_store_f32", "attention_f32", "attention_gqa_f32", "attention_warps_f32", "rope_attention_warps_f32", "attention_split_f32", "attention_merge_f32", "attention_prefill_f32",
		"kv_store_f32_kv16", "rope_kv_store_f32_kv16", "attention_f32_kv16", "attention_warps_f32_kv16", "rope_attention_warps_f32_kv16", "attention_split_f32_kv16", "attention_prefill_f32_kv16", "silu_mul_f32", "add_f32", "copy_rows_f32",
		"embed_f32", "embed_f16", "embed_bf16", "rmsnorm_f32", "rmsnorm_f16", "rmsnorm_bf16", "rmsnorm_fused_f32", "rmsnorm_fused_f16", "rmsnorm_fused_bf16", "matmul_f32", "matmul_f16", "matmul_bf16",
		"norm_matvec_f32", "norm_matvec_f16", "norm_matvec_bf16",
		"matmul_tc_f16", "matmul_tc_bf16", "tc_split_x_f16", "tc_split_x_bf16", "matmul_tcx_f16", "matmul_tcx_bf16",
		"wg_split_x_f16", "wg_split_x_bf16", "wg_silu_split_x_f16", "wg_silu_split_x_bf16", "matmul_wg_f16", "matmul_wg_bf16", "matmul_wgs_f16", "matmul_wgs_bf16"}, names)

	mm, _ := m.Kernel("matmul_bf16")
	require.Equal(t, Arg{Index: 2, Name: "w", Type: "fw_bf16", AddressSpace: "device", Pointer: true, Size: 8}, mm.Args[2])
	require.Equal(t, Arg{Index: 7, Name: "accumulate", Type: "uint", AddressSpace: "constant", Size: 4}, mm.Args[7])
	require.Equal(t, []Threadgroup{{0, "xs", 16 * 68 * 4}, {1, "ws", 16 * 68 * 4}}, mm.Threadgroup)
	tc, _ := m.Kernel("matmul_tc_bf16")
	require.Equal(t, mm.Args, tc.Args, "matmul_tc_W takes matmul_W's arguments")
	require.Empty(t, tc.Threadgroup)
	rk, _ := m.Kernel("rope_kv_store_f32")
	var rkSizes []int
	for _, a := range rk.Args {
		rkSizes = append(rkSizes, a.Size)
	}
	require.Equal(t, []int{8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4}, rkSizes, "rope_kv_store_f32's arguments as forward.cu passes them")
	require.Empty(t, rk.Threadgroup)
	wg, _ := m.Kernel("matmul_wg_f16")
	var wgSizes []int
	for _, a := range wg.Args {
		wgSizes = append(wgSizes, a.Size)
	}
	require.Equal(t, []int{8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4}, wgSizes, "matmul_wg_W's arguments as forward.cu passes them (ws and cnt included, which the port leaves alone)")
	require.Empty(t, wg.Threadgroup)
	wgs, _ := m.Kernel("matmul_wgs_bf16")
	require.Equal(t, len(wg.Args), len(wgs.Args), "matmul_wgs_W takes matmul_wg_W's arguments")
	require.Equal(t, 384, wgs.MaxThreads)
	a, _ := m.Kernel("attention_f32")
	require.Len(t, a.Args, 15)
	require.Equal(t, Arg{Index: 14, Name: "scale", Type: "float", AddressSpace: "constant", Size: 4}, a.Args[14])
	require.Equal(t, []Threadgroup{{0, "qs", 1024}, {1, "gm", 32}, {2, "gl", 32}, {3, "go", 8192}}, a.Threadgroup)
	aw, _ := m.Kernel("attention_warps_f32")
	require.Equal(t, a.Args, aw.Args, "attention_warps_f32 takes attention_f32's arguments")
	require.Equal(t, []Threadgroup{{0, "gm", 1024}, {1, "gl", 1024}, {2, "wt", 1024}, {3, "part", 16384}}, aw.Threadgroup)
	ra, _ := m.Kernel("rope_attention_warps_f32")
	require.Len(t, ra.Args, 23)
	for i := range aw.Args {
		require.Equal(t, aw.Args[i].Size, ra.Args[i].Size, "rope_attention_warps_f32 starts with attention_warps_f32's arguments (%d)", i)
	}
	require.Equal(t, Arg{Index: 20, Name: "parts", Type: "uint", AddressSpace: "constant", Size: 4}, ra.Args[20])
	require.Equal(t, Arg{Index: 22, Name: "split", Type: "uint", AddressSpace: "constant", Size: 4}, ra.Args[22])
	require.Equal(t, aw.Threadgroup, ra.Threadgroup)
	r, _ := m.Kernel("rmsnorm_f16")
	require.Equal(t, []Threadgroup{{0, "part", 32}}, r.Threadgroup)
	rp, _ := m.Kernel("rmsnorm_fused_bf16")
	require.Equal(t, []Threadgroup{{0, "part", 32}}, rp.Threadgroup)
	var rpSizes []int
	for _, a := range rp.Args {
		rpSizes = append(rpSizes, a.Size)
	}
	require.Equal(t, []int{8, 8, 8, 8, 8, 4, 4, 4, 4, 8, 4}, rpSizes, "rmsnorm_fused_W's arguments as forward.cu passes them")
	e, _ := m.Kernel("silu_mul_f32")
	require.Len(t, e.Args, 4, "[[threads_per_grid]] is Metal's, not the host's")
	require.Empty(t, e.Threadgroup)
}

// TestParseReadsTheDeclaredBlock: the block size attribute before `kernel`
// or after the parameters; none is 0; two that disagree are an error.
func TestParseReadsTheDeclaredBlock(t *testing.T) {
	m, err := Parse([]byte(`[[max_total_threads_per_threadgroup(128)]]
kernel void a(device uint* p [[buffer(0)]]) {}
kernel void b(device uint* p [[buffer(0)]]) [[max_total_threads_per_threadgroup( 64 )]] {}
kernel void c(device uint* p [[buffer(0)]]) {}`))
	require.NoError(t, err)
	for i, want := range []int{128, 64, 0} {
		require.Equal(t, want, m.Kernels[i].MaxThreads, m.Kernels[i].Name)
	}
	_, err = Parse([]byte(`[[max_total_threads_per_threadgroup(128)]] kernel void a(device uint* p [[buffer(0)]]) [[max_total_threads_per_threadgroup(64)]] {}`))
	require.ErrorIs(t, err, ErrMalformed)
	require.ErrorContains(t, err, "kernel a")
}

func TestParseRefusesWhatItCannotBind(t *testing.T) {
	for _, c := range []struct {
		name, src, want string
	}{
		{"out of order", `kernel void k(constant uint& a [[buffer(1)]], device uint* b [[buffer(0)]]) {}`, "indices must run 0, 1, 2"},
		{"no size", `kernel void k(device uint* b [[buffer(0)]], threadgroup float* s [[threadgroup(0)]]) {}`, "no /* hipgo: N bytes */ size"},
		{"struct value", `kernel void k(constant Params& p [[buffer(0)]]) {}`, "not a scalar"},
		{"no attribute", `kernel void k(device uint* b) {}`, "exactly one [[attribute]]"},
		{"thread space", `kernel void k(thread uint* b [[buffer(0)]]) {}`, "neither the device nor the constant"},
		{"unterminated", `/* kernel void k(`, "unterminated"},
		{"bad macro use", "#define K(N, T) kernel void N(device T* p [[buffer(0)]]) {}\nK(a)\n", "takes 2 arguments"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.src))
			require.ErrorIs(t, err, ErrMalformed)
			require.ErrorContains(t, err, c.want)
		})
	}
}

func TestParseIgnoresCommentsAndBuiltins(t *testing.T) {
	src := `// kernel void not_me(device uint* x [[buffer(0)]]) in a comment
/* kernel void nor_me( */
#define TG 7
kernel void k(device const float* in [[buffer(0)]], constant ushort& n [[buffer(1)]],
              threadgroup uint* s [[threadgroup(0)]] /* hipgo: 64 bytes */,
              uint i [[thread_position_in_grid]], uint t [[thread_index_in_threadgroup]]) {
  const char* s2 = "/* not a comment";
}`
	m, err := Parse([]byte(src))
	require.NoError(t, err)
	require.Len(t, m.Kernels, 1)
	require.Equal(t, []Arg{
		{Index: 0, Name: "in", Type: "float", AddressSpace: "device", Pointer: true, Size: 8},
		{Index: 1, Name: "n", Type: "ushort", AddressSpace: "constant", Size: 2},
	}, m.Kernels[0].Args)
	require.Equal(t, []Threadgroup{{0, "s", 64}}, m.Kernels[0].Threadgroup)
}

// FuzzParse: any input gives a module or an error, never a panic (library
// code reads kernel sources it did not write).
func FuzzParse(f *testing.F) {
	src, err := os.ReadFile(filepath.Join("..", "src", "sampling.metal"))
	require.NoError(f, err)
	f.Add(src)
	f.Add([]byte("#define K(N, T) kernel void N(device T* p [[buffer(0)]]) {}\nK(a, float)\n"))
	f.Add([]byte("kernel void k(threadgroup uint* s [[threadgroup(0)]] /* hipgo: 16 bytes */) {}"))
	f.Add([]byte("kernel void k(constant uint& n [[buffer(]]) {}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err == nil {
			require.NotNil(t, m)
		}
	})
}
