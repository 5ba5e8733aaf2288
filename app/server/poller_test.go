package server_test

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

	"nimbus/app/environment"
	"nimbus/app/event"
	"nimbus/app/stack"
)

// simcloudCommand builds the simulated cloud's own command and returns a function that runs
// it against the site's cloud, as an operator would.
func simcloudCommand(t *testing.T, s *site) func(args ...string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "simcloud")
	if out, err := exec.Command("go", "build", "-o", bin, "../../e2e/simcloud").CombinedOutput(); err != nil {
		t.Fatalf("build the simulated cloud: %v\n%s", err, out)
	}
	return func(args ...string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "SIMCLOUD_DIR="+s.cloud)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("simcloud %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

func TestPoller_SourcesConfigIsChecked(t *testing.T) {
	s := newSite(t)
	root := s.token(t, s.admin)
	r := s.call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "polled", "provider": "simcloud"})
	wantStatus(t, r, http.StatusCreated)
	sources := "/api/v1/landing-zones/" + r.json(t)["id"].(string) + "/event-sources"
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
			r := s.call(t, "POST", sources, root, tc.body)
			wantStatus(t, r, http.StatusUnprocessableEntity)
			for _, f := range tc.wants {
				if !strings.Contains(string(r.body), `"field":"`+f+`"`) {
					t.Errorf("the refusal does not name %s: %s", f, r.body)
				}
			}
		})
	}
	// A Proxmox source keeps its token's secret sealed and never shows it.
	r = s.call(t, "POST", sources, root, map[string]any{"name": "pve", "kind": "cloud_provider", "secret": "token-secret",
		"config": map[string]any{"provider": "proxmox", "url": "https://pve.example:8006", "node": "pve1", "token_id": "nimbus@pve!poller"}})
	wantStatus(t, r, http.StatusCreated)
	if strings.Contains(string(r.body), "token-secret") {
		t.Fatalf("the source shows its secret: %s", r.body)
	}
	var sealed []byte
	must(t, s.pool.QueryRow(t.Context(), `SELECT secret FROM event_sources WHERE name = 'pve'`).Scan(&sealed))
	if len(sealed) == 0 || strings.Contains(string(sealed), "token-secret") {
		t.Fatalf("the secret is kept as %q", sealed)
	}
}

// TestPoller_AStoppedMachineDegradesItsInstance stops a stack instance's machine behind
// Nimbus's back, with the simulated cloud's own command: the poller sees it, logs vm.stopped
// for the machine, and the instance's rule moves it active → degraded.
func TestPoller_AStoppedMachineDegradesItsInstance(t *testing.T) {
	s := newSiteWith(t, siteConfig{backend: "file", pollInterval: 100 * time.Millisecond})
	simcloud := simcloudCommand(t, s)
	root, user := s.token(t, s.admin), s.token(t, s.userA)
	r := s.call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "powered", "provider": "simcloud"})
	wantStatus(t, r, http.StatusCreated)
	zone := r.json(t)["id"].(string)
	r = s.call(t, "POST", "/api/v1/landing-zones/"+zone+"/event-sources", root,
		map[string]any{"name": "cloud", "kind": "cloud_provider", "config": map[string]any{"provider": "simcloud"}})
	wantStatus(t, r, http.StatusCreated)
	if _, ok := r.json(t)["secret"]; ok {
		t.Fatalf("a simcloud source was given a secret: %s", r.body)
	}

	def := stack.Definition{
		Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
		Slots: []stack.Slot{{Name: "box", Component: uuid.MustParse(builtinIDs(t, s)["simcloud-machine"]), Version: 1,
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
	r = s.call(t, "POST", "/api/v1/stacks", root, map[string]any{"provider": "simcloud", "name": "powered", "draft": def})
	wantStatus(t, r, http.StatusCreated)
	stackID := r.json(t)["id"].(string)
	wantStatus(t, s.call(t, "POST", "/api/v1/stacks/"+stackID+"/publish", root, map[string]any{"changelog": "first"}), http.StatusCreated)
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "ops")
	must(t, err)
	_, err = s.pool.Exec(t.Context(), `UPDATE environments SET landing_zone_id = $1 WHERE id = $2`, zone, env.ID)
	must(t, err)
	r = s.call(t, "POST", "/api/v1/stack-instances", user, map[string]any{"stack_id": stackID, "environment_id": env.ID, "name": "powered"})
	wantStatus(t, r, http.StatusAccepted)
	id := r.json(t)["id"].(string)
	if inst := s.waitInstance(t, user, id, status("active", "failed")); inst["state"] != "active" {
		t.Fatalf("deploy: %v", inst)
	}
	var machine string
	must(t, s.pool.QueryRow(t.Context(), `SELECT outputs->>'machine_id' FROM deployed_components WHERE stack_instance_id = $1`, id).Scan(&machine))
	// A source made before its config was checked is logged as misconfigured and skipped; the
	// others are polled all the same.
	_, err = s.pool.Exec(t.Context(), `INSERT INTO event_sources (landing_zone_id, name, kind, config) VALUES ($1, 'old', 'cloud_provider', '{"provider":"nowhere"}')`, zone)
	must(t, err)

	// The stop must be a change the poller sees, not its first sight of the machine.
	s.waitPolled(t, machine, "running")
	simcloud("machine", "stop", machine)
	s.waitInstance(t, user, id, func(m map[string]any) bool { return m["state"] == "degraded" && m["status"] == "active" })
	events := s.loggedEvents(t, user, zone, 1)
	if e := events[0]; e["type"] != "vm.stopped" || e["subject"] != machine || e["source"] != "cloud" || e["source_kind"] != event.CloudProvider ||
		e["outcome"] != event.Signalled || e["trigger"] != "degrade" || e["stack_instance_id"] != id || e["run_id"] == nil {
		t.Fatalf("the stop's event: %v", e)
	}
	if h := s.history(t, user, id)[0]; h["source"] != "event" || h["trigger"] != "degrade" || h["from"] != "active" || h["to"] != "degraded" {
		t.Fatalf("the history's newest change: %v", h)
	}

	// Started again, it recovers; deleted by hand, the deletion is logged against the instance,
	// which has no rule for it.
	simcloud("machine", "start", machine)
	s.waitInstance(t, user, id, func(m map[string]any) bool { return m["state"] == "active" && m["status"] == "active" })
	must(t, os.Remove(filepath.Join(s.cloud, "machine", machine+".json")))
	events = s.loggedEvents(t, user, zone, 3)
	if e := events[0]; e["type"] != "vm.deleted" || e["outcome"] != event.Unmatched || e["stack_instance_id"] != id {
		t.Fatalf("the deletion's event: %v", e)
	}
	if e := events[1]; e["type"] != "vm.started" || e["outcome"] != event.Signalled || e["trigger"] != "recover" {
		t.Fatalf("the start's event: %v", e)
	}
	// Many polls saw the machine stopped, and one event tells of it.
	var stops int
	must(t, s.pool.QueryRow(t.Context(), `SELECT count(*) FROM event_log WHERE type = 'vm.stopped'`).Scan(&stops))
	if stops != 1 {
		t.Fatalf("%d vm.stopped events, want 1", stops)
	}
	if !strings.Contains(s.logs.String(), "event source misconfigured") {
		t.Fatal("the misconfigured source was not logged as such")
	}
}

// waitPolled waits until a poll has seen the resource in the state given.
func (s *site) waitPolled(t *testing.T, resource, state string) {
	t.Helper()
	var got string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		_ = s.pool.QueryRow(t.Context(), `SELECT state FROM event_poller_state WHERE resource = $1`, resource).Scan(&got)
		if got == state {
			return
		}
	}
	t.Fatalf("the poller saw %s as %q, want %q", resource, got, state)
}

// TestPoller_AProxmoxNodeIsPolledWithItsToken polls a fake Proxmox node over TLS, trusting the
// node's own certificate through the source's ca_cert, with the token's sealed secret: a VM
// stopped there is logged as vm.stopped with the task that stopped it.
func TestPoller_AProxmoxNodeIsPolledWithItsToken(t *testing.T) {
	s := newSiteWith(t, siteConfig{backend: "file", pollInterval: 100 * time.Millisecond})
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
				err = pgx.BeginFunc(r.Context(), s.pool, func(tx pgx.Tx) error {
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
	root := s.token(t, s.admin)
	r := s.call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "pve", "provider": "simcloud"})
	wantStatus(t, r, http.StatusCreated)
	zone := r.json(t)["id"].(string)
	r = s.call(t, "POST", "/api/v1/landing-zones/"+zone+"/event-sources", root, map[string]any{"name": "pve1", "kind": "cloud_provider",
		"secret": "token-secret", "config": map[string]any{"provider": "proxmox", "url": pve.URL, "node": "pve1", "token_id": "nimbus@pve!poller",
			"ca_cert": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: pve.Certificate().Raw}))}})
	wantStatus(t, r, http.StatusCreated)

	s.waitPolled(t, "101", "running")
	mu.Lock()
	status = "stopped"
	tasks = `[{"upid":"UPID:pve1:00001A2B:0000C0DE:6747A000:qmstop:101:root@pam:","node":"pve1","type":"qmstop","id":"101",
		"user":"root@pam","starttime":1764205200,"endtime":1764205203,"status":"OK"}]`
	mu.Unlock()
	e := s.loggedEvents(t, root, zone, 1)[0]
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
