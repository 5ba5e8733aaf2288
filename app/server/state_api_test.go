package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/apptest"
	"nimbus/app/orchestration/environment"
	"nimbus/app/server"
)

// watchedBody is a request body of size spaces that counts how much of it was read.
type watchedBody struct {
	size, read int64
}

func (b *watchedBody) Read(p []byte) (int, error) {
	if b.read >= b.size {
		return 0, io.EOF
	}
	n := min(int64(len(p)), b.size-b.read)
	for i := range p[:n] {
		p[i] = ' '
	}
	b.read += n
	return int(n), nil
}

func (b *watchedBody) Close() error { return nil }

func TestAPI_RestoreStateRefusesBeforeReadingTheBody(t *testing.T) {
	const limit = 64 << 10
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file"}, func(d *server.Deps) { d.MaxStateSize = limit })
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user := s.Token(t, s.UserA)
	r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{"component_id": s.Shared.ID, "environment_id": env.ID,
		"name": "web", "parameters": map[string]any{"name": "web-1"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	deployment := r.JSON(t)["deployment"].(map[string]any)["id"].(string)
	s.WaitOperation(t, user, r.JSON(t)["operation"].(map[string]any)["id"].(string))
	root, adminA, adminB := s.Token(t, s.Admin), s.Token(t, s.AdminA), s.Token(t, s.AdminB)

	const chunked = -1 // no Content-Length: the body's end is known only once it is read
	cases := []struct {
		name          string
		token, id     string
		contentLength int64
		size          int64 // what the client sends
		status        int
		mention       string
		maxRead       int64 // the most the server may read of the body
	}{
		{"another tenant's deployment", adminB, deployment, 100, 100, http.StatusNotFound, "not found", 0},
		{"another tenant's deployment, over the limit", adminB, deployment, limit + 1, limit + 1, http.StatusNotFound, "not found", 0},
		{"a missing deployment", root, uuid.NewString(), 100, 100, http.StatusNotFound, "not found", 0},
		{"the tenant's admin", adminA, deployment, 100, 100, http.StatusForbidden, "permission", 0},
		{"the tenant's admin, chunked", adminA, deployment, chunked, 10 * limit, http.StatusForbidden, "permission", 0},
		{"over the limit by Content-Length", root, deployment, limit + 1, limit + 1, http.StatusUnprocessableEntity,
			`"field":"state","rule":"max_size","message":"is larger than the limit of 64 KiB`, 0},
		{"over the limit, chunked", root, deployment, chunked, 10 * limit, http.StatusUnprocessableEntity,
			`"field":"state","rule":"max_size"`, limit + 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := &watchedBody{size: c.size}
			req := httptest.NewRequest("PUT", "/api/v1/deployments/"+c.id+"/state", body)
			req.ContentLength = c.contentLength
			req.Header.Set("Authorization", "Bearer "+c.token)
			rec := httptest.NewRecorder()
			s.Handler.ServeHTTP(rec, req)
			got := apptest.Reply{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
			apptest.WantStatus(t, got, c.status)
			apptest.Mentions(t, got, c.mention)
			if body.read > c.maxRead {
				t.Fatalf("the server read %d bytes of the body, want at most %d", body.read, c.maxRead)
			}
		})
	}
	if ops := s.Call(t, "GET", "/api/v1/operations?kind=restore", root, nil).JSON(t)["operations"].([]any); len(ops) != 0 {
		t.Fatalf("a refused restore started %d operations", len(ops))
	}
}
