package server_test

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"nimbus/app/access"
	"nimbus/app/audit"
	"nimbus/app/auth"
	"nimbus/app/component"
	"nimbus/app/problem"
	"nimbus/app/tenant"
	"nimbus/app/user"
	"nimbus/db/dbgen"
	"nimbus/db/dbtest"
)

// world is two tenants with people of each role, used to check every data-access method
// against an actor who may and one who may not.
type world struct {
	pool                   *pgxpool.Pool
	tenants                *tenant.Service
	users                  *user.Service
	audit                  *audit.Service
	auth                   *auth.Service
	components             *component.Service
	a, b                   tenant.Tenant
	shared, ofA            component.Component // provider-level, and tenant A's
	admin                  access.Principal    // provider admin
	adminA, userA, readerA access.Principal
	adminB                 access.Principal
}

func newWorld(t testing.TB) *world {
	t.Helper()
	ctx := context.Background()
	pool := dbtest.Pool(t)
	w := &world{
		pool: pool, tenants: tenant.NewService(pool), users: user.NewService(pool),
		audit: audit.NewService(pool), auth: auth.NewService(pool, discardLog(), time.Hour),
		components: component.NewService(pool, yamlOnly{}, insertOnly(t, pool)),
	}
	if _, err := user.Bootstrap(ctx, pool, "root@example.com", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	w.admin = w.principal(t, "root@example.com")
	var err error
	if w.a, err = w.tenants.Create(ctx, w.admin, "Tenant A"); err != nil {
		t.Fatal(err)
	}
	if w.b, err = w.tenants.Create(ctx, w.admin, "Tenant B"); err != nil {
		t.Fatal(err)
	}
	w.adminA = w.member(t, "admin-a@example.com", w.a.ID, access.TenantAdmin)
	w.userA = w.member(t, "user-a@example.com", w.a.ID, access.User)
	w.readerA = w.member(t, "reader-a@example.com", w.a.ID, access.ReadOnly)
	w.adminB = w.member(t, "admin-b@example.com", w.b.ID, access.TenantAdmin)
	if w.shared, err = w.components.Create(ctx, w.admin, machine(t, "shared-machine", nil)); err != nil {
		t.Fatal(err)
	}
	// Tenants see provider-level components once published.
	if _, err = w.components.Publish(ctx, w.admin, w.shared.ID, w.shared.Revision, "first"); err != nil {
		t.Fatal(err)
	}
	if w.ofA, err = w.components.Create(ctx, w.adminA, machine(t, "a-machine", &w.a.ID)); err != nil {
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

// machine is the simulated-cloud machine component from the component package's test data.
func machine(t testing.TB, name string, tenantID *uuid.UUID) component.New {
	t.Helper()
	read := func(f string) []byte {
		b, err := os.ReadFile("../component/testdata/" + f)
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

func (w *world) member(t testing.TB, email string, tenantID uuid.UUID, role access.Role) access.Principal {
	t.Helper()
	ctx := context.Background()
	u, err := w.users.Create(ctx, w.admin, user.NewUser{Email: email, Password: "long enough password"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.tenants.SetMember(ctx, w.admin, tenantID, u.ID, role); err != nil {
		t.Fatal(err)
	}
	return w.principal(t, email)
}

func (w *world) principal(t testing.TB, email string) access.Principal {
	t.Helper()
	q := dbgen.New(w.pool)
	u, err := q.GetUserByEmail(context.Background(), email)
	if err != nil {
		t.Fatal(err)
	}
	p, err := auth.Principal(context.Background(), q, u)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got error %v, want %v", err, want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// authzCases holds, for every data-access method, a test that an actor outside its reach is
// refused and an actor within it is served. Each domain keeps its cases in its own map.
var authzCases = merge(accountCases, componentCases, environmentCases, deployCases, governanceCases, resolverCases, approvalCases, zoneCases)

func merge(maps ...map[string]func(*testing.T, *world)) map[string]func(*testing.T, *world) {
	out := map[string]func(*testing.T, *world){}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

var accountCases = map[string]func(t *testing.T, w *world){
	"tenant.Service.List": func(t *testing.T, w *world) {
		got, err := w.tenants.List(context.Background(), w.adminB)
		must(t, err)
		if len(got) != 1 || got[0].ID != w.b.ID {
			t.Fatalf("tenant admin of B lists %v, want only B", got)
		}
		all, err := w.tenants.List(context.Background(), w.admin)
		must(t, err)
		if len(all) != 2 {
			t.Fatalf("provider admin lists %d tenants, want 2", len(all))
		}
	},
	"tenant.Service.Get": func(t *testing.T, w *world) {
		_, err := w.tenants.Get(context.Background(), w.adminB, w.a.ID)
		wantErr(t, err, problem.ErrNotFound)
		_, err = w.tenants.Get(context.Background(), w.readerA, w.a.ID)
		must(t, err)
	},
	"tenant.Service.Create": func(t *testing.T, w *world) {
		_, err := w.tenants.Create(context.Background(), w.adminA, "Sneaky")
		wantErr(t, err, problem.ErrForbidden)
		_, err = w.tenants.Create(context.Background(), w.admin, "Allowed")
		must(t, err)
	},
	"tenant.Service.Members": func(t *testing.T, w *world) {
		_, err := w.tenants.Members(context.Background(), w.adminB, w.a.ID)
		wantErr(t, err, problem.ErrNotFound)
		members, err := w.tenants.Members(context.Background(), w.readerA, w.a.ID)
		must(t, err)
		if len(members) != 3 {
			t.Fatalf("tenant A has %d members, want 3", len(members))
		}
	},
	"tenant.Service.SetMember": func(t *testing.T, w *world) {
		ctx := context.Background()
		_, err := w.tenants.SetMember(ctx, w.adminB, w.a.ID, w.adminB.UserID, access.TenantAdmin)
		wantErr(t, err, problem.ErrNotFound)
		_, err = w.tenants.SetMember(ctx, w.userA, w.a.ID, w.userA.UserID, access.TenantAdmin)
		wantErr(t, err, problem.ErrForbidden)
		_, err = w.tenants.SetMember(ctx, w.adminA, w.a.ID, w.readerA.UserID, access.User)
		must(t, err)
	},
	"tenant.Service.RemoveMember": func(t *testing.T, w *world) {
		ctx := context.Background()
		wantErr(t, w.tenants.RemoveMember(ctx, w.adminB, w.a.ID, w.readerA.UserID), problem.ErrNotFound)
		wantErr(t, w.tenants.RemoveMember(ctx, w.userA, w.a.ID, w.readerA.UserID), problem.ErrForbidden)
		must(t, w.tenants.RemoveMember(ctx, w.adminA, w.a.ID, w.readerA.UserID))
	},
	"tenant.Service.UserIDByEmail": func(t *testing.T, w *world) {
		ctx := context.Background()
		_, err := w.tenants.UserIDByEmail(ctx, w.adminB, w.a.ID, "user-a@example.com")
		wantErr(t, err, problem.ErrNotFound)
		_, err = w.tenants.UserIDByEmail(ctx, w.userA, w.a.ID, "user-a@example.com")
		wantErr(t, err, problem.ErrForbidden)
		id, err := w.tenants.UserIDByEmail(ctx, w.adminA, w.a.ID, "admin-b@example.com")
		must(t, err)
		if id != w.adminB.UserID {
			t.Fatalf("found %s, want %s", id, w.adminB.UserID)
		}
	},
	"user.Service.List": func(t *testing.T, w *world) {
		_, err := w.users.List(context.Background(), w.userA)
		wantErr(t, err, problem.ErrForbidden)
		got, err := w.users.List(context.Background(), w.adminA)
		must(t, err)
		for _, u := range got {
			if u.ID == w.adminB.UserID || u.ID == w.admin.UserID {
				t.Fatalf("tenant admin of A sees %s, who is not in A", u.Email)
			}
		}
		if len(got) != 3 {
			t.Fatalf("tenant admin of A sees %d users, want A's 3", len(got))
		}
	},
	"user.Service.Get": func(t *testing.T, w *world) {
		_, err := w.users.Get(context.Background(), w.adminA, w.adminB.UserID)
		wantErr(t, err, problem.ErrNotFound)
		_, err = w.users.Get(context.Background(), w.adminA, w.userA.UserID)
		must(t, err)
	},
	"user.Service.Create": func(t *testing.T, w *world) {
		_, err := w.users.Create(context.Background(), w.adminA, user.NewUser{Email: "x@example.com", Password: "long enough password"})
		wantErr(t, err, problem.ErrForbidden)
	},
	"audit.Service.List": func(t *testing.T, w *world) {
		ctx := context.Background()
		_, err := w.audit.List(ctx, w.userA, audit.Filter{})
		wantErr(t, err, problem.ErrForbidden)
		page, err := w.audit.List(ctx, w.adminA, audit.Filter{Limit: 200})
		must(t, err)
		if len(page.Events) == 0 {
			t.Fatal("tenant admin of A sees no events of A")
		}
		for _, e := range page.Events {
			if e.TenantID.UUID != w.a.ID {
				t.Fatalf("tenant admin of A sees event %s of tenant %v", e.Action, e.TenantID)
			}
		}
	},
	"auth.Service.ListTokens": func(t *testing.T, w *world) {
		ctx := context.Background()
		_, err := w.auth.CreateToken(ctx, w.adminA, "a's token", 0)
		must(t, err)
		got, err := w.auth.ListTokens(ctx, w.adminB)
		must(t, err)
		if len(got) != 0 {
			t.Fatalf("B lists A's tokens: %v", got)
		}
		mine, err := w.auth.ListTokens(ctx, w.adminA)
		must(t, err)
		if len(mine) != 1 {
			t.Fatalf("A lists %d tokens, want 1", len(mine))
		}
	},
	"auth.Service.CreateToken": func(t *testing.T, w *world) {
		ctx := context.Background()
		tok, err := w.auth.CreateToken(ctx, w.readerA, "reader's token", 0)
		must(t, err)
		p, err := w.auth.TokenPrincipal(ctx, tok.Secret)
		must(t, err)
		if p.UserID != w.readerA.UserID || p.ProviderAdmin || p.Roles[w.a.ID] != access.ReadOnly {
			t.Fatalf("token acts as %+v, want the read-only user who made it", p)
		}
	},
	"auth.Service.RevokeToken": func(t *testing.T, w *world) {
		ctx := context.Background()
		tok, err := w.auth.CreateToken(ctx, w.adminA, "a's token", 0)
		must(t, err)
		wantErr(t, w.auth.RevokeToken(ctx, w.adminB, tok.Token.ID), problem.ErrNotFound)
		must(t, w.auth.RevokeToken(ctx, w.adminA, tok.Token.ID))
		_, err = w.auth.TokenPrincipal(ctx, tok.Secret)
		wantErr(t, err, problem.ErrUnauthenticated)
	},
	"auth.Service.Logout": func(t *testing.T, w *world) {
		ctx := context.Background()
		sess, _, err := w.auth.Login(ctx, "admin-a@example.com", "long enough password", "192.0.2.1")
		must(t, err)
		must(t, w.auth.Logout(ctx, w.adminB, sess.ID))
		_, _, err = w.auth.SessionPrincipal(ctx, sess.Secret)
		must(t, err) // B cannot end A's session
		must(t, w.auth.Logout(ctx, w.adminA, sess.ID))
		_, _, err = w.auth.SessionPrincipal(ctx, sess.Secret)
		wantErr(t, err, problem.ErrUnauthenticated)
	},
}

// dataAccessMethods lists every exported method, in every domain package under app/, that
// acts on behalf of a principal: (ctx, access.Principal, ...). It reads the source, so a new
// domain or method is found without being registered anywhere.
func dataAccessMethods(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, "_templ.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || !fn.Name.IsExported() {
				continue
			}
			star, ok := fn.Recv.List[0].Type.(*ast.StarExpr)
			if !ok {
				continue
			}
			recv, ok := star.X.(*ast.Ident)
			params := fn.Type.Params.List
			if !ok || len(params) < 2 {
				continue
			}
			if sel, ok := params[1].Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Principal" {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "access" {
					out = append(out, f.Name.Name+"."+recv.Name+"."+fn.Name.Name)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestAuthz_EveryDataAccessMethodHasATest(t *testing.T) {
	methods := dataAccessMethods(t)
	if len(methods) < 10 {
		t.Fatalf("found only %d data-access methods; is the enumeration broken? %v", len(methods), methods)
	}
	var missing []string
	for _, m := range methods {
		if _, ok := authzCases[m]; !ok {
			missing = append(missing, m)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("data-access methods without an authorization test in authzCases:\n  %s", strings.Join(missing, "\n  "))
	}
	for name := range authzCases {
		if !contains(methods, name) {
			t.Errorf("authzCases has %s, which is not a data-access method (renamed?)", name)
		}
	}
}

func TestAuthz_Methods(t *testing.T) {
	for _, name := range dataAccessMethods(t) {
		check, ok := authzCases[name]
		if !ok {
			continue // reported by TestAuthz_EveryDataAccessMethodHasATest
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			check(t, newWorld(t))
		})
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
