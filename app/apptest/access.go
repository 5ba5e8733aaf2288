package apptest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// badQuery and badForm break every rule a query or a form of these routes may have, so that
// a route that checks its input before the object's access answers differently for an object
// it hides and for one that is not there.
var (
	badQuery = "?from=x&to=y&after=x&part=x&status=x&kind=x&page=0&scope=x"
	badForm  = url.Values{"name": {"Bad Name!"}, "email": {"x"}, "role": {"x"}, "changelog": {""}, "revision": {"x"},
		"code": {"x: ["}, "input_schema": {"{"}, "output_schema": {"{"}, "resolver_bindings": {"{"}, "language": {"x"},
		"component_id": {"x"}, "environment_id": {"x"}, "parameters": {"{"}, "version": {"x"}, "pool_id": {"x"},
		"pattern": {""}, "comment": {strings.Repeat("x", 5000)}, "is_allowed": {"x"}, "max_instances": {"x"}}
)

// Ask sends a request meant to be refused: with a query or body that breaks the input's rules,
// as a page's form or as JSON to the API.
func (s *Site) Ask(t *testing.T, method, path, token string) Reply {
	t.Helper()
	var (
		body        io.Reader
		contentType string
	)
	switch {
	case method == "GET":
		path += badQuery
	case strings.HasPrefix(path, "/api/"):
		b, _ := json.Marshal(map[string]any{"unknown_field": true, "name": 7})
		body, contentType = bytes.NewReader(b), "application/json"
	default:
		body, contentType = strings.NewReader(badForm.Encode()), "application/x-www-form-urlencoded"
	}
	req, _ := http.NewRequest(method, s.URL+path, body)
	req.Header.Set("Authorization", "Bearer "+token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return Do(t, noRedirects, req)
}
