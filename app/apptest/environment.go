package apptest

import (
	"context"
	"strings"
	"testing"
	"time"

	"nimbus/app/orchestration/environment"
)

// Dev is tenant A's environment dev, made by its admin outside any landing zone; it is active.
func (w *World) Dev(t *testing.T) environment.Environment {
	return Fixture(w, "dev", func() environment.Environment {
		env, err := w.Envs.Create(context.Background(), w.AdminA, w.A.ID, "dev")
		Must(t, err)
		return env
	})
}

// WaitFor polls cond until it holds, for a few minutes at most.
func WaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(4 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s did not come within 4 minutes", what)
}

// WantProblem fails unless the reply names field and the rule it broke.
func WantProblem(t *testing.T, r Reply, field, rule string) {
	t.Helper()
	if want := `"field":"` + field + `","rule":"` + rule + `"`; !strings.Contains(string(r.Body), want) {
		t.Fatalf("the reply does not say %s: %s", want, r.Body)
	}
}
