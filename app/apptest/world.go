package apptest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"nimbus/app/domain/auth"
	"nimbus/app/domain/component"
	"nimbus/app/domain/elevation"
	"nimbus/app/domain/governance"
	"nimbus/app/domain/inventory"
	"nimbus/app/domain/ipam"
	"nimbus/app/domain/notification"
	"nimbus/app/domain/resolver"
	"nimbus/app/domain/stack"
	"nimbus/app/domain/system"
	"nimbus/app/domain/tenant"
	"nimbus/app/domain/user"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/egress"
	"nimbus/app/kernel/secrets"
	"nimbus/app/orchestration/approval"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/orchestration/drift"
	"nimbus/app/orchestration/environment"
	"nimbus/app/orchestration/instance"
	"nimbus/app/orchestration/landingzone"
	"nimbus/app/orchestration/provision"
	"nimbus/app/platform/audit"
	"nimbus/app/platform/gitremote"
	"nimbus/app/server"
	"nimbus/db"
	"nimbus/db/dbtest"
)

// World is two tenants with people of each role, used to check every data-access method
// against the actors it must refuse and those it must serve. Fixtures beyond the people and
// two components are built on first use (see Fixture), so a case pays only for what it uses.
// Sites build on it too.
type World struct {
	Pool                   *pgxpool.Pool
	Tenants                *tenant.Service
	Users                  *user.Service
	Elevations             *elevation.Service
	Audit                  *audit.Service
	Auth                   *auth.Service
	Components             *component.Service
	Envs                   *environment.Service
	Deploys                *deploy.Service // queues jobs and works none
	Drift                  *drift.Service
	Zones                  *landingzone.Service
	Lifecycle              *environment.Lifecycle
	Governance             *governance.Service
	Ipam                   *ipam.Service
	Resolvers              *resolver.Service
	Approvals              *approval.Service
	Stacks                 *stack.Service
	Instances              *instance.Service  // no worker takes its runs
	Provisions             *provision.Service // no worker deploys its factories
	Keys                   *secrets.Keyring   // seals the deployments' secrets and stack passphrases
	Notices                *notification.Service
	Inventory              *inventory.Service
	A, B                   tenant.Tenant
	Shared, OfA            component.Component // provider-level, and tenant A's
	Admin                  access.Principal    // provider admin
	AdminA, UserA, ReaderA access.Principal
	AdminB                 access.Principal
	fixtures               map[string]any
}

// NewWorld builds a world on a new database: the provider admin (root@example.com, password
// "correct horse battery"), tenants A and B, A's admin, user and reader and B's admin (each
// with the password "long enough password"), the shared machine component published, and A's
// own machine as a draft. Its services are built as the server builds them, but queue jobs and
// work none.
func NewWorld(t testing.TB) *World {
	t.Helper()
	ctx := context.Background()
	pool := dbtest.Pool(t)
	keys := testKeys(t)
	svc := server.Build(server.Deps{Pool: pool, Log: discardLog(), Jobs: insertOnly(t, pool), SessionTTL: time.Hour, Keys: keys, Toolchain: yamlOnly{}, Git: gitremote.Fetcher{AllowHTTP: true, Reach: egress.Policy{AllowPrivate: true}},
		Info: system.Info{PulumiDir: os.Getenv("NIMBUS_PULUMI_DIR")}})
	w := &World{
		Pool: pool, Tenants: svc.Tenants, Users: svc.Users, Elevations: svc.Elevations, Audit: svc.Audit, Auth: svc.Auth,
		Components: svc.Components,
		Envs:       svc.Environments,
		Deploys:    svc.Deployments,
		Drift:      svc.Drift,
		Zones:      svc.Zones,
		Lifecycle:  svc.Lifecycle,
		Governance: svc.Governance,
		Ipam:       svc.Pools,
		Resolvers:  svc.Resolvers,
		Approvals:  svc.Approvals,
		Keys:       keys,
		Stacks:     svc.Stacks,
		Instances:  svc.Instances,
		Provisions: svc.Provisions,
		Notices:    svc.Notices,
		Inventory:  svc.Inventory,
		fixtures:   map[string]any{},
	}
	if _, err := user.Bootstrap(ctx, pool, "root@example.com", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	w.Admin = w.Principal(t, "root@example.com")
	var err error
	if w.A, err = w.Tenants.Create(ctx, w.Admin, "Tenant A"); err != nil {
		t.Fatal(err)
	}
	if w.B, err = w.Tenants.Create(ctx, w.Admin, "Tenant B"); err != nil {
		t.Fatal(err)
	}
	w.AdminA = w.Member(t, "admin-a@example.com", w.A.ID, access.TenantAdmin)
	w.UserA = w.Member(t, "user-a@example.com", w.A.ID, access.User)
	w.ReaderA = w.Member(t, "reader-a@example.com", w.A.ID, access.ReadOnly)
	w.AdminB = w.Member(t, "admin-b@example.com", w.B.ID, access.TenantAdmin)
	if w.Shared, err = w.Components.Create(ctx, w.Admin, Machine(t, "shared-machine", nil)); err != nil {
		t.Fatal(err)
	}
	// Tenants see provider-level components once published.
	if _, err = w.Components.Publish(ctx, w.Admin, w.Shared.ID, w.Shared.Revision, "first"); err != nil {
		t.Fatal(err)
	}
	if w.OfA, err = w.Components.Create(ctx, w.AdminA, Machine(t, "a-machine", &w.A.ID)); err != nil {
		t.Fatal(err)
	}
	return w
}

// yamlOnly is an engine that runs YAML programs and knows no provider, so publishing needs no
// check: the service tests are about who may do what.
type yamlOnly struct{}

func (yamlOnly) LanguageHosts() map[string]bool { return map[string]bool{"yaml": true} }
func (yamlOnly) HasProvider(string) bool        { return false }

// insertOnly is a job client that queues jobs and works none, for tests of the services alone.
func insertOnly(t testing.TB, pool *pgxpool.Pool) *river.Client[pgx.Tx] {
	t.Helper()
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Logger: discardLog()})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// componentTestdata is the component package's test data, found from the module's root so
// that tests of every package, wherever it stands, read the same files. The root is looked up
// from the test's directory, not from this file's compiled-in path, which a build with
// -trimpath does not keep.
func componentTestdata(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "app", "domain", "component", "testdata")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// Machine is the simulated-cloud machine component from the component package's test data.
func Machine(t testing.TB, name string, tenantID *uuid.UUID) component.New {
	t.Helper()
	read := func(f string) []byte {
		b, err := os.ReadFile(filepath.Join(componentTestdata(t), f))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return component.New{
		Draft: component.Draft{Name: name, Language: "yaml", Code: string(read("machine.yaml")),
			InputSchema: read("machine.inputs.json"), OutputSchema: read("machine.outputs.json")},
		TenantID: tenantID, Provider: "simcloud", SemanticType: "VirtualMachine",
	}
}

// Member creates a user with email and gives them role in the tenant.
func (w *World) Member(t testing.TB, email string, tenantID uuid.UUID, role access.Role) access.Principal {
	t.Helper()
	ctx := context.Background()
	u, err := w.Users.Create(ctx, w.Admin, user.NewUser{Email: email, Password: "long enough password"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Tenants.SetMember(ctx, w.Admin, tenantID, u.ID, role); err != nil {
		t.Fatal(err)
	}
	return w.Principal(t, email)
}

// Principal is the user with email as the services see them: their roles in each tenant.
func (w *World) Principal(t testing.TB, email string) access.Principal {
	t.Helper()
	return PrincipalOf(t, w.Pool, email)
}

// PrincipalOf is the user with email, in the database of pool, as the services see them.
func PrincipalOf(t testing.TB, pool *pgxpool.Pool, email string) access.Principal {
	t.Helper()
	q := db.Queries(pool)
	u, err := q.GetUserByEmail(context.Background(), email)
	if err != nil {
		t.Fatalf("find %s: %v", email, err)
	}
	p, err := auth.Requester(context.Background(), q, uuid.NullUUID{UUID: u.ID, Valid: true})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TokenOf is the secret of a new API token of p, in the database of pool, to call the API as p.
func TokenOf(t testing.TB, pool *pgxpool.Pool, p access.Principal) string {
	t.Helper()
	tok, err := auth.NewService(pool, discardLog(), time.Hour).CreateToken(context.Background(), p, auth.TokenSpec{Name: "test"})
	if err != nil {
		t.Fatalf("token of %s: %v", p.Email, err)
	}
	return tok.Secret
}

// Fixture returns what build makes, building it the first time a case of this world asks for
// it by name: every later call, by the same case, gets the same thing.
func Fixture[T any](w *World, name string, build func() T) T {
	if v, ok := w.fixtures[name]; ok {
		return v.(T)
	}
	v := build()
	w.fixtures[name] = v
	return v
}

// Must fails the test at once when err is not nil.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TokenA is an API token of A's admin.
func (w *World) TokenA(t *testing.T) auth.NewToken {
	return Fixture(w, "tokenA", func() auth.NewToken {
		tok, err := w.Auth.CreateToken(context.Background(), w.AdminA, auth.TokenSpec{Name: "a's token"})
		Must(t, err)
		return tok
	})
}

// InTx runs f in a transaction on the world's database, committed when f returns no error: the
// cases of methods that work in their caller's transaction call them in it.
func (w *World) InTx(f func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(context.Background(), w.Pool, f)
}
