package metal

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSelectorTableMatchesEveryCallSite reads the darwin sources (on any
// platform) and holds every message send to its selector: as many arguments
// after the selector as the selector has colons, and every selector in the
// table sent somewhere. A send with one argument too few would pass garbage
// to Metal at run time; nothing here can run it, so the syntax is checked.
func TestSelectorTableMatchesEveryCallSite(t *testing.T) {
	byName := map[string]selector{}
	seenNames := map[string]bool{}
	fset := token.NewFileSet()
	consts, err := parser.ParseFile(fset, "selectors.go", nil, 0)
	require.NoError(t, err)
	i := 0
	for _, d := range consts.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			for _, n := range s.(*ast.ValueSpec).Names {
				if strings.HasPrefix(n.Name, "sel") {
					byName[n.Name] = selector(i)
					i++
				}
			}
		}
	}
	require.Len(t, byName, int(numSelectors))
	for i, name := range selectorNames {
		require.NotEmpty(t, name, "selector %d has no name", i)
		require.False(t, seenNames[name], "selector %s listed twice", name)
		seenNames[name] = true
	}

	files, err := filepath.Glob("*_darwin.go")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	used := map[selector]int{}
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 2 {
				return true
			}
			idx, ok := call.Args[1].(*ast.IndexExpr)
			if !ok {
				return true
			}
			id, ok := idx.Index.(*ast.Ident)
			if !ok {
				return true
			}
			sel, ok := byName[id.Name]
			if !ok {
				return true
			}
			name := selectorNames[sel]
			got := len(call.Args) - 2
			require.Equal(t, strings.Count(name, ":"), got, "%s: %s sent with %d arguments", fset.Position(call.Pos()), name, got)
			used[sel]++
			return true
		})
	}
	for name, sel := range byName {
		require.NotZero(t, used[sel], "%s (%s) is never sent", name, selectorNames[sel])
	}
	t.Logf("%d selectors, %d call sites", len(byName), func() int {
		n := 0
		for _, c := range used {
			n += c
		}
		return n
	}())
}
