package server_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"nimbus/app/component"
	"nimbus/app/component/corpus"
	"nimbus/app/environment"
	"nimbus/app/sandbox"
	"nimbus/app/server"
	"nimbus/app/system"
)

// TestContain_SandboxAloneStopsWhatTheValidatorMissed lets a tenant's program past the
// validator, as a hole in it would, and shows that the sandbox alone keeps it from a file
// outside its stack's directories and from another stack's state, through a check and through
// a deploy. Run unconfined, the same program reads both: the refusals are the sandbox's.
func TestContain_SandboxAloneStopsWhatTheValidatorMissed(t *testing.T) {
	if sandbox.ABI() == 0 {
		t.Fatal("this kernel has no Landlock: the sandbox cannot be shown here")
	}
	for _, mode := range []sandbox.Mode{sandbox.Required, sandbox.Off} {
		t.Run(string(mode), func(t *testing.T) {
			s := newSiteWith(t, siteConfig{backend: "file", sandbox: mode})
			ctx := t.Context()
			canary := "canary-" + randomHex(t)
			outside := filepath.Join(s.data, "outside.txt")
			// Readable by every account, so that what refuses the program is the sandbox.
			must(t, os.WriteFile(outside, []byte(canary), 0o644))
			env, err := environment.NewService(s.pool).Create(ctx, s.adminA, s.a.ID, "dev")
			must(t, err)
			user, admin := s.token(t, s.userA), s.token(t, s.adminA)

			// Another deployment's stack, whose state the program goes after.
			r := s.call(t, "POST", "/api/v1/deployments", user, map[string]any{
				"component_id": s.shared.ID, "environment_id": env.ID, "name": "other", "parameters": map[string]any{"name": "other"}})
			wantStatus(t, r, http.StatusAccepted)
			if op := s.waitOperation(t, user, r.json(t)["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
				t.Fatalf("deploy the other stack: %v", op)
			}
			states, _ := filepath.Glob(filepath.Join(s.data, "state", "*", ".pulumi", "stacks", "*", "*.json"))
			if len(states) != 1 {
				t.Fatalf("state files %v, want the other stack's", states)
			}
			otherState := states[0]
			marker := "urn:pulumi:" // in every state file, nowhere in a refusal

			_, err = s.components.Publish(ctx, s.admin, s.ofA.ID, s.ofA.Revision, "first")
			must(t, err)
			evil := s.ofA.Code + "  stolen:\n    fn::readFile: " + outside + "\n  state:\n    fn::readFile: " + otherState + "\n"
			r = s.call(t, "PATCH", "/api/v1/components/"+s.ofA.ID.String(), admin, map[string]any{"code": evil})
			wantStatus(t, r, http.StatusUnprocessableEntity)
			if !strings.Contains(string(r.body), `"rule":"file_access"`) {
				t.Fatalf("the validator let it through: %s", r.body)
			}
			// Past the validator: the program goes straight into the draft and the version.
			_, err = s.pool.Exec(ctx, `UPDATE components SET code = $1 WHERE id = $2`, evil, s.ofA.ID)
			must(t, err)
			_, err = s.pool.Exec(ctx, `UPDATE component_versions SET code = $1 WHERE component_id = $2`, evil, s.ofA.ID)
			must(t, err)

			chk := s.check(t, admin, s.ofA.ID.String())
			output, _ := chk["output"].(string)
			r = s.call(t, "POST", "/api/v1/deployments", user, map[string]any{
				"component_id": s.ofA.ID, "environment_id": env.ID, "name": "thief", "parameters": map[string]any{"name": "thief"}})
			wantStatus(t, r, http.StatusAccepted)
			body := r.json(t)
			op := s.waitOperation(t, user, body["operation"].(map[string]any)["id"].(string))
			logs := string(s.call(t, "GET", "/api/v1/operations/"+op["id"].(string)+"/logs", user, nil).body)
			dep := string(s.call(t, "GET", "/api/v1/deployments/"+body["deployment"].(map[string]any)["id"].(string), user, nil).body)
			read := func(what string) bool {
				return strings.Contains(output, what) || strings.Contains(logs, what) || strings.Contains(dep, what)
			}

			if mode == sandbox.Off {
				// Unconfined, the program reads both: without this, the refusals below prove nothing.
				if chk["status"] != "succeeded" || op["status"] != "succeeded" || !read(canary) || !read(marker) {
					t.Fatalf("unconfined, the program did not read the files: check %v %q, deploy %v\n%s", chk["status"], output, op["status"], dep)
				}
				return
			}
			if chk["status"] != "failed" || !strings.Contains(strings.ToLower(output), "permission denied") {
				t.Errorf("the check %v: %s", chk["status"], output)
			}
			if op["status"] != "failed" || !strings.Contains(strings.ToLower(logs), "permission denied") {
				t.Errorf("the deploy %v: %v\n%s", op["status"], op["error"], logs)
			}
			if read(canary) || read(marker) {
				t.Errorf("the program read a file outside its stack:\ncheck: %s\nlog: %s\ndeployment: %s", output, logs, dep)
			}
			if b, err := os.ReadFile(otherState); err != nil || !strings.Contains(string(b), marker) {
				t.Errorf("the other stack's state is gone: %v", err)
			}
		})
	}
}

func randomHex(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// Provider admins see on the system page whether the engine is confined.
func TestPages_SystemSaysWhetherTheEngineIsConfined(t *testing.T) {
	for _, sb := range []system.Sandbox{
		{Confined: true, Text: "Landlock ABI 7: each engine process reaches only its own stack's directories"},
		{Text: "this kernel has no Landlock: engine processes are not confined"},
	} {
		s := newSite(t, func(d *server.Deps) { d.Info.Sandbox = sb })
		b := newBrowser(t, s.url)
		b.signIn(t, "root@example.com", "correct horse battery")
		page := string(b.get(t, "/admin/system").body)
		status := "err"
		if sb.Confined {
			status = "ok"
		}
		if !strings.Contains(page, "Engine sandbox") || !strings.Contains(page, `status-dot `+status+`"></span> `+html.EscapeString(sb.Text)) {
			t.Errorf("the system page does not say %q as %s:\n%.3000s", sb.Text, status, page)
		}
	}
}

// The engine's conformance programs, posted as components: none is answered with a server
// error; a provider admin's are created or refused only for reading the server's files or the
// network, and a tenant's are created or refused only for reaching beyond their stack.
func TestAPI_ConformanceProgramsAreAcceptedOrRefusedForReach(t *testing.T) {
	s := newSite(t)
	admin, tenantAdmin := s.token(t, s.admin), s.token(t, s.adminA)
	// post creates the program as a component and tells whether it was; a refusal may name
	// only the given rules.
	post := func(name, token string, body map[string]any, rules []string, refused map[string]int) bool {
		r := s.call(t, "POST", "/api/v1/components", token, body)
		switch r.status {
		case http.StatusCreated:
			return true
		case http.StatusUnprocessableEntity:
			var problem struct {
				Errors []struct{ Field, Rule string }
			}
			must(t, json.Unmarshal(r.body, &problem))
			for _, f := range problem.Errors {
				if f.Field != "code" || !slices.Contains(rules, f.Rule) {
					t.Errorf("%s: refused by %s on %s: %s", name, f.Rule, f.Field, r.body)
				}
				refused[f.Rule]++
			}
		default:
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
		return false
	}
	created, refused := map[string]int{}, map[string]map[string]int{"provider": {}, "tenant": {}}
	programs := corpus.Programs(t)
	for i, p := range programs {
		body := func(name string) map[string]any {
			return map[string]any{"name": name, "provider": "simcloud", "semantic_type": "VirtualMachine", "language": "yaml",
				"code": p.Code, "input_schema": json.RawMessage(`{"type": "object", "properties": {}}`),
				"output_schema": json.RawMessage(`{"type": "object", "properties": {}}`)}
		}
		if post(p.Name+" as a provider admin's", admin, body(fmt.Sprintf("provider-%d", i)),
			[]string{component.RuleFileAccess, component.RuleNetworkFetch}, refused["provider"]) {
			created["provider"]++
		}
		tenant := body(fmt.Sprintf("tenant-%d", i))
		tenant["tenant_id"] = s.a.ID
		if post(p.Name+" as a tenant's", tenantAdmin, tenant, component.ReachRules, refused["tenant"]) {
			created["tenant"]++
		}
	}
	t.Logf("%d programs; created %v; refusals by rule %v", len(programs), created, refused)
}
