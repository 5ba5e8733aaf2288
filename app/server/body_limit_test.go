package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/orchestration/environment"
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
	s := apptest.NewSite(t)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	root, adminA, reader := s.Token(t, s.Admin), s.Token(t, s.AdminA), s.Token(t, s.ReaderA)
	r := s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "zone", "provider": "simcloud"})
	apptest.WantStatus(t, r, http.StatusCreated)
	zone := r.JSON(t)["id"].(string)
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
			s.Handler.ServeHTTP(rec, req)
			got := apptest.Reply{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
			apptest.WantStatus(t, got, c.status)
			apptest.Mentions(t, got, c.mention)
			if body.read > c.maxRead {
				t.Fatalf("the server read %d bytes of the body, want at most %d", body.read, c.maxRead)
			}
		})
	}

	t.Run("the restore takes a state over the limit", func(t *testing.T) {
		user := s.Token(t, s.UserA)
		r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{"component_id": s.Shared.ID, "environment_id": env.ID,
			"name": "web", "parameters": map[string]any{"name": "web-1"}})
		apptest.WantStatus(t, r, http.StatusAccepted)
		deployment := r.JSON(t)["deployment"].(map[string]any)["id"].(string)
		if op := s.WaitOperation(t, user, r.JSON(t)["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
			t.Fatalf("deploy: %v", op)
		}
		r = s.Call(t, "GET", "/api/v1/deployments/"+deployment+"/state", root, nil)
		apptest.WantStatus(t, r, http.StatusOK)
		// The same state, made larger than the limit by white space after it.
		state := string(r.Body) + strings.Repeat(" ", over)
		apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/deployments/"+deployment+"/state", root, state), http.StatusNoContent)
	})
}
