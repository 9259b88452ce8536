package mlx

import (
	"bufio"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// releases are the mlx-c releases hipgo supports, oldest first, with the
// MLX each pins (testdata/mlxc-<ref>.txt, from testdata/prototypes.py).
var releases = []struct{ ref, name string }{
	{"v0.4.1", "mlx-c 0.4.1 (MLX 0.30.1)"},
	{"v0.5.0", "mlx-c 0.5.0 (MLX 0.30.6)"},
	{"v0.6.0", "mlx-c 0.6.0 (MLX 0.31.1)"},
	{"fba4470", "mlx-c fba4470 (MLX 0.31.2)"},
}

func headerPrototypes(t *testing.T, ref string) map[string]string {
	t.Helper()
	f, err := os.Open("testdata/mlxc-" + ref + ".txt")
	require.NoError(t, err)
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out[symName(line)] = line
	}
	require.NoError(t, sc.Err())
	require.Greater(t, len(out), 500, ref)
	return out
}

// TestSymbolTableMatchesHeaders: every bound function's prototype is the one
// each supported release's headers declare; a required one is in every
// release, an optional one in exactly the releases from its Since on.
func TestSymbolTableMatchesHeaders(t *testing.T) {
	headers := make([]map[string]string, len(releases))
	for i, r := range releases {
		headers[i] = headerPrototypes(t, r.ref)
	}
	var l library
	for _, s := range l.syms() {
		name := symName(s.proto)
		first := -1
		for i, r := range releases {
			got, ok := headers[i][name]
			if !ok {
				if first >= 0 {
					t.Fatalf("%s is in %s but not in the later %s", name, releases[first].name, r.name)
				}
				continue
			}
			if first < 0 {
				first = i
			}
			require.Equal(t, got, s.proto, "%s in %s", name, r.name)
		}
		require.GreaterOrEqual(t, first, 0, "%s is in no supported release", name)
		if first == 0 {
			require.Empty(t, s.since, "%s is in every release: it must be required", name)
		} else {
			require.Equal(t, releases[first].name, s.since, "%s first appears in %s", name, releases[first].name)
		}
	}
}

// TestGoSignaturesMatchPrototypes: each Go func variable takes and returns
// what the C prototype does, argument by argument, under the mapping
// symbols.go states (handles by value as uintptr, and so on).
func TestGoSignaturesMatchPrototypes(t *testing.T) {
	var l library
	for _, s := range l.syms() {
		ft := reflect.TypeOf(s.fn).Elem()
		require.Equal(t, reflect.Func, ft.Kind(), s.proto)
		ret, params := splitPrototype(s.proto)
		if ret == "void" {
			require.Equal(t, 0, ft.NumOut(), s.proto)
		} else {
			require.Equal(t, 1, ft.NumOut(), s.proto)
			require.Equal(t, goKind(t, ret), ft.Out(0).String(), "return of %s", s.proto)
		}
		require.Equal(t, len(params), ft.NumIn(), s.proto)
		for i, p := range params {
			require.Equal(t, goKind(t, p), ft.In(i).String(), "argument %d of %s", i, s.proto)
		}
	}
}

// splitPrototype returns a prototype's return type and its parameters'
// types (names dropped; "(void)" is none).
func splitPrototype(proto string) (string, []string) {
	open := strings.IndexByte(proto, '(')
	head := proto[:open]
	name := symName(proto)
	ret := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(head), name))
	inner := proto[open+1 : len(proto)-1]
	if inner == "void" || inner == "" {
		return ret, nil
	}
	var params []string
	depth, start := 0, 0
	for i, c := range inner {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				params = append(params, paramType(inner[start:i]))
				start = i + 1
			}
		}
	}
	return ret, append(params, paramType(inner[start:]))
}

// paramType drops the parameter's name ("const mlx_array a" -> "const mlx_array").
func paramType(p string) string {
	p = strings.TrimSpace(p)
	if strings.Contains(p, "(*") {
		return "fnptr"
	}
	i := strings.LastIndexAny(p, " *")
	return strings.TrimSpace(p[:i+1])
}

// goKind is the Go type a C type travels as.
func goKind(t *testing.T, c string) string {
	if c == "const void*" {
		return "unsafe.Pointer" // data MLX reads during the call
	}
	c = strings.TrimSpace(strings.TrimPrefix(c, "const "))
	handles := map[string]bool{"mlx_array": true, "mlx_stream": true, "mlx_device": true, "mlx_vector_array": true,
		"mlx_string": true, "mlx_device_info": true, "mlx_closure": true}
	switch {
	case handles[c], c == "size_t", c == "void*", c == "fnptr", c == "mlx_error_handler_func":
		return "uintptr"
	case strings.HasSuffix(c, "**"):
		return "**" + goKind(t, strings.TrimSuffix(c, "*"))[1:]
	case strings.HasSuffix(c, "*"):
		base := strings.TrimSpace(strings.TrimSuffix(c, "*"))
		base = strings.TrimPrefix(base, "const ")
		if handles[base] || base == "size_t" {
			return "*uintptr"
		}
		return "*" + goKind(t, base)
	}
	m := map[string]string{"int": "int32", "bool": "bool", "float": "float32", "double": "float64",
		"mlx_dtype": "int32", "mlx_device_type": "int32", "mlx_optional_float": "uint64",
		"char": "uint8", "int32_t": "int32", "uint32_t": "uint32", "float16_t": "uint16", "bfloat16_t": "uint16"}
	g, ok := m[c]
	require.True(t, ok, "no mapping for C type %q", c)
	return g
}
