package codeobj

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/testenv"
)

// This file checks the reader against an independent one: llvm-readelf-19,
// which prints the metadata note as YAML and the ELF header as text.

// artifacts returns every shipped code object. The build directory is
// committed, so finding none is a failure.
func artifacts(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "build", "*", "*.hsaco"))
	require.NoError(t, err)
	require.NotEmpty(t, paths, "no code objects under kernels/build (run go run ./tools/kernelc)")
	return paths
}

// yline is one line of llvm-readelf's YAML.
type yline struct {
	indent int
	text   string
}

// readelfMetadata runs llvm-readelf-19 --notes and parses the YAML document
// of the NT_AMDGPU_METADATA note into maps, slices and (unquoted) strings.
func readelfMetadata(t *testing.T, readelf, path string) map[string]any {
	t.Helper()
	out, err := exec.Command(readelf, "--notes", path).CombinedOutput()
	require.NoError(t, err, "%s", out)
	var doc []yline
	in := false
	for _, l := range strings.Split(string(out), "\n") {
		trimmed := strings.TrimSpace(l)
		switch {
		case !in && trimmed == "---":
			in = true
		case in && trimmed == "...":
			in = false
		case in && trimmed != "":
			doc = append(doc, yline{len(l) - len(strings.TrimLeft(l, " ")), strings.TrimRight(l[len(l)-len(strings.TrimLeft(l, " ")):], " ")})
		}
	}
	require.NotEmpty(t, doc, "no metadata YAML in llvm-readelf output:\n%s", out)
	v, next, err := parseYAMLBlock(doc, 0, doc[0].indent)
	require.NoError(t, err)
	require.Equal(t, len(doc), next, "unparsed YAML from line %d", next)
	m, ok := v.(map[string]any)
	require.True(t, ok, "YAML document is %T", v)
	return m
}

func isSeqItem(s string) bool { return s == "-" || strings.HasPrefix(s, "- ") }

func parseYAMLBlock(ls []yline, i, indent int) (any, int, error) {
	if i >= len(ls) || ls[i].indent != indent {
		return nil, i, fmt.Errorf("line %d: expected a block at indent %d", i, indent)
	}
	if isSeqItem(ls[i].text) {
		return parseYAMLSeq(ls, i, indent)
	}
	return parseYAMLMap(ls, i, indent)
}

func parseYAMLSeq(ls []yline, i, indent int) (any, int, error) {
	out := []any{}
	for i < len(ls) && ls[i].indent == indent && isSeqItem(ls[i].text) {
		rest := strings.TrimPrefix(ls[i].text, "-")
		col := indent + 1 + len(rest) - len(strings.TrimLeft(rest, " "))
		rest = strings.TrimLeft(rest, " ")
		switch {
		case rest == "":
			v, next, err := parseYAMLBlock(ls, i+1, ls[i+1].indent)
			if err != nil {
				return nil, 0, err
			}
			out, i = append(out, v), next
		case !strings.Contains(rest, ": ") && !strings.HasSuffix(rest, ":"):
			out, i = append(out, yamlScalar(rest)), i+1
		default:
			// "- key: value" opens a map whose keys sit at the column of key.
			cp := append([]yline(nil), ls...)
			cp[i] = yline{col, rest}
			v, next, err := parseYAMLMap(cp, i, col)
			if err != nil {
				return nil, 0, err
			}
			out, i = append(out, v), next
		}
	}
	return out, i, nil
}

func parseYAMLMap(ls []yline, i, indent int) (any, int, error) {
	m := map[string]any{}
	for i < len(ls) && ls[i].indent == indent && !isSeqItem(ls[i].text) {
		key, val, ok := strings.Cut(ls[i].text, ":")
		if !ok {
			return nil, 0, fmt.Errorf("line %d: %q is not key: value", i, ls[i].text)
		}
		if _, dup := m[key]; dup {
			return nil, 0, fmt.Errorf("line %d: duplicate key %q", i, key)
		}
		val = strings.TrimSpace(val)
		if val != "" {
			m[key] = yamlScalar(val)
			i++
			continue
		}
		if i+1 < len(ls) && (ls[i+1].indent > indent || (ls[i+1].indent == indent && isSeqItem(ls[i+1].text))) {
			v, next, err := parseYAMLBlock(ls, i+1, ls[i+1].indent)
			if err != nil {
				return nil, 0, err
			}
			m[key], i = v, next
			continue
		}
		m[key] = ""
		i++
	}
	return m, i, nil
}

// yamlScalar unquotes a scalar and expands flow sequences ("[]", "[ 1, 2 ]").
func yamlScalar(s string) any {
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		out := []any{}
		for _, e := range strings.Split(s[1:len(s)-1], ",") {
			if e = strings.TrimSpace(e); e != "" {
				out = append(out, yamlScalar(e))
			}
		}
		return out
	}
	if len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'")
	}
	if len(s) >= 2 && s[0] == '"' {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
	}
	return s
}

// requireSameTree compares the YAML tree with the decoded msgpack tree: the
// same keys, the same lengths, and scalars that print the same.
func requireSameTree(t *testing.T, where string, yaml, mp any) {
	t.Helper()
	switch y := yaml.(type) {
	case map[string]any:
		m, ok := mp.(map[string]any)
		require.True(t, ok, "%s: readelf has a map, reader has %T", where, mp)
		require.Equal(t, sortedKeys(y), sortedKeys(m), "%s: keys", where)
		for k := range y {
			requireSameTree(t, where+"/"+k, y[k], m[k])
		}
	case []any:
		a, ok := mp.([]any)
		require.True(t, ok, "%s: readelf has a sequence, reader has %T", where, mp)
		require.Len(t, a, len(y), "%s: length", where)
		for i := range y {
			requireSameTree(t, fmt.Sprintf("%s[%d]", where, i), y[i], a[i])
		}
	case string:
		require.Equal(t, y, scalarString(mp), "%s", where)
	default:
		t.Fatalf("%s: unexpected YAML node %T", where, yaml)
	}
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func scalarString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprintf("<%T %v>", v, v)
}

// yamlField returns the string at key in a YAML map, "" when absent.
func yamlField(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func itoaOrEmpty(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// flagField is how llvm-readelf prints a boolean field: "1"/"true" or absent.
func flagMatches(yaml string, v bool) bool {
	if !v {
		return yaml == "" || yaml == "0" || yaml == "false"
	}
	return yaml == "1" || yaml == "true"
}

// dimsString renders an (x, y, z) triple as llvm-readelf's YAML does; nil
// (an untyped nil, like a missing YAML key) when absent.
func dimsString(d []int) any {
	if d == nil {
		return nil
	}
	out := make([]any, len(d))
	for i, n := range d {
		out[i] = strconv.Itoa(n)
	}
	return out
}

// requireTypedFields checks every typed field the reader extracts against
// the YAML of llvm-readelf: absent in YAML means the zero value.
func requireTypedFields(t *testing.T, path string, y map[string]any, f *File) {
	t.Helper()
	require.Equal(t, yamlField(y, "amdhsa.target"), f.Target, "%s target", path)
	require.Equal(t, y["amdhsa.version"], dimsString(f.MetadataVersion), "%s amdhsa.version", path)
	yk, _ := y["amdhsa.kernels"].([]any)
	require.Len(t, f.Kernels, len(yk), "%s kernel count", path)
	for i, kv := range yk {
		ym := kv.(map[string]any)
		k := f.Kernels[i]
		w := fmt.Sprintf("%s kernel %s", path, k.Name)
		for key, got := range map[string]string{
			".name":                       k.Name,
			".symbol":                     k.Symbol,
			".kernarg_segment_size":       strconv.Itoa(k.KernargSegmentSize),
			".kernarg_segment_align":      strconv.Itoa(k.KernargSegmentAlign),
			".group_segment_fixed_size":   strconv.Itoa(k.GroupSegmentFixedSize),
			".private_segment_fixed_size": strconv.Itoa(k.PrivateSegmentFixedSize),
			".wavefront_size":             strconv.Itoa(k.WavefrontSize),
			".max_flat_workgroup_size":    strconv.Itoa(k.MaxFlatWorkgroupSize),
			".sgpr_count":                 strconv.Itoa(k.SGPRCount),
			".vgpr_count":                 strconv.Itoa(k.VGPRCount),
		} {
			require.Equal(t, yamlField(ym, key), got, "%s %s", w, key)
		}
		for key, got := range map[string]int{
			".agpr_count": k.AGPRCount, ".sgpr_spill_count": k.SGPRSpillCount, ".vgpr_spill_count": k.VGPRSpillCount,
		} {
			ys := yamlField(ym, key)
			if ys == "0" {
				ys = ""
			}
			require.Equal(t, ys, itoaOrEmpty(got), "%s %s", w, key)
		}
		require.True(t, flagMatches(yamlField(ym, ".uniform_work_group_size"), k.UniformWorkGroupSize), "%s .uniform_work_group_size", w)
		require.True(t, flagMatches(yamlField(ym, ".uses_dynamic_stack"), k.UsesDynamicStack), "%s .uses_dynamic_stack", w)
		require.Equal(t, ym[".reqd_workgroup_size"], dimsString(k.ReqdWorkgroupSize), "%s .reqd_workgroup_size", w)
		require.Equal(t, ym[".workgroup_size_hint"], dimsString(k.WorkgroupSizeHint), "%s .workgroup_size_hint", w)

		ya, _ := ym[".args"].([]any)
		require.Len(t, k.Args, len(ya), "%s arg count", w)
		for j, av := range ya {
			am := av.(map[string]any)
			a := k.Args[j]
			aw := fmt.Sprintf("%s arg %d", w, j)
			for key, got := range map[string]string{
				".name": a.Name, ".type_name": a.TypeName,
				".offset": strconv.Itoa(a.Offset), ".size": strconv.Itoa(a.Size),
				".value_kind": a.ValueKind, ".address_space": a.AddressSpace,
				".access": a.Access, ".actual_access": a.ActualAccess,
				".pointee_align": itoaOrEmpty(a.PointeeAlign),
			} {
				require.Equal(t, yamlField(am, key), got, "%s %s", aw, key)
			}
			for key, got := range map[string]bool{
				".is_const": a.IsConst, ".is_restrict": a.IsRestrict, ".is_volatile": a.IsVolatile, ".is_pipe": a.IsPipe,
			} {
				require.True(t, flagMatches(yamlField(am, key), got), "%s %s", aw, key)
			}
			require.Equal(t, strings.HasPrefix(a.ValueKind, "hidden_"), a.Hidden(), "%s Hidden()", aw)
		}
	}
}

// requireHeader compares the ABI version and e_flags with llvm-readelf -h.
func requireHeader(t *testing.T, readelf, path string, f *File) {
	t.Helper()
	out, err := exec.Command(readelf, "-h", path).CombinedOutput()
	require.NoError(t, err, "%s", out)
	var abi, flags string
	for _, l := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok {
			continue
		}
		switch k {
		case "ABI Version":
			abi = strings.TrimSpace(v)
		case "Flags":
			flags = strings.TrimSpace(v)
		}
	}
	require.Equal(t, strconv.Itoa(f.CodeObjectVersion-2), abi, "%s ABI version", path)
	parts := strings.Split(flags, ", ")
	require.GreaterOrEqual(t, len(parts), 2, "%s flags %q", path, flags)
	require.Equal(t, strings.ToLower(parts[0]), fmt.Sprintf("%#x", f.Flags), "%s e_flags", path)
	require.Equal(t, parts[1], f.Processor, "%s processor from e_flags", path)
}

// TestMatchesReadelf proves the reader agrees with llvm-readelf-19 on every
// shipped code object: the whole metadata tree (every key, every value),
// every typed field, the code object version and the e_flags processor.
func TestMatchesReadelf(t *testing.T) {
	readelf := testenv.LookPath(t, "llvm-readelf-19")
	for _, p := range artifacts(t) {
		t.Run(filepath.Base(filepath.Dir(p))+"/"+filepath.Base(p), func(t *testing.T) {
			compareWithReadelf(t, readelf, p)
		})
	}
}

func compareWithReadelf(t *testing.T, readelf, path string) *File {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	f, err := Parse(b)
	require.NoError(t, err)
	y := readelfMetadata(t, readelf, path)
	requireSameTree(t, path, y, map[string]any(f.Metadata))
	requireTypedFields(t, path, y, f)
	requireHeader(t, readelf, path, f)
	return f
}

// hiddenArgsSource reads the block size and grid size through the
// compiler's own builtins, which under code object v5 read the implicit
// (hidden) kernel arguments, and the implicit-argument pointer directly,
// which adds hidden arguments under v4 too.
const hiddenArgsSource = `
typedef __UINT32_TYPE__ uint32_t;
extern "C" __attribute__((global)) void sizes(uint32_t* p) {
  p[0] = __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_grid_size_x();
}
extern "C" __attribute__((global)) void implicit(uint32_t* p) {
  p[0] = *(const uint32_t*)__builtin_amdgcn_implicitarg_ptr();
}
`

// TestHiddenArgumentsMatchReadelf compiles kernels that use implicit
// arguments for code object v4, v5 and v6 and proves that the reader
// reports the hidden arguments clang emits, with their kinds, offsets and
// sizes as llvm-readelf-19 prints them, and that Hidden() marks exactly
// them.
func TestHiddenArgumentsMatchReadelf(t *testing.T) {
	readelf := testenv.LookPath(t, "llvm-readelf-19")
	clang := testenv.LookPath(t, "clang-19")
	dir := t.TempDir()
	src := filepath.Join(dir, "hidden.cu")
	require.NoError(t, os.WriteFile(src, []byte(hiddenArgsSource), 0o644))
	for _, cov := range []int{4, 5, 6} {
		for _, arch := range []string{"gfx90a", "gfx1100"} {
			t.Run(fmt.Sprintf("v%d/%s", cov, arch), func(t *testing.T) {
				out := filepath.Join(dir, fmt.Sprintf("h%d_%s.hsaco", cov, arch))
				cmd := exec.Command(clang, "-x", "hip", "--offload-arch="+arch, "--cuda-device-only",
					"--no-gpu-bundle-output", "-nogpuinc", "-nogpulib", "-O3",
					fmt.Sprintf("-mcode-object-version=%d", cov), "-o", out, src)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				require.NoError(t, cmd.Run(), stderr.String())
				f := compareWithReadelf(t, readelf, out)
				require.Equal(t, cov, f.CodeObjectVersion)
				k, ok := f.Kernel("implicit")
				require.True(t, ok)
				hidden := 0
				for _, a := range k.Args {
					if a.Hidden() {
						hidden++
					}
				}
				require.Positive(t, hidden, "the implicit-argument pointer adds hidden arguments")
				require.False(t, k.Args[0].Hidden(), "the explicit pointer comes first")
				if cov >= 5 {
					s, ok := f.Kernel("sizes")
					require.True(t, ok)
					kinds := map[string]bool{}
					for _, a := range s.Args {
						kinds[a.ValueKind] = true
					}
					require.True(t, kinds["hidden_block_count_x"] && kinds["hidden_group_size_x"],
						"v5 reads the block size from hidden arguments: %v", kinds)
				}
			})
		}
	}
}
