package apptest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Forge stands in for a forge's commit status API (GitHub's, GitLab's and Gitea's take a POST
// to .../statuses/{sha}), recording what is posted to it.
type Forge struct {
	// URL is the API's root, to set as a link's status API.
	URL      string
	mu       sync.Mutex
	statuses []PostedStatus
}

// PostedStatus is one commit status posted to a Forge.
type PostedStatus struct {
	Path, Authorization, Token string
	Body                       map[string]string
}

// StartForge starts a forge status API on a free port for the test, stopped when it ends.
func StartForge(t testing.TB) *Forge {
	t.Helper()
	f := &Forge{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		p := PostedStatus{Path: r.URL.Path, Authorization: r.Header.Get("Authorization"), Token: r.Header.Get("PRIVATE-TOKEN"), Body: map[string]string{}}
		if r.Method != http.MethodPost || json.Unmarshal(raw, &p.Body) != nil {
			http.Error(w, "a status is a JSON object posted", http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.statuses = append(f.statuses, p)
		f.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// Statuses are the statuses posted so far, oldest first.
func (f *Forge) Statuses() []PostedStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]PostedStatus(nil), f.statuses...)
}

// WaitStatus waits until a status with state has been posted for context on the commit at
// path, and returns it.
func (f *Forge) WaitStatus(t testing.TB, path, context, state string) PostedStatus {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		for _, s := range f.Statuses() {
			if s.Path == path && (s.Body["context"] == context || s.Body["name"] == context) && s.Body["state"] == state {
				return s
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no %s status for %s at %s in 3 minutes; posted: %+v", state, context, path, f.Statuses())
	return PostedStatus{}
}
