package sandbox_test

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/component"
	"nimbus/app/domain/component/corpus"
	"nimbus/app/domain/system"
	"nimbus/app/kernel/sandbox"
	"nimbus/app/orchestration/environment"
	"nimbus/app/server"
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
			s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", Sandbox: mode})
			ctx := t.Context()
			canary := "canary-" + apptest.RandomHex(t)
			outside := filepath.Join(s.Data, "outside.txt")
			// Readable by every account, so that what refuses the program is the sandbox.
			apptest.Must(t, os.WriteFile(outside, []byte(canary), 0o644))
			env, err := environment.NewService(s.Pool).Create(ctx, s.AdminA, s.A.ID, "dev")
			apptest.Must(t, err)
			user, admin := s.Token(t, s.UserA), s.Token(t, s.AdminA)

			// Another deployment's stack, whose state the program goes after.
			r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{
				"component_id": s.Shared.ID, "environment_id": env.ID, "name": "other", "parameters": map[string]any{"name": "other"}})
			apptest.WantStatus(t, r, http.StatusAccepted)
			if op := s.WaitOperation(t, user, r.JSON(t)["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
				t.Fatalf("deploy the other stack: %v", op)
			}
			states, _ := filepath.Glob(filepath.Join(s.Data, "state", "*", ".pulumi", "stacks", "*", "*.json"))
			if len(states) != 1 {
				t.Fatalf("state files %v, want the other stack's", states)
			}
			otherState := states[0]
			marker := "urn:pulumi:" // in every state file, nowhere in a refusal

			_, err = s.Components.Publish(ctx, s.Admin, s.OfA.ID, s.OfA.Revision, "first")
			apptest.Must(t, err)
			evil := s.OfA.Code + "  stolen:\n    fn::readFile: " + outside + "\n  state:\n    fn::readFile: " + otherState + "\n"
			r = s.Call(t, "PATCH", "/api/v1/components/"+s.OfA.ID.String(), admin, map[string]any{"code": evil})
			apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
			if !strings.Contains(string(r.Body), `"rule":"file_access"`) {
				t.Fatalf("the validator let it through: %s", r.Body)
			}
			// Past the validator: the program goes straight into the draft and the version.
			_, err = s.Pool.Exec(ctx, `UPDATE components SET code = $1 WHERE id = $2`, evil, s.OfA.ID)
			apptest.Must(t, err)
			_, err = s.Pool.Exec(ctx, `UPDATE component_versions SET code = $1 WHERE component_id = $2`, evil, s.OfA.ID)
			apptest.Must(t, err)

			chk := s.Check(t, admin, s.OfA.ID.String())
			output, _ := chk["output"].(string)
			r = s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{
				"component_id": s.OfA.ID, "environment_id": env.ID, "name": "thief", "parameters": map[string]any{"name": "thief"}})
			apptest.WantStatus(t, r, http.StatusAccepted)
			body := r.JSON(t)
			op := s.WaitOperation(t, user, body["operation"].(map[string]any)["id"].(string))
			logs := string(s.Call(t, "GET", "/api/v1/operations/"+op["id"].(string)+"/logs", user, nil).Body)
			dep := string(s.Call(t, "GET", "/api/v1/deployments/"+body["deployment"].(map[string]any)["id"].(string), user, nil).Body)
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

// TestContain_SandboxAloneStopsWhatAProviderWouldDo lets a tenant's program past the validator
// and calls the simulated cloud's test-only probe, which does what a provider that could be
// talked into it would: run a command, connect to Nimbus's own port, write into another
// stack's state and into the cloud every deployment shares. Through a check and a deploy, the
// sandbox alone refuses each, and a check writes nothing outside its own scratch. Run
// unconfined, the same program does it all: the refusals are the sandbox's.
func TestContain_SandboxAloneStopsWhatAProviderWouldDo(t *testing.T) {
	if sandbox.ABI() < 4 {
		t.Fatalf("this kernel's Landlock (ABI %d) cannot confine TCP: the sandbox cannot be shown here", sandbox.ABI())
	}
	for _, mode := range []sandbox.Mode{sandbox.Required, sandbox.Off} {
		t.Run(string(mode), func(t *testing.T) {
			s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", Sandbox: mode, Probes: true})
			ctx := t.Context()
			env, err := environment.NewService(s.Pool).Create(ctx, s.AdminA, s.A.ID, "dev")
			apptest.Must(t, err)
			user, admin := s.Token(t, s.UserA), s.Token(t, s.AdminA)
			r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{
				"component_id": s.Shared.ID, "environment_id": env.ID, "name": "other", "parameters": map[string]any{"name": "other"}})
			apptest.WantStatus(t, r, http.StatusAccepted)
			if op := s.WaitOperation(t, user, r.JSON(t)["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
				t.Fatalf("deploy the other stack: %v", op)
			}
			stateDirs, _ := filepath.Glob(filepath.Join(s.Data, "state", "d-*"))
			if len(stateDirs) != 1 {
				t.Fatalf("state directories %v, want the other stack's", stateDirs)
			}
			// Open to every account, so that what refuses a write there is the sandbox.
			apptest.Must(t, os.Chmod(stateDirs[0], 0o777))
			nimbus := strings.TrimPrefix(s.URL, "http://")
			planted, shared := filepath.Join(stateDirs[0], "planted"), filepath.Join(s.Cloud, "planted")

			_, err = s.Components.Publish(ctx, s.Admin, s.OfA.ID, s.OfA.Revision, "first")
			apptest.Must(t, err)
			evil := s.OfA.Code + `
variables:
  spread:
    fn::invoke:
      function: simcloud:index:probe
      arguments:
        write: ` + shared + `
      return: result
  found:
    fn::invoke:
      function: simcloud:index:probe
      arguments:
        exec: /bin/sh -c id
        connect: ` + nimbus + `
        write: ` + planted + `
        report: error
      return: result
`
			if r := s.Call(t, "PATCH", "/api/v1/components/"+s.OfA.ID.String(), admin, map[string]any{"code": evil}); r.Status == http.StatusOK {
				t.Log("the validator lets the probe through: it is the provider's own function")
			}
			_, err = s.Pool.Exec(ctx, `UPDATE components SET code = $1 WHERE id = $2`, evil, s.OfA.ID)
			apptest.Must(t, err)
			_, err = s.Pool.Exec(ctx, `UPDATE component_versions SET code = $1 WHERE component_id = $2`, evil, s.OfA.ID)
			apptest.Must(t, err)

			chk := s.Check(t, admin, s.OfA.ID.String())
			checked, _ := chk["output"].(string)
			_, err = os.Stat(shared)
			checkWroteTheCloud := err == nil
			_ = os.Remove(shared)
			r = s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{
				"component_id": s.OfA.ID, "environment_id": env.ID, "name": "prober", "parameters": map[string]any{"name": "prober"}})
			apptest.WantStatus(t, r, http.StatusAccepted)
			op := s.WaitOperation(t, user, r.JSON(t)["operation"].(map[string]any)["id"].(string))
			var logLines struct{ Lines []struct{ Line string } }
			apptest.Must(t, json.Unmarshal(s.Call(t, "GET", "/api/v1/operations/"+op["id"].(string)+"/logs", user, nil).Body, &logLines))
			var text []string
			for _, l := range logLines.Lines {
				text = append(text, l.Line)
			}
			logs := strings.Join(text, "\n")
			t.Logf("check: %s\ndeploy: %s", checked, logs)
			for _, said := range []string{checked, logs} {
				if !strings.Contains(said, "probe found:") {
					t.Fatalf("the probe said nothing:\n%s", said)
				}
				// The engine's words name no server path: the data directory is <data-dir>.
				for _, what := range []string{"exec /bin/sh -c id", "connect " + nimbus, "write " + strings.Replace(planted, s.Data, "<data-dir>", 1)} {
					refused := strings.Contains(said, what+": refused: ")
					if refused != (mode != sandbox.Off) {
						t.Errorf("%s: %q refused %v:\n%s", mode, what, refused, said)
					}
				}
			}
			if checkWroteTheCloud != (mode == sandbox.Off) {
				t.Errorf("%s: the check wrote into the cloud every deployment shares: %v", mode, checkWroteTheCloud)
			}
		})
	}
}

// With the sandbox off, the validator alone refuses every program the review tried: a program
// named after its provider's package, provider settings through config in every spelling, a
// provider of its own pointed elsewhere, a runtime that names a command, and the file reads.
func TestContain_ValidatorAloneRefusesEveryProgramThatTried(t *testing.T) {
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", Sandbox: sandbox.Off})
	admin := s.Token(t, s.AdminA)
	kubeconfig := "apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    exec:\n      command: /usr/bin/env\n      args: [bash, -c, id]\n"
	programs := map[string]string{
		"named after the package, its kubeconfig in config": "name: kubernetes\nruntime: yaml\nconfig:\n  kubeconfig:\n    type: string\n    default: " + strconv.Quote(kubeconfig) + "\n",
		"named after the package, its dir in config":        "name: simcloud\nruntime: yaml\nconfig:\n  dir:\n    default: /var/lib\n",
		"named after the package in capitals":               "name: SIMCLOUD\nruntime: yaml\n",
		"a provider's setting":                              "name: p\nruntime: yaml\nconfig:\n  simcloud:dir:\n    default: /var/lib\n",
		"a provider's setting in capitals":                  "name: p\nruntime: yaml\nconfig:\n  SimCloud:Dir:\n    default: /var/lib\n",
		"a provider's setting in configuration":             "name: p\nruntime: yaml\nconfiguration:\n  simcloud:dir:\n    type: String\n    default: /var/lib\n",
		"a provider of its own":                             "name: p\nruntime: yaml\nresources:\n  mine:\n    type: pulumi:providers:simcloud\n    properties:\n      dir: /var/lib\n",
		"a runtime naming a command":                        "name: p\nruntime:\n  name: yaml\n  options:\n    compiler: /bin/sh -c id\n",
		"a file read":                                       "name: p\nruntime: yaml\noutputs:\n  o:\n    fn::readFile: /etc/passwd\n",
	}
	for name, code := range programs {
		r := s.Call(t, "PATCH", "/api/v1/components/"+s.OfA.ID.String(), admin, map[string]any{"code": code})
		if r.Status != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
		}
	}
}

// Provider admins see on the system page whether the engine is confined.
func TestPages_SystemSaysWhetherTheEngineIsConfined(t *testing.T) {
	for _, sb := range []system.Sandbox{
		{Confined: true, Text: "Landlock ABI 7: each engine process reaches only its own stack's directories"},
		{Text: "this kernel has no Landlock: engine processes are not confined"},
	} {
		s := apptest.NewSite(t, func(d *server.Deps) { d.Info.Sandbox = sb })
		b := apptest.NewBrowser(t, s.URL)
		b.SignIn(t, "root@example.com", "correct horse battery")
		page := string(b.Get(t, "/admin/system").Body)
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
	s := apptest.NewSite(t)
	admin, tenantAdmin := s.Token(t, s.Admin), s.Token(t, s.AdminA)
	// post creates the program as a component and tells whether it was; a refusal may name
	// only the given rules.
	post := func(name, token string, body map[string]any, rules []string, refused map[string]int) bool {
		r := s.Call(t, "POST", "/api/v1/components", token, body)
		switch r.Status {
		case http.StatusCreated:
			return true
		case http.StatusUnprocessableEntity:
			var problem struct {
				Errors []struct{ Field, Rule string }
			}
			apptest.Must(t, json.Unmarshal(r.Body, &problem))
			for _, f := range problem.Errors {
				if f.Field != "code" || !slices.Contains(rules, f.Rule) {
					t.Errorf("%s: refused by %s on %s: %s", name, f.Rule, f.Field, r.Body)
				}
				refused[f.Rule]++
			}
		default:
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
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
		tenant["tenant_id"] = s.A.ID
		if post(p.Name+" as a tenant's", tenantAdmin, tenant, component.ReachRules, refused["tenant"]) {
			created["tenant"]++
		}
	}
	t.Logf("%d programs; created %v; refusals by rule %v", len(programs), created, refused)
}
