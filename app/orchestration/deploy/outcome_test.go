package deploy_test

import (
	"net/http"
	"strings"
	"testing"

	"nimbus/app/apptest"

	"github.com/google/uuid"
)

// What the operation's page and its deployment's history say about an ending is read from the
// outcome recorded with it: a deploy that ran out of its time and was undone says both, however
// its message is worded, even in the words that used to say something else. The API shows the
// outcome as fields.
func TestOperationPage_ExplainsTheEndingFromItsOutcome(t *testing.T) {
	s := apptest.NewSite(t)
	op := waitingOperation(t, s)
	var deployment uuid.UUID
	err := s.Pool.QueryRow(t.Context(), `UPDATE operations SET status = 'failed', outcome = 'timed_out', failed_step = 'up',
		undone = true, timed_out_after = '6s', started_at = now(), finished_at = now() WHERE id = $1 RETURNING deployment_id`, op).Scan(&deployment)
	apptest.Must(t, err)
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "user-a@example.com", "long enough password")
	user := s.Token(t, s.UserA)
	const said = "It took longer than the 6s an operation may run; what it had made was removed again."
	for _, msg := range []string{
		"ran out of its 6s: step up: context deadline exceeded (everything it created was removed)",
		"the engine said something else entirely",
		"step resolve: boom (rolled back to the previous version and parameters)",
	} {
		_, err := s.Pool.Exec(t.Context(), `UPDATE operations SET error = $2 WHERE id = $1`, op, msg)
		apptest.Must(t, err)
		page := b.Get(t, "/operations/"+op.String())
		apptest.WantStatus(t, page, http.StatusOK)
		apptest.WantIn(t, page, `data-testid="operation-summary">`+said+`<`)
		history := b.Get(t, "/deployments/"+deployment.String())
		apptest.WantStatus(t, history, http.StatusOK)
		apptest.WantIn(t, history, `>`+said+`</td>`)
		r := s.Call(t, "GET", "/api/v1/operations/"+op.String(), user, nil)
		apptest.WantStatus(t, r, http.StatusOK)
		apptest.WantIn(t, r, `"outcome":{"kind":"timed_out","failed_step":"up","undone":true,"timed_out_after":"6s"}`)
	}
}

// TestDeploymentPage_AUserWhoMayNotDestroyIsToldWhoMay: the destroy form is for those who may
// destroy; one who may deploy but not destroy reads whom to ask instead of meeting a refusal.
func TestDeploymentPage_AUserWhoMayNotDestroyIsToldWhoMay(t *testing.T) {
	s := apptest.NewSite(t)
	op := waitingOperation(t, s)
	var deployment string
	apptest.Must(t, s.Pool.QueryRow(t.Context(), `SELECT deployment_id::text FROM operations WHERE id = $1`, op).Scan(&deployment))
	user := apptest.NewBrowser(t, s.URL)
	user.SignIn(t, "user-a@example.com", "long enough password")
	page := user.Get(t, "/deployments/"+deployment)
	apptest.WantIn(t, page, `data-testid="destroy-who">Only the admins of Tenant A may destroy web: ask admin-a@example.com.<`)
	if strings.Contains(string(page.Body), `data-testid="destroy-form"`) {
		t.Fatal("a user who may not destroy is offered the destroy form")
	}
	admin := apptest.NewBrowser(t, s.URL)
	admin.SignIn(t, "admin-a@example.com", "long enough password")
	if page := admin.Get(t, "/deployments/"+deployment); !strings.Contains(string(page.Body), `data-testid="destroy-form"`) || strings.Contains(string(page.Body), `data-testid="destroy-who"`) {
		t.Fatal("the tenant's admin is not offered the destroy form")
	}
}
