package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"nimbus/app/kernel/objstore"
	"nimbus/app/kernel/objstore/s3test"
	"nimbus/db/localpg"
)

// Two replicas share one Postgres and one S3 bucket, each with a data directory of its own. One
// is killed with its engine in the middle of an up, as a host that dies takes everything on it;
// the other takes the operation over and finishes it from the state the first pushed to the
// bucket as its engine wrote it, and the cloud holds one machine and one disk. Neither engine
// ever held the bucket's keys: each worked on a file backend of its stack's own.
func TestReplicas_OneKilledMidUpTheOtherFinishes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("takes about two minutes: a dead replica's operation is taken over after a minute of silence")
	}
	bin := nimbusBinary(t)
	pg, err := localpg.Start(t.Context(), localpg.Options{Dir: filepath.Join(t.TempDir(), "postgres")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Close() })
	s3 := s3test.Start(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	env := []string{"NIMBUS_DATABASE_URL=" + pg.URL(localpg.DatabaseName), "NIMBUS_SECRET_KEY=" + base64.StdEncoding.EncodeToString(key),
		"NIMBUS_S3_ENDPOINT=" + s3.Endpoint, "NIMBUS_S3_BUCKET=" + s3.Bucket, "NIMBUS_S3_ACCESS_KEY=" + s3.AccessKey, "NIMBUS_S3_SECRET_KEY=" + s3.SecretKey}
	dataA, dataB := t.TempDir(), t.TempDir()
	// The simulated cloud stands for one cloud both replicas reach.
	cloud := filepath.Join(dataA, "simcloud")
	if err := os.MkdirAll(cloud, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(cloud, filepath.Join(dataB, "simcloud")); err != nil {
		t.Fatal(err)
	}
	a, urlA, exitedA, logsA := serveBinary(t, bin, dataA, env...)
	b, urlB, exitedB, logsB := serveBinary(t, bin, dataB, env...)
	first, second := &process{cmd: a, url: urlA}, &process{cmd: b, url: urlB}

	tokenCmd := exec.Command(bin, "token", "create", "--email", adminEmail, "--name", "replicas", "--data-dir", dataA)
	tokenCmd.Env = append(os.Environ(), env...)
	out, err := tokenCmd.Output()
	if err != nil {
		t.Fatalf("token create: %v", err)
	}
	token := strings.TrimSpace(string(out))
	tenant := first.api(t, token, "POST", "/api/v1/tenants", map[string]any{"name": "Replicas"})
	cat := first.api(t, token, "GET", "/api/v1/components?search=simcloud-machine", nil)
	comp := cat["components"].([]any)[0].(map[string]any)
	zone := first.api(t, token, "POST", "/api/v1/landing-zones", map[string]any{"name": "replicas", "provider": "simcloud"})
	template := first.api(t, token, "POST", "/api/v1/landing-zones/"+zone["id"].(string)+"/templates", map[string]any{
		"name": "one", "mandatory_components": []map[string]any{
			{"component_id": comp["id"], "name": "slow", "parameters": map[string]any{"name": "slow", "delay_ms": 8000}},
		}})
	first.api(t, token, "POST", "/api/v1/landing-zones/"+zone["id"].(string)+"/publish", nil)
	created := first.api(t, token, "POST", "/api/v1/environments", map[string]any{"tenant_id": tenant["id"], "name": "dev", "template_id": template["id"]})

	// Once the disk is made and the machine is being made, kill the replica whose engine runs
	// the up (either may have taken the job), with its engine, as a host that dies.
	if !pollUntil(2*time.Minute, func() bool { return disksMade(t, first, token) == 1 }) {
		t.Fatal("the up never began")
	}
	// The engine's checkpoint reaches the bucket while the up runs, not only when it ends: the
	// disk is recorded there before the machine's slow create is over. (A replica that dies
	// within the mirror's 100 ms of a step loses that step's record, as the README says.)
	bucket, err := objstore.NewS3(t.Context(), s3)
	if err != nil {
		t.Fatal(err)
	}
	if !pollUntil(time.Minute, func() bool { return recorded(t, bucket, "simcloud:index:Disk") }) {
		t.Fatal("the bucket never held the disk while the up ran")
	}
	if recorded(t, bucket, "simcloud:index:Machine") {
		t.Fatal("the machine was made before the kill: the test kills too late to mean anything")
	}
	victim, victimData, exited, survivor, logs := a, dataA, exitedA, second, logsB
	if runsOn(t, dataB) {
		victim, victimData, exited, survivor, logs = b, dataB, exitedB, first, logsA
	}
	t.Logf("killing the replica on %s with its engine", victimData)
	_ = victim.Process.Signal(syscall.SIGKILL)
	killStrays(victimData)
	<-exited

	var got map[string]any
	if !pollUntil(4*time.Minute, func() bool {
		got = survivor.api(t, token, "GET", "/api/v1/environments/"+created["id"].(string), nil)
		return got["status"] == "active" || got["status"] == "failed"
	}) || got["status"] != "active" {
		t.Fatalf("after the kill the environment is %v\n%s", got["status"], logs)
	}
	machines, _ := filepath.Glob(filepath.Join(cloud, "machine", "*.json"))
	disks, _ := filepath.Glob(filepath.Join(cloud, "disk", "*.json"))
	// Two disks would mean the survivor never learned of the one the killed engine made: the
	// bucket held the state only as it was before the up.
	if len(machines) != 1 || len(disks) != 1 {
		t.Fatalf("after the kill: %d machines and %d disks, want one of each", len(machines), len(disks))
	}
}

// recorded reports whether a stack's state in the bucket holds a resource of the type made (a
// pending operation on one does not count).
func recorded(t *testing.T, bucket *objstore.S3, typ string) bool {
	t.Helper()
	keys, err := bucket.List(t.Context(), ".pulumi/stacks/")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		rc, err := bucket.Get(t.Context(), k)
		if err != nil {
			continue
		}
		var chk struct {
			Checkpoint struct {
				Latest *struct {
					Resources []struct{ Type string } `json:"resources"`
				} `json:"latest"`
			} `json:"checkpoint"`
		}
		err = json.NewDecoder(rc).Decode(&chk)
		rc.Close()
		if err != nil || chk.Checkpoint.Latest == nil {
			continue
		}
		for _, r := range chk.Checkpoint.Latest.Resources {
			if r.Type == typ {
				return true
			}
		}
	}
	return false
}

// runsOn reports whether an engine process works in a stack directory of data.
func runsOn(t *testing.T, data string) bool {
	t.Helper()
	cwds, _ := filepath.Glob("/proc/[0-9]*/cwd")
	for _, c := range cwds {
		if dir, err := os.Readlink(c); err == nil && strings.HasPrefix(dir, filepath.Join(data, "stacks")+"/") {
			return true
		}
	}
	return false
}
