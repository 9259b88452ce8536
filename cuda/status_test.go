package cuda

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// isDriverCall reports whether call invokes libcuda: a bound entry point
// (d.cuXxx(...)) or a raw purego.SyscallN.
func isDriverCall(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	if x, ok := sel.X.(*ast.Ident); ok && x.Name == "purego" && sel.Sel.Name == "SyscallN" {
		return true
	}
	return strings.HasPrefix(sel.Sel.Name, "cu")
}

// TestNoDiscardedStatus proves, by scanning this package's syntax trees, that
// no CUresult is thrown away: no driver call stands alone as a statement (or
// in go/defer), and none has its status assigned to _.
func TestNoDiscardedStatus(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	driverCalls := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		file, err := parser.ParseFile(fset, name, src, 0)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			switch s := n.(type) {
			case *ast.CallExpr:
				if isDriverCall(s) {
					driverCalls++
				}
			case *ast.ExprStmt:
				if c, ok := s.X.(*ast.CallExpr); ok && isDriverCall(c) {
					t.Errorf("%s: status of driver call discarded", fset.Position(s.Pos()))
				}
			case *ast.GoStmt:
				if isDriverCall(s.Call) {
					t.Errorf("%s: driver call in go statement", fset.Position(s.Pos()))
				}
			case *ast.DeferStmt:
				if isDriverCall(s.Call) {
					t.Errorf("%s: driver call in defer", fset.Position(s.Pos()))
				}
			case *ast.AssignStmt:
				if len(s.Rhs) != 1 {
					break
				}
				c, ok := s.Rhs[0].(*ast.CallExpr)
				if !ok || !isDriverCall(c) {
					break
				}
				// The status is the first (for SyscallN, r1) or only result.
				if id, ok := s.Lhs[0].(*ast.Ident); ok && id.Name == "_" {
					t.Errorf("%s: status of driver call assigned to _", fset.Position(s.Pos()))
				}
			}
			return true
		})
	}
	require.Greater(t, driverCalls, 40, "the scan saw the package's driver calls")
}
