package server_test

import (
	"net/http"
	"testing"

	"github.com/google/uuid"
)

// What the operation's page and its deployment's history say about an ending is read from the
// outcome recorded with it: a deploy that ran out of its time and was undone says both, however
// its message is worded, even in the words that used to say something else. The API shows the
// outcome as fields.
func TestOperationPage_ExplainsTheEndingFromItsOutcome(t *testing.T) {
	s := newSite(t)
	op := waitingOperation(t, s)
	var deployment uuid.UUID
	err := s.pool.QueryRow(t.Context(), `UPDATE operations SET status = 'failed', outcome = 'timed_out', failed_step = 'up',
		undone = true, timed_out_after = '6s', started_at = now(), finished_at = now() WHERE id = $1 RETURNING deployment_id`, op).Scan(&deployment)
	must(t, err)
	b := newBrowser(t, s.url)
	b.signIn(t, "user-a@example.com", "long enough password")
	user := s.token(t, s.userA)
	const said = "It took longer than the 6s an operation may run; what it had made was removed again."
	for _, msg := range []string{
		"ran out of its 6s: step up: context deadline exceeded (everything it created was removed)",
		"the engine said something else entirely",
		"step resolve: boom (rolled back to the previous version and parameters)",
	} {
		_, err := s.pool.Exec(t.Context(), `UPDATE operations SET error = $2 WHERE id = $1`, op, msg)
		must(t, err)
		page := b.get(t, "/operations/"+op.String())
		wantStatus(t, page, http.StatusOK)
		wantIn(t, page, `data-testid="operation-summary">`+said+`<`)
		history := b.get(t, "/deployments/"+deployment.String())
		wantStatus(t, history, http.StatusOK)
		wantIn(t, history, `>`+said+`</td>`)
		r := s.call(t, "GET", "/api/v1/operations/"+op.String(), user, nil)
		wantStatus(t, r, http.StatusOK)
		wantIn(t, r, `"outcome":{"kind":"timed_out","failed_step":"up","undone":true,"timed_out_after":"6s"}`)
	}
}
