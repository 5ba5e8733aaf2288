package pulumix

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"nimbus/app/kernel/objstore"
	"nimbus/app/kernel/objstore/s3test"
)

// replica is one of several Runners sharing the state in store and the simulated cloud in
// cloud, each with a data directory of its own.
func replica(t *testing.T, store Bucket, cloud string) *Runner {
	t.Helper()
	r, err := NewRunner(toolchain(t), t.TempDir(), map[string]string{"SIMCLOUD_DIR": cloud},
		WithSharedState(store), CloudDirs(cloud))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Replicas share the state in a bucket, each with a data directory of its own: a plan saved on
// one is applied on another, and a stack one destroys, another makes anew.
func TestStack_ReplicasShareStacksAndPlans(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	store, err := objstore.NewS3(ctx, s3test.Shared(t))
	if err != nil {
		t.Fatal(err)
	}
	cloud := t.TempDir()
	a, b := replica(t, store, cloud), replica(t, store, cloud)
	// Each replica holds the stack alone while it runs it, as an operation's lease makes it:
	// only then does it write the bucket.
	st := Stack{Name: "d-shared", Code: secretProgram, Config: map[string]any{"name": "shared"},
		Secrets: map[string]string{"token": "s3cr3t-token"}, Passphrase: "passphrase of d-shared", Exclusive: true}
	if _, err := a.Up(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	st.Config["name"] = "renamed"
	preview, err := a.Preview(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(preview.Plan, []byte("s3cr3t-token")) {
		t.Fatal("the plan holds the secret in plaintext")
	}
	res, err := b.Apply(ctx, st, preview.Plan, nil)
	if err != nil {
		t.Fatalf("the other replica could not apply the plan: %v\n%s", err, res.Output)
	}
	if res.Outputs["token"] != "[secret]" || res.Changes["replace"]+res.Changes["update"] == 0 {
		t.Fatalf("apply on the other replica: outputs %v, changes %v", res.Outputs, res.Changes)
	}
	// A stack only previewed has no state to record its salt: both replicas make the same.
	fresh := Stack{Name: "d-fresh", Code: secretProgram, Config: map[string]any{"name": "fresh"},
		Secrets: map[string]string{"token": "other-token"}, Passphrase: "passphrase of d-fresh", Exclusive: true}
	if preview, err = a.Preview(ctx, fresh, nil); err != nil {
		t.Fatal(err)
	}
	if res, err := b.Apply(ctx, fresh, preview.Plan, nil); err != nil {
		t.Fatalf("the other replica could not apply the plan of a stack only previewed: %v\n%s", err, res.Output)
	}
	if _, err := b.Destroy(ctx, fresh, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Destroy(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	// The first replica still has the stack's settings from before; the backend has no stack.
	if _, err := a.Up(ctx, st, nil); err != nil {
		t.Fatalf("up after another replica destroyed the stack: %v", err)
	}
	if disks := cloudFiles(t, cloud, "disk"); len(disks) != 1 {
		t.Fatalf("the cloud holds %d disks, want the one made anew", len(disks))
	}
}

// secretValueProgram makes a value secret itself, so that a plan of it holds a ciphertext
// under the stack's key although the stack has no secret inputs.
const secretValueProgram = `name: secret-value
runtime: yaml
config:
  name:
    type: string
resources:
  disk:
    type: simcloud:index:Disk
    properties:
      name:
        fn::secret: ${name}
`

// A new stack's first up leaves its salt to the engine, which derives the stack's key anyway,
// rather than deriving it a second time in Nimbus. The salt is the state's: a plan another
// replica saved is read with it, and a first up that failed before writing any state leaves no
// salt of its own behind to part the replicas' plans.
func TestStack_AnUpLeavesANewStacksSaltToTheEngine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	store, err := objstore.NewS3(ctx, s3test.Shared(t))
	if err != nil {
		t.Fatal(err)
	}
	cloud := t.TempDir()
	a, b := replica(t, store, cloud), replica(t, store, cloud)
	st := Stack{Name: "d-engine-salt", Code: secretValueProgram, Config: map[string]any{"name": "first"},
		Passphrase: "passphrase of d-engine-salt", Exclusive: true}
	if _, err := a.Up(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	if n := len(a.keys.keys); n != 0 {
		t.Fatalf("Nimbus derived %d keys for a new stack's up: the engine derives the key itself", n)
	}
	st.Config["name"] = "second"
	preview, err := b.Preview(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(preview.Plan, []byte("ciphertext")) {
		t.Fatalf("the plan holds no secret to decrypt:\n%s", preview.Plan)
	}
	if res, err := a.Apply(ctx, st, preview.Plan, nil); err != nil {
		t.Fatalf("apply of a plan saved on the other replica, with the salt the engine made: %v\n%s", err, res.Output)
	}

	failed := Stack{Name: "d-failed-first", Code: secretValueProgram, Config: map[string]any{},
		Passphrase: "passphrase of d-failed-first", Exclusive: true}
	var engine *EngineError
	if _, err := a.Up(ctx, failed, nil); !errors.As(err, &engine) {
		t.Fatalf("up without its required input: %v, want the engine's error", err)
	}
	failed.Config["name"] = "third"
	if preview, err = a.Preview(ctx, failed, nil); err != nil {
		t.Fatal(err)
	}
	if res, err := b.Apply(ctx, failed, preview.Plan, nil); err != nil {
		t.Fatalf("apply on another replica of a plan saved after a first up failed: %v\n%s", err, res.Output)
	}
}
