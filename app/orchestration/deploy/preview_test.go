package deploy_test

import (
	"net/http"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/component"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/orchestration/environment"
)

// family is a component whose program asks the simulated cloud for an image of the family it
// is given: a family that is no file name fails the preview, inside the engine.
const family = `name: family
runtime: yaml
config:
  name:
    type: string
  family:
    type: string
variables:
  image:
    fn::invoke:
      function: simcloud:index:getImage
      arguments:
        family: ${family}
      return: id
resources:
  disk:
    type: simcloud:index:Disk
    properties:
      name: ${name}
      image: ${image}
`

func TestPreview_AFailedOrAbandonedPreviewLeavesNoPendingDeployment(t *testing.T) {
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file"})
	ctx := t.Context()
	c, err := s.Components.Create(ctx, s.Admin, component.New{Draft: component.Draft{Name: "family", Language: "yaml", Code: family,
		InputSchema:  []byte(`{"type":"object","properties":{"name":{"type":"string"},"family":{"type":"string"}},"required":["name","family"]}`),
		OutputSchema: []byte(`{"type":"object","properties":{}}`)},
		Provider: "simcloud", SemanticType: "BlockStorage"})
	apptest.Must(t, err)
	_, err = s.Components.Publish(ctx, s.Admin, c.ID, c.Revision, "first")
	apptest.Must(t, err)
	env, err := environment.NewService(s.Pool).Create(ctx, s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user, admin := s.Token(t, s.UserA), s.Token(t, s.AdminA)
	preview := func(token, fam string, want int) (deployment, op string) {
		t.Helper()
		r := s.Call(t, "POST", "/api/v1/deployments", token, map[string]any{"component_id": c.ID, "environment_id": env.ID,
			"name": "data", "parameters": map[string]any{"name": "data-1", "family": fam}, "preview_only": true})
		apptest.WantStatus(t, r, want)
		if want != http.StatusAccepted {
			return "", ""
		}
		body := r.JSON(t)
		return body["deployment"].(map[string]any)["id"].(string), body["operation"].(map[string]any)["id"].(string)
	}
	listed := func() []any {
		t.Helper()
		r := s.Call(t, "GET", "/api/v1/deployments?environment_id="+env.ID.String(), user, nil)
		apptest.WantStatus(t, r, http.StatusOK)
		items, _ := r.JSON(t)["deployments"].([]any)
		return items
	}
	status := func(id string) string {
		t.Helper()
		var st string
		apptest.Must(t, s.Pool.QueryRow(ctx, `SELECT status FROM deployed_components WHERE id = $1`, id).Scan(&st))
		return st
	}

	// A preview that fails lets its deployment go as it ends: the name is free, nothing is listed.
	failed, op := preview(user, "No Such Family", http.StatusAccepted)
	if got := s.WaitOperation(t, user, op); got["status"] != "failed" {
		t.Fatalf("the preview of an image family that cannot be: %v", got)
	}
	if st := status(failed); st != string(deploy.Destroyed) {
		t.Fatalf("after its preview failed the deployment is %s, want it let go", st)
	}
	if items := listed(); len(items) != 0 {
		t.Fatalf("a failed preview's deployment is listed: %v", items)
	}
	if r := s.Call(t, "GET", "/api/v1/operations/"+op, user, nil); r.Status != http.StatusOK {
		t.Fatalf("the failed preview itself is gone (%d): its author must still read why", r.Status)
	}

	// Previewed again under the name, and again with a change: the author's own idle preview
	// gives its name to the next.
	first, op := preview(user, "debian-12", http.StatusAccepted)
	if got := s.WaitOperation(t, user, op); got["status"] != "succeeded" {
		t.Fatalf("preview: %v", got)
	}
	second, op := preview(user, "debian-13", http.StatusAccepted)
	if got := s.WaitOperation(t, user, op); got["status"] != "succeeded" {
		t.Fatalf("preview again: %v", got)
	}
	if st := status(first); st != string(deploy.Destroyed) {
		t.Fatalf("the preview previewed again is %s, want it let go", st)
	}
	if items := listed(); len(items) != 1 || items[0].(map[string]any)["id"] != second {
		t.Fatalf("after previewing twice the list is %v, want only the second", items)
	}
	// Someone else's preview keeps its name while its author may still apply it.
	preview(admin, "debian-12", http.StatusUnprocessableEntity)

	// Not applied for an hour, it is abandoned: the reaper lets it go, audited.
	_, err = s.Pool.Exec(ctx, `UPDATE deployed_components SET created_at = created_at - interval '2 hours' WHERE id = $1`, second)
	apptest.Must(t, err)
	apptest.Must(t, deploy.NewReaper(s.Pool).Work(ctx, nil))
	if st := status(second); st != string(deploy.Pending) {
		t.Fatalf("a preview that ended a moment ago was discarded (%s)", st)
	}
	_, err = s.Pool.Exec(ctx, `UPDATE operations SET finished_at = finished_at - interval '2 hours' WHERE deployment_id = $1`, second)
	apptest.Must(t, err)
	apptest.Must(t, deploy.NewReaper(s.Pool).Work(ctx, nil))
	if st := status(second); st != string(deploy.Destroyed) {
		t.Fatalf("a preview nobody applied for two hours is %s, want it let go", st)
	}
	var discards int
	apptest.Must(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = 'deployment.discard' AND target_id = $1`, second).Scan(&discards))
	if discards != 1 {
		t.Fatalf("%d audit records of the abandoned preview's discard, want 1", discards)
	}
	preview(admin, "debian-12", http.StatusAccepted)
}
