package constrain

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func compile(t *testing.T, schema string, strict bool) *Grammar {
	t.Helper()
	g, err := CompileSchema([]byte(schema), strict)
	require.NoError(t, err, schema)
	return g
}

// TestRecognizerAcceptsExactlyTheSchemasValues: for every supported
// keyword, texts the schema accepts are accepted whole and texts it does
// not are refused (cut short, of the wrong type, out of bounds, a key
// missing or twice, a bad escape or UTF-8 byte).
func TestRecognizerAcceptsExactlyTheSchemasValues(t *testing.T) {
	cases := []struct {
		name, schema string
		strict       bool
		good, bad    []string
	}{
		{"any object", `{"type":"object"}`, false,
			[]string{`{}`, `{"a":1}`, "{\n  \"a\": [\n    1\n  ]\n}", `{ "a" : [1, 2.5e-3, "x", true, null, {"b":{}}] }`, `{"a":"\u00e9\n\"\\"}`, "{\"k\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}"},
			[]string{``, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{,}`, `[]`, `"x"`, `{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":"\x"}`, "{\"a\":\"\x01\"}", "{\"a\":\"\xc0\x80\"}", "{\"a\":\"\xed\xa0\x80\"}", `{"a":tru}`, `{"k":1,"k":1}`, `{} x`, `{} `, ` {}`}},
		{"properties and required", `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name"],"additionalProperties":false}`, false,
			[]string{`{"name":"x"}`, `{"age":3,"name":"y"}`, `{"name":"x","age":-12}`},
			[]string{`{}`, `{"age":3}`, `{"name":1}`, `{"name":"x","age":1.5}`, `{"name":"x","other":1}`, `{"name":"x","name":"y"}`, `{"name":"x","age":1e3}`}},
		{"strict closes objects", `{"type":"object","properties":{"a":{"type":"boolean"}}}`, true,
			[]string{`{}`, `{"a":true}`},
			[]string{`{"b":1}`, `{"a":1}`}},
		{"non-strict opens objects", `{"type":"object","properties":{"a":{"type":"boolean"}}}`, false,
			[]string{`{}`, `{"a":false,"b":[1]}`, `{"ab":1}`},
			[]string{`{"a":1}`, `{"a":true,"a":false}`, `{"b":1,"c":2,"b":3}`}},
		{"additionalProperties schema", `{"type":"object","additionalProperties":{"type":"integer"}}`, true,
			[]string{`{}`, `{"x":1,"y":2}`},
			[]string{`{"x":"1"}`}},
		{"array items and counts", `{"type":"array","items":{"type":"number"},"minItems":1,"maxItems":3}`, false,
			[]string{`[1]`, `[1, 2.5, -3e2]`, `[ 0 ]`},
			[]string{`[]`, `[1,2,3,4]`, `["1"]`, `[1,]`}},
		{"enum", `{"enum":["red","green",3,null,{"a":[1]}]}`, false,
			[]string{`"red"`, `"green"`, `3`, `null`, `{"a":[1]}`},
			[]string{`"blue"`, `"re"`, `30`, `{"a": [1]}`, `"red" `}},
		{"typed enum", `{"type":"string","enum":["a","ab",1]}`, false,
			[]string{`"a"`, `"ab"`},
			[]string{`1`, `"b"`}},
		{"string length", `{"type":"string","minLength":2,"maxLength":3}`, false,
			[]string{`"ab"`, `"abc"`, `"\u00e9\n"`, "\"\xc3\xa9\xf0\x9f\x98\x80\"", `"a\""`},
			[]string{`"a"`, `"abcd"`, `""`, "\"\xc3\xa9\"", `"\n\n\n\n"`}},
		{"no surrogate escapes", `{"type":"string"}`, false,
			[]string{`"\ud7ff"`, `"\uE000"`},
			[]string{`"\ud800"`, `"\uDC00"`, `"\udfff"`}},
		{"const", `{"const":"x"}`, false, []string{`"x"`}, []string{`"y"`, `"x"x`}},
		{"HTML characters as themselves", `{"type":"object","properties":{"a<b":{"const":"x&y"}},"required":["a<b"],"additionalProperties":false}`, false,
			[]string{`{"a<b":"x&y"}`}, []string{`{"a\u003cb":"x&y"}`, `{"a<b":"x\u0026y"}`}},
		{"boolean and null", `{"type":["boolean","null"]}`, false, []string{`true`, `false`, `null`}, []string{`0`, `"true"`, `nul`}},
		{"nullable string", `{"type":["string","null"]}`, false, []string{`"s"`, `null`}, []string{`1`}},
		{"integer bounds", `{"type":"integer","minimum":-5,"maximum":120}`, false,
			[]string{`-5`, `0`, `-0`, `7`, `120`, `99`},
			[]string{`-6`, `121`, `1000`, `-10`, `1.0`, `130`}},
		{"exclusive integer bounds", `{"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10}`, false,
			[]string{`1`, `9`},
			[]string{`0`, `10`, `-1`}},
		{"number bounds", `{"type":"number","minimum":0.5,"exclusiveMaximum":2}`, false,
			[]string{`0.5`, `1`, `1.999`, `0.75`},
			[]string{`0.4999`, `2`, `2.0`, `-1`, `0`, `5e-1`}},
		{"anyOf", `{"anyOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false},{"type":"object","properties":{"b":{"type":"string"}},"required":["b"],"additionalProperties":false},{"type":"integer"}]}`, false,
			[]string{`{"a":1}`, `{"b":"x"}`, `42`},
			[]string{`{"a":"x"}`, `{"b":1}`, `{"a":1,"b":"x"}`, `{}`, `1.5`}},
		{"$ref to $defs", `{"type":"object","properties":{"p":{"$ref":"#/$defs/point"},"q":{"$ref":"#/definitions/tag"}},"required":["p"],"additionalProperties":false,
			"$defs":{"point":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"],"additionalProperties":false}},
			"definitions":{"tag":{"enum":["a","b"]}}}`, false,
			[]string{`{"p":{"x":1,"y":2}}`, `{"q":"a","p":{"y":0,"x":-1.5}}`},
			[]string{`{"p":{"x":1}}`, `{"p":{"x":1,"y":2},"q":"c"}`}},
		{"recursive $ref", `{"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"],"additionalProperties":false}}}`, false,
			[]string{`{"v":1}`, `{"v":1,"kids":[{"v":2,"kids":[]},{"v":3}]}`},
			[]string{`{"v":1,"kids":[{}]}`}},
		{"number root", `{"type":"number"}`, false, []string{`12`, `-0.5E+3`}, []string{`12 `, `+1`, `.5`}},
		{"whitespace bound", `{"type":"array"}`, false,
			[]string{"[ 1 , 2 ]", "[\n" + strings.Repeat(" ", MaxIndent) + "1,\n\t2\n]"},
			[]string{"[  1]", "[\n" + strings.Repeat(" ", MaxIndent+1) + "1]", "[1,\n\n2]", "[1 \n]", "[\t1]", "[1,\r\n2]", " [1]", "[1]\n"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := compile(t, c.schema, c.strict)
			for _, s := range c.good {
				require.True(t, g.Accepts([]byte(s)), "%s should be accepted", s)
			}
			for _, s := range c.bad {
				require.False(t, g.Accepts([]byte(s)), "%s should be refused", s)
			}
		})
	}
}

// TestJSONObjectIsAnyObject: json_object mode takes objects only.
func TestJSONObjectIsAnyObject(t *testing.T) {
	g := JSONObject()
	require.True(t, g.Accepts([]byte(`{"a":[{}]}`)))
	for _, s := range []string{`[]`, `1`, `"a"`, `null`, `{"a":1`} {
		require.False(t, g.Accepts([]byte(s)), s)
	}
}

// TestUnsupportedAndMalformedSchemasAreErrors: an unsupported keyword is a
// SchemaError naming it; a malformed schema a SchemaError saying why.
func TestUnsupportedAndMalformedSchemasAreErrors(t *testing.T) {
	for _, kw := range []string{"pattern", "format", "oneOf", "allOf", "not", "uniqueItems", "multipleOf", "patternProperties", "prefixItems", "if"} {
		_, err := CompileSchema([]byte(`{"type":"object","properties":{"a":{"type":"string","`+kw+`":1}}}`), true)
		var se *SchemaError
		require.True(t, errors.As(err, &se), kw)
		require.Equal(t, kw, se.Keyword)
		require.Equal(t, "/properties/a", se.Path)
		require.Contains(t, err.Error(), kw)
	}
	for schema, msg := range map[string]string{
		`{"type":"strung"}`:                              "unknown type",
		`{"type":"object","required":["a"]}`:             "properties does not define",
		`{"type":"array","minItems":3,"maxItems":2}`:     "above maxItems",
		`{"type":"string","minLength":3,"maxLength":2}`:  "above maxLength",
		`{"type":"string","maxLength":-1}`:               "non-negative",
		`{"type":"integer","minimum":1.5,"maximum":1.7}`: "no integer",
		`{"enum":[]}`:                  "non-empty",
		`{"type":"string","enum":[1]}`: "no enum value",
		`{"$ref":"#/$defs/nope"}`:      "no such definition",
		`{"$ref":"http://x/y"}`:        "only #",
		`{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}}`: "refers to itself",
		`{"anyOf":[{"type":"string"}],"type":"string"}`:           "beside anyOf",
		`[1]`:   "must be an object",
		`{"a":`: "not JSON",
		`false`: "accepts no value",
	} {
		_, err := CompileSchema([]byte(schema), true)
		require.ErrorContains(t, err, msg, schema)
	}
}

// TestOverlappingAnyOfIsBounded: anyOf alternatives that overlap are all
// followed while the text fits several, but nested overlaps that would
// need more than MaxAlternatives stacks at once are refused with
// ErrTooAmbiguous instead of growing the state without bound.
func TestOverlappingAnyOfIsBounded(t *testing.T) {
	two := `{"anyOf":[{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false},{"type":"object","properties":{"a":{"type":"integer"},"c":{"type":"integer"}},"required":["a","c"],"additionalProperties":false}]}`
	g := compile(t, two, true)
	require.True(t, g.Accepts([]byte(`{"a":1,"b":2}`)))
	require.True(t, g.Accepts([]byte(`{"a":1,"c":2}`)))
	require.False(t, g.Accepts([]byte(`{"a":1}`)))

	// Six levels of three alternatives that all fit {"x": ...: 3^6 readings.
	inner := `{"type":"integer"}`
	for range 6 {
		alt := `{"type":"object","properties":{"x":` + inner + `}}`
		alt3 := `{"type":"object","properties":{"y":{"type":"null"},"x":` + inner + `}}`
		inner = `{"anyOf":[` + alt + `,` + alt + `,` + alt3 + `]}`
	}
	deep := compile(t, inner, true)
	text := strings.Repeat(`{"x":`, 6) + "1" + strings.Repeat("}", 6)
	v := NewVocab([][]byte{[]byte(text)})
	m := deep.NewMatcher(v)
	err := m.Accept(0)
	require.ErrorIs(t, err, ErrTooAmbiguous)
}
