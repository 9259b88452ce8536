package ptx

import (
	"fmt"
	"strconv"
	"strings"
)

type token struct {
	text string
	line int
}

// tokenize splits PTX into words (directives, identifiers, numbers,
// opcodes), quoted strings and single punctuation characters, dropping
// comments. A directive word with several dots (".ptr.global.align") becomes
// one token per directive, which PTX treats the same.
func tokenize(src []byte) ([]token, error) {
	var toks []token
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			start := line
			i += 2
			for {
				if i+1 >= len(src) {
					return nil, &SyntaxError{Line: start, Reason: "unterminated /* comment"}
				}
				if src[i] == '*' && src[i+1] == '/' {
					i += 2
					break
				}
				if src[i] == '\n' {
					line++
				}
				i++
			}
		case c == '"':
			j := i + 1
			for j < len(src) && src[j] != '"' && src[j] != '\n' {
				if src[j] == '\\' && j+1 < len(src) && src[j+1] != '\n' {
					j++
				}
				j++
			}
			if j >= len(src) || src[j] != '"' {
				return nil, &SyntaxError{Line: line, Reason: "unterminated string"}
			}
			toks = append(toks, token{string(src[i : j+1]), line})
			i = j + 1
		case isIdentChar(c) || c == '.':
			j := i
			for j < len(src) && (isIdentChar(src[j]) || src[j] == '.') {
				j++
			}
			w := string(src[i:j])
			if w[0] == '.' && strings.Count(w, ".") > 1 {
				for _, part := range strings.Split(w[1:], ".") {
					if part == "" {
						return nil, &SyntaxError{Line: line, Reason: fmt.Sprintf("malformed directive %q", w)}
					}
					toks = append(toks, token{"." + part, line})
				}
			} else {
				toks = append(toks, token{w, line})
			}
			i = j
		case c < 0x20 || c >= 0x7f:
			return nil, &SyntaxError{Line: line, Reason: fmt.Sprintf("byte 0x%02x outside printable ASCII", c)}
		default:
			toks = append(toks, token{string(c), line})
			i++
		}
	}
	return toks, nil
}

// function is a parsed .entry or .func with what its body refers to.
type function struct {
	kernel    int // index in Module.Kernels, -1 for a .func
	name      string
	refs      map[string]bool // identifiers used in the body
	localVars []Variable      // .shared declared inside the body
	hasBody   bool
}

type parser struct {
	toks  []token
	pos   int
	mod   *Module
	funcs []*function
}

func (p *parser) eof() bool { return p.pos >= len(p.toks) }

func (p *parser) peek() string {
	if p.eof() {
		return ""
	}
	return p.toks[p.pos].text
}

func (p *parser) line() int {
	if p.eof() {
		if len(p.toks) == 0 {
			return 1
		}
		return p.toks[len(p.toks)-1].line
	}
	return p.toks[p.pos].line
}

func (p *parser) fail(format string, args ...any) error {
	return &SyntaxError{Line: p.line(), Reason: fmt.Sprintf(format, args...)}
}

func (p *parser) next() (string, error) {
	if p.eof() {
		return "", p.fail("unexpected end of file")
	}
	t := p.toks[p.pos].text
	p.pos++
	return t, nil
}

func (p *parser) expect(want string) error {
	t, err := p.next()
	if err != nil {
		return err
	}
	if t != want {
		p.pos--
		return p.fail("found %q, want %q", t, want)
	}
	return nil
}

func (p *parser) number() (int, error) {
	t, err := p.next()
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(t)
	if err != nil || n < 0 || n > maxBytes {
		p.pos--
		return 0, p.fail("%q is not a number up to %d", t, maxBytes)
	}
	return n, nil
}

// digits consumes an unsigned decimal of any size (a timestamp).
func (p *parser) digits() error {
	t, err := p.next()
	if err != nil {
		return err
	}
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			p.pos--
			return p.fail("%q is not a decimal number", t)
		}
	}
	return nil
}

// until returns the tokens up to (not including) the first stop token at
// nesting depth 0 of () [] {}, and consumes the stop token.
func (p *parser) until(stop string) ([]token, error) {
	start := p.pos
	depth := 0
	for !p.eof() {
		t := p.toks[p.pos].text
		if depth == 0 && t == stop {
			out := p.toks[start:p.pos]
			p.pos++
			return out, nil
		}
		switch t {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
			if depth < 0 {
				return nil, p.fail("unbalanced %q", t)
			}
		}
		p.pos++
	}
	return nil, p.fail("missing %q", stop)
}

// Parse reads the module-level facts of a PTX file: .version, .target,
// .address_size, each .entry with its parameters and performance
// directives, and the static shared memory each kernel uses. Instruction
// bodies are only scanned for the names they refer to. Malformed input gives
// a *SyntaxError; Parse never panics.
func Parse(src []byte) (*Module, error) {
	toks, err := tokenize(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, mod: &Module{}}
	if err := p.module(); err != nil {
		return nil, err
	}
	if p.mod.Version == "" {
		return nil, &SyntaxError{Line: 1, Reason: "no .version directive"}
	}
	if p.mod.Target == "" {
		return nil, &SyntaxError{Line: 1, Reason: "no .target directive"}
	}
	p.attributeShared()
	if p.mod.Kernels == nil {
		p.mod.Kernels = []Kernel{}
	}
	return p.mod, nil
}

func (p *parser) module() error {
	for !p.eof() {
		t, _ := p.next()
		switch t {
		case ".version":
			v, err := p.next()
			if err != nil {
				return err
			}
			if !validVersion(v) {
				return p.fail(".version %q is not MAJOR.MINOR", v)
			}
			if p.mod.Version != "" {
				return p.fail("second .version directive")
			}
			p.mod.Version = v
		case ".target":
			if p.mod.Target != "" {
				return p.fail("second .target directive")
			}
			for {
				v, err := p.next()
				if err != nil {
					return err
				}
				if !validIdent(v) {
					return p.fail(".target operand %q", v)
				}
				if p.mod.Target == "" {
					p.mod.Target = v
				} else {
					p.mod.TargetOptions = append(p.mod.TargetOptions, v)
				}
				if p.peek() != "," {
					break
				}
				p.pos++
			}
		case ".address_size":
			n, err := p.number()
			if err != nil {
				return err
			}
			if n != 32 && n != 64 {
				return p.fail(".address_size %d, want 32 or 64", n)
			}
			p.mod.AddressSize = n
		case ".file":
			// .file N "name" [, mtime, size]
			if err := p.digits(); err != nil {
				return err
			}
			if s, err := p.next(); err != nil || !strings.HasPrefix(s, "\"") {
				return p.fail(".file without a quoted name")
			}
			for p.peek() == "," {
				p.pos++
				if err := p.digits(); err != nil {
					return err
				}
			}
		case ".section":
			if _, err := p.next(); err != nil {
				return err
			}
			if err := p.expect("{"); err != nil {
				return err
			}
			if _, err := p.until("}"); err != nil {
				return err
			}
		case ".pragma", ".alias":
			if _, err := p.until(";"); err != nil {
				return err
			}
		case ".visible", ".extern", ".weak", ".common":
			if err := p.linked(t == ".extern"); err != nil {
				return err
			}
		case ".entry", ".func":
			p.pos--
			if err := p.linked(false); err != nil {
				return err
			}
		case ".global", ".shared", ".const", ".local":
			p.pos--
			if err := p.variable(false); err != nil {
				return err
			}
		case ";":
		default:
			p.pos--
			return p.fail("unexpected %q at module scope", t)
		}
	}
	return nil
}

func validVersion(v string) bool {
	maj, min, ok := strings.Cut(v, ".")
	if !ok || maj == "" || min == "" {
		return false
	}
	_, e1 := strconv.Atoi(maj)
	_, e2 := strconv.Atoi(min)
	return e1 == nil && e2 == nil
}

// linked handles what follows a linkage directive: an entry, a function or
// a variable.
func (p *parser) linked(extern bool) error {
	for p.peek() == ".visible" || p.peek() == ".extern" || p.peek() == ".weak" || p.peek() == ".common" {
		if p.peek() == ".extern" {
			extern = true
		}
		p.pos++
	}
	switch p.peek() {
	case ".entry":
		p.pos++
		return p.entry()
	case ".func":
		p.pos++
		return p.function()
	case ".global", ".shared", ".const", ".local":
		return p.variable(extern)
	}
	return p.fail("unexpected %q after a linkage directive", p.peek())
}

// variable reads a module-scope variable declaration up to its ';'.
func (p *parser) variable(extern bool) error {
	space, _ := p.next()
	toks, err := p.until(";")
	if err != nil {
		return err
	}
	if space != ".shared" {
		return nil // only shared memory is accounted; skip initializers
	}
	v, err := sharedVariable(toks, extern)
	if err != nil {
		return err
	}
	p.mod.Shared = append(p.mod.Shared, v)
	return nil
}

func sharedVariable(toks []token, extern bool) (Variable, error) {
	d, err := parseDecl(toks)
	if err != nil {
		return Variable{}, err
	}
	return Variable{Name: d.name, Size: d.count * typeSizes[d.typ], Align: d.align, Extern: extern || d.unsized}, nil
}

// params reads "( .param decl, ... )".
func (p *parser) params() ([]decl, error) {
	if err := p.expect("("); err != nil {
		return nil, err
	}
	toks, err := p.until(")")
	if err != nil {
		return nil, err
	}
	var out []decl
	for len(toks) > 0 {
		end := len(toks)
		for i, t := range toks {
			if t.text == "," {
				end = i
				break
			}
		}
		item, line := toks[:end], toks[0].line
		if end < len(toks) {
			toks = toks[end+1:]
			if len(toks) == 0 {
				return nil, &SyntaxError{Line: line, Reason: "trailing comma in a parameter list"}
			}
		} else {
			toks = nil
		}
		if len(item) == 0 || (item[0].text != ".param" && item[0].text != ".reg") {
			return nil, &SyntaxError{Line: line, Reason: "parameter does not start with .param"}
		}
		d, err := parseDecl(item[1:])
		if err != nil {
			return nil, err
		}
		if d.unsized {
			return nil, &SyntaxError{Line: item[0].line, Reason: fmt.Sprintf("parameter %q has no size", d.name)}
		}
		out = append(out, d)
	}
	return out, nil
}

func (p *parser) entry() error {
	name, err := p.next()
	if err != nil {
		return err
	}
	if !validIdent(name) {
		p.pos--
		return p.fail("entry name %q is not an identifier", name)
	}
	for _, prev := range p.mod.Kernels {
		if prev.Name == name {
			p.pos--
			return p.fail("entry %q defined twice", name)
		}
	}
	k := Kernel{Name: name, Params: []Param{}}
	if p.peek() == "(" {
		decls, err := p.params()
		if err != nil {
			return err
		}
		off := 0
		for _, d := range decls {
			size := d.count * typeSizes[d.typ]
			off = alignUp(off, d.align)
			k.Params = append(k.Params, Param{
				Name: d.name, Type: d.typ, Count: d.count,
				Offset: off, Size: size, Align: d.align,
				Pointer: d.pointer, Space: d.space,
			})
			off += size
			if off > maxBytes {
				return p.fail("parameters of %q exceed %d bytes", name, maxBytes)
			}
		}
		k.ParamBytes = off
	}
	// Performance-tuning directives sit between the parameters and the body.
	for {
		switch t := p.peek(); t {
		case ".maxntid", ".reqntid":
			p.pos++
			dims, err := p.dims()
			if err != nil {
				return err
			}
			if t == ".maxntid" {
				k.MaxNTID = dims
			} else {
				k.ReqNTID = dims
			}
			continue
		case ".minnctapersm", ".maxnreg", ".maxnctapersm", ".maxclusterrank":
			p.pos++
			n, err := p.number()
			if err != nil {
				return err
			}
			if t == ".minnctapersm" {
				k.MinNCTAPerSM = n
			} else if t == ".maxnreg" {
				k.MaxNReg = n
			}
			continue
		case ".reqnctapercluster":
			p.pos++
			if _, err := p.dims(); err != nil {
				return err
			}
			continue
		case ".explicitcluster", ".noreturn":
			p.pos++
			continue
		case ".pragma":
			if _, err := p.until(";"); err != nil {
				return err
			}
			continue
		}
		break
	}
	f := &function{name: name, kernel: len(p.mod.Kernels)}
	if err := p.body(f); err != nil {
		return err
	}
	p.mod.Kernels = append(p.mod.Kernels, k)
	p.funcs = append(p.funcs, f)
	return nil
}

// dims reads "x[, y[, z]]" with every value at least 1.
func (p *parser) dims() ([]int, error) {
	d := []int{1, 1, 1}
	for i := 0; i < 3; i++ {
		line := p.line()
		n, err := p.number()
		if err != nil {
			return nil, err
		}
		if n < 1 {
			return nil, &SyntaxError{Line: line, Reason: fmt.Sprintf("thread-count dimension %d is not positive", n)}
		}
		d[i] = n
		if p.peek() != "," {
			break
		}
		p.pos++
	}
	if d[0] > maxBytes/d[1] || d[0]*d[1] > maxBytes/d[2] {
		return nil, p.fail("thread counts %v are too large", d)
	}
	return d, nil
}

func (p *parser) function() error {
	// .func [(return params)] name (params) [directives] { body } | ;
	if p.peek() == "(" {
		if _, err := p.params(); err != nil {
			return err
		}
	}
	name, err := p.next()
	if err != nil {
		return err
	}
	if !validIdent(name) {
		p.pos--
		return p.fail("function name %q is not an identifier", name)
	}
	if p.peek() == "(" {
		if _, err := p.params(); err != nil {
			return err
		}
	}
	for p.peek() == ".noreturn" {
		p.pos++
	}
	if p.peek() == ".pragma" {
		if _, err := p.until(";"); err != nil {
			return err
		}
	}
	f := &function{name: name, kernel: -1}
	if err := p.body(f); err != nil {
		return err
	}
	p.funcs = append(p.funcs, f)
	return nil
}

// body reads "{ ... }" (recording referenced names and local .shared
// declarations) or a ";" for a prototype.
func (p *parser) body(f *function) error {
	if p.peek() == ";" {
		p.pos++
		return nil
	}
	if err := p.expect("{"); err != nil {
		return err
	}
	toks, err := p.until("}")
	if err != nil {
		return err
	}
	f.hasBody = true
	f.refs = make(map[string]bool)
	for i := 0; i < len(toks); i++ {
		t := toks[i].text
		if t == ".shared" && (i == 0 || toks[i-1].text == ";" || toks[i-1].text == "{" || toks[i-1].text == "}") {
			end := i + 1
			for end < len(toks) && toks[end].text != ";" {
				end++
			}
			if end == len(toks) {
				return &SyntaxError{Line: toks[i].line, Reason: ".shared declaration without ';'"}
			}
			v, err := sharedVariable(toks[i+1:end], false)
			if err != nil {
				return err
			}
			f.localVars = append(f.localVars, v)
			i = end
			continue
		}
		if validIdent(t) {
			f.refs[t] = true
		}
	}
	return nil
}

// attributeShared sums, for each kernel, the shared variables reachable from
// its body through .func calls.
func (p *parser) attributeShared() {
	byName := make(map[string]*function, len(p.funcs))
	for _, f := range p.funcs {
		if f.hasBody {
			byName[f.name] = f
		}
	}
	for _, f := range p.funcs {
		if f.kernel < 0 {
			continue
		}
		k := &p.mod.Kernels[f.kernel]
		seen := map[string]bool{f.name: true}
		reach := []*function{f}
		for i := 0; i < len(reach); i++ {
			for name := range reach[i].refs {
				if g := byName[name]; g != nil && !seen[name] {
					seen[name] = true
					reach = append(reach, g)
				}
			}
		}
		used := func(name string) bool {
			for _, g := range reach {
				if g.refs[name] {
					return true
				}
			}
			return false
		}
		off := 0
		for _, v := range p.mod.Shared {
			if !used(v.Name) {
				continue
			}
			if v.Extern {
				k.DynamicShared = true
				continue
			}
			off = min(alignUp(off, v.Align)+v.Size, maxBytes)
		}
		for _, g := range reach {
			for _, v := range g.localVars {
				off = min(alignUp(off, v.Align)+v.Size, maxBytes)
			}
		}
		k.StaticShared = off
	}
}
