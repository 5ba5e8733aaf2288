package poller

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fakeProxmox answers the two calls the poller makes as Proxmox VE 8 does, over TLS with a
// certificate of its own, for the token nimbus@pve!poller with the secret s3cret.
func fakeProxmox(t *testing.T, qemu, tasks string) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "PVEAPIToken=nimbus@pve!poller=s3cret" {
			http.Error(w, `{"data":null}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		switch r.URL.Path {
		case "/api2/json/nodes/pve1/qemu":
			_, _ = w.Write([]byte(qemu))
		case "/api2/json/cluster/tasks":
			_, _ = w.Write([]byte(tasks))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

const qemu = `{"data":[
 {"vmid":101,"name":"web","status":"running","cpus":2,"maxmem":2147483648,"uptime":3600,"pid":4242},
 {"vmid":102,"name":"db","status":"stopped","cpus":4,"maxmem":8589934592,"uptime":0}
]}`

const tasks = `{"data":[
 {"upid":"UPID:pve1:00001A2B:0000C0DE:6747A000:qmstop:102:root@pam:","node":"pve1","pid":6699,"pstart":49374,
  "starttime":1732747264,"endtime":1732747266,"type":"qmstop","id":"102","user":"root@pam","status":"OK"},
 {"upid":"UPID:pve1:00001A00:0000B000:67479000:qmstart:102:nimbus@pve!poller:","node":"pve1","starttime":1732743168,
  "endtime":1732743170,"type":"qmstart","id":"102","user":"nimbus@pve!poller","status":"OK"},
 {"upid":"UPID:pve1:00001B00:0000D000:6747A100:qmstart:101:root@pam:","node":"pve1","starttime":1732747520,
  "type":"qmstart","id":"101","user":"root@pam"},
 {"upid":"UPID:pve2:00002000:0000E000:6747A200:qmstop:101:root@pam:","node":"pve2","starttime":1732747776,
  "endtime":1732747777,"type":"qmstop","id":"101","user":"root@pam","status":"OK"},
 {"upid":"UPID:pve1:00003000:0000F000:6747A300:vzdump::root@pam:","node":"pve1","starttime":1732748032,
  "endtime":1732748100,"type":"vzdump","id":"","user":"root@pam","status":"OK"}
]}`

func TestProxmox_ReadsStatusAndTheTaskLog(t *testing.T) {
	srv := fakeProxmox(t, qemu, tasks)
	p := Proxmox{URL: srv.URL + "/", Node: "pve1", TokenID: "nimbus@pve!poller", Secret: "s3cret", Client: srv.Client()}
	got, err := p.Machines(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Machine{
		// 101's start is still running and its stop was on another node: no task tells of it.
		"101": {State: Running},
		// 102's newest ended task is the stop.
		"102": {State: Stopped, Task: &Task{ID: "UPID:pve1:00001A2B:0000C0DE:6747A000:qmstop:102:root@pam:", Type: "qmstop",
			User: "root@pam", EndAt: time.Unix(1732747266, 0).UTC()}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("machines %+v (102's task %+v), want %+v", got, got["102"].Task, want)
	}

	// What the poller makes of it once 102 was seen running before.
	d := Compare(ProxmoxProvider, map[string]Seen{"101": {State: Running}, "102": {State: Running}, "103": {State: Running}}, got, time.Now())
	var events []string
	for _, e := range d.Events {
		events = append(events, e.Type+" "+e.Target.Resource)
	}
	if !reflect.DeepEqual(events, []string{"vm.stopped 102", "vm.deleted 103"}) {
		t.Fatalf("events %v", events)
	}
}

func TestProxmox_Failures(t *testing.T) {
	srv := fakeProxmox(t, qemu, tasks)
	html, odd := fakeProxmox(t, `<html>`, tasks), fakeProxmox(t, `{"data":[{"vmid":1e3,"status":"running"}]}`, tasks)
	for _, tc := range []struct {
		name    string
		p       Proxmox
		wantErr string
	}{
		{name: "wrong secret", p: Proxmox{URL: srv.URL, Node: "pve1", TokenID: "nimbus@pve!poller", Secret: "nope", Client: srv.Client()}, wantErr: "401"},
		{name: "no such node", p: Proxmox{URL: srv.URL, Node: "pve9", TokenID: "nimbus@pve!poller", Secret: "s3cret", Client: srv.Client()}, wantErr: "404"},
		{name: "not an API", p: Proxmox{URL: html.URL, Node: "pve1", TokenID: "nimbus@pve!poller", Secret: "s3cret", Client: html.Client()},
			wantErr: "invalid character"},
		{name: "odd VM ID", p: Proxmox{URL: odd.URL, Node: "pve1", TokenID: "nimbus@pve!poller", Secret: "s3cret", Client: odd.Client()},
			wantErr: "VM ID"},
		// The system's roots do not know the node's certificate.
		{name: "an unknown certificate", p: Proxmox{URL: srv.URL, Node: "pve1", TokenID: "nimbus@pve!poller", Secret: "s3cret"},
			wantErr: "certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.p.Machines(t.Context())
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}
