package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
)

// decode reads the JSON body into v, strictly: a body over the limit,
// malformed JSON, anything after the value, a key given twice in one
// object, a key that names a field in another case (encoding/json would
// take it, so {"max_tokens":2,"MAX_TOKENS":6} would mean 6), a key that
// names no field (OpenAI's API refuses those too), and a field of the
// wrong type are 400s naming what is wrong.
func decode(r *http.Request, v any) *apiError {
	body, err := io.ReadAll(r.Body)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return badRequest("body", "body_too_large", "the request body exceeds %d bytes", mbe.Limit)
	}
	if err != nil {
		return badRequest("body", "invalid_json", "reading the body: %v", err)
	}
	if e := checkJSON(body, reflect.TypeOf(v)); e != nil {
		return e
	}
	err = json.Unmarshal(body, v)
	var te *json.UnmarshalTypeError
	var fe *fieldError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &fe):
		return badRequest(fe.path, "invalid_type", "%s", fe.msg)
	case errors.As(err, &te):
		return badRequest(strings.TrimPrefix(te.Field, "common."), "invalid_type", "expected %s, got JSON %s", jsonKind(te.Type), te.Value)
	}
	return badRequest("body", "invalid_json", "the body is not valid JSON: %v", err)
}

// fieldError is a value of the wrong shape at a path of the body (a
// custom decoder's complaint).
type fieldError struct{ path, msg string }

func (e *fieldError) Error() string { return e.path + ": " + e.msg }

// jsonKind names the JSON a Go type takes, for messages: no Go type names
// reach a client.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

// structFields is the JSON keys of struct type t (through embedded
// structs) and their types; nil for any other type (json.RawMessage
// included: what it holds is not the server's schema).
func structFields(t reflect.Type) map[string]reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "":
			for k, v := range structFields(f.Type) {
				fields[k] = v
			}
		case name != "" && name != "-":
			fields[name] = f.Type
		}
	}
	return fields
}

// elemType is the type of a JSON array's elements in t (nil when t is not
// a slice or is raw JSON).
func elemType(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Slice || t == reflect.TypeOf(json.RawMessage{}) {
		return nil
	}
	return t.Elem()
}

// checkJSON walks body's tokens against the request type t: one value, no
// trailing data, no key twice in an object, and, in the objects t
// describes, no key that is not a field or matches one only without case.
// Free-form values (json.RawMessage, maps) are not t's to describe.
func checkJSON(body []byte, t reflect.Type) *apiError {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	invalid := func(err error) *apiError {
		return badRequest("body", "invalid_json", "the body is not valid JSON: %v", err)
	}
	var walk func(path string, t reflect.Type) *apiError
	walk = func(path string, t reflect.Type) *apiError {
		tok, err := dec.Token()
		if err != nil {
			return invalid(err)
		}
		switch tok {
		case json.Delim('{'):
			fields := structFields(t)
			lower := map[string]string{}
			for k := range fields {
				lower[strings.ToLower(k)] = k
			}
			keys := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return invalid(err)
				}
				k := kt.(string)
				at := joinPath(path, k)
				if keys[k] {
					return badRequest(at, "duplicate_key", "the key is given twice")
				}
				keys[k] = true
				if want, ok := lower[strings.ToLower(k)]; ok && want != k {
					return badRequest(at, "unknown_field", "no such field (keys are case-sensitive: %q)", want)
				}
				if _, known := fields[k]; fields != nil && !known {
					return badRequest(at, "unknown_field", "unrecognized field")
				}
				if e := walk(at, fields[k]); e != nil {
					return e
				}
			}
			_, err = dec.Token() // '}'
		case json.Delim('['):
			et := elemType(t)
			for i := 0; dec.More(); i++ {
				if e := walk(fmt.Sprintf("%s[%d]", path, i), et); e != nil {
					return e
				}
			}
			_, err = dec.Token() // ']'
		}
		if err != nil {
			return invalid(err)
		}
		return nil
	}
	if e := walk("", t); e != nil {
		return e
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequest("body", "invalid_json", "the body holds more than one JSON value")
	}
	return nil
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
