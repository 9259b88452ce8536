package constrain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"
)

// SchemaError is a schema CompileSchema cannot compile: malformed, or
// asking for a keyword it does not implement (Keyword is then set).
type SchemaError struct {
	Path        string // JSON pointer of the schema object within the schema ("" the root)
	Keyword     string // the keyword at fault, or ""
	Unsupported bool   // Keyword is valid JSON Schema that CompileSchema does not implement
	Msg         string
}

func (e *SchemaError) Error() string {
	at := "schema"
	if e.Path != "" {
		at += " at #" + e.Path
	}
	return at + ": " + e.Msg
}

// Supported lists the keywords CompileSchema implements; Annotations those
// it accepts and ignores (they do not constrain the value).
var (
	Supported = []string{"type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems", "minLength", "maxLength",
		"enum", "const", "anyOf", "$ref", "$defs", "definitions", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}
	Annotations = []string{"title", "description", "default", "examples", "$schema", "$id", "$comment", "deprecated", "readOnly", "writeOnly"}
)

// MaxProperties is the most properties one object schema may list.
const MaxProperties = 64

// CompileSchema compiles a JSON schema to a grammar of the JSON texts it
// accepts. The keywords are Supported's; $ref points into #/$defs or
// #/definitions (or is "#"); any other keyword that constrains a value is
// a *SchemaError naming it. A schema without "type" takes its type from
// its keywords (properties: object, items: array, bounds: number), else
// it is any value.
//
// strict decides what an object whose schema has no additionalProperties
// may hold beyond its properties: nothing when strict (OpenAI's strict
// mode), else any further keys with any values, as JSON Schema's default.
func CompileSchema(schema []byte, strict bool) (*Grammar, error) {
	d := json.NewDecoder(bytes.NewReader(schema))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, &SchemaError{Msg: "not JSON: " + err.Error()}
	}
	if d.More() {
		return nil, &SchemaError{Msg: "more than one JSON value"}
	}
	c := &compiler{root: v, strict: strict, refs: map[string]*node{}}
	n, err := c.compile(v, "")
	if err != nil {
		return nil, err
	}
	for s, r := range c.refs {
		if r.kind == kPending {
			return nil, &SchemaError{Keyword: "$ref", Msg: fmt.Sprintf("$ref %q refers to itself without a value in between", s)}
		}
	}
	return &Grammar{root: n}, nil
}

type compiler struct {
	root   any
	strict bool
	refs   map[string]*node
}

func (c *compiler) errf(path, kw, format string, args ...any) error {
	return &SchemaError{Path: path, Keyword: kw, Msg: fmt.Sprintf(format, args...)}
}

var typeKeywords = map[string]string{
	"properties": "object", "required": "object", "additionalProperties": "object",
	"items": "array", "minItems": "array", "maxItems": "array", "minLength": "string", "maxLength": "string",
	"minimum": "number", "maximum": "number", "exclusiveMinimum": "number", "exclusiveMaximum": "number",
}

func (c *compiler) compile(v any, path string) (*node, error) {
	switch v := v.(type) {
	case bool:
		if !v {
			return nil, c.errf(path, "", "the schema false accepts no value")
		}
		return anyNode, nil
	case map[string]any:
		return c.object(v, path)
	}
	return nil, c.errf(path, "", "a schema must be an object or a boolean, got %s", jsonType(v))
}

func (c *compiler) object(m map[string]any, path string) (*node, error) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(Supported, k) && !slices.Contains(Annotations, k) {
			return nil, &SchemaError{Path: path, Keyword: k, Unsupported: true, Msg: fmt.Sprintf("keyword %q is not supported (supported: %s)", k, strings.Join(Supported, ", "))}
		}
	}
	if ref, ok := m["$ref"]; ok {
		for k := range m {
			if k != "$ref" && k != "$defs" && k != "definitions" && !slices.Contains(Annotations, k) {
				return nil, &SchemaError{Path: path, Keyword: k, Unsupported: true, Msg: fmt.Sprintf("keyword %q beside $ref is not supported", k)}
			}
		}
		s, ok := ref.(string)
		if !ok {
			return nil, c.errf(path, "$ref", "$ref must be a string")
		}
		return c.ref(s, path)
	}
	if alts, ok := m["anyOf"]; ok {
		for k := range m {
			if k != "anyOf" && k != "$defs" && k != "definitions" && !slices.Contains(Annotations, k) {
				return nil, &SchemaError{Path: path, Keyword: k, Unsupported: true, Msg: fmt.Sprintf("keyword %q beside anyOf is not supported (move it into each alternative)", k)}
			}
		}
		list, ok := alts.([]any)
		if !ok || len(list) == 0 {
			return nil, c.errf(path, "anyOf", "anyOf must be a non-empty array of schemas")
		}
		n := &node{kind: kAnyOf}
		for i, a := range list {
			an, err := c.compile(a, fmt.Sprintf("%s/anyOf/%d", path, i))
			if err != nil {
				return nil, err
			}
			n.alts = append(n.alts, an)
		}
		return n, nil
	}

	var types []string
	switch t := m["type"].(type) {
	case nil:
		if _, ok := m["type"]; ok {
			return nil, c.errf(path, "type", "type must be a string or an array of strings")
		}
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, c.errf(path, "type", "type must be a string or an array of strings")
			}
			types = append(types, s)
		}
		if len(types) == 0 {
			return nil, c.errf(path, "type", "type is an empty array")
		}
	default:
		return nil, c.errf(path, "type", "type must be a string or an array of strings")
	}
	for _, t := range types {
		switch t {
		case "object", "array", "string", "number", "integer", "boolean", "null":
		default:
			return nil, c.errf(path, "type", "unknown type %q (the types are object, array, string, number, integer, boolean, null)", t)
		}
	}
	if types == nil { // implied by the keywords
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if t, ok := typeKeywords[k]; ok && !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
	}
	var n *node
	if len(types) == 0 {
		n = anyNode
	} else {
		n = &node{kind: kAnyOf}
		for _, t := range types {
			tn, err := c.typed(m, t, path)
			if err != nil {
				return nil, err
			}
			n.alts = append(n.alts, tn)
		}
		if len(n.alts) == 1 {
			n = n.alts[0]
		}
	}
	return c.values(m, n, path)
}

// values narrows n to its enum and const values: the serializations of
// those n accepts.
func (c *compiler) values(m map[string]any, n *node, path string) (*node, error) {
	var vals []any
	kw := ""
	if e, ok := m["enum"]; ok {
		list, ok := e.([]any)
		if !ok || len(list) == 0 {
			return nil, c.errf(path, "enum", "enum must be a non-empty array")
		}
		vals, kw = list, "enum"
	}
	if cv, ok := m["const"]; ok {
		if vals != nil && !slices.ContainsFunc(vals, func(x any) bool { return canonical(x) == canonical(cv) }) {
			return nil, c.errf(path, "const", "const is not one of enum's values")
		}
		vals, kw = []any{cv}, "const"
	}
	if vals == nil {
		return n, nil
	}
	g := &Grammar{root: n}
	l := &lit{}
	for _, v := range vals {
		s := canonical(v)
		if g.Accepts([]byte(s)) {
			l.add([]byte(s), 0)
		}
	}
	if len(l.next) == 0 {
		return nil, c.errf(path, kw, "no %s value fits the schema's other keywords", kw)
	}
	return &node{kind: kLit, lit: l}, nil
}

func (c *compiler) typed(m map[string]any, t, path string) (*node, error) {
	switch t {
	case "object":
		return c.objectType(m, path)
	case "array":
		n := &node{kind: kArray, items: anyNode, maxItems: -1}
		if it, ok := m["items"]; ok {
			if _, ok := it.([]any); ok {
				return nil, &SchemaError{Path: path, Keyword: "items", Unsupported: true, Msg: "items as an array (tuple validation) is not supported"}
			}
			var err error
			if n.items, err = c.compile(it, path+"/items"); err != nil {
				return nil, err
			}
		}
		var err error
		if n.minItems, err = c.count(m, "minItems", 0, path); err != nil {
			return nil, err
		}
		if n.maxItems, err = c.count(m, "maxItems", -1, path); err != nil {
			return nil, err
		}
		if n.maxItems >= 0 && n.minItems > n.maxItems {
			return nil, c.errf(path, "minItems", "minItems %d is above maxItems %d", n.minItems, n.maxItems)
		}
		return n, nil
	case "string":
		_, lo := m["minLength"]
		_, hi := m["maxLength"]
		if !lo && !hi {
			return stringNode, nil
		}
		n := &node{kind: kString}
		var err error
		if n.minLen, err = c.count(m, "minLength", 0, path); err != nil {
			return nil, err
		}
		if n.maxLen, err = c.count(m, "maxLength", -1, path); err != nil {
			return nil, err
		}
		if n.maxLen >= 0 && n.minLen > n.maxLen {
			return nil, c.errf(path, "minLength", "minLength %d is above maxLength %d", n.minLen, n.maxLen)
		}
		return n, nil
	case "number", "integer":
		n := &node{kind: kNumber, integer: t == "integer"}
		bd := &bounds{}
		set := false
		for _, k := range []string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"} {
			v, ok := m[k]
			if !ok {
				continue
			}
			num, ok := v.(json.Number)
			if !ok {
				return nil, c.errf(path, k, "%s must be a number", k)
			}
			r, ok := new(big.Rat).SetString(string(num))
			if !ok {
				return nil, c.errf(path, k, "%s %s is not a number", k, num)
			}
			excl := strings.HasPrefix(k, "exclusive")
			if strings.HasSuffix(k, "inimum") {
				bd.lo, bd.loExcl = tighter(bd.lo, !bd.loExcl, r, !excl, 1)
				bd.loExcl = !bd.loExcl
			} else {
				bd.hi, bd.hiExcl = tighter(bd.hi, !bd.hiExcl, r, !excl, -1)
				bd.hiExcl = !bd.hiExcl
			}
			set = true
		}
		if set {
			n.bounds = bd
			if !meets(bd, interval{new(big.Rat), nil}, false, n.integer) && !meets(bd, interval{new(big.Rat), nil}, true, n.integer) {
				return nil, c.errf(path, "minimum", "no %s lies within the bounds", t)
			}
		}
		return n, nil
	case "boolean":
		l := &lit{}
		l.add([]byte("true"), 0)
		l.add([]byte("false"), 0)
		return &node{kind: kLit, lit: l}, nil
	}
	l := &lit{}
	l.add([]byte("null"), 0)
	return &node{kind: kLit, lit: l}, nil
}

func (c *compiler) objectType(m map[string]any, path string) (*node, error) {
	n := &node{kind: kObject, keys: &lit{}}
	var names []string
	if p, ok := m["properties"]; ok {
		pm, ok := p.(map[string]any)
		if !ok {
			return nil, c.errf(path, "properties", "properties must be an object")
		}
		names = slices.Sorted(maps.Keys(pm))
		if len(names) > MaxProperties {
			return nil, c.errf(path, "properties", "%d properties: at most %d are supported in one object", len(names), MaxProperties)
		}
		for i, name := range names {
			pn, err := c.compile(pm[name], path+"/properties/"+escapePointer(name))
			if err != nil {
				return nil, err
			}
			n.props = append(n.props, pn)
			n.keys.add([]byte(canonical(name)), i)
		}
	}
	if r, ok := m["required"]; ok {
		list, ok := r.([]any)
		if !ok {
			return nil, c.errf(path, "required", "required must be an array of strings")
		}
		for _, e := range list {
			s, ok := e.(string)
			if !ok {
				return nil, c.errf(path, "required", "required must be an array of strings")
			}
			i := slices.Index(names, s)
			if i < 0 {
				return nil, c.errf(path, "required", "required names %q, which properties does not define", s)
			}
			n.required |= 1 << uint(i)
		}
	}
	switch ap := m["additionalProperties"].(type) {
	case nil:
		if _, ok := m["additionalProperties"]; ok {
			return nil, c.errf(path, "additionalProperties", "additionalProperties must be a boolean or a schema")
		}
		if !c.strict {
			n.additional = anyNode
		}
	case bool:
		if ap {
			n.additional = anyNode
		}
	default:
		var err error
		if n.additional, err = c.compile(ap, path+"/additionalProperties"); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// count reads a non-negative integer keyword (def when absent).
func (c *compiler) count(m map[string]any, k string, def int, path string) (int, error) {
	v, ok := m[k]
	if !ok {
		return def, nil
	}
	num, ok := v.(json.Number)
	if !ok {
		return 0, c.errf(path, k, "%s must be a non-negative integer", k)
	}
	i, err := num.Int64()
	if err != nil || i < 0 || i > 1<<31-1 {
		return 0, c.errf(path, k, "%s must be a non-negative integer, got %s", k, num)
	}
	return int(i), nil
}

// ref resolves "#", "#/$defs/name" and "#/definitions/name"; a schema that
// refers to itself gets the node being compiled.
func (c *compiler) ref(s, path string) (*node, error) {
	if n, ok := c.refs[s]; ok { // compiled, or being compiled: a recursive schema
		return n, nil
	}
	var target any
	switch {
	case s == "#":
		target = c.root
	case strings.HasPrefix(s, "#/$defs/") || strings.HasPrefix(s, "#/definitions/"):
		sec, name, _ := strings.Cut(s[2:], "/")
		if strings.Contains(name, "/") {
			return nil, c.errf(path, "$ref", "$ref %q: only #/$defs/NAME and #/definitions/NAME are supported", s)
		}
		name = strings.ReplaceAll(strings.ReplaceAll(name, "~1", "/"), "~0", "~")
		root, _ := c.root.(map[string]any)
		defs, _ := root[sec].(map[string]any)
		t, ok := defs[name]
		if !ok {
			return nil, c.errf(path, "$ref", "$ref %q: no such definition", s)
		}
		target = t
	default:
		return nil, c.errf(path, "$ref", "$ref %q: only #, #/$defs/NAME and #/definitions/NAME are supported", s)
	}
	n := &node{} // kPending until compiled
	c.refs[s] = n
	t, err := c.compile(target, s[1:])
	if err != nil {
		return nil, err
	}
	*n = *t
	return n, nil
}

// canonical is v's compact serialization with sorted keys, and <, > and &
// as themselves (json.Marshal would escape them for HTML).
func canonical(v any) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	_ = e.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
