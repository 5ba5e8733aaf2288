package poller

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxReply caps what the poller reads of one answer of a cloud's API.
const maxReply = 8 << 20

// Proxmox reads one node of a Proxmox VE cluster through its HTTP API: the status of its
// virtual machines (/nodes/{node}/qemu), and from the cluster's task log (/cluster/tasks)
// who last started, stopped or destroyed each of them, and when.
type Proxmox struct {
	// URL is the API's address, such as https://pve.example:8006.
	URL  string
	Node string
	// TokenID names the API token the poller signs in with (user@realm!name); Secret is its
	// secret.
	TokenID, Secret string
	Client          *http.Client
}

// Machines are the node's virtual machines by VM ID, the value a deployment's vmid output
// holds, each with the newest ended task of the log that concerns it.
func (p Proxmox) Machines(ctx context.Context) (map[string]Machine, error) {
	var vms []struct {
		VMID   json.Number `json:"vmid"`
		Status string      `json:"status"`
	}
	if err := p.get(ctx, "/nodes/"+url.PathEscape(p.Node)+"/qemu", &vms); err != nil {
		return nil, err
	}
	var tasks []struct {
		UPID    string `json:"upid"`
		Node    string `json:"node"`
		Type    string `json:"type"`
		ID      string `json:"id"`
		User    string `json:"user"`
		EndTime int64  `json:"endtime"`
	}
	if err := p.get(ctx, "/cluster/tasks", &tasks); err != nil {
		return nil, err
	}
	last := map[string]*Task{}
	for _, t := range tasks {
		// Only the node's machine tasks that have ended tell of a change already made.
		if t.Node != p.Node || !strings.HasPrefix(t.Type, "qm") || t.EndTime == 0 {
			continue
		}
		end := time.Unix(t.EndTime, 0).UTC()
		if prev := last[t.ID]; prev == nil || end.After(prev.EndAt) {
			last[t.ID] = &Task{ID: t.UPID, Type: t.Type, User: t.User, EndAt: end}
		}
	}
	out := make(map[string]Machine, len(vms))
	for _, vm := range vms {
		id := vm.VMID.String()
		if _, err := strconv.Atoi(id); err != nil {
			return nil, fmt.Errorf("proxmox: node %s lists a machine with the VM ID %q", p.Node, id)
		}
		out[id] = Machine{State: vm.Status, Task: last[id]}
	}
	return out, nil
}

// get reads one answer of the API, whose payload is the envelope's data.
func (p Proxmox) get(ctx context.Context, path string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(p.URL, "/")+"/api2/json"+path, nil)
	if err != nil {
		return fmt.Errorf("proxmox: %w", err)
	}
	req.Header.Set("Authorization", "PVEAPIToken="+p.TokenID+"="+p.Secret)
	client := p.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("proxmox: GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("proxmox: GET %s: %s", path, resp.Status)
	}
	var envelope struct{ Data json.RawMessage }
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxReply)).Decode(&envelope); err != nil {
		return fmt.Errorf("proxmox: GET %s: %w", path, err)
	}
	if err := json.Unmarshal(envelope.Data, into); err != nil {
		return fmt.Errorf("proxmox: GET %s: %w", path, err)
	}
	return nil
}
