package web

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
)

// ruleNoNUL is the rule a field breaks when it holds the NUL character (U+0000), which
// Postgres's text and jsonb cannot keep.
const ruleNoNUL = "no_nul"

// RefuseNUL answers 422 to a request whose text holds the NUL character, naming the field:
// a path parameter, a query parameter, a form field, or a string or object key anywhere in a
// JSON body. Every text field reaches Postgres sooner or later, and there the character is
// an error of the database, not of the input; refusing it here once is what keeps it from
// every handler's fields at once.
//
// The path, the query and a page's form are checked before the handler runs (the CSRF check
// reads a form as early, within the body limit). Any other body, every body of the API among
// them, is checked when the handler first reads it, which it does only after checking who
// asks: the read then fails with the problem, which DecodeJSON and ReadBody answer as it is.
// rawBody names the requests whose body goes somewhere other than the database (a state
// restore, streamed to a file): their body is left alone.
func RefuseNUL(rawBody func(echo.Context) bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			for i, name := range c.ParamNames() {
				if i < len(c.ParamValues()) && strings.ContainsRune(c.ParamValues()[i], 0) {
					return nulIn(name)
				}
			}
			if err := valuesFree("query", c.QueryParams()); err != nil {
				return err
			}
			req := c.Request()
			if rawBody(c) || req.Body == nil || req.Body == http.NoBody {
				return next(c)
			}
			if !IsAPI(c) && isForm(req.Header.Get(echo.HeaderContentType)) {
				// A form's value is read where it is used, and a failure to parse the form
				// is lost there: so the form is parsed here, and what does not parse is left
				// to its handler, as before. The form holds a multipart form's values too.
				_, _ = c.FormParams()
				if err := valuesFree("form", req.Form); err != nil {
					return err
				}
				return next(c)
			}
			req.Body = &checkedBody{body: req.Body}
			return next(c)
		}
	}
}

func isForm(contentType string) bool {
	media, _, _ := mime.ParseMediaType(contentType)
	return media == echo.MIMEApplicationForm || media == echo.MIMEMultipartForm
}

// valuesFree refuses a NUL in query or form values, naming the parameter; a NUL in a
// parameter's name is laid to where the name came from. A value that is a JSON document,
// such as a component's input schema typed into a form, is refused too when it escapes a NUL
// in a string: it would be kept as jsonb, which refuses the escape.
func valuesFree(where string, values map[string][]string) error {
	for name, vs := range values {
		if strings.ContainsRune(name, 0) {
			return nulInName(where)
		}
		for _, v := range vs {
			if strings.ContainsRune(v, 0) {
				return nulIn(name)
			}
			if path, inName, found := jsonNUL([]byte(v)); found {
				if path != "" {
					name += "." + path
				}
				if inName {
					return nulInName(name)
				}
				return nulIn(name)
			}
		}
	}
	return nil
}

func nulIn(field string) error {
	return problem.Invalid(field, ruleNoNUL, "must not hold the NUL character (U+0000)")
}

func nulInName(field string) error {
	return problem.Invalid(field, ruleNoNUL, "must not hold a name with the NUL character (U+0000)")
}

// checkedBody is a request body checked for NULs in its JSON when it is first read: the
// whole body is read then (the body limit bounds it), and every read fails with the problem
// when there is one.
type checkedBody struct {
	body io.ReadCloser
	rest *bytes.Reader // what the handler has yet to read; nil before the first read
	err  error
}

func (b *checkedBody) Read(p []byte) (int, error) {
	if b.rest == nil {
		data, err := io.ReadAll(b.body)
		b.rest, b.err = bytes.NewReader(data), err
		if err == nil {
			b.err = jsonFree(data)
		}
	}
	if b.err != nil {
		return 0, b.err
	}
	return b.rest.Read(p)
}

func (b *checkedBody) Close() error { return b.body.Close() }

// jsonFree refuses the first string or object key of a JSON body that holds a NUL, naming
// it by its path (slots.0.inputs.size; body for the document itself). A body that is not
// JSON passes: its handler says what is wrong with it, and it holds no escaped NUL for
// Postgres to refuse.
func jsonFree(data []byte) error {
	path, inName, found := jsonNUL(data)
	switch {
	case !found:
		return nil
	case path == "":
		path = "body"
	}
	if inName {
		return nulInName(path)
	}
	return nulIn(path)
}

// jsonNUL finds the first string or object key of a JSON document that holds a NUL: the path
// of the string ("" for the document itself), or of the object whose key it is.
func jsonNUL(data []byte) (path string, inName, found bool) {
	// JSON can carry a NUL in a string only as this escape; most documents hold none.
	if !bytes.Contains(data, []byte(`\u0000`)) {
		return "", false, false
	}
	// One frame per open object or array: the key or index of the value being read in it.
	type frame struct {
		object  bool
		wantKey bool
		key     string
		index   int
	}
	var stack []frame
	pathOf := func(stack []frame) string {
		parts := make([]string, len(stack))
		for i, f := range stack {
			if f.object {
				parts[i] = f.key
			} else {
				parts[i] = strconv.Itoa(f.index)
			}
		}
		return strings.Join(parts, ".")
	}
	// done moves the innermost container on past a value it holds.
	done := func() {
		if len(stack) == 0 {
			return
		}
		if top := &stack[len(stack)-1]; top.object {
			top.wantKey = true
		} else {
			top.index++
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false, false // the end, or not JSON
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, frame{object: true, wantKey: true})
			case '[':
				stack = append(stack, frame{})
			default:
				stack = stack[:len(stack)-1]
				done()
			}
		case string:
			if top := len(stack) - 1; top >= 0 && stack[top].wantKey {
				if strings.ContainsRune(t, 0) {
					return pathOf(stack[:top]), true, true // the object that holds the key
				}
				stack[top].key, stack[top].wantKey = t, false
				continue
			}
			if strings.ContainsRune(t, 0) {
				return pathOf(stack), false, true
			}
			done()
		default:
			done()
		}
	}
}
