package apptest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/kernel/access"
	"nimbus/app/orchestration/approval"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/orchestration/environment"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Gated is a site with a deployed machine in tenant A's dev environment, and a second tenant
// admin of A to approve what the first asks for.
type Gated struct {
	*Site
	Env, Deployment string
	As              Tokens
}

// Tokens are the API tokens of a user, two tenant admins and a reader of tenant A, the tenant
// admin of B and the provider admin.
type Tokens struct {
	User, Admin, Admin2, Reader, Other, Root string
}

// NewGated starts a site as cfg says, deploys the shared machine into tenant A's dev
// environment and waits until it is deployed.
func NewGated(t *testing.T, cfg SiteConfig) *Gated {
	t.Helper()
	s := NewSiteWith(t, cfg)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	Must(t, err)
	g := &Gated{Site: s, Env: env.ID.String(), As: Tokens{User: s.Token(t, s.UserA), Admin: s.Token(t, s.AdminA),
		Admin2: s.Token(t, s.Member(t, "admin2-a@example.com", s.A.ID, access.TenantAdmin)),
		Reader: s.Token(t, s.ReaderA), Other: s.Token(t, s.AdminB), Root: s.Token(t, s.Admin)}}
	r := s.Call(t, "POST", "/api/v1/deployments", g.As.User, map[string]any{
		"component_id": s.Shared.ID, "environment_id": env.ID, "name": "web", "parameters": map[string]any{"name": "web-1"},
	})
	WantStatus(t, r, http.StatusAccepted)
	g.Deployment = r.JSON(t)["deployment"].(map[string]any)["id"].(string)
	if op := s.WaitOperation(t, g.As.User, r.JSON(t)["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("deploy: %v", op)
	}
	return g
}

// Policy makes a policy as the holder of token, which must succeed.
func (g *Gated) Policy(t *testing.T, token string, body map[string]any) string {
	t.Helper()
	r := g.Call(t, "POST", "/api/v1/approval-policies", token, body)
	WantStatus(t, r, http.StatusCreated)
	return r.JSON(t)["id"].(string)
}

// Destroy asks for the deployment's destroy as tenant admin A and waits until it awaits
// approval; it returns the operation and its request.
func (g *Gated) Destroy(t *testing.T) (op map[string]any, request map[string]any) {
	t.Helper()
	r := g.Call(t, "POST", "/api/v1/deployments/"+g.Deployment+"/destroy", g.As.Admin, nil)
	WantStatus(t, r, http.StatusAccepted)
	op = g.WaitStatus(t, g.As.Admin, r.JSON(t)["id"].(string), "awaiting_approval")
	return op, g.RequestOf(t, g.As.Admin, op["id"].(string), "")
}

// WaitStatus polls an operation until it reaches status, and fails when it ends otherwise.
func (g *Gated) WaitStatus(t *testing.T, token, id, status string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		op := g.Call(t, "GET", "/api/v1/operations/"+id, token, nil).JSON(t)
		switch op["status"] {
		case status:
			return op
		case "succeeded", "failed", "cancelled", "rejected":
			t.Fatalf("operation %s ended %s, want %s: %v", id, op["status"], status, op["error"])
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("operation %s did not reach %s in 3 minutes", id, status)
	return nil
}

// RequestOf finds the latest request of an operation in the list of approvals, filtered by
// query.
func (g *Gated) RequestOf(t *testing.T, token, operation, query string) map[string]any {
	t.Helper()
	var list struct{ Approvals []map[string]any }
	Must(t, json.Unmarshal(g.Call(t, "GET", "/api/v1/approvals"+query, token, nil).Body, &list))
	for _, a := range list.Approvals {
		if a["operation_id"] == operation {
			return a
		}
	}
	return nil
}

// Decide approves or rejects (decision) the approval request as the holder of token, with
// comment, and fails the test unless the answer has status.
func (g *Gated) Decide(t *testing.T, token, request, decision, comment string, status int) Reply {
	t.Helper()
	r := g.Call(t, "POST", "/api/v1/approvals/"+request+"/"+decision, token, map[string]any{"comment": comment})
	WantStatus(t, r, status)
	return r
}

// DeploymentStatus is the gated deployment's status, as its user reads it.
func (g *Gated) DeploymentStatus(t *testing.T) string {
	t.Helper()
	return g.Call(t, "GET", "/api/v1/deployments/"+g.Deployment, g.As.User, nil).JSON(t)["status"].(string)
}

// Mentions fails the test unless the reply's body holds want.
func Mentions(t *testing.T, r Reply, want string) {
	t.Helper()
	if !strings.Contains(string(r.Body), want) {
		t.Fatalf("reply %s does not mention %q", r.Body, want)
	}
}

// Request is tenant A's first deploy, by its user, waiting for one approval from a user of A
// under a policy on its environment, as the worker leaves it after the preview.
func (w *World) Request(t *testing.T) approval.Request {
	return Fixture(w, "request", func() approval.Request {
		ctx := context.Background()
		op := w.Web(t).Op
		_, err := w.Approvals.CreatePolicy(ctx, w.AdminA, approval.NewPolicy{Scope: "environment", ScopeID: w.Dev(t).ID.String(),
			Operations: []string{"deploy"}, ApproverRole: "user"})
		Must(t, err)
		err = db.Tx(ctx, w.Pool, func(q *dbgen.Queries) error {
			row, err := q.GetOperation(ctx, op.ID)
			if err != nil {
				return err
			}
			dep, err := q.GetDeployment(ctx, op.DeploymentID)
			if err != nil {
				return err
			}
			if wait, err := approval.NewGate(time.Hour).Hold(ctx, q, deploy.Gated{Operation: row.ID, Kind: row.Kind,
				Deployment: dep.ID, Name: dep.Name, Component: dep.ComponentID, Environment: dep.EnvironmentID, Tenant: dep.TenantID}); err != nil || !wait {
				return errors.Join(err, errors.New("the policy did not hold the deploy"))
			}
			_, err = w.Pool.Exec(ctx, `UPDATE operations SET status = 'awaiting_approval' WHERE id = $1`, op.ID)
			return err
		})
		Must(t, err)
		list, err := w.Approvals.List(ctx, w.Admin, "pending")
		Must(t, err)
		if len(list) != 1 {
			t.Fatalf("pending requests %v", list)
		}
		return list[0]
	})
}

// OperationStatus is the status of an operation, and its error.
func (w *World) OperationStatus(t *testing.T, id uuid.UUID) (status, msg string) {
	t.Helper()
	Must(t, w.Pool.QueryRow(context.Background(), `SELECT status, error FROM operations WHERE id = $1`, id).Scan(&status, &msg))
	return status, msg
}
