package apptest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// Reply is what a server answered: every helper that calls one returns it.
type Reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON is the reply's body decoded as a JSON object; the test fails when it is not one.
func (r Reply) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("reply is not JSON (%d): %s", r.Status, r.Body)
	}
	return m
}

// Do sends req with client and reads the whole reply. It is the one way the helpers below
// talk to a server: a JSON API call, a form post, a raw body, a browser's page; the test fails
// when the server cannot be reached.
func Do(t testing.TB, client *http.Client, req *http.Request) Reply {
	t.Helper()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return Reply{Status: resp.StatusCode, Header: resp.Header, Body: data}
}

// noRedirects answers a redirect with the redirect itself, as a page's form post is checked.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// Call calls the JSON API as the holder of token (none when empty): body is sent as it is
// when a string, else encoded as JSON.
func (s *Server) Call(t testing.TB, method, path, token string, body any) Reply {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, _ := json.Marshal(b)
		rd = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, s.URL+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return Do(t, http.DefaultClient, req)
}

// Submit posts a page's form as a signed-in client would, without following the redirect.
func (s *Server) Submit(t testing.TB, path, token string, form url.Values) Reply {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return Do(t, noRedirects, req)
}

// Send posts body to a receiving path with the headers given (name, value, name, value...).
func (s *Server) Send(t testing.TB, path string, body []byte, headers ...string) Reply {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL+path, bytes.NewReader(body))
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return Do(t, http.DefaultClient, req)
}

// WantStatus fails the test unless r has status.
func WantStatus(t testing.TB, r Reply, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
}

// Browser is a cookie-keeping client that signs in through the login form and posts forms
// with the CSRF token of the last page it read.
type Browser struct {
	*http.Client
	Base string // the server's URL
	CSRF string // the form token of the last page that had one
}

var csrfField = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// NewBrowser is a browser of the server at base, signed out, that does not follow redirects.
func NewBrowser(t testing.TB, base string) *Browser {
	jar, _ := cookiejar.New(nil)
	return &Browser{Client: &http.Client{Jar: jar, CheckRedirect: noRedirects.CheckRedirect}, Base: base}
}

// Get reads a page with the headers given (name, value, name, value...), keeping its form
// token.
func (b *Browser) Get(t testing.TB, path string, headers ...string) Reply {
	t.Helper()
	req, _ := http.NewRequest("GET", b.Base+path, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	r := Do(t, b.Client, req)
	if m := csrfField.FindSubmatch(r.Body); m != nil {
		b.CSRF = string(m[1])
	}
	return r
}

// Post posts a form with the headers given; headers given later win, such as another
// Content-Type.
func (b *Browser) Post(t testing.TB, path string, form url.Values, headers ...string) Reply {
	t.Helper()
	req, _ := http.NewRequest("POST", b.Base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return Do(t, b.Client, req)
}

// SignIn signs in through the login form, as a person would.
func (b *Browser) SignIn(t testing.TB, email, password string, headers ...string) Reply {
	t.Helper()
	b.Get(t, "/login")
	return b.Post(t, "/login", url.Values{"_csrf": {b.CSRF}, "email": {email}, "password": {password}}, headers...)
}
