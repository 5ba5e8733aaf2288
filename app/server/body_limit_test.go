package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"nimbus/app/environment"
)

// The body limit (1 MiB) holds on every route but the state restore, however a path ends; no
// body is read before its reader is found to be allowed, and one over the limit is not read
// to its end.
func TestAPI_BodyLimitSparesOnlyTheStateRestore(t *testing.T) {
	const (
		limit   = 1 << 20
		over    = 2 * limit
		chunked = -1 // no Content-Length: the body's end is known only once it is read
	)
	s := newSite(t)
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	root, adminA, reader := s.token(t, s.admin), s.token(t, s.adminA), s.token(t, s.readerA)
	r := s.call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "zone", "provider": "simcloud"})
	wantStatus(t, r, http.StatusCreated)
	zone := r.json(t)["id"].(string)
	envState := "/api/v1/environments/" + env.ID.String() + "/resolvers/state"

	cases := []struct {
		name, token, path string
		contentLength     int64
		size              int64 // what the client sends
		status            int
		mention           string
		maxRead           int64 // the most the server may read of the body
	}{
		{"a read-only member", reader, envState, over, over, http.StatusRequestEntityTooLarge, "too large", 0},
		{"a read-only member, chunked", reader, envState, chunked, 16 * limit, http.StatusForbidden, "permission", 0},
		{"the tenant's admin, chunked", adminA, envState, chunked, 16 * limit, http.StatusForbidden, "permission", 0},
		{"a provider admin", root, envState, over, over, http.StatusRequestEntityTooLarge, "too large", 0},
		{"a provider admin, chunked", root, envState, chunked, 16 * limit, http.StatusRequestEntityTooLarge, "too large", 2 * limit},
		{"a zone's resolver named state", root, "/api/v1/landing-zones/" + zone + "/resolvers/state", over, over,
			http.StatusRequestEntityTooLarge, "too large", 0},
		{"a path no route has", root, "/api/v1/nothing/state", over, over, http.StatusRequestEntityTooLarge, "too large", 0},
		{"the restore's path with a slash more", root, "/api/v1/deployments/" + env.ID.String() + "/state/", over, over,
			http.StatusRequestEntityTooLarge, "too large", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := &watchedBody{size: c.size}
			req := httptest.NewRequest("PUT", c.path, body)
			req.ContentLength = c.contentLength
			req.Header.Set("Authorization", "Bearer "+c.token)
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			s.handler.ServeHTTP(rec, req)
			got := reply{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
			wantStatus(t, got, c.status)
			mentions(t, got, c.mention)
			if body.read > c.maxRead {
				t.Fatalf("the server read %d bytes of the body, want at most %d", body.read, c.maxRead)
			}
		})
	}

	t.Run("the restore takes a state over the limit", func(t *testing.T) {
		user := s.token(t, s.userA)
		r := s.call(t, "POST", "/api/v1/deployments", user, map[string]any{"component_id": s.shared.ID, "environment_id": env.ID,
			"name": "web", "parameters": map[string]any{"name": "web-1"}})
		wantStatus(t, r, http.StatusAccepted)
		deployment := r.json(t)["deployment"].(map[string]any)["id"].(string)
		if op := s.waitOperation(t, user, r.json(t)["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
			t.Fatalf("deploy: %v", op)
		}
		r = s.call(t, "GET", "/api/v1/deployments/"+deployment+"/state", root, nil)
		wantStatus(t, r, http.StatusOK)
		// The same state, made larger than the limit by white space after it.
		state := string(r.body) + strings.Repeat(" ", over)
		wantStatus(t, s.call(t, "PUT", "/api/v1/deployments/"+deployment+"/state", root, state), http.StatusNoContent)
	})
}
