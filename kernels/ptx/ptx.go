package ptx

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrMalformed is wrapped by every error Parse returns.
var ErrMalformed = errors.New("malformed PTX")

// SyntaxError names the line and what was wrong with it.
type SyntaxError struct {
	Line   int
	Reason string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("ptx: line %d: %s", e.Line, e.Reason) }

// Unwrap makes errors.Is(err, ErrMalformed) true.
func (e *SyntaxError) Unwrap() error { return ErrMalformed }

// maxBytes bounds any size computed from the text (an array, a parameter
// list, a shared-memory total); no real PTX comes close. Sums of two bounded
// values stay below 2^31, so the arithmetic is safe with a 32-bit int.
const maxBytes = 1 << 28

// Module is what Parse reads from one PTX file.
type Module struct {
	// Version is the PTX ISA version of .version, e.g. "7.8".
	Version string `json:"version"`
	// Target is the first .target operand, e.g. "sm_90"; TargetOptions the
	// rest (texmode_independent, debug, ...).
	Target        string   `json:"target"`
	TargetOptions []string `json:"target_options,omitempty"`
	AddressSize   int      `json:"address_size,omitempty"`
	Kernels       []Kernel `json:"kernels"`
	// Shared lists the module-scope .shared variables.
	Shared []Variable `json:"shared,omitempty"`
}

// Kernel is one .entry.
type Kernel struct {
	Name   string  `json:"name"`
	Params []Param `json:"params"`
	// ParamBytes is the end of the last parameter when the parameters are
	// laid out in order, each at its alignment.
	ParamBytes int `json:"param_bytes"`
	// MaxNTID and ReqNTID are the .maxntid / .reqntid dimensions (missing
	// dimensions are 1), nil when absent.
	MaxNTID []int `json:"maxntid,omitempty"`
	ReqNTID []int `json:"reqntid,omitempty"`
	// MinNCTAPerSM and MaxNReg are 0 when absent.
	MinNCTAPerSM int `json:"minnctapersm,omitempty"`
	MaxNReg      int `json:"maxnreg,omitempty"`
	// StaticShared is the bytes of .shared variables the kernel uses
	// (directly, or through the .func calls it makes), laid out in
	// declaration order at their alignments. ptxas may lay them out
	// differently; on the device cuFuncGetAttribute(SHARED_SIZE_BYTES) is
	// authoritative.
	StaticShared int `json:"static_shared"`
	// DynamicShared reports that the kernel uses an `.extern .shared` array,
	// whose size is set at launch.
	DynamicShared bool `json:"dynamic_shared,omitempty"`
}

// MaxThreads is the product of MaxNTID (or ReqNTID), or 0 when the kernel
// sets no limit and the device's own applies.
func (k Kernel) MaxThreads() int {
	d := k.MaxNTID
	if d == nil {
		d = k.ReqNTID
	}
	if d == nil {
		return 0
	}
	return d[0] * d[1] * d[2]
}

// Param is one kernel parameter.
type Param struct {
	Name string `json:"name"`
	// Type is the element type without its dot: "u64", "f32", "b8".
	Type string `json:"type"`
	// Count is the array length, 1 for a scalar.
	Count int `json:"count"`
	// Offset, Size and Align place it in the parameter buffer.
	Offset int `json:"offset"`
	Size   int `json:"size"`
	Align  int `json:"align"`
	// Pointer is set for `.ptr` parameters; Space is their state space.
	Pointer bool   `json:"pointer,omitempty"`
	Space   string `json:"space,omitempty"`
}

// Variable is one .shared declaration.
type Variable struct {
	Name   string `json:"name"`
	Size   int    `json:"size"`
	Align  int    `json:"align"`
	Extern bool   `json:"extern,omitempty"`
}

// Kernel returns the kernel with that name.
func (m *Module) Kernel(name string) (Kernel, bool) {
	for _, k := range m.Kernels {
		if k.Name == name {
			return k, true
		}
	}
	return Kernel{}, false
}

// typeSizes are the PTX fundamental types a parameter or variable can have.
var typeSizes = map[string]int{
	"b8": 1, "u8": 1, "s8": 1,
	"b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
	"b32": 4, "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4,
	"b64": 8, "u64": 8, "s64": 8, "f64": 8,
	"b128": 16,
}

// alignUp rounds n up to a (a power of two); both are bounded by maxBytes.
func alignUp(n, a int) int { return (n + a - 1) &^ (a - 1) }

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || c == '%' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

func validIdent(s string) bool {
	if s == "" || !isIdentStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isIdentChar(s[i]) {
			return false
		}
	}
	return true
}

// decl is one parsed declaration such as
//
//	.param .align 8 .b8 name[16]
//	.shared .align 4 .f32 buf[2][128]
//	.param .u64 .ptr .global .align 16 name
//
// after its state-space keyword: the element type, the element count (1 for
// a scalar, 0 for an unsized `[]`), the alignment and the pointer attributes.
type decl struct {
	name     string
	typ      string
	count    int
	unsized  bool
	align    int
	pointer  bool
	space    string
	ptrAlign int
}

// parseDecl reads one declaration from toks, which must hold exactly it.
func parseDecl(toks []token) (decl, error) {
	var d decl
	line := 0
	if len(toks) > 0 {
		line = toks[0].line
	}
	fail := func(format string, args ...any) (decl, error) {
		return decl{}, &SyntaxError{Line: line, Reason: fmt.Sprintf(format, args...)}
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i].text
		line = toks[i].line
		switch {
		case t == ".align":
			if i+1 >= len(toks) {
				return fail(".align without a value")
			}
			n, err := strconv.Atoi(toks[i+1].text)
			if err != nil || n < 1 || n > 1<<16 || n&(n-1) != 0 {
				return fail(".align %q is not a power of two up to 65536", toks[i+1].text)
			}
			i++
			if d.pointer {
				d.ptrAlign = n
			} else {
				d.align = n
			}
		case t == ".ptr":
			d.pointer = true
		case d.pointer && (t == ".global" || t == ".shared" || t == ".const" || t == ".local"):
			d.space = t[1:]
		case strings.HasPrefix(t, ".") && typeSizes[t[1:]] > 0 && d.typ == "" && d.name == "":
			d.typ = t[1:]
		case t == "[":
			if d.name == "" {
				return fail("array suffix before the name")
			}
			if i+1 < len(toks) && toks[i+1].text == "]" {
				d.unsized = true
				i++
				continue
			}
			if i+2 >= len(toks) || toks[i+2].text != "]" {
				return fail("bad array suffix after %q", d.name)
			}
			n, err := strconv.Atoi(toks[i+1].text)
			if err != nil || n < 0 || n > maxBytes {
				return fail("array length %q is not a number up to %d", toks[i+1].text, maxBytes)
			}
			if n != 0 && d.count > maxBytes/n {
				return fail("array %q is too large", d.name)
			}
			d.count *= n
			i += 2
		case d.name == "" && validIdent(t):
			d.name = t
			d.count = 1
		default:
			return fail("unexpected %q in a declaration", t)
		}
	}
	switch {
	case d.typ == "":
		return fail("declaration has no type")
	case d.name == "":
		return fail("declaration has no name")
	}
	es := typeSizes[d.typ]
	if d.count > maxBytes/es {
		return fail("%q is larger than %d bytes", d.name, maxBytes)
	}
	if d.align == 0 {
		d.align = es
	}
	if d.unsized {
		d.count = 0
	}
	return d, nil
}
