package component

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// schemaDecodeMessage says why a schema could not be read, in words an author can act on.
func schemaDecodeMessage(err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return "unknown keyword " + rest + "; Nimbus understands type, title, description, default, enum, minimum, maximum, minLength, maxLength, pattern, items, properties, additionalProperties, required, x-order, x-secret, x-reserved-keys and x-refers-to"
	}
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		// The path skips the names of properties (map keys): the keyword and the place say it.
		where := "the schema"
		if typ.Field != "" {
			where = fmt.Sprintf("%q", typ.Field[strings.LastIndexByte(typ.Field, '.')+1:])
		}
		return fmt.Sprintf("%s must be %s, not %s", where, jsonKind(typ.Type), jsonValueWords[typ.Value])
	}
	var syn *json.SyntaxError
	if errors.As(err, &syn) || errors.Is(err, io.ErrUnexpectedEOF) {
		for _, w := range jsonSyntaxWords {
			if strings.Contains(msg, w.says) {
				return "not valid JSON: " + w.means
			}
		}
	}
	return "not valid JSON here"
}

// jsonSyntaxWords say the JSON decoder's complaints in words.
var jsonSyntaxWords = []struct{ says, means string }{
	{"unexpected end of JSON input", "it ends before every { and [ is closed"},
	{"unexpected EOF", "it ends before every { and [ is closed"},
	{"looking for beginning of object key string", "a quoted name was expected here (is there a comma too many?)"},
	{"after object key:value pair", "a comma or } was expected here"},
	{"after array element", "a comma or ] was expected here"},
	{"after object key", "a colon was expected after the name"},
	{"looking for beginning of value", "a value was expected here (text needs double quotes)"},
	{"in string literal", "a text value holds a character that must be escaped"},
	{"after top-level value", "there is more after the schema's closing }"},
}

var jsonValueWords = map[string]string{
	"string": "text", "number": "a number", "bool": "true or false", "array": "a list", "object": "an object",
}

// jsonKind names what a Go type holds, as an author of JSON would.
func jsonKind(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "something else"
	}
	switch t.Kind() {
	case reflect.String:
		return "text"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "something else"
}

// jsonPosition turns a decoding error's byte offset into a line and column.
func jsonPosition(raw []byte, err error) (int, int) {
	var offset int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		offset = syn.Offset
	case errors.As(err, &typ):
		offset = typ.Offset
	case errors.Is(err, io.ErrUnexpectedEOF):
		offset = int64(len(bytes.TrimRight(raw, " \t\r\n")))
	}
	if offset < 0 || offset > int64(len(raw)) {
		return 0, 0
	}
	before := raw[:offset]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(offset) - bytes.LastIndexByte(before, '\n')
	return line, col
}
