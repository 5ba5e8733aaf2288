package component

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/objstore/s3test"
	"nimbus/app/platform/pulumix"
	"nimbus/db/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(s3test.Around(m)) }

var builtinNames = []string{
	"simcloud-machine", "simcloud-network",
	"proxmox-vm", "proxmox-lxc", "proxmox-storage", "proxmox-network", "proxmox-firewall-rule",
	"k8s-namespace", "k8s-quota", "k8s-network-policy", "k8s-secret", "k8s-ingress", "k8s-tenant-access",
}

func builtinByName(t *testing.T, name string) New {
	t.Helper()
	all, err := Builtins()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range all {
		if b.Name == name {
			return b
		}
	}
	t.Fatalf("no built-in component %s", name)
	return New{}
}

func TestBuiltins_AreValid(t *testing.T) {
	all, err := Builtins()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range all {
		names = append(names, b.Name)
		t.Run(b.Name, func(t *testing.T) {
			if !b.System || b.Language != "yaml" || b.DisplayName == "" || b.Description == "" {
				t.Fatalf("system %v, language %q, display name %q, description %q", b.System, b.Language, b.DisplayName, b.Description)
			}
			in, out, err := Validate(&b.Draft, map[string]bool{"yaml": true}, Scope{ProviderLevel: true, Package: PackageOf(b.Provider)})
			if err != nil {
				t.Fatal(err)
			}
			if len(in.Order) != len(in.Properties) || len(out.Order) != len(out.Properties) {
				t.Fatalf("x-order lists %d of %d inputs and %d of %d outputs", len(in.Order), len(in.Properties), len(out.Order), len(out.Properties))
			}
			if !strings.Contains(b.Code, "\ndescription:") {
				t.Fatal("the program has no description")
			}
			var bindings map[string]string
			if err := json.Unmarshal(b.ResolverBindings, &bindings); err != nil {
				t.Fatal(err)
			}
			// Every program tells its provider's resources apart from other providers'.
			if !strings.Contains(b.Code, "type: "+map[string]string{"simcloud": "simcloud:", "proxmox": "proxmoxve:", "kubernetes": "kubernetes:"}[b.Provider]) {
				t.Fatalf("no %s resource in the program", b.Provider)
			}
		})
	}
	if !slices.Equal(names, builtinNames) {
		t.Fatalf("built-in components %v, want %v", names, builtinNames)
	}
}

func TestBuiltins_Bindings(t *testing.T) {
	want := map[string]map[string]string{
		"simcloud-machine": {"ip_address": "ipam", "name": "naming"},
		"simcloud-network": {"cidr": "ipam.subnet"},
		"proxmox-vm":       {"ip_address": "ipam", "name": "naming", "os_template": "image_catalog"},
		"proxmox-lxc":      {"ip_address": "ipam", "name": "naming"},
		"proxmox-network":  {"cidr": "ipam.subnet"},
		"k8s-secret":       {"password": "secret_provisioner"},
	}
	for _, name := range builtinNames {
		var got map[string]string
		if err := json.Unmarshal(builtinByName(t, name).ResolverBindings, &got); err != nil {
			t.Fatal(err)
		}
		if w := want[name]; len(got) != len(w) || !mapsEqual(got, w) {
			t.Errorf("%s binds %v, want %v", name, got, w)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return len(a) == len(b)
}

// The simulated cloud's programs run through the real engine, as a check would run them.
func TestBuiltins_SimcloudProgramsPassARealCheck(t *testing.T) {
	runner, err := pulumix.NewRunner(os.Getenv("NIMBUS_PULUMI_DIR"), t.TempDir(), nil)
	if err != nil {
		t.Fatalf("the Pulumi toolchain is needed here (go tool task toolchain): %v", err)
	}
	for name, resources := range map[string]int{"simcloud-machine": 2, "simcloud-network": 1} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := builtinByName(t, name)
			in, _, err := Validate(&b.Draft, map[string]bool{"yaml": true}, Scope{ProviderLevel: true, Package: PackageOf(b.Provider)})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			plain, secret := placeholders(in, nil)
			res, err := runner.Check(ctx, pulumix.Stack{Code: b.Code, Config: plain, Secrets: secret}, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Succeeded {
				t.Fatalf("check failed:\n%s", res.Output)
			}
			// The stack itself is created too.
			if res.Changes["create"] != resources+1 {
				t.Fatalf("changes %v, want %d creates: %s", res.Changes, resources+1, res.Output)
			}
		})
	}
}

func TestEnsureBuiltins(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	s := NewService(pool, nil, nil) // built-ins need no engine and no job queue
	admin := access.Principal{Email: "admin@example.com", ProviderAdmin: true}

	created, err := EnsureBuiltins(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(created, builtinNames) {
		t.Fatalf("created %v, want %v", created, builtinNames)
	}
	cat, err := s.List(ctx, admin, Filter{Scope: "provider", PerPage: 100})
	if err != nil {
		t.Fatal(err)
	}
	if cat.Total != len(builtinNames) {
		t.Fatalf("catalog has %d components, want %d", cat.Total, len(builtinNames))
	}
	ids := map[string]Summary{}
	for _, c := range cat.Components {
		ids[c.Name] = c
		if !c.System || c.LatestVersion != 1 || c.TenantName != "" {
			t.Errorf("%s: system %v, latest version %d, tenant %q", c.Name, c.System, c.LatestVersion, c.TenantName)
		}
	}
	for _, name := range builtinNames {
		c, ok := ids[name]
		if !ok {
			t.Fatalf("%s is not in the catalog", name)
		}
		want := builtinByName(t, name)
		got, err := s.Get(ctx, admin, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Provider != want.Provider || got.SemanticType != want.SemanticType || got.Code != want.Code || got.DisplayName != want.DisplayName {
			t.Errorf("%s: %s/%s %q, want %s/%s %q", name, got.Provider, got.SemanticType, got.DisplayName, want.Provider, want.SemanticType, want.DisplayName)
		}
		v, err := s.Version(ctx, admin, c.ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		if v.Changelog != "Shipped with Nimbus" || v.Code != want.Code || string(v.ResolverBindings) == "" {
			t.Errorf("%s v1: changelog %q", name, v.Changelog)
		}
		var bindings, wantBindings map[string]string
		_ = json.Unmarshal(v.ResolverBindings, &bindings)
		_ = json.Unmarshal(want.ResolverBindings, &wantBindings)
		if !mapsEqual(bindings, wantBindings) {
			t.Errorf("%s v1 binds %v, want %v", name, bindings, wantBindings)
		}
	}

	// Everything was done by the system, and recorded.
	var events int
	err = pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE actor_email = 'system' AND actor_id IS NULL
		AND action IN ('component.create', 'component.publish')`).Scan(&events)
	if err != nil {
		t.Fatal(err)
	}
	if events != 2*len(builtinNames) {
		t.Fatalf("%d audit events by the system, want %d", events, 2*len(builtinNames))
	}

	// A second start creates nothing.
	if created, err := EnsureBuiltins(ctx, s); err != nil || len(created) != 0 {
		t.Fatalf("second run created %v, %v", created, err)
	}

	// A provider admin deletes one: it stays deleted.
	if err := s.Delete(ctx, admin, ids["proxmox-lxc"].ID); err != nil {
		t.Fatal(err)
	}
	if created, err := EnsureBuiltins(ctx, s); err != nil || len(created) != 0 {
		t.Fatalf("after a delete, created %v, %v", created, err)
	}
	cat, err = s.List(ctx, admin, Filter{Scope: "provider", PerPage: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cat.Components {
		if c.Name == "proxmox-lxc" {
			t.Fatal("the deleted proxmox-lxc came back")
		}
	}
	if cat.Total != len(builtinNames)-1 {
		t.Fatalf("catalog has %d components, want %d", cat.Total, len(builtinNames)-1)
	}
}

// Two servers starting at once ship each component once between them.
func TestEnsureBuiltins_Concurrently(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	type result struct {
		created []string
		err     error
	}
	results := make(chan result, 2)
	for range 2 {
		go func() {
			created, err := EnsureBuiltins(ctx, NewService(pool, nil, nil))
			results <- result{created, err}
		}()
	}
	var all []string
	for range 2 {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		all = append(all, r.created...)
	}
	slices.Sort(all)
	want := slices.Clone(builtinNames)
	slices.Sort(want)
	if !slices.Equal(all, want) {
		t.Fatalf("created %v between them, want each of %v once", all, want)
	}
}

// A provider admin's own component of a built-in's name wins over the built-in.
func TestEnsureBuiltins_LeavesAnAdminsComponentAlone(t *testing.T) {
	ctx := context.Background()
	s := NewService(dbtest.Pool(t), yamlEngine{}, nil)
	admin := access.Principal{Email: "admin@example.com", ProviderAdmin: true}
	mine := machineDraft(t)
	mine.DisplayName = "Our machine"
	if _, err := s.Create(ctx, admin, New{Draft: mine, Provider: "simcloud", SemanticType: "VirtualMachine"}); err != nil {
		t.Fatal(err)
	}
	created, err := EnsureBuiltins(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(created, "simcloud-machine") || len(created) != len(builtinNames)-1 {
		t.Fatalf("created %v", created)
	}
	cat, err := s.List(ctx, admin, Filter{Search: "simcloud-machine", PerPage: 100})
	if err != nil {
		t.Fatal(err)
	}
	if cat.Total != 1 || cat.Components[0].DisplayName != "Our machine" || cat.Components[0].System {
		t.Fatalf("catalog %+v", cat.Components)
	}
}

// An installation an older Nimbus made gets what this one ships as a new version; one a
// provider admin published a version of since is theirs.
func TestEnsureBuiltins_UpgradesWhatAnOlderNimbusShipped(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	s := NewService(pool, nil, nil)
	if _, err := EnsureBuiltins(ctx, s); err != nil {
		t.Fatal(err)
	}
	// As an older Nimbus shipped them: the machine without its network reference, in version
	// and draft alike; the network published since by a person.
	old := `{"type":"object","properties":{"name":{"type":"string"}}}`
	for _, stmt := range []string{
		`UPDATE component_versions v SET input_schema = '` + old + `' FROM components c WHERE c.id = v.component_id AND c.name = 'simcloud-machine'`,
		`UPDATE components SET input_schema = '` + old + `' WHERE name = 'simcloud-machine'`,
		`INSERT INTO users (email, password_hash) VALUES ('someone@example.com', 'x')`,
		`UPDATE component_versions v SET code = 'old', published_by = (SELECT id FROM users WHERE email = 'someone@example.com')
		 FROM components c WHERE c.id = v.component_id AND c.name = 'simcloud-network'`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // the second start changes nothing more
		if created, err := EnsureBuiltins(ctx, s); err != nil || len(created) != 0 {
			t.Fatalf("upgrading created %v, %v", created, err)
		}
	}
	latest := func(name string) (version int, code string, draft json.RawMessage) {
		t.Helper()
		err := pool.QueryRow(ctx, `SELECT c.latest_version, v.code, c.input_schema FROM components c
			JOIN component_versions v ON v.component_id = c.id AND v.version = c.latest_version WHERE c.name = $1`, name).Scan(&version, &code, &draft)
		if err != nil {
			t.Fatal(err)
		}
		return version, code, draft
	}
	want := builtinByName(t, "simcloud-machine")
	version, code, draft := latest("simcloud-machine")
	if version != 2 || code != want.Code || !strings.Contains(string(draft), "x-refers-to") {
		t.Fatalf("the machine an older Nimbus shipped is at version %d, its draft %s; want version 2 with the shipped inputs", version, draft)
	}
	if version, code, _ := latest("simcloud-network"); version != 1 || code != "old" {
		t.Fatalf("the network a person published is at version %d (%q): Nimbus took it back", version, code)
	}
}
