package apptest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/domain/component"
)

// Ptr is a pointer to a copy of v, for the optional fields of a request.
func Ptr[T any](v T) *T { return &v }

// PublishedA is tenant A's component with its first version published.
func (w *World) PublishedA(t *testing.T) component.Component {
	return Fixture(w, "publishedA", func() component.Component {
		_, err := w.Components.Publish(context.Background(), w.Admin, w.OfA.ID, w.OfA.Revision, "v1")
		Must(t, err)
		return w.OfA
	})
}

// CheckA is a check of tenant A's component, requested by A's admin.
func (w *World) CheckA(t *testing.T) component.Check {
	return Fixture(w, "checkA", func() component.Check {
		chk, err := w.Components.RequestCheck(context.Background(), w.AdminA, w.OfA.ID, uuid.Nil)
		Must(t, err)
		return chk
	})
}

// WaitCheck polls a check through the API until it has finished.
func (s *Site) WaitCheck(t *testing.T, token, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		got := s.Call(t, "GET", "/api/v1/checks/"+id, token, nil).JSON(t)
		if got["status"] == "succeeded" || got["status"] == "failed" {
			return got
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("check %s did not finish in 3 minutes", id)
	return nil
}

// RequestCheck asks for a check of the component as the holder of token and returns the
// check's ID.
func (s *Site) RequestCheck(t *testing.T, token string, component uuid.UUID) string {
	t.Helper()
	r := s.Call(t, "POST", "/api/v1/components/"+component.String()+"/check", token, nil)
	WantStatus(t, r, http.StatusAccepted)
	return r.JSON(t)["id"].(string)
}

// Publish publishes the draft as it is now: it reads the draft's revision first, as a client
// that reviewed the draft would have.
func (s *Site) Publish(t testing.TB, token, id, changelog string) Reply {
	t.Helper()
	r := s.Call(t, "GET", "/api/v1/components/"+id, token, nil)
	WantStatus(t, r, http.StatusOK)
	return s.Call(t, "POST", "/api/v1/components/"+id+"/publish", token, map[string]any{"changelog": changelog, "revision": r.JSON(t)["revision"]})
}

// Check asks for a check of a component's draft and waits for its result.
func (s *Site) Check(t testing.TB, token, id string) map[string]any {
	t.Helper()
	r := s.Call(t, "POST", "/api/v1/components/"+id+"/check", token, nil)
	WantStatus(t, r, http.StatusAccepted)
	checkID := r.JSON(t)["id"].(string)
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		got := s.Call(t, "GET", "/api/v1/checks/"+checkID, token, nil).JSON(t)
		if got["status"] == "succeeded" || got["status"] == "failed" {
			return got
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the check did not finish in 2 minutes")
	return nil
}

// VersionCount is how many versions of the component are published.
func (s *Site) VersionCount(t testing.TB, token, id string) int {
	t.Helper()
	r := s.Call(t, "GET", "/api/v1/components/"+id+"/versions", token, nil)
	WantStatus(t, r, http.StatusOK)
	return len(r.JSON(t)["versions"].([]any))
}

// RepoOfA is a repository on a git server of the test's own whose root holds the program of
// tenant A's component, as a link to it.
func (w *World) RepoOfA(t *testing.T) component.NewLink {
	return Fixture(w, "repoOfA", func() component.NewLink {
		srv := StartGitServer(t)
		r := srv.Repo(t, "a")
		r.Write(t, component.ProgramFile, w.OfA.Code)
		r.Commit(t, "Ada Lovelace", "The program")
		r.Push(t)
		return component.NewLink{URL: r.URL, Branch: "main", User: srv.User, Token: srv.Password}
	})
}

// LinkedA is tenant A's component linked to RepoOfA.
func (w *World) LinkedA(t *testing.T) component.Linked {
	return Fixture(w, "linkedA", func() component.Linked {
		l, err := w.Components.LinkRepository(context.Background(), w.AdminA, w.OfA.ID, w.RepoOfA(t))
		Must(t, err)
		return l
	})
}
