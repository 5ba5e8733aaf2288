package poller_test

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/apptest"
	"nimbus/app/domain/stack"
	"nimbus/app/orchestration/environment"
	"nimbus/app/orchestration/event"
)

// simcloudCommand builds the simulated cloud's own command and returns a function that runs
// it against the site's cloud, as an operator would, and returns what it printed.
func simcloudCommand(t *testing.T, s *apptest.Site) func(args ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "simcloud")
	if out, err := exec.Command("go", "build", "-o", bin, "../../../e2e/simcloud").CombinedOutput(); err != nil {
		t.Fatalf("build the simulated cloud: %v\n%s", err, out)
	}
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "SIMCLOUD_DIR="+s.Cloud)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("simcloud %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
}

func TestPoller_SourcesConfigIsChecked(t *testing.T) {
	s := apptest.NewSite(t)
	root := s.Token(t, s.Admin)
	r := s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "polled", "provider": "simcloud"})
	apptest.WantStatus(t, r, http.StatusCreated)
	sources := "/api/v1/landing-zones/" + r.JSON(t)["id"].(string) + "/event-sources"
	for _, tc := range []struct {
		name  string
		body  map[string]any
		wants []string // field paths named
	}{
		{name: "no provider", body: map[string]any{"kind": "cloud_provider"}, wants: []string{"config.provider"}},
		{name: "unknown provider", body: map[string]any{"kind": "cloud_provider", "config": map[string]any{"provider": "aws"}}, wants: []string{"config.provider"}},
		{name: "a folder of one's own", body: map[string]any{"kind": "cloud_provider", "config": map[string]any{"provider": "simcloud", "folder": "/etc"}},
			wants: []string{"config"}},
		{name: "proxmox incomplete", body: map[string]any{"kind": "cloud_provider",
			"config": map[string]any{"provider": "proxmox", "url": "ftp://pve", "node": "pve 1", "token_id": "root"}},
			wants: []string{"config.url", "config.node", "config.token_id", "secret"}},
		{name: "proxmox over http", body: map[string]any{"kind": "cloud_provider", "secret": "token-secret",
			"config": map[string]any{"provider": "proxmox", "url": "http://pve.example:8006", "node": "pve1", "token_id": "nimbus@pve!poller"}},
			wants: []string{"config.url"}},
		{name: "a webhook given a secret", body: map[string]any{"kind": "webhook", "secret": "mine"}, wants: []string{"secret"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.body["name"] = "cloud"
			r := s.Call(t, "POST", sources, root, tc.body)
			apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
			for _, f := range tc.wants {
				if !strings.Contains(string(r.Body), `"field":"`+f+`"`) {
					t.Errorf("the refusal does not name %s: %s", f, r.Body)
				}
			}
		})
	}
	// A Proxmox source keeps its token's secret sealed and never shows it.
	r = s.Call(t, "POST", sources, root, map[string]any{"name": "pve", "kind": "cloud_provider", "secret": "token-secret",
		"config": map[string]any{"provider": "proxmox", "url": "https://pve.example:8006", "node": "pve1", "token_id": "nimbus@pve!poller"}})
	apptest.WantStatus(t, r, http.StatusCreated)
	if strings.Contains(string(r.Body), "token-secret") {
		t.Fatalf("the source shows its secret: %s", r.Body)
	}
	var sealed []byte
	apptest.Must(t, s.Pool.QueryRow(t.Context(), `SELECT secret FROM event_sources WHERE name = 'pve'`).Scan(&sealed))
	if len(sealed) == 0 || strings.Contains(string(sealed), "token-secret") {
		t.Fatalf("the secret is kept as %q", sealed)
	}
}

// TestPoller_AStoppedMachineDegradesItsInstance stops a stack instance's machine behind
// Nimbus's back, with the simulated cloud's own command: the poller sees it, logs vm.stopped
// for the machine, and the instance's rule moves it active → degraded.
func TestPoller_AStoppedMachineDegradesItsInstance(t *testing.T) {
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", PollInterval: 100 * time.Millisecond})
	simcloud := simcloudCommand(t, s)
	root, user := s.Token(t, s.Admin), s.Token(t, s.UserA)
	r := s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "powered", "provider": "simcloud"})
	apptest.WantStatus(t, r, http.StatusCreated)
	zone := r.JSON(t)["id"].(string)
	r = s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/event-sources", root,
		map[string]any{"name": "cloud", "kind": "cloud_provider", "config": map[string]any{"provider": "simcloud"}})
	apptest.WantStatus(t, r, http.StatusCreated)
	if _, ok := r.JSON(t)["secret"]; ok {
		t.Fatalf("a simcloud source was given a secret: %s", r.Body)
	}

	def := stack.Definition{
		Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
		Slots: []stack.Slot{{Name: "box", Component: uuid.MustParse(apptest.BuiltinIDs(t, s)["simcloud-machine"]), Version: 1,
			Inputs: map[string]stack.Wiring{"name": {Kind: stack.Literal, Value: "powered-box"}}}},
		Machine: stack.Machine{
			States: []stack.State{{Name: "active", Initial: true}, {Name: "degraded"}},
			Transitions: []stack.Transition{
				{From: "active", To: "degraded", Trigger: "degrade"},
				{From: "degraded", To: "active", Trigger: "recover"},
			},
		},
		Routes: []stack.Route{
			{Source: "cloud_provider", Type: "vm.stopped", Trigger: "degrade"},
			{Source: "cloud_provider", Type: "vm.started", Trigger: "recover"},
		},
	}
	r = s.Call(t, "POST", "/api/v1/stacks", root, map[string]any{"provider": "simcloud", "name": "powered", "draft": def})
	apptest.WantStatus(t, r, http.StatusCreated)
	stackID := r.JSON(t)["id"].(string)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/stacks/"+stackID+"/publish", root, map[string]any{"changelog": "first"}), http.StatusCreated)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "ops")
	apptest.Must(t, err)
	_, err = s.Pool.Exec(t.Context(), `UPDATE environments SET landing_zone_id = $1 WHERE id = $2`, zone, env.ID)
	apptest.Must(t, err)
	r = s.Call(t, "POST", "/api/v1/stack-instances", user, map[string]any{"stack_id": stackID, "environment_id": env.ID, "name": "powered"})
	apptest.WantStatus(t, r, http.StatusAccepted)
	id := r.JSON(t)["id"].(string)
	if inst := s.WaitInstance(t, user, id, apptest.Status("active", "failed")); inst["state"] != "active" {
		t.Fatalf("deploy: %v", inst)
	}
	var machine string
	apptest.Must(t, s.Pool.QueryRow(t.Context(), `SELECT outputs->>'machine_id' FROM deployed_components WHERE stack_instance_id = $1`, id).Scan(&machine))
	// A source made before its config was checked is logged as misconfigured and skipped; the
	// others are polled all the same.
	_, err = s.Pool.Exec(t.Context(), `INSERT INTO event_sources (landing_zone_id, name, kind, config) VALUES ($1, 'old', 'cloud_provider', '{"provider":"nowhere"}')`, zone)
	apptest.Must(t, err)

	// The stop must be a change the poller sees, not its first sight of the machine.
	s.WaitPolled(t, machine, "running")
	simcloud("machine", "stop", machine)
	s.WaitInstance(t, user, id, func(m map[string]any) bool { return m["state"] == "degraded" && m["status"] == "active" })
	events := s.LoggedEvents(t, user, zone, 1)
	if e := events[0]; e["type"] != "vm.stopped" || e["subject"] != machine || e["source"] != "cloud" || e["source_kind"] != event.CloudProvider ||
		e["outcome"] != event.Signalled || e["trigger"] != "degrade" || e["stack_instance_id"] != id || e["run_id"] == nil {
		t.Fatalf("the stop's event: %v", e)
	}
	if h := s.History(t, user, id)[0]; h["source"] != "event" || h["trigger"] != "degrade" || h["from"] != "active" || h["to"] != "degraded" {
		t.Fatalf("the history's newest change: %v", h)
	}

	// Started again, it recovers; deleted by hand, the deletion is logged against the instance,
	// which has no rule for it.
	simcloud("machine", "start", machine)
	s.WaitInstance(t, user, id, func(m map[string]any) bool { return m["state"] == "active" && m["status"] == "active" })
	apptest.Must(t, os.Remove(filepath.Join(s.Cloud, "machine", machine+".json")))
	events = s.LoggedEvents(t, user, zone, 3)
	if e := events[0]; e["type"] != "vm.deleted" || e["outcome"] != event.Unmatched || e["stack_instance_id"] != id {
		t.Fatalf("the deletion's event: %v", e)
	}
	if e := events[1]; e["type"] != "vm.started" || e["outcome"] != event.Signalled || e["trigger"] != "recover" {
		t.Fatalf("the start's event: %v", e)
	}
	// Many polls saw the machine stopped, and one event tells of it.
	var stops int
	apptest.Must(t, s.Pool.QueryRow(t.Context(), `SELECT count(*) FROM event_log WHERE type = 'vm.stopped'`).Scan(&stops))
	if stops != 1 {
		t.Fatalf("%d vm.stopped events, want 1", stops)
	}
	if !strings.Contains(s.Logs.String(), "event source misconfigured") {
		t.Fatal("the misconfigured source was not logged as such")
	}
}

// TestPoller_AProxmoxNodeIsPolledWithItsToken polls a fake Proxmox node over TLS, trusting the
// node's own certificate through the source's ca_cert, with the token's sealed secret: a VM
// stopped there is logged as vm.stopped with the task that stopped it.
func TestPoller_AProxmoxNodeIsPolledWithItsToken(t *testing.T) {
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", PollInterval: 100 * time.Millisecond})
	var mu sync.Mutex
	status, tasks := "running", `[]`
	// While the node answers, the source's row comes free: the poller holds no transaction
	// while it waits on a cloud.
	var asked int
	var heldWhileAsked error
	pve := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "PVEAPIToken=nimbus@pve!poller=token-secret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/api2/json/nodes/pve1/qemu":
			asked++
			// Another round's poll may be saving, briefly; a poll holding the row while it
			// waits on this answer would never let it go.
			var err error
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				err = pgx.BeginFunc(r.Context(), s.Pool, func(tx pgx.Tx) error {
					_, err := tx.Exec(r.Context(), `SELECT 1 FROM event_sources WHERE kind = 'cloud_provider' FOR NO KEY UPDATE NOWAIT`)
					return err
				})
				if err == nil {
					break
				}
			}
			if err != nil && heldWhileAsked == nil {
				heldWhileAsked = err
			}
			fmt.Fprintf(w, `{"data":[{"vmid":101,"name":"web","status":%q}]}`, status)
		case "/api2/json/cluster/tasks":
			fmt.Fprintf(w, `{"data":%s}`, tasks)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(pve.Close)
	root := s.Token(t, s.Admin)
	r := s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "pve", "provider": "simcloud"})
	apptest.WantStatus(t, r, http.StatusCreated)
	zone := r.JSON(t)["id"].(string)
	r = s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/event-sources", root, map[string]any{"name": "pve1", "kind": "cloud_provider",
		"secret": "token-secret", "config": map[string]any{"provider": "proxmox", "url": pve.URL, "node": "pve1", "token_id": "nimbus@pve!poller",
			"ca_cert": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: pve.Certificate().Raw}))}})
	apptest.WantStatus(t, r, http.StatusCreated)

	s.WaitPolled(t, "101", "running")
	mu.Lock()
	status = "stopped"
	tasks = `[{"upid":"UPID:pve1:00001A2B:0000C0DE:6747A000:qmstop:101:root@pam:","node":"pve1","type":"qmstop","id":"101",
		"user":"root@pam","starttime":1764205200,"endtime":1764205203,"status":"OK"}]`
	mu.Unlock()
	e := s.LoggedEvents(t, root, zone, 1)[0]
	data, _ := e["payload"].(map[string]any)["data"].(map[string]any)
	task, _ := data["task"].(map[string]any)
	// No deployment of the zone holds VM 101: the event is kept, unrouted.
	if e["type"] != "vm.stopped" || e["subject"] != "101" || e["outcome"] != event.Unrouted || e["occurred_at"] != "2025-11-27T01:00:03Z" ||
		task["type"] != "qmstop" || task["user"] != "root@pam" {
		t.Fatalf("the stop's event: %v", e)
	}
	mu.Lock()
	defer mu.Unlock()
	if asked == 0 || heldWhileAsked != nil {
		t.Fatalf("asked %d times; the source's row was held while the node answered: %v", asked, heldWhileAsked)
	}
}
