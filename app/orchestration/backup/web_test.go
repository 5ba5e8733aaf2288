package backup_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/component"
	"nimbus/app/orchestration/backup"
	"nimbus/app/orchestration/environment"
	"nimbus/db/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// A provider admin downloads a backup from the system page: a whole archive, the deployment's
// state in it, its key named, and who took it recorded. Nobody else may.
func TestDownload_ProviderAdminsTakeABackupFromTheSystemPage(t *testing.T) {
	s := apptest.NewSite(t)
	ctx := context.Background()
	c, err := s.Components.Create(ctx, s.Admin, component.New{
		Draft: component.Draft{Name: "secret-disk", Language: "yaml", Code: apptest.SecretProgram,
			InputSchema: []byte(`{"type": "object", "required": ["name", "token"], "properties": {
				"name": {"type": "string"}, "token": {"type": "string", "x-secret": true}}}`),
			OutputSchema: []byte(`{"type": "object", "properties": {"disk_id": {"type": "string"}, "token": {"type": "string"}}}`)},
		Provider: "simcloud", SemanticType: "VirtualMachine",
	})
	apptest.Must(t, err)
	_, err = s.Components.Publish(ctx, s.Admin, c.ID, c.Revision, "first")
	apptest.Must(t, err)
	env, err := environment.NewService(s.Pool).Create(ctx, s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user, admin := s.Token(t, s.UserA), s.Token(t, s.Admin)
	r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{
		"component_id": c.ID, "environment_id": env.ID, "name": "vault", "parameters": map[string]any{"name": "vault", "token": "t0ken"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	if op := s.WaitOperation(t, user, r.JSON(t)["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("deploy: %v", op)
	}

	page := s.Call(t, "GET", "/admin/system", admin, nil)
	apptest.WantStatus(t, page, http.StatusOK)
	if !strings.Contains(string(page.Body), `action="`+backup.DownloadPath+`"`) {
		t.Fatalf("the system page offers no backup:\n%s", page.Body)
	}
	apptest.WantStatus(t, s.Call(t, "POST", backup.DownloadPath, user, nil), http.StatusForbidden)

	r = s.Call(t, "POST", backup.DownloadPath, admin, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	if d := r.Header.Get("Content-Disposition"); !strings.HasPrefix(d, `attachment; filename="nimbus-`) {
		t.Fatalf("the backup comes as %q, not as a file to save", d)
	}
	archive := filepath.Join(t.TempDir(), "backup.tar.gz")
	apptest.Must(t, os.WriteFile(archive, r.Body, 0o600))
	m, err := backup.Verify(archive)
	if err != nil {
		t.Fatalf("the downloaded backup: %v", err)
	}
	states := 0
	for _, e := range m.Entries {
		if strings.HasPrefix(e.Name, "state/") && strings.HasSuffix(e.Name, ".json") {
			states++
		}
	}
	if states == 0 || m.KeyID == "" || m.StateBackend != "file" || m.Migration == 0 {
		t.Fatalf("the manifest holds %d states, key %q, backend %q, migration %d", states, m.KeyID, m.StateBackend, m.Migration)
	}
	var taken int
	apptest.Must(t, s.Pool.QueryRow(ctx, "SELECT count(*) FROM audit_events WHERE action = 'system.backup' AND actor_id = $1", s.Admin.UserID).Scan(&taken))
	if taken != 1 {
		t.Fatalf("%d audit events of the backup, want 1", taken)
	}
}
