package statuscheck

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var wantRE = regexp.MustCompile(`// want: (\w+)`)

// wants reads the "want: kind" comments of a fixture directory as
// "file:line kind" strings.
func wants(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range wantRE.FindAllStringSubmatch(line, -1) {
				out = append(out, fmt.Sprintf("%s:%d %s", e.Name(), i+1, m[1]))
			}
		}
	}
	sort.Strings(out)
	return out
}

func summarize(fs []Finding) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = fmt.Sprintf("%s:%d %s", filepath.Base(f.Pos.Filename), f.Pos.Line, f.Kind)
	}
	sort.Strings(out)
	return out
}

// TestFixtureEveryForm proves the checker catches each discard form (a call
// statement of a func, a method, a func-typed field, an interface method
// and a func value; defer; go; `_ =` of a call, of one result of a pair and
// of a variable; a package-level `var _ =`; purego.SyscallN's first result
// dropped four ways) for error, a concrete error type and a binding Code
// that does not implement error, and that the handled forms next to them
// (checked errors, conversions, the interface-check idiom, strings.Builder
// writes, SyscallN with r1 kept) are not reported.
func TestFixtureEveryForm(t *testing.T) {
	dir := filepath.Join("testdata", "discards")
	got, err := Dir(dir)
	require.NoError(t, err)
	want := wants(t, dir)
	require.Len(t, want, 22, "fixture changed: update the count")
	require.Equal(t, want, summarize(got))
	for _, f := range got {
		require.Equal(t, "linux/amd64", f.Config)
		require.NotEmpty(t, f.Call)
	}
	t.Logf("fixture: %d findings, e.g. %s", len(got), got[0])
}

// TestFixtureDarwinOnly proves files that build only on darwin (Metal) are
// checked too, under darwin/arm64.
func TestFixtureDarwinOnly(t *testing.T) {
	dir := filepath.Join("testdata", "darwinonly")
	got, err := Dir(dir)
	require.NoError(t, err)
	require.Equal(t, wants(t, dir), summarize(got))
	require.Equal(t, "darwin/arm64", got[0].Config)
}

// TestBrokenPackageIsAnError proves a package that does not type-check is
// reported as an error, never as clean.
func TestBrokenPackageIsAnError(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/broken\n\ngo 1.22\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.go"), []byte("package broken\n\nfunc f() error { return undefined }\n"), 0o644))
	_, err := Dir(dir)
	require.ErrorContains(t, err, "does not type-check")
}

// TestBindingsHaveNoDiscards runs the checker over every binding package
// (and its subpackages) that exists in this module and requires zero
// findings. Packages that do not exist yet are logged, not failed.
func TestBindingsHaveNoDiscards(t *testing.T) {
	here, err := filepath.Abs(".")
	require.NoError(t, err)
	mod, err := findModule(here)
	require.NoError(t, err)
	checked := 0
	for _, name := range bindingPackages {
		root := filepath.Join(mod.root, name)
		if _, err := os.Stat(root); err != nil {
			t.Logf("%s: absent", name)
			continue
		}
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				return nil
			}
			if d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") {
				return filepath.SkipDir
			}
			if !hasGoFiles(path) {
				return nil
			}
			got, err := Dir(path)
			require.NoError(t, err, path)
			for _, f := range got {
				t.Errorf("%s", f)
			}
			rel, _ := filepath.Rel(mod.root, path)
			t.Logf("%s: %d discarded statuses", rel, len(got))
			checked++
			return nil
		})
		require.NoError(t, err)
	}
	require.Positive(t, checked, "no binding package found under %s", mod.root)
}

func hasGoFiles(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			return true
		}
	}
	return false
}

// TestFindingsCarryTheCommentThatSaysWhy: a comment ending on the line
// above a discard, or on its line, is the finding's Why; a discard without
// one has none.
func TestFindingsCarryTheCommentThatSaysWhy(t *testing.T) {
	got, err := Dir(filepath.Join("testdata", "justified"))
	require.NoError(t, err)
	var whys []string
	for _, f := range got {
		whys = append(whys, fmt.Sprintf("%d %s %q", f.Pos.Line, f.Kind, f.Why))
	}
	require.Equal(t, []string{
		`11 blank "above: the comment ends on the line before"`,
		`12 blank "trailing: on the same line"`,
		`13 blank ""`,
		`15 discarded ""`,
	}, whys)
}

// TestRuntimeAndSamplingDiscardOnlyWithAReason extends the check past the
// bindings: in runtime and sampling a status may be discarded only on
// purpose, with a comment on (or just above) the line saying why.
func TestRuntimeAndSamplingDiscardOnlyWithAReason(t *testing.T) {
	here, err := filepath.Abs(".")
	require.NoError(t, err)
	mod, err := findModule(here)
	require.NoError(t, err)
	checked := 0
	for _, name := range []string{"runtime", "sampling"} {
		err := filepath.WalkDir(filepath.Join(mod.root, name), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				return nil
			}
			if d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") {
				return filepath.SkipDir
			}
			if !hasGoFiles(path) {
				return nil
			}
			got, err := Dir(path)
			require.NoError(t, err, path)
			justified := 0
			for _, f := range got {
				if f.Why == "" {
					t.Errorf("%s: a deliberate discard says why in a comment on its line or the line above", f)
				} else {
					justified++
				}
			}
			rel, _ := filepath.Rel(mod.root, path)
			t.Logf("%s: %d discards, each with its reason", rel, justified)
			checked++
			return nil
		})
		require.NoError(t, err)
	}
	require.GreaterOrEqual(t, checked, 3, "runtime, runtime/driver and sampling")
}
