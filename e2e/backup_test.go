package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/apptest"
	"nimbus/app/kernel/freeport"
	"nimbus/app/kernel/objstore"
	"nimbus/app/kernel/objstore/s3test"
	"nimbus/app/kernel/secrets"
	"nimbus/db/dbtest"
	"nimbus/db/localpg"
)

// An installation backed up beside its running server, while a deploy runs, and restored onto a
// new data directory with the same key once that server is lost, knows what it knew: the same
// deployments, versions and audit events, the same stack instance with its slots deployed and
// its page, its sealed secret opens (and a preview that hands it to the engine again finds
// nothing to change), the deploy goes on and makes its machine once, and a refresh of every
// deployment, the slots' among them, finds each resource its deploy made and the cloud as its
// state says. A restore with the wrong key, of a damaged archive or onto a directory in use is
// refused, and the target is left as it was. So with the states in the data directory, and in
// a bucket (the restore's an empty one of its own), where a bucket in use or a store of another
// kind is refused too, leaving the empty data directory empty.
func TestBackup_RestoredInstallationKnowsItsInfrastructure(t *testing.T) {
	t.Parallel()
	bin := nimbusBinary(t)
	t.Run("file", func(t *testing.T) {
		backupAndRestore(t, bin, nil, nil, func(*testing.T, []string) string { return "" })
	})
	t.Run("s3", func(t *testing.T) {
		cfg := s3test.Start(t)
		bucket := func(name string) []string {
			return []string{"NIMBUS_S3_ENDPOINT=" + cfg.Endpoint, "NIMBUS_S3_BUCKET=" + name,
				"NIMBUS_S3_ACCESS_KEY=" + cfg.AccessKey, "NIMBUS_S3_SECRET_KEY=" + cfg.SecretKey}
		}
		// What the bucket the variables name holds; an empty one is made if there is none,
		// which a restore takes as empty too.
		held := func(t *testing.T, env []string) string {
			t.Helper()
			named := cfg
			for _, v := range env {
				if b, ok := strings.CutPrefix(v, "NIMBUS_S3_BUCKET="); ok {
					named.Bucket = b
				}
			}
			store, err := objstore.NewS3(t.Context(), named)
			if err != nil {
				t.Fatal(err)
			}
			keys, err := store.List(t.Context(), "")
			if err != nil {
				t.Fatal(err)
			}
			return named.Bucket + ": " + strings.Join(keys, " ")
		}
		backupAndRestore(t, bin, bucket(cfg.Bucket), bucket(cfg.Bucket+"-restored"), held)
	})
}

// backupAndRestore runs the test on installations whose stores the variables in from and to
// say, beyond their data directories; held says what the bucket of such variables holds.
func backupAndRestore(t *testing.T, bin string, from, to []string, held func(*testing.T, []string) string) {
	data := t.TempDir()
	first := startServer(t, bin, data, freeport.Addr(t), from...)
	t.Cleanup(func() { stopServer(first) })
	token := nimbusOut(t, bin, from, "token", "create", "--email", adminEmail, "--name", "backup", "--data-dir", data)

	tenant := first.api(t, token, "POST", "/api/v1/tenants", map[string]any{"name": "Keep"})
	machine := first.api(t, token, "GET", "/api/v1/components?search=simcloud-machine", nil)["components"].([]any)[0].(map[string]any)
	zone := first.api(t, token, "POST", "/api/v1/landing-zones", map[string]any{"name": "keep", "provider": "simcloud"})
	template := first.api(t, token, "POST", "/api/v1/landing-zones/"+zone["id"].(string)+"/templates", map[string]any{
		"name": "one", "mandatory_components": []map[string]any{
			{"component_id": machine["id"], "name": "web", "parameters": map[string]any{"name": "web"}},
		}})
	first.api(t, token, "POST", "/api/v1/landing-zones/"+zone["id"].(string)+"/publish", nil)
	env := first.api(t, token, "POST", "/api/v1/environments", map[string]any{"tenant_id": tenant["id"], "name": "dev", "template_id": template["id"]})
	envID := env["id"].(string)
	waitFor(t, first, "the environment to be active", func() bool {
		return first.api(t, token, "GET", "/api/v1/environments/"+envID, nil)["status"] == "active"
	})

	vault := first.api(t, token, "POST", "/api/v1/components", map[string]any{
		"name": "vault-disk", "provider": "simcloud", "semantic_type": "VirtualMachine", "language": "yaml", "code": apptest.SecretProgram,
		"input_schema": map[string]any{"type": "object", "required": []string{"name", "token"}, "properties": map[string]any{
			"name": map[string]any{"type": "string"}, "token": map[string]any{"type": "string", "x-secret": true}}},
		"output_schema": map[string]any{"type": "object", "properties": map[string]any{"disk_id": map[string]any{"type": "string"}, "token": map[string]any{"type": "string"}}}})
	check := first.api(t, token, "POST", "/api/v1/components/"+vault["id"].(string)+"/check", nil)
	waitFor(t, first, "the component's check", func() bool {
		return first.api(t, token, "GET", "/api/v1/checks/"+check["id"].(string), nil)["status"] == "succeeded"
	})
	first.api(t, token, "POST", "/api/v1/components/"+vault["id"].(string)+"/publish", map[string]any{"changelog": "first", "revision": vault["revision"]})
	const canary = "sealed-3c1f7d"
	created := first.api(t, token, "POST", "/api/v1/deployments", map[string]any{"component_id": vault["id"], "environment_id": envID,
		"name": "vault", "parameters": map[string]any{"name": "vault", "token": canary}})
	vaultID := created["deployment"].(map[string]any)["id"].(string)
	opID := created["operation"].(map[string]any)["id"].(string)
	waitFor(t, first, "the secret's deployment", func() bool {
		return first.api(t, token, "GET", "/api/v1/operations/"+opID, nil)["status"] == "succeeded"
	})
	// A stack instance beside them, deployed before the backup: its slots' states are in it.
	shop := deployShop(t, first, token, envID)
	shopBefore := instanceSeen(t, first, token, shop)
	shopStack := first.api(t, token, "GET", "/api/v1/stack-instances/"+shop, nil)["stack_id"].(string)
	stackVersions := fmt.Sprint(first.api(t, token, "GET", "/api/v1/stacks/"+shopStack+"/versions", nil)["versions"])
	// A deploy runs as the backup is taken: its machine is slow to make, and its disk made.
	slow := first.api(t, token, "POST", "/api/v1/deployments", map[string]any{"component_id": machine["id"], "environment_id": envID,
		"name": "slow", "parameters": map[string]any{"name": "slow", "delay_ms": 8000}})
	slowOp := slow["operation"].(map[string]any)["id"].(string)
	waitFor(t, first, "the slow deploy's up to begin", func() bool { return disksMade(t, first, token) == 1 })
	listed := first.api(t, token, "GET", "/api/v1/deployments", nil)["deployments"]
	deployments, statuses := ids(listed), statusOf(listed)
	audit := ids(first.api(t, token, "GET", "/api/v1/audit-events", nil)["events"])
	versions := fmt.Sprint(first.api(t, token, "GET", "/api/v1/components/"+vault["id"].(string)+"/versions", nil)["versions"])
	inventory := ids(first.api(t, token, "GET", "/api/v1/inventory", nil)["items"])
	instances := ids(first.api(t, token, "GET", "/api/v1/stack-instances", nil)["stack_instances"])
	// The environment's machine, the secret's, the slow one and the stack's two slots.
	if len(deployments) != 5 || len(audit) == 0 || len(inventory) == 0 {
		t.Fatalf("before the backup: deployments %v, audit events %v, inventory items %v", deployments, audit, inventory)
	}

	archive := filepath.Join(t.TempDir(), "nimbus.tar.gz")
	out := nimbusOut(t, bin, from, "backup", "--to", archive, "--data-dir", data)
	if !regexp.MustCompile(`copied [1-9][0-9]* state files`).MatchString(out) {
		t.Errorf("the backup holds no stack's state:\n%s", out)
	}
	for _, want := range []string{"database snapshot taken; 1 operations running", "database dumped", "backup written to " + archive} {
		if !strings.Contains(out, want) {
			t.Errorf("the backup's progress does not say %q:\n%s", want, out)
		}
	}
	// The machine the backup was taken on is lost before the slow deploy ends.
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()
	killStrays(data)
	key, err := os.ReadFile(filepath.Join(data, secrets.KeyFileName))
	if err != nil {
		t.Fatal(err)
	}

	// Refusals: each says why, and leaves the target as it was.
	target := t.TempDir()
	writeKey := func(k []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(target, secrets.KeyFileName), k, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeKey([]byte(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, secrets.KeySize)) + "\n"))
	damaged := filepath.Join(t.TempDir(), "damaged.tar.gz")
	raw, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 0x01
	if err := os.WriteFile(damaged, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	refusals := []struct {
		name, archive, dir string
		env                []string
		want               string
	}{
		{"wrong key", archive, target, to, "sealed with the master key"},
		{"damaged archive", damaged, target, to, "is damaged or not a Nimbus backup"},
		{"target in use", archive, data, from, "is not empty"},
	}
	if from != nil {
		// An empty data directory with the right key: with the bucket of the installation, and
		// with no bucket, its states to be kept beside it.
		fresh := t.TempDir()
		if err := os.WriteFile(filepath.Join(fresh, secrets.KeyFileName), key, 0o600); err != nil {
			t.Fatal(err)
		}
		refusals = append(refusals, []struct {
			name, archive, dir string
			env                []string
			want               string
		}{
			{"bucket in use", archive, fresh, from, "the object store is not empty"},
			{"states kept elsewhere", archive, fresh, nil, "restore it onto the same kind of store"},
		}...)
	}
	// An external database in use, with an empty data directory: refused before the stores
	// are made in it.
	unused := t.TempDir()
	if err := os.WriteFile(filepath.Join(unused, secrets.KeyFileName), key, 0o600); err != nil {
		t.Fatal(err)
	}
	refusals = append(refusals, struct {
		name, archive, dir string
		env                []string
		want               string
	}{"database in use", archive, unused, append(slices.Clone(to), "NIMBUS_DATABASE_URL="+dbtest.URL(t)), "the database is not empty"})
	for _, r := range refusals {
		before := listing(t, r.dir) + held(t, r.env)
		msg, err := nimbusRun(bin, r.env, "restore", "--from", r.archive, "--data-dir", r.dir)
		if err == nil || !strings.Contains(msg, r.want) {
			t.Errorf("%s: restore said %q (%v), want a refusal saying %q", r.name, msg, err, r.want)
		}
		if after := listing(t, r.dir) + held(t, r.env); after != before {
			t.Errorf("%s: the refused restore changed %s:\nbefore %s\nafter %s", r.name, r.dir, before, after)
		}
	}

	writeKey(key)
	out = nimbusOut(t, bin, to, "restore", "--from", archive, "--data-dir", target)
	for _, want := range []string{"database restored", "migrated", "restored " + archive} {
		if !strings.Contains(out, want) {
			t.Errorf("the restore's progress does not say %q:\n%s", want, out)
		}
	}
	// The cloud is not Nimbus's to back up: it stays where it is, and the simulated one lives
	// in the data directory.
	if err := os.CopyFS(filepath.Join(target, "simcloud"), os.DirFS(filepath.Join(data, "simcloud"))); err != nil {
		t.Fatal(err)
	}

	second := startServer(t, bin, target, freeport.Addr(t), to...)
	t.Cleanup(func() { stopServer(second) })
	restoredList := second.api(t, token, "GET", "/api/v1/deployments", nil)["deployments"]
	if got := ids(restoredList); strings.Join(got, " ") != strings.Join(deployments, " ") {
		t.Errorf("restored deployments %v, want %v", got, deployments)
	}
	// Each stands as it stood, but the slow one, whose deploy goes on.
	slowID := slow["deployment"].(map[string]any)["id"].(string)
	for id, status := range statusOf(restoredList) {
		if id != slowID && status != statuses[id] {
			t.Errorf("restored deployment %s is %s, was %s", id, status, statuses[id])
		}
	}
	if got := ids(second.api(t, token, "GET", "/api/v1/stack-instances", nil)["stack_instances"]); strings.Join(got, " ") != strings.Join(instances, " ") {
		t.Errorf("restored stack instances %v, want %v", got, instances)
	}
	if got := fmt.Sprint(second.api(t, token, "GET", "/api/v1/stacks/"+shopStack+"/versions", nil)["versions"]); got != stackVersions {
		t.Errorf("restored stack versions %s, want %s", got, stackVersions)
	}
	if got := instanceSeen(t, second, token, shop); got != shopBefore {
		t.Errorf("the restored stack instance is\n%s\nwas\n%s", got, shopBefore)
	}
	page, _, body := httpCall(t, "GET", second.url+"/stack-instances/"+shop, token, nil)
	for _, want := range []string{`data-testid="instance-status" data-status="active"`, `data-slot="net" data-status="deployed"`, `data-slot="app" data-status="deployed"`} {
		if page != 200 || !strings.Contains(string(body), want) {
			t.Errorf("the restored stack instance's page answers %d without %s:\n%s", page, want, body)
		}
	}
	if got := fmt.Sprint(second.api(t, token, "GET", "/api/v1/components/"+vault["id"].(string)+"/versions", nil)["versions"]); got != versions {
		t.Errorf("restored component versions %s, want %s", got, versions)
	}
	// The resumed deploy may record more as it goes on.
	if got := ids(second.api(t, token, "GET", "/api/v1/audit-events", nil)["events"]); !strings.HasSuffix(strings.Join(got, " "), strings.Join(audit, " ")) {
		t.Errorf("restored audit events %v, want them to end with %v", got, audit)
	}
	if got := openedSecret(t, target, vaultID); !strings.Contains(got, canary) {
		t.Errorf("the restored secret parameter opens to %q, want %q", got, canary)
	}
	// The deploy that was running goes on from its checkpoint, and makes the machine once.
	var resumed map[string]any
	waitFor(t, second, "the resumed deploy", func() bool {
		resumed = second.api(t, token, "GET", "/api/v1/operations/"+slowOp, nil)
		return resumed["status"] != "queued" && resumed["status"] != "running"
	})
	if resumed["status"] != "succeeded" {
		t.Fatalf("the deploy running at backup time ended %v", resumed)
	}
	// The inventory knows what it knew, and what the resumed deploy made besides.
	restored := ids(second.api(t, token, "GET", "/api/v1/inventory", nil)["items"])
	for _, id := range inventory {
		if !slices.Contains(restored, id) {
			t.Errorf("the restored inventory %v lacks item %s of %v", restored, id, inventory)
		}
	}
	if len(restored) <= len(inventory) {
		t.Errorf("the restored inventory holds %d items, the %d before and none of the resumed deploy's", len(restored), len(inventory))
	}
	machines, _ := filepath.Glob(filepath.Join(target, "simcloud", "machine", "*.json"))
	disks, _ := filepath.Glob(filepath.Join(target, "simcloud", "disk", "*.json"))
	if len(machines) != 4 || len(disks) != 4 {
		t.Errorf("after the resumed deploy the cloud holds %d machines and %d disks, want 4 of each", len(machines), len(disks))
	}
	// Every deployment is refreshed, the stack's slots among them.
	for _, slot := range second.api(t, token, "GET", "/api/v1/stack-instances/"+shop, nil)["slots"].([]any) {
		if id := slot.(map[string]any)["deployment_id"]; !slices.Contains(deployments, fmt.Sprint(id)) {
			t.Errorf("the stack's slot %v is no deployment listed: %v", slot, deployments)
		}
	}
	for _, id := range deployments {
		ended := ran(t, second, token, "/api/v1/deployments/"+id+"/refresh")
		// A refresh reads only what the state holds: a state left out of the archive would
		// be found empty, and agree with the cloud about nothing.
		deployed := second.api(t, token, "GET", "/api/v1/operations?kind=deploy&status=succeeded&deployment_id="+id, nil)["operations"].([]any)
		if len(deployed) == 0 {
			t.Fatalf("deployment %s has no succeeded deploy", id)
		}
		made := urns(second.api(t, token, "GET", "/api/v1/operations/"+deployed[0].(map[string]any)["id"].(string), nil))
		if got := urns(ended); len(made) == 0 || !slices.Equal(got, made) {
			t.Errorf("refresh of %s after the restore found resources %v, its deploy made %v: its state is not what it was", id, got, made)
		}
		if c := changed(ended); len(c) > 0 {
			t.Errorf("refresh of %s after the restore found changes %v: the states and the cloud disagree", id, c)
		}
	}
	// The restored Nimbus opens the secret itself: a preview of its deployment as it stands
	// hands the engine the token again, and finds nothing to change.
	if c := changed(ran(t, second, token, "/api/v1/deployments/"+vaultID+"/preview")); len(c) > 0 {
		t.Errorf("a preview of the secret's deployment after the restore finds changes %v: its sealed parameter did not open as it was", c)
	}
}

// ran asks for an operation with POST path and returns it once it has succeeded.
func ran(t *testing.T, s *process, token, path string) map[string]any {
	t.Helper()
	op := s.api(t, token, "POST", path, nil)
	var ended map[string]any
	waitFor(t, s, path, func() bool {
		ended = s.api(t, token, "GET", "/api/v1/operations/"+op["id"].(string), nil)
		return ended["status"] == "succeeded" || ended["status"] == "failed"
	})
	if ended["status"] != "succeeded" {
		t.Fatalf("%s after the restore: %v", path, ended)
	}
	return ended
}

// changed is what an operation's engine found to change: its counts but of what stays the same.
func changed(op map[string]any) map[string]any {
	out := map[string]any{}
	for kind, n := range op["changes"].(map[string]any) {
		if kind != "same" && n != 0.0 {
			out[kind] = n
		}
	}
	return out
}

// nimbusRun runs the nimbus binary with env added to the test's own, and returns what it
// wrote, out and err together.
func nimbusRun(bin string, env []string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// nimbusOut runs the nimbus binary and returns what it wrote to its standard output.
func nimbusOut(t testing.TB, bin string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nimbus %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut.String())
	}
	return strings.TrimSpace(string(out))
}

func stopServer(p *process) {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		_ = p.cmd.Wait()
	}
}

// waitFor polls cond for as long as a loaded machine may take.
func waitFor(t *testing.T, s *process, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited in vain for %s:\n%s", what, s.out)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func ids(list any) []string {
	var out []string
	for _, item := range list.([]any) {
		out = append(out, fmt.Sprint(item.(map[string]any)["id"]))
	}
	return out
}

// listing names every file under dir with its size, to tell whether anything changed.
func listing(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		if !e.IsDir() {
			b.WriteString(path + " " + info.ModTime().String() + "\n")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// openedSecret opens the deployment's sealed secret parameters with the key of the data
// directory, reading them from its database, and returns them as JSON.
func openedSecret(t *testing.T, data, deployment string) string {
	t.Helper()
	ctx := context.Background()
	srv, err := localpg.Start(ctx, localpg.Options{Dir: filepath.Join(data, "postgres")})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	conn, err := pgx.Connect(ctx, srv.URL(localpg.DatabaseName))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var (
		keyID  string
		sealed []byte
	)
	id := uuid.MustParse(deployment)
	if err := conn.QueryRow(ctx, "SELECT secret_key_id, secret_parameters FROM deployed_components WHERE id = $1", id).Scan(&keyID, &sealed); err != nil {
		t.Fatal(err)
	}
	keys, err := secrets.Load(data, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	plain, err := keys.Open(keyID, sealed, id[:])
	if err != nil {
		t.Fatalf("open the restored secret: %v", err)
	}
	return string(plain)
}
