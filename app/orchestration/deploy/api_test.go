package deploy_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"nimbus/app/apptest"
	"nimbus/app/kernel/graph"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/orchestration/environment"
)

func TestAPI_DeployThenDestroyTheMachine(t *testing.T) {
	apptest.OnBackends(t, func(t *testing.T, s *apptest.Site) {
		env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
		apptest.Must(t, err)
		user, admin := s.Token(t, s.UserA), s.Token(t, s.AdminA)

		r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{
			"component_id": s.Shared.ID, "environment_id": env.ID, "name": "web", "parameters": map[string]any{"name": "web-1", "cores": 4},
		})
		apptest.WantStatus(t, r, http.StatusAccepted)
		body := r.JSON(t)
		depID := body["deployment"].(map[string]any)["id"].(string)
		op := s.WaitOperation(t, user, body["operation"].(map[string]any)["id"].(string))
		if op["status"] != "succeeded" {
			t.Fatalf("deploy: %v", op)
		}
		dep := s.Call(t, "GET", "/api/v1/deployments/"+depID, user, nil).JSON(t)
		outputs, _ := dep["outputs"].(map[string]any)
		if dep["status"] != "deployed" || !strings.HasPrefix(outputs["machine_id"].(string), "m-") || outputs["ip_address"] == "" {
			t.Fatalf("deployment %v", dep)
		}
		if got := strings.Join(s.CloudFiles(t), ","); got != "disk,machine" {
			t.Fatalf("the cloud holds %s, want a disk and a machine", got)
		}
		b := apptest.NewBrowser(t, s.URL)
		b.SignIn(t, "reader-a@example.com", "long enough password")
		if page := string(b.Get(t, "/deployments").Body); !strings.Contains(page, ">web<") || !strings.Contains(page, "deployed") {
			t.Fatalf("the deployments page does not list web as deployed: %.1500s", page)
		}
		logs := s.Call(t, "GET", "/api/v1/operations/"+op["id"].(string)+"/logs", user, nil)
		if !strings.Contains(string(logs.Body), "simcloud:index:Machine") {
			t.Fatalf("the log does not show the engine's progress: %.500s", logs.Body)
		}

		r = s.Call(t, "POST", "/api/v1/deployments/"+depID+"/destroy", admin, nil)
		apptest.WantStatus(t, r, http.StatusAccepted)
		if op := s.WaitOperation(t, admin, r.JSON(t)["id"].(string)); op["status"] != "succeeded" {
			t.Fatalf("destroy: %v", op)
		}
		if files := s.CloudFiles(t); len(files) != 0 {
			t.Fatalf("left in the cloud after destroy: %v", files)
		}
		if dep := s.Call(t, "GET", "/api/v1/deployments/"+depID, user, nil).JSON(t); dep["status"] != "destroyed" {
			t.Fatalf("deployment %v", dep)
		}
		apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/deployments/"+depID+"/destroy", admin, nil), http.StatusUnprocessableEntity)
	})
}

func TestAPI_FailedDeployCompensates(t *testing.T) {
	apptest.OnBackends(t, func(t *testing.T, s *apptest.Site) {
		env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
		apptest.Must(t, err)
		user := s.Token(t, s.UserA)
		r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{
			"component_id": s.Shared.ID, "environment_id": env.ID, "name": "doomed", "parameters": map[string]any{"name": "doomed", "fail_on": "create"},
		})
		apptest.WantStatus(t, r, http.StatusAccepted)
		body := r.JSON(t)
		op := s.WaitOperation(t, user, body["operation"].(map[string]any)["id"].(string))
		if op["status"] != "failed" || !strings.Contains(op["error"].(string), "injected failure") {
			t.Fatalf("operation %v: want failed with the provider's cause", op)
		}
		// The disk was created before the machine failed; compensation destroyed it.
		if files := s.CloudFiles(t); len(files) != 0 {
			t.Fatalf("left in the cloud: %v", files)
		}
		dep := s.Call(t, "GET", "/api/v1/deployments/"+body["deployment"].(map[string]any)["id"].(string), user, nil).JSON(t)
		if dep["status"] != "failed" {
			t.Fatalf("deployment %v", dep)
		}
		if _, err := os.Stat(s.Cloud); err != nil {
			t.Fatal(err)
		}
	})
}

func TestAPI_DeployRefusesBadParameters(t *testing.T) {
	s := apptest.NewSite(t)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user := s.Token(t, s.UserA)
	r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{
		"component_id": s.Shared.ID, "environment_id": env.ID, "name": "web", "parameters": map[string]any{"cores": 65, "colour": "red"},
	})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	for _, want := range []string{`"field":"parameters.name"`, `"field":"parameters.cores"`, `"field":"parameters.colour"`} {
		if !strings.Contains(string(r.Body), want) {
			t.Errorf("reply lacks %s: %s", want, r.Body)
		}
	}
	r = s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{
		"component_id": s.Shared.ID, "version": 9, "environment_id": env.ID, "name": "web", "parameters": map[string]any{"name": "web"},
	})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `"field":"version"`) || !strings.Contains(string(r.Body), "no published version 9") {
		t.Errorf("a version that does not exist: %s", r.Body)
	}
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/deployments", user, `{"component_id": "not an id"}`), http.StatusBadRequest)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/deployments/"+env.ID.String()+"/update", user, `{}`), http.StatusNotFound)
}

func TestAPI_CancelDuringUpUndoes(t *testing.T) {
	apptest.OnBackends(t, func(t *testing.T, s *apptest.Site) {
		env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
		apptest.Must(t, err)
		user := s.Token(t, s.UserA)
		r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{
			"component_id": s.Shared.ID, "environment_id": env.ID, "name": "slow", "parameters": map[string]any{"name": "slow", "delay_ms": 60000},
		})
		apptest.WantStatus(t, r, http.StatusAccepted)
		opID := r.JSON(t)["operation"].(map[string]any)["id"].(string)
		// Wait until up has begun: the disk exists while the machine waits out its delay.
		deadline := time.Now().Add(time.Minute)
		for len(s.CloudFiles(t)) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("up never began")
			}
			time.Sleep(100 * time.Millisecond)
		}
		apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/operations/"+opID+"/cancel", user, nil), http.StatusAccepted)
		op := s.WaitOperation(t, user, opID)
		if op["status"] != "cancelled" {
			t.Fatalf("operation %v", op)
		}
		if files := s.CloudFiles(t); len(files) != 0 {
			t.Fatalf("left in the cloud after a cancel: %v", files)
		}
	})
}

func TestAPI_DeployedVersionCannotBeArchivedAndCounts(t *testing.T) {
	s := apptest.NewSite(t)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user, root := s.Token(t, s.UserA), s.Token(t, s.Admin)
	r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{
		"component_id": s.Shared.ID, "environment_id": env.ID, "name": "kept", "parameters": map[string]any{"name": "kept"},
	})
	apptest.WantStatus(t, r, http.StatusAccepted)
	s.WaitOperation(t, user, r.JSON(t)["operation"].(map[string]any)["id"].(string))

	r = s.Call(t, "POST", "/api/v1/components/"+s.Shared.ID.String()+"/versions/1/archive", root, nil)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), "is deployed") {
		t.Fatalf("archive of a deployed version: %s", r.Body)
	}
	cat := s.Call(t, "GET", "/api/v1/components?search=shared-machine", user, nil)
	if !strings.Contains(string(cat.Body), `"deployments":1`) {
		t.Fatalf("catalog does not count the deployment: %s", cat.Body)
	}
}

func TestAPI_UpdateUpgradeStateAndFilters(t *testing.T) {
	apptest.OnBackends(t, func(t *testing.T, s *apptest.Site) {
		env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
		apptest.Must(t, err)
		user, admin := s.Token(t, s.UserA), s.Token(t, s.AdminA)
		r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{
			"component_id": s.Shared.ID, "environment_id": env.ID, "name": "web", "parameters": map[string]any{"name": "web-1"},
		})
		apptest.WantStatus(t, r, http.StatusAccepted)
		body := r.JSON(t)
		depID := body["deployment"].(map[string]any)["id"].(string)

		// An update asked for while the deploy runs waits behind it, and says so.
		r = s.Call(t, "POST", "/api/v1/deployments/"+depID+"/update", user, map[string]any{"parameters": map[string]any{"cores": 3}})
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity) // not deployed yet: an update needs something to update
		if op := s.WaitOperation(t, user, body["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
			t.Fatalf("deploy: %v", op)
		}

		// A preview of new parameters changes nothing; applying it updates with exactly them.
		r = s.Call(t, "POST", "/api/v1/deployments/"+depID+"/preview", user, map[string]any{"parameters": map[string]any{"cores": 3}})
		apptest.WantStatus(t, r, http.StatusAccepted)
		preview := s.WaitOperation(t, user, r.JSON(t)["id"].(string))
		resources, _ := preview["resources"].([]any)
		var machineChange map[string]any
		for _, res := range resources {
			if m := res.(map[string]any); m["name"] == "machine" {
				machineChange = m
			}
		}
		if machineChange == nil || machineChange["op"] != "update" || !strings.Contains(fmt.Sprint(machineChange["changes"]), "cores") {
			t.Fatalf("the preview's machine: %v", machineChange)
		}
		if dep := s.Call(t, "GET", "/api/v1/deployments/"+depID, user, nil).JSON(t); dep["parameters"].(map[string]any)["cores"] != 2.0 {
			t.Fatalf("a preview changed the parameters: %v", dep["parameters"])
		}
		r = s.Call(t, "POST", "/api/v1/operations/"+preview["id"].(string)+"/apply", user, nil)
		apptest.WantStatus(t, r, http.StatusAccepted)
		if op := s.WaitOperation(t, user, r.JSON(t)["id"].(string)); op["status"] != "succeeded" || op["kind"] != "update" {
			t.Fatalf("applying the preview: %v", op)
		}
		if dep := s.Call(t, "GET", "/api/v1/deployments/"+depID, user, nil).JSON(t); dep["parameters"].(map[string]any)["cores"] != 3.0 {
			t.Fatalf("after the update: %v", dep["parameters"])
		}
		// The deployment changed since the preview: applying it again is refused.
		r = s.Call(t, "POST", "/api/v1/operations/"+preview["id"].(string)+"/apply", user, nil)
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
		if !strings.Contains(string(r.Body), "preview it again") {
			t.Fatalf("a stale preview applied: %s", r.Body)
		}

		// An update the provider refuses rolls back to what ran before.
		r = s.Call(t, "POST", "/api/v1/deployments/"+depID+"/update", user, map[string]any{"parameters": map[string]any{"cores": 5, "fail_on": "update"}})
		apptest.WantStatus(t, r, http.StatusAccepted)
		failed := s.WaitOperation(t, user, r.JSON(t)["id"].(string))
		if failed["status"] != "failed" || !strings.Contains(failed["error"].(string), "rolled back") {
			t.Fatalf("a failing update: %v", failed)
		}
		dep := s.Call(t, "GET", "/api/v1/deployments/"+depID, user, nil).JSON(t)
		if dep["status"] != "deployed" || dep["parameters"].(map[string]any)["cores"] != 3.0 {
			t.Fatalf("after the rolled back update: %v", dep)
		}

		// A machine changed behind Nimbus's back: a refresh reads it back, and changes nothing
		// in the deployment itself.
		machines, _ := filepath.Glob(filepath.Join(s.Cloud, "machine", "*.json"))
		if len(machines) != 1 {
			t.Fatalf("machines: %v", machines)
		}
		raw, err := os.ReadFile(machines[0])
		apptest.Must(t, err)
		var m map[string]any
		apptest.Must(t, json.Unmarshal(raw, &m))
		m["cores"] = 7
		raw, _ = json.Marshal(m)
		apptest.Must(t, os.WriteFile(machines[0], raw, 0o600))
		r = s.Call(t, "POST", "/api/v1/deployments/"+depID+"/refresh", user, nil)
		apptest.WantStatus(t, r, http.StatusAccepted)
		refresh := s.WaitOperation(t, user, r.JSON(t)["id"].(string))
		if refresh["status"] != "succeeded" || refresh["changes"].(map[string]any)["update"] != 1.0 {
			t.Fatalf("refresh: %v, want the drifted machine read back", refresh)
		}

		// No newer version: an upgrade is refused by name; upgrading is for tenant admins.
		r = s.Call(t, "POST", "/api/v1/deployments/"+depID+"/upgrade", user, nil)
		apptest.WantStatus(t, r, http.StatusForbidden)
		r = s.Call(t, "POST", "/api/v1/deployments/"+depID+"/upgrade", admin, nil)
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
		if !strings.Contains(string(r.Body), `"version"`) {
			t.Fatalf("refused upgrade: %s", r.Body)
		}

		// History filters.
		list := s.Call(t, "GET", "/api/v1/operations?deployment_id="+depID+"&kind=update&status=failed", user, nil).JSON(t)
		if ops := list["operations"].([]any); len(ops) != 1 {
			t.Fatalf("failed updates: %v", ops)
		}
		apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/operations?kind=explode", user, nil), http.StatusUnprocessableEntity)
		deps := s.Call(t, "GET", "/api/v1/deployments?status=deployed&environment_id="+env.ID.String(), user, nil).JSON(t)
		if len(deps["deployments"].([]any)) != 1 {
			t.Fatalf("deployed in dev: %v", deps)
		}

		// The state: exported by tenant admins, restored by provider admins only.
		apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/deployments/"+depID+"/state", user, nil), http.StatusForbidden)
		r = s.Call(t, "GET", "/api/v1/deployments/"+depID+"/state", admin, nil)
		apptest.WantStatus(t, r, http.StatusOK)
		state := r.Body
		if !strings.Contains(string(state), "simcloud:index:Machine") {
			t.Fatalf("the export holds no machine: %.300s", state)
		}
		provider := s.Token(t, s.Admin)
		apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/deployments/"+depID+"/state", admin, string(state)), http.StatusForbidden)
		r = s.Call(t, "PUT", "/api/v1/deployments/"+depID+"/state", provider, `{"nonsense": true}`)
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
		apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/deployments/"+depID+"/state", provider, string(state)), http.StatusNoContent)
		restoresReply := s.Call(t, "GET", "/api/v1/operations?deployment_id="+depID+"&kind=restore", admin, nil)
		apptest.WantStatus(t, restoresReply, http.StatusOK)
		restores, _ := restoresReply.JSON(t)["operations"].([]any)
		if len(restores) != 2 || restores[0].(map[string]any)["status"] != "succeeded" || restores[1].(map[string]any)["status"] != "failed" {
			t.Fatalf("the restores in the history: %v, want the refused one failed and the good one succeeded", restores)
		}

		r = s.Call(t, "POST", "/api/v1/deployments/"+depID+"/destroy", admin, nil)
		apptest.WantStatus(t, r, http.StatusAccepted)
		if op := s.WaitOperation(t, admin, r.JSON(t)["id"].(string)); op["status"] != "succeeded" {
			t.Fatalf("destroy after a restore: %v", op)
		}
		if files := s.CloudFiles(t); len(files) != 0 {
			t.Fatalf("left in the cloud: %v", files)
		}
		apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/deployments/"+depID+"/destroy", admin, nil), http.StatusUnprocessableEntity)
	})
}

// A provider that hangs runs the operation out of its time: it fails saying so, and what it
// had created is destroyed.
func TestAPI_HangingProviderTimesOutAndCompensates(t *testing.T) {
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", OperationTimeout: 6 * time.Second})
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user := s.Token(t, s.UserA)
	r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{
		"component_id": s.Shared.ID, "environment_id": env.ID, "name": "stuck", "parameters": map[string]any{"name": "stuck", "delay_ms": 600000},
	})
	apptest.WantStatus(t, r, http.StatusAccepted)
	body := r.JSON(t)
	started := time.Now()
	op := s.WaitOperation(t, user, body["operation"].(map[string]any)["id"].(string))
	t.Logf("the operation ended %s after it was asked for", time.Since(started).Round(time.Second))
	if op["status"] != "failed" || !strings.Contains(op["error"].(string), "ran out of its 6s") {
		t.Fatalf("operation %v: want failed, saying it ran out of time", op)
	}
	if files := s.CloudFiles(t); len(files) != 0 {
		t.Fatalf("left in the cloud: %v", files)
	}
	dep := s.Call(t, "GET", "/api/v1/deployments/"+body["deployment"].(map[string]any)["id"].(string), user, nil).JSON(t)
	if dep["status"] != "failed" {
		t.Fatalf("deployment %v", dep)
	}
}

// An operation whose job gave up is found by the reaper and run, instead of holding up its
// deployment for ever.
func TestReaper_RunsAnOrphanedOperation(t *testing.T) {
	s := apptest.NewSite(t)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user := s.Token(t, s.UserA)
	r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{
		"component_id": s.Shared.ID, "environment_id": env.ID, "name": "web", "parameters": map[string]any{"name": "web-1"},
	})
	apptest.WantStatus(t, r, http.StatusAccepted)
	body := r.JSON(t)
	if op := s.WaitOperation(t, user, body["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("deploy: %v", op)
	}
	var orphan string
	apptest.Must(t, s.Pool.QueryRow(t.Context(), `INSERT INTO operations (deployment_id, kind, created_at) VALUES ($1, 'refresh', now() - interval '2 minutes')
		RETURNING id::text`, body["deployment"].(map[string]any)["id"]).Scan(&orphan))
	if _, err := s.Jobs.Insert(t.Context(), deploy.ReaperArgs{}, nil); err != nil {
		t.Fatal(err)
	}
	if op := s.WaitOperation(t, user, orphan); op["status"] != "succeeded" {
		t.Fatalf("the orphan: %v", op)
	}
}

// A graph that nothing moves (its step's job died with its server) is asked for its next step
// by the reaper, in the one sweep; one whose step is waiting in the queue is left to it.
func TestReaper_AsksStalledGraphsForTheirNextStep(t *testing.T) {
	s := apptest.NewSite(t)
	ctx := t.Context()
	envs := environment.NewService(s.Pool)
	stuck, err := envs.Create(ctx, s.AdminA, s.A.ID, "stuck")
	apptest.Must(t, err)
	waiting, err := envs.Create(ctx, s.AdminA, s.A.ID, "waiting")
	apptest.Must(t, err)
	for _, id := range []uuid.UUID{stuck.ID, waiting.ID} {
		_, err := s.Pool.Exec(ctx, `UPDATE environments SET status = 'provisioning', updated_at = now() - interval '2 minutes' WHERE id = $1`, id)
		apptest.Must(t, err)
	}
	_, err = s.Jobs.Insert(ctx, graph.Args{Parent: graph.ParentEnvironment, ID: waiting.ID}, &river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)})
	apptest.Must(t, err)
	graphJobs := func(id uuid.UUID) (n int) {
		apptest.Must(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'graph' AND args->>'id' = $1::text`, id).Scan(&n))
		return n
	}
	before := graphJobs(waiting.ID)

	if _, err := s.Jobs.Insert(ctx, deploy.ReaperArgs{}, nil); err != nil {
		t.Fatal(err)
	}
	status := func(id uuid.UUID) (st string) {
		apptest.Must(t, s.Pool.QueryRow(ctx, `SELECT status FROM environments WHERE id = $1`, id).Scan(&st))
		return st
	}
	deadline := time.Now().Add(time.Minute)
	for status(stuck.ID) == "provisioning" && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if st := status(stuck.ID); st != "active" {
		t.Fatalf("the stalled environment is %s, want active: its graph's step was not asked for", st)
	}
	if n := graphJobs(waiting.ID); n != before || status(waiting.ID) != "provisioning" {
		t.Fatalf("the environment whose step waits has %d graph jobs (%d before the sweep) and is %s; want it left to its job", n, before, status(waiting.ID))
	}
}
