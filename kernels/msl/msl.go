package msl

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ErrMalformed is wrapped by every error Parse returns.
var ErrMalformed = errors.New("unreadable MSL kernel signature")

// Arg is one [[buffer(n)]] argument.
type Arg struct {
	Index        int    // n of [[buffer(n)]]
	Name         string // the parameter's name
	Type         string // the pointee or value type, e.g. "float", "uint"
	AddressSpace string // "device" or "constant"
	// Pointer: bound with setBuffer:offset:atIndex: from a device address
	// (8 bytes on the host side). Otherwise a value passed with
	// setBytes:length:atIndex:.
	Pointer bool
	Size    int // bytes on the host side: 8 for a pointer, else the value's size
}

// Threadgroup is one [[threadgroup(n)]] argument.
type Threadgroup struct {
	Index int
	Name  string
	Bytes int // from its /* hipgo: N bytes */ comment
}

// Kernel is one kernel function's host-visible signature.
type Kernel struct {
	Name        string
	Args        []Arg
	Threadgroup []Threadgroup
	// MaxThreads is the kernel's [[max_total_threads_per_threadgroup(N)]]
	// (before `kernel` or after the parameter list), 0 when it declares
	// none: the block size it is written for, as KBOUNDS is in a .cu.
	MaxThreads int
}

// Module is every kernel of a source, in source order.
type Module struct {
	Kernels []Kernel
}

// Kernel returns the kernel named name.
func (m *Module) Kernel(name string) (Kernel, bool) {
	for _, k := range m.Kernels {
		if k.Name == name {
			return k, true
		}
	}
	return Kernel{}, false
}

func fail(format string, args ...any) error {
	return fmt.Errorf("msl: %w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

var (
	sizeComment = regexp.MustCompile(`^\s*hipgo:\s*(\d+)\s*bytes\s*$`)
	sizeMarker  = regexp.MustCompile(`__hipgo_bytes\((\d+)\)`)
	defineLine  = regexp.MustCompile(`^\s*#\s*define\s+([A-Za-z_]\w*)\(([^)]*)\)\s*(.*)$`)
	kernelDecl  = regexp.MustCompile(`\bkernel\s+void\s+([A-Za-z_]\w*)\s*\(`)
	maxThreads  = `\[\[\s*max_total_threads_per_threadgroup\s*\(\s*(\d+)\s*\)\s*\]\]`
	maxBefore   = regexp.MustCompile(maxThreads + `\s*$`)
	maxAfter    = regexp.MustCompile(`^\s*` + maxThreads)
	attribute   = regexp.MustCompile(`\[\[\s*(\w+)\s*(?:\(\s*(\d+)\s*\))?\s*\]\]`)
	identRE     = regexp.MustCompile(`[A-Za-z_]\w*`)
)

// valueSizes are the scalar types a constant reference may have.
var valueSizes = map[string]int{
	"bool": 1, "char": 1, "uchar": 1, "int8_t": 1, "uint8_t": 1,
	"short": 2, "ushort": 2, "half": 2, "bfloat": 2, "int16_t": 2, "uint16_t": 2,
	"int": 4, "uint": 4, "float": 4, "int32_t": 4, "uint32_t": 4,
	"long": 8, "ulong": 8, "int64_t": 8, "uint64_t": 8,
}

// Parse reads every kernel signature of src.
func Parse(src []byte) (*Module, error) {
	text := strings.ReplaceAll(string(src), "\r\n", "\n")
	text = strings.ReplaceAll(text, "\\\n", " ") // line splicing comes before comments, as in C
	text, err := stripComments(text)
	if err != nil {
		return nil, err
	}

	type macro struct {
		params []string
		body   string
	}
	macros := map[string]macro{}
	var body strings.Builder
	for _, line := range strings.Split(text, "\n") {
		if m := defineLine.FindStringSubmatch(line); m != nil {
			if kernelDecl.MatchString(m[3]) {
				var ps []string
				for _, p := range strings.Split(m[2], ",") {
					ps = append(ps, strings.TrimSpace(p))
				}
				macros[m[1]] = macro{params: ps, body: m[3]}
			}
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		body.WriteString(line)
		body.WriteByte('\n')
	}
	text = body.String()
	for name, mac := range macros {
		re := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\s*\(`)
		var out strings.Builder
		rest := text
		for {
			loc := re.FindStringIndex(rest)
			if loc == nil {
				out.WriteString(rest)
				break
			}
			out.WriteString(rest[:loc[0]])
			inner, n, err := balanced(rest[loc[1]-1:])
			if err != nil {
				return nil, fail("macro %s: %v", name, err)
			}
			args := splitTop(inner)
			if len(args) != len(mac.params) {
				return nil, fail("macro %s takes %d arguments, used with %d", name, len(mac.params), len(args))
			}
			sub := map[string]string{}
			for i, p := range mac.params {
				sub[p] = strings.TrimSpace(args[i])
			}
			out.WriteString(identRE.ReplaceAllStringFunc(mac.body, func(id string) string {
				if v, ok := sub[id]; ok {
					return v
				}
				return id
			}))
			rest = rest[loc[1]-1+n:]
		}
		text = out.String()
	}

	m := &Module{}
	for _, loc := range kernelDecl.FindAllStringSubmatchIndex(text, -1) {
		name := text[loc[2]:loc[3]]
		inner, n, err := balanced(text[loc[1]-1:])
		if err != nil {
			return nil, fail("kernel %s: %v", name, err)
		}
		k, err := kernel(name, inner)
		if err != nil {
			return nil, err
		}
		for _, m := range [][]string{maxBefore.FindStringSubmatch(text[:loc[0]]), maxAfter.FindStringSubmatch(text[loc[1]-1+n:])} {
			if m == nil {
				continue
			}
			v, err := strconv.Atoi(m[1])
			if err != nil || v <= 0 || (k.MaxThreads != 0 && k.MaxThreads != v) {
				return nil, fail("kernel %s: [[max_total_threads_per_threadgroup(%s)]] is not one positive block size", name, m[1])
			}
			k.MaxThreads = v
		}
		if _, dup := m.Kernel(name); dup {
			return nil, fail("kernel %s defined twice", name)
		}
		m.Kernels = append(m.Kernels, k)
	}
	return m, nil
}

func kernel(name, params string) (Kernel, error) {
	k := Kernel{Name: name}
	for _, p := range splitTop(params) {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		attrs := attribute.FindAllStringSubmatch(p, -1)
		if len(attrs) != 1 {
			return k, fail("kernel %s: parameter %q needs exactly one [[attribute]]", name, p)
		}
		decl := strings.TrimSpace(attribute.ReplaceAllString(p, " "))
		bytes := -1
		if m := sizeMarker.FindStringSubmatch(decl); m != nil {
			bytes, _ = strconv.Atoi(m[1])
			decl = strings.TrimSpace(sizeMarker.ReplaceAllString(decl, " "))
		}
		kind, idxText := attrs[0][1], attrs[0][2]
		switch kind {
		case "buffer", "threadgroup":
		default:
			continue // a builtin Metal fills (thread_position_in_grid, ...)
		}
		idx, err := strconv.Atoi(idxText)
		if err != nil {
			return k, fail("kernel %s: parameter %q: [[%s]] without an index", name, p, kind)
		}
		pointer := strings.Contains(decl, "*")
		ref := strings.Contains(decl, "&")
		words := identRE.FindAllString(decl, -1)
		if len(words) < 2 {
			return k, fail("kernel %s: parameter %q has no type and name", name, p)
		}
		pname := words[len(words)-1]
		space := ""
		var typ []string
		for _, w := range words[:len(words)-1] {
			switch w {
			case "device", "constant", "threadgroup":
				space = w
			case "const", "volatile":
			default:
				typ = append(typ, w)
			}
		}
		if kind == "threadgroup" {
			if space != "threadgroup" || !pointer {
				return k, fail("kernel %s: [[threadgroup(%d)]] %s must be a threadgroup pointer", name, idx, pname)
			}
			if idx != len(k.Threadgroup) {
				return k, fail("kernel %s: [[threadgroup(%d)]] %s is threadgroup argument %d: indices must run 0, 1, 2... in order", name, idx, pname, len(k.Threadgroup))
			}
			if bytes <= 0 {
				return k, fail("kernel %s: [[threadgroup(%d)]] %s has no /* hipgo: N bytes */ size after it", name, idx, pname)
			}
			k.Threadgroup = append(k.Threadgroup, Threadgroup{Index: idx, Name: pname, Bytes: bytes})
			continue
		}
		if idx != len(k.Args) {
			return k, fail("kernel %s: [[buffer(%d)]] %s is buffer argument %d: indices must run 0, 1, 2... in order (buffer i is argument i of the .cu kernel)", name, idx, pname, len(k.Args))
		}
		a := Arg{Index: idx, Name: pname, Type: strings.Join(typ, " "), AddressSpace: space}
		switch {
		case space != "device" && space != "constant":
			return k, fail("kernel %s: [[buffer(%d)]] %s is in neither the device nor the constant address space", name, idx, pname)
		case pointer || space == "device":
			a.Pointer, a.Size = true, 8
		case ref:
			size, ok := valueSizes[a.Type]
			if !ok {
				return k, fail("kernel %s: [[buffer(%d)]] %s: constant %s& is not a scalar this reader knows", name, idx, pname, a.Type)
			}
			a.Size = size
		default:
			return k, fail("kernel %s: [[buffer(%d)]] %s is neither a pointer nor a reference", name, idx, pname)
		}
		k.Args = append(k.Args, a)
	}
	return k, nil
}

// stripComments drops // and /* */ comments (outside string and character
// literals), keeping a /* hipgo: N bytes */ comment as the marker
// __hipgo_bytes(N) and a newline for each line a comment spanned.
func stripComments(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "//"):
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				return b.String(), nil
			}
			i += j
		case strings.HasPrefix(s[i:], "/*"):
			j := strings.Index(s[i+2:], "*/")
			if j < 0 {
				return "", fail("unterminated /* comment")
			}
			body := s[i+2 : i+2+j]
			if m := sizeComment.FindStringSubmatch(body); m != nil {
				b.WriteString(" __hipgo_bytes(" + m[1] + ") ")
			} else {
				b.WriteByte(' ')
			}
			b.WriteString(strings.Repeat("\n", strings.Count(body, "\n")))
			i += j + 4
		case s[i] == '"' || s[i] == '\'':
			q := s[i]
			j := i + 1
			for j < len(s) && s[j] != q && s[j] != '\n' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) || s[j] != q {
				return "", fail("unterminated literal")
			}
			b.WriteString(s[i : j+1])
			i = j + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), nil
}

// balanced returns the text inside the parenthesis s starts with, and the
// length consumed through its closing parenthesis.
func balanced(s string) (string, int, error) {
	if !strings.HasPrefix(s, "(") {
		return "", 0, errors.New("expected (")
	}
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return s[1:i], i + 1, nil
			}
		}
	}
	return "", 0, errors.New("unbalanced parentheses")
}

// splitTop splits at commas outside (), <> and [].
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '<', '[':
			depth++
		case ')', '>', ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
