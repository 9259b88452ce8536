package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/hipgo/hipgo/constrain"
)

// responseFormatRequest is chat's response_format.
type responseFormatRequest struct {
	Type       string          `json:"type"`
	JSONSchema *jsonSchemaSpec `json:"json_schema"`
}

type jsonSchemaSpec struct {
	Name        *string         `json:"name"`
	Description *string         `json:"description"` // for the model in OpenAI's API; not shown to it here
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict"`
}

// responseFormat compiles response_format to the grammar the reply is
// constrained to: nil for text (or none), any JSON object for json_object,
// the schema's values for json_schema. A schema constrain cannot compile
// is a 400 naming the keyword.
func responseFormat(rf *responseFormatRequest) (*constrain.Grammar, *apiError) {
	const param = "response_format"
	if rf == nil {
		return nil, nil
	}
	if rf.JSONSchema != nil && rf.Type != "json_schema" {
		return nil, badRequest(param+".json_schema", "invalid_value", "json_schema goes with type \"json_schema\", not %q", rf.Type)
	}
	switch rf.Type {
	case "text":
		return nil, nil
	case "json_object":
		return constrain.JSONObject(), nil
	case "json_schema":
	default:
		return nil, badRequest(param+".type", "invalid_value", "type %q is not text, json_object or json_schema", rf.Type)
	}
	js := rf.JSONSchema
	if js == nil {
		return nil, badRequest(param+".json_schema", "invalid_value", "type json_schema needs a json_schema object with the schema")
	}
	if js.Name == nil || *js.Name == "" {
		return nil, badRequest(param+".json_schema.name", "invalid_value", "a name is required")
	}
	if len(js.Schema) == 0 || string(bytes.TrimSpace(js.Schema)) == "null" {
		return nil, badRequest(param+".json_schema.schema", "invalid_value", "a schema is required")
	}
	g, err := constrain.CompileSchema(js.Schema, js.Strict != nil && *js.Strict)
	var se *constrain.SchemaError
	switch {
	case errors.As(err, &se) && se.Unsupported:
		return nil, badRequest(param+".json_schema.schema", "unsupported_value", "%v (docs/serve.md lists the supported keywords)", err)
	case err != nil:
		return nil, badRequest(param+".json_schema.schema", "invalid_value", "%v", strings.TrimPrefix(err.Error(), "constrain: "))
	}
	return g, nil
}
