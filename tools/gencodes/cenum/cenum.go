package cenum

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Constant is one enumerator and its value.
type Constant struct {
	Name  string
	Value int64
	// Explicit reports whether the header wrote the value (or an expression)
	// rather than leaving it implicit.
	Explicit bool
	// Line is the 1-based line of the enumerator in the header.
	Line int
}

// Enum is one enumeration. Tag is the name after `enum` (empty when
// anonymous), Typedef the name a `typedef enum {...} name;` gives it.
type Enum struct {
	Tag       string
	Typedef   string
	Line      int
	Constants []Constant
}

// Named reports whether the enum is called name, by tag or typedef.
func (e Enum) Named(name string) bool { return name != "" && (e.Tag == name || e.Typedef == name) }

// ErrSyntax is matched (errors.Is) by every parse error.
var ErrSyntax = errors.New("cenum: unsupported C")

// SyntaxError says where and why a header could not be read.
type SyntaxError struct {
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("cenum: line %d: %s", e.Line, e.Msg) }

// Is makes errors.Is(err, ErrSyntax) true.
func (e *SyntaxError) Is(target error) bool { return target == ErrSyntax }

// Parse returns every enum in src, in order.
func Parse(src []byte) ([]Enum, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, values: map[string]int64{}}
	return p.file()
}

// Values flattens enums into a name → value map. A name defined twice with
// different values (e.g. on both sides of an #if) is an error.
func Values(enums []Enum) (map[string]int64, error) {
	m := map[string]int64{}
	for _, e := range enums {
		for _, c := range e.Constants {
			if v, ok := m[c.Name]; ok && v != c.Value {
				return nil, &SyntaxError{Line: c.Line, Msg: fmt.Sprintf("%s defined as both %d and %d", c.Name, v, c.Value)}
			}
			m[c.Name] = c.Value
		}
	}
	return m, nil
}

// Find returns the first enum called name (tag or typedef).
func Find(enums []Enum, name string) (Enum, bool) {
	for _, e := range enums {
		if e.Named(name) {
			return e, true
		}
	}
	return Enum{}, false
}

type tokKind int

const (
	tIdent tokKind = iota
	tNumber
	tPunct
	tString
)

type token struct {
	kind tokKind
	text string
	line int
}

// lex drops comments and preprocessor lines and splits the rest into tokens.
func lex(src []byte) ([]token, error) {
	var toks []token
	line := 1
	atLineStart := true
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
			atLineStart = true
			continue
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := strings.Index(string(src[i+2:]), "*/")
			if end < 0 {
				return nil, &SyntaxError{Line: line, Msg: "unterminated comment"}
			}
			line += strings.Count(string(src[i:i+2+end]), "\n")
			i += end + 4
			continue
		case c == '#' && atLineStart:
			// A preprocessor line, with its backslash continuations.
			for i < len(src) && src[i] != '\n' {
				if src[i] == '\\' && i+1 < len(src) && src[i+1] == '\n' {
					line++
					i += 2
					continue
				}
				if src[i] == '/' && i+1 < len(src) && src[i+1] == '*' {
					end := strings.Index(string(src[i+2:]), "*/")
					if end < 0 {
						return nil, &SyntaxError{Line: line, Msg: "unterminated comment"}
					}
					line += strings.Count(string(src[i:i+2+end]), "\n")
					i += end + 4
					continue
				}
				i++
			}
			continue
		}
		atLineStart = false
		switch {
		case isIdentStart(c):
			j := i + 1
			for j < len(src) && isIdentPart(src[j]) {
				j++
			}
			toks = append(toks, token{tIdent, string(src[i:j]), line})
			i = j
		case c >= '0' && c <= '9':
			j := i + 1
			for j < len(src) && (isIdentPart(src[j]) || src[j] == '.') {
				j++
			}
			toks = append(toks, token{tNumber, string(src[i:j]), line})
			i = j
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(src) && src[j] != c && src[j] != '\n' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(src) || src[j] != c {
				return nil, &SyntaxError{Line: line, Msg: "unterminated literal"}
			}
			toks = append(toks, token{tString, string(src[i : j+1]), line})
			i = j + 1
		default:
			if i+1 < len(src) {
				two := string(src[i : i+2])
				if two == "<<" || two == ">>" || two == "::" || two == "->" {
					toks = append(toks, token{tPunct, two, line})
					i += 2
					continue
				}
			}
			toks = append(toks, token{tPunct, string(c), line})
			i++
		}
	}
	return toks, nil
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentPart(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

type parser struct {
	toks   []token
	pos    int
	values map[string]int64 // every enumerator seen so far, for expressions
}

func (p *parser) peek(off int) (token, bool) {
	if p.pos+off < len(p.toks) {
		return p.toks[p.pos+off], true
	}
	return token{}, false
}

func (p *parser) file() ([]Enum, error) {
	var enums []Enum
	for p.pos < len(p.toks) {
		t := p.toks[p.pos]
		if t.kind != tIdent || t.text != "enum" {
			p.pos++
			continue
		}
		// enum [attr...] [tag] { ... } [typedef-name] ;   or a use: enum tag name;
		j := p.pos + 1
		var idents []string
		for j < len(p.toks) && p.toks[j].kind == tIdent {
			idents = append(idents, p.toks[j].text)
			j++
		}
		// C++ "enum class X : type {" and "enum X : type {" forms.
		if j < len(p.toks) && p.toks[j].text == ":" {
			for j < len(p.toks) && p.toks[j].text != "{" && p.toks[j].text != ";" {
				j++
			}
		}
		if j >= len(p.toks) || p.toks[j].text != "{" {
			p.pos = j
			continue
		}
		e := Enum{Line: t.line}
		typedefd := p.pos > 0 && p.toks[p.pos-1].text == "typedef"
		if len(idents) > 0 {
			e.Tag = idents[len(idents)-1]
		}
		p.pos = j + 1
		if err := p.body(&e); err != nil {
			return nil, err
		}
		// After '}': an optional typedef name (or a variable) then ';'.
		if tk, ok := p.peek(0); ok && tk.kind == tIdent {
			if typedefd {
				e.Typedef = tk.text
			}
			p.pos++
		}
		enums = append(enums, e)
	}
	return enums, nil
}

func (p *parser) body(e *Enum) error {
	next := int64(0)
	for {
		t, ok := p.peek(0)
		if !ok {
			return &SyntaxError{Line: e.Line, Msg: "enum without closing brace"}
		}
		if t.text == "}" {
			p.pos++
			return nil
		}
		if t.kind != tIdent {
			return &SyntaxError{Line: t.line, Msg: fmt.Sprintf("expected an enumerator name, found %q", t.text)}
		}
		p.pos++
		c := Constant{Name: t.text, Value: next, Line: t.line}
		if eq, ok := p.peek(0); ok && eq.text == "=" {
			p.pos++
			// The expression runs to the next ',' or '}' at depth 0.
			start := p.pos
			depth := 0
			for p.pos < len(p.toks) {
				tx := p.toks[p.pos].text
				if depth == 0 && (tx == "," || tx == "}") {
					break
				}
				switch tx {
				case "(":
					depth++
				case ")":
					depth--
				}
				p.pos++
			}
			v, err := p.eval(p.toks[start:p.pos], c.Name, t.line)
			if err != nil {
				return err
			}
			c.Value = v
			c.Explicit = true
		}
		if _, dup := p.values[c.Name]; !dup {
			p.values[c.Name] = c.Value
		}
		e.Constants = append(e.Constants, c)
		next = c.Value + 1
		if sep, ok := p.peek(0); ok && sep.text == "," {
			p.pos++
		}
	}
}

// eval computes a constant expression.
func (p *parser) eval(toks []token, name string, line int) (int64, error) {
	if len(toks) == 0 {
		return 0, &SyntaxError{Line: line, Msg: name + ": empty value"}
	}
	ev := &evaluator{toks: toks, values: p.values, name: name, line: line}
	v, err := ev.binary(0)
	if err != nil {
		return 0, err
	}
	if ev.pos != len(toks) {
		return 0, ev.errf("unexpected %q", toks[ev.pos].text)
	}
	return v, nil
}

type evaluator struct {
	toks   []token
	pos    int
	values map[string]int64
	name   string
	line   int
}

func (ev *evaluator) errf(format string, args ...any) error {
	return &SyntaxError{Line: ev.line, Msg: ev.name + ": " + fmt.Sprintf(format, args...)}
}

// Binary operators by precedence, lowest first (C order).
var precedence = map[string]int{"|": 1, "^": 2, "&": 3, "<<": 4, ">>": 4, "+": 5, "-": 5}

func (ev *evaluator) binary(minPrec int) (int64, error) {
	lhs, err := ev.unary()
	if err != nil {
		return 0, err
	}
	for ev.pos < len(ev.toks) {
		op := ev.toks[ev.pos].text
		prec, ok := precedence[op]
		if !ok || prec <= minPrec {
			break
		}
		ev.pos++
		rhs, err := ev.binary(prec)
		if err != nil {
			return 0, err
		}
		switch op {
		case "|":
			lhs |= rhs
		case "^":
			lhs ^= rhs
		case "&":
			lhs &= rhs
		case "<<", ">>":
			if rhs < 0 || rhs > 63 {
				return 0, ev.errf("shift by %d", rhs)
			}
			if op == "<<" {
				lhs <<= uint(rhs)
			} else {
				lhs >>= uint(rhs)
			}
		case "+":
			lhs += rhs
		case "-":
			lhs -= rhs
		}
	}
	return lhs, nil
}

func (ev *evaluator) unary() (int64, error) {
	if ev.pos >= len(ev.toks) {
		return 0, ev.errf("expression ends early")
	}
	t := ev.toks[ev.pos]
	ev.pos++
	switch {
	case t.text == "-":
		v, err := ev.unary()
		return -v, err
	case t.text == "+":
		return ev.unary()
	case t.text == "~":
		v, err := ev.unary()
		return ^v, err
	case t.text == "(":
		v, err := ev.binary(0)
		if err != nil {
			return 0, err
		}
		if ev.pos >= len(ev.toks) || ev.toks[ev.pos].text != ")" {
			return 0, ev.errf("missing )")
		}
		ev.pos++
		return v, nil
	case t.kind == tNumber:
		return parseInt(t.text, ev)
	case t.kind == tIdent:
		v, ok := ev.values[t.text]
		if !ok {
			return 0, ev.errf("unknown name %s", t.text)
		}
		return v, nil
	}
	return 0, ev.errf("unexpected %q", t.text)
}

func parseInt(s string, ev *evaluator) (int64, error) {
	lit := strings.TrimRight(s, "uUlL")
	v, err := strconv.ParseUint(lit, 0, 64)
	if err != nil {
		// C octal literals read the same as Go's with base 0; anything
		// else (floats, bad digits) is not an enum value.
		return 0, ev.errf("bad integer literal %q", s)
	}
	return int64(v), nil
}
