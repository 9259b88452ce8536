package statuscheck

import (
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Kind says how a status was discarded.
type Kind string

const (
	// Discarded: a call whose results include a status, used as a statement.
	Discarded Kind = "discarded"
	// Deferred: such a call in a defer statement (its results are lost).
	Deferred Kind = "deferred"
	// Spawned: such a call in a go statement.
	Spawned Kind = "go"
	// Blank: a status assigned to the blank identifier.
	Blank Kind = "blank"
	// SyscallResult: purego.SyscallN's first result (the C return value,
	// where every binding's status comes back) dropped.
	SyscallResult Kind = "syscalln"
)

// Finding is one discarded status.
type Finding struct {
	Pos    token.Position
	Kind   Kind
	Call   string // the expression whose status is lost, e.g. "hip.Free(p)"
	Type   string // the status type, e.g. "error" or "github.com/hipgo/hipgo/hip.Code"
	Config string // the GOOS/GOARCH whose files were checked
	// Why is the comment on the discard's line, or ending on the line just
	// above it: outside the bindings a deliberate discard must say why
	// (the tests require it for runtime and sampling), in the bindings none
	// is allowed at all.
	Why string
}

func (f Finding) String() string {
	return fmt.Sprintf("%s: %s status %s of %s (%s)", f.Pos, f.Kind, f.Type, f.Call, f.Config)
}

// configs are the platforms checked. Binding code behind linux or darwin
// build tags is checked under the platform it builds for; a package whose
// files are the same on both is checked once.
var configs = []struct{ goos, goarch string }{
	{"linux", "amd64"},
	{"darwin", "arm64"},
}

// bindingPackages are the package names whose Code, Status and Result types
// are statuses even where they do not implement error.
var bindingPackages = []string{"hip", "hsa", "cuda", "metal", "mlx"}

// Dir checks the Go package in dir (test files excluded) and returns every
// place a status is discarded, sorted by position. It type-checks the
// package for each platform in turn (dependencies come from the go
// command's export data, built with CGO_ENABLED=0 as users build), so an
// error is returned when the package does not type-check: a package that
// cannot be checked is not reported clean.
func Dir(dir string) ([]Finding, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	mod, err := findModule(dir)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(mod.root, dir)
	if err != nil {
		return nil, err
	}
	importPath := mod.path
	if rel != "." {
		importPath += "/" + filepath.ToSlash(rel)
	}

	var findings []Finding
	var checked [][]string
	for _, cfg := range configs {
		ctxt := build.Default
		ctxt.GOOS, ctxt.GOARCH, ctxt.CgoEnabled = cfg.goos, cfg.goarch, false
		bp, err := ctxt.ImportDir(dir, 0)
		if err != nil {
			var noGo *build.NoGoError
			if errors.As(err, &noGo) {
				continue // nothing builds for this platform
			}
			return nil, fmt.Errorf("statuscheck: %s: %w", dir, err)
		}
		files := slices.Clone(bp.GoFiles)
		slices.Sort(files)
		if slices.ContainsFunc(checked, func(f []string) bool { return slices.Equal(f, files) }) {
			continue
		}
		checked = append(checked, files)
		name := cfg.goos + "/" + cfg.goarch
		got, err := checkPackage(mod.root, dir, importPath, files, bp.Imports, cfg.goos, cfg.goarch)
		if err != nil {
			return nil, fmt.Errorf("statuscheck: %s (%s): %w", importPath, name, err)
		}
		for i := range got {
			got[i].Config = name
		}
		findings = append(findings, got...)
	}
	slices.SortFunc(findings, func(a, b Finding) int {
		if c := strings.Compare(a.Pos.Filename, b.Pos.Filename); c != 0 {
			return c
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line - b.Pos.Line
		}
		return a.Pos.Column - b.Pos.Column
	})
	// The same line found under two platforms is one finding.
	findings = slices.CompactFunc(findings, func(a, b Finding) bool {
		return a.Pos == b.Pos && a.Kind == b.Kind
	})
	return findings, nil
}

func checkPackage(modRoot, dir, importPath string, files, imports []string, goos, goarch string) ([]Finding, error) {
	fset := token.NewFileSet()
	var parsed []*ast.File
	for _, f := range files {
		af, err := parser.ParseFile(fset, filepath.Join(dir, f), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		parsed = append(parsed, af)
	}
	imp, err := newExportImporter(fset, modRoot, imports, goos, goarch)
	if err != nil {
		return nil, err
	}
	var typeErrs []error
	conf := types.Config{
		Importer: imp,
		Sizes:    types.SizesFor("gc", goarch),
		Error:    func(err error) { typeErrs = append(typeErrs, err) },
	}
	info := &types.Info{
		Types: map[ast.Expr]types.TypeAndValue{},
		Uses:  map[*ast.Ident]types.Object{},
	}
	if _, err := conf.Check(importPath, fset, parsed, info); err != nil || len(typeErrs) > 0 {
		return nil, fmt.Errorf("does not type-check: %w", errors.Join(typeErrs...))
	}
	c := &checker{fset: fset, info: info, byStart: map[string]map[int]string{}, byEnd: map[string]map[int]string{}}
	for _, f := range parsed {
		name := fset.Position(f.Pos()).Filename
		src, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		lines := strings.Split(string(src), "\n")
		c.byStart[name], c.byEnd[name] = map[int]string{}, map[int]string{}
		for _, cg := range f.Comments {
			start, end := fset.Position(cg.Pos()), fset.Position(cg.End())
			text := strings.TrimSpace(cg.Text())
			c.byStart[name][start.Line] = text
			// Only a comment on lines of its own speaks for the line below;
			// a trailing one speaks for its own line.
			if strings.TrimSpace(lines[start.Line-1][:start.Column-1]) == "" {
				c.byEnd[name][end.Line] = text
			}
		}
		ast.Inspect(f, c.visit)
	}
	return c.findings, nil
}

type checker struct {
	fset     *token.FileSet
	info     *types.Info
	findings []Finding
	// comment text by file and by the line a comment group starts or ends on
	byStart, byEnd map[string]map[int]string
}

// why is the comment that justifies the discard at n: one on its first or
// last line, or one ending on the line above it.
func (c *checker) why(n ast.Node) string {
	start, end := c.fset.Position(n.Pos()), c.fset.Position(n.End())
	for _, w := range []string{c.byStart[start.Filename][start.Line], c.byStart[start.Filename][end.Line], c.byEnd[start.Filename][start.Line-1]} {
		if w != "" {
			return w
		}
	}
	return ""
}

func (c *checker) report(n ast.Node, kind Kind, call ast.Expr, t types.Type) {
	typ := ""
	if t != nil {
		typ = t.String()
	}
	c.findings = append(c.findings, Finding{
		Pos:  c.fset.Position(n.Pos()),
		Kind: kind,
		Call: types.ExprString(call),
		Type: typ,
		Why:  c.why(n),
	})
}

func (c *checker) visit(n ast.Node) bool {
	switch s := n.(type) {
	case *ast.ExprStmt:
		if call, ok := ast.Unparen(s.X).(*ast.CallExpr); ok {
			c.droppedCall(s, call, Discarded)
		}
	case *ast.DeferStmt:
		c.droppedCall(s, s.Call, Deferred)
	case *ast.GoStmt:
		c.droppedCall(s, s.Call, Spawned)
	case *ast.AssignStmt:
		c.blanks(s.Lhs, s.Rhs, false)
	case *ast.ValueSpec:
		lhs := make([]ast.Expr, len(s.Names))
		for i, id := range s.Names {
			lhs[i] = id
		}
		// Only calls: `var _ error = (*T)(nil)` is the interface-check idiom.
		c.blanks(lhs, s.Values, true)
	}
	return true
}

// droppedCall reports a call whose every result is thrown away.
func (c *checker) droppedCall(stmt ast.Node, call *ast.CallExpr, kind Kind) {
	if c.isSyscallN(call) {
		c.report(stmt, SyscallResult, call, nil)
		return
	}
	if !c.isRealCall(call) || c.allowed(call) {
		return
	}
	if t := c.statusIn(c.info.Types[call].Type); t != nil {
		c.report(stmt, kind, call, t)
	}
}

// blanks reports statuses assigned to _.
func (c *checker) blanks(lhs, rhs []ast.Expr, callsOnly bool) {
	for i, l := range lhs {
		id, ok := l.(*ast.Ident)
		if !ok || id.Name != "_" {
			continue
		}
		var val ast.Expr
		var t types.Type
		switch {
		case len(rhs) == 1 && len(lhs) > 1:
			val = rhs[0]
			tup, ok := c.info.Types[val].Type.(*types.Tuple)
			if !ok || i >= tup.Len() {
				continue
			}
			t = tup.At(i).Type()
		case i < len(rhs):
			val = rhs[i]
			t = c.info.Types[val].Type
		default:
			continue
		}
		call, isCall := ast.Unparen(val).(*ast.CallExpr)
		if isCall && i == 0 && c.isSyscallN(call) {
			c.report(id, SyscallResult, call, nil)
			continue
		}
		if isCall && !c.isRealCall(call) {
			continue // a conversion or builtin produces no returned status
		}
		if callsOnly && !isCall {
			continue
		}
		if isCall && c.allowed(call) {
			continue
		}
		if s := c.statusIn(t); s != nil {
			c.report(id, Blank, val, s)
		}
	}
}

// isRealCall is false for conversions and builtins.
func (c *checker) isRealCall(call *ast.CallExpr) bool {
	tv, ok := c.info.Types[call.Fun]
	return ok && !tv.IsType() && !tv.IsBuiltin()
}

// callee returns the function or method a call invokes, if static.
func (c *checker) callee(call *ast.CallExpr) *types.Func {
	var id *ast.Ident
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		id = f
	case *ast.SelectorExpr:
		id = f.Sel
	case *ast.IndexExpr: // generic instantiation
		if sel, ok := f.X.(*ast.SelectorExpr); ok {
			id = sel.Sel
		} else if i, ok := f.X.(*ast.Ident); ok {
			id = i
		}
	}
	if id == nil {
		return nil
	}
	fn, _ := c.info.Uses[id].(*types.Func)
	return fn
}

func (c *checker) isSyscallN(call *ast.CallExpr) bool {
	fn := c.callee(call)
	return fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == "github.com/ebitengine/purego" && fn.Name() == "SyscallN"
}

// allowed lists callees whose error is documented to be always nil:
// writes to a strings.Builder or bytes.Buffer, directly or through fmt.
func (c *checker) allowed(call *ast.CallExpr) bool {
	fn := c.callee(call)
	if fn == nil {
		return false
	}
	if recv := fn.Signature().Recv(); recv != nil {
		return infallibleWriter(recv.Type())
	}
	if fn.Pkg() != nil && fn.Pkg().Path() == "fmt" && strings.HasPrefix(fn.Name(), "Fprint") && len(call.Args) > 0 {
		return infallibleWriter(c.info.Types[call.Args[0]].Type)
	}
	return false
}

func infallibleWriter(t types.Type) bool {
	if t == nil {
		return false
	}
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	if !ok || n.Obj().Pkg() == nil {
		return false
	}
	path, name := n.Obj().Pkg().Path(), n.Obj().Name()
	return (path == "strings" && name == "Builder") || (path == "bytes" && name == "Buffer")
}

var errorType = types.Universe.Lookup("error").Type().Underlying().(*types.Interface)

// statusIn returns the first status type among a call's results (a tuple)
// or a single type, or nil.
func (c *checker) statusIn(t types.Type) types.Type {
	if t == nil {
		return nil
	}
	if tup, ok := t.(*types.Tuple); ok {
		for i := 0; i < tup.Len(); i++ {
			if isStatus(tup.At(i).Type()) {
				return tup.At(i).Type()
			}
		}
		return nil
	}
	if isStatus(t) {
		return t
	}
	return nil
}

// isStatus: anything that implements error (error itself, *hip.Error,
// hip.Code, hsa.Status), and the binding packages' Code/Status/Result types
// even if one does not implement error.
func isStatus(t types.Type) bool {
	if types.Implements(t, errorType) {
		return true
	}
	n, ok := types.Unalias(t).(*types.Named)
	if !ok || n.Obj().Pkg() == nil {
		return false
	}
	switch n.Obj().Name() {
	case "Code", "Status", "Result":
		return slices.Contains(bindingPackages, n.Obj().Pkg().Name())
	}
	return false
}
