package server_test

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
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
	"nimbus/app/approval"
	"nimbus/app/audit"
	"nimbus/app/auth"
	"nimbus/app/component"
	"nimbus/app/deploy"
	"nimbus/app/environment"
	"nimbus/app/governance"
	"nimbus/app/ipam"
	"nimbus/app/landingzone"
	"nimbus/app/problem"
	"nimbus/app/resolver"
	"nimbus/app/secrets"
	"nimbus/app/tenant"
	"nimbus/app/user"
	"nimbus/db/dbgen"
	"nimbus/db/dbtest"
)

// world is two tenants with people of each role, used to check every data-access method
// against the actors it must refuse and those it must serve. Fixtures beyond the people and
// two components are built on first use (see fixture), so a case pays only for what it uses.
type world struct {
	pool                   *pgxpool.Pool
	tenants                *tenant.Service
	users                  *user.Service
	audit                  *audit.Service
	auth                   *auth.Service
	components             *component.Service
	envs                   *environment.Service
	deploys                *deploy.Service // queues jobs and works none
	zones                  *landingzone.Service
	lifecycle              *environment.Lifecycle
	governance             *governance.Service
	ipam                   *ipam.Service
	resolvers              *resolver.Service
	approvals              *approval.Service
	keys                   *secrets.Keyring // seals the deployments' secrets and stack passphrases
	a, b                   tenant.Tenant
	shared, ofA            component.Component // provider-level, and tenant A's
	admin                  access.Principal    // provider admin
	adminA, userA, readerA access.Principal
	adminB                 access.Principal
	fixtures               map[string]any
}

func newWorld(t testing.TB) *world {
	t.Helper()
	ctx := context.Background()
	pool := dbtest.Pool(t)
	keys, jobs := testKeys(t), insertOnly(t, pool)
	deploys := deploy.NewService(pool, keys, jobs, nil, nil)
	lifecycle := environment.NewLifecycle(pool, deploys, jobs)
	w := &world{
		pool: pool, tenants: tenant.NewService(pool), users: user.NewService(pool),
		audit: audit.NewService(pool), auth: auth.NewService(pool, discardLog(), time.Hour),
		components: component.NewService(pool, yamlOnly{}, jobs),
		envs:       environment.NewService(pool),
		deploys:    deploys,
		zones:      landingzone.NewService(pool, lifecycle),
		lifecycle:  lifecycle,
		governance: governance.NewService(pool),
		ipam:       ipam.NewService(pool),
		resolvers:  resolver.NewService(pool),
		approvals:  approval.NewService(pool, jobs),
		keys:       keys,
		fixtures:   map[string]any{},
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

// fixture returns what build makes, building it the first time a case of this world asks for
// it by name: every later call, by the same case, gets the same thing.
func fixture[T any](w *world, name string, build func() T) T {
	if v, ok := w.fixtures[name]; ok {
		return v.(T)
	}
	v := build()
	w.fixtures[name] = v
	return v
}

// actor names one of the world's people, so that a case can say whom a method refuses and
// whom it serves.
type actor int

const (
	providerAdmin actor = iota
	adminA              // tenant admin of A
	userA               // user of A
	readerA             // read-only member of A
	adminB              // tenant admin of B
	stranger            // a user of no tenant
)

func (a actor) String() string {
	return [...]string{"the provider admin", "A's admin", "A's user", "A's reader", "B's admin", "a user of no tenant"}[a]
}

// as is the principal the actor acts as.
func (w *world) as(t *testing.T, a actor) access.Principal {
	t.Helper()
	switch a {
	case providerAdmin:
		return w.admin
	case adminA:
		return w.adminA
	case userA:
		return w.userA
	case readerA:
		return w.readerA
	case adminB:
		return w.adminB
	case stranger:
		return fixture(w, "stranger", func() access.Principal {
			ctx := context.Background()
			_, err := w.users.Create(ctx, w.admin, user.NewUser{Email: "stranger@example.com", Password: "long enough password"})
			must(t, err)
			return w.principal(t, "stranger@example.com")
		})
	}
	t.Fatalf("no actor %d", a)
	return access.Principal{}
}

// authzCase is the authorization test of one data-access method: the same call, made as each
// actor the method must refuse and then as each actor it must serve. A method that refused
// everyone would fail its served actors; one that served everyone, its refused ones.
type authzCase struct {
	refused []refusal
	served  []actor
	// open says why the method refuses nobody, for the few that every signed-in user may call;
	// a case refuses someone otherwise.
	open string
	// call calls the method as p, on the world's fixtures, and checks what a served call
	// returned. A list answers errHidden when p is not shown what the case looks for; a call
	// that answers without doing anything, errIgnored.
	call func(t *testing.T, w *world, p access.Principal) error
	// then checks what the served calls left behind, and refusals the one call cannot make:
	// other arguments, other states.
	then func(t *testing.T, w *world)
}

// refusal is an actor a method refuses and the error it must answer: ErrNotFound for what the
// actor may not see, ErrForbidden for what they may see but not do, an invalid field where a
// method names the field it cannot find, errHidden for a list that leaves it out.
type refusal struct {
	who  actor
	want error
}

var (
	errHidden  = errors.New("served, without being shown it")
	errIgnored = errors.New("served, without anything done")
)

// invalid is the refusal of a method that answers a validation error naming field, as one that
// creates something does when it cannot see where: "no environment with this ID that you can see".
type invalid string

func (f invalid) Error() string { return "a validation error on " + string(f) }

// refusedAs reports whether err is the refusal want.
func refusedAs(err, want error) bool {
	if field, ok := want.(invalid); ok {
		return problem.FieldOf(err) == string(field)
	}
	return errors.Is(err, want)
}

// shown answers errHidden unless list holds an item that is, for a list that should show it.
func shown[T any](list []T, err error, is func(T) bool) error {
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(list, is) {
		return errHidden
	}
	return nil
}

// run makes the case's call as each refused actor, then as each served one, and checks what
// the served calls left.
func (c authzCase) run(t *testing.T, w *world) {
	t.Helper()
	for _, r := range c.refused {
		if err := c.call(t, w, w.as(t, r.who)); !refusedAs(err, r.want) {
			t.Errorf("%v: got %v, want %v", r.who, err, r.want)
		}
	}
	for _, who := range c.served {
		if err := c.call(t, w, w.as(t, who)); err != nil {
			t.Errorf("%v is not served: %v", who, err)
		}
	}
	if c.then != nil && !t.Failed() {
		c.then(t, w)
	}
}

// problems lists what makes a case unable to tell a method that refuses everyone, or serves
// everyone, from a correct one.
func (c authzCase) problems() []string {
	var out []string
	if c.call == nil {
		out = append(out, "it makes no call")
	}
	if len(c.served) == 0 {
		out = append(out, "no actor is served, so a method that refused everyone would pass")
	}
	if len(c.refused) == 0 && c.open == "" {
		out = append(out, "no actor is refused, and open does not say why the method refuses nobody")
	}
	for _, r := range c.refused {
		if slices.Contains(c.served, r.who) {
			out = append(out, fmt.Sprintf("%v is both refused and served", r.who))
		}
		if r.want == nil {
			out = append(out, fmt.Sprintf("%v is refused with no error", r.who))
		}
	}
	return out
}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got error %v, want %v", err, want)
	}
}

func wantField(t *testing.T, err error, field string) {
	t.Helper()
	if problem.FieldOf(err) != field {
		t.Fatalf("got error %v, want one on %s", err, field)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// authzCases holds the authorization case of every data-access method. Each domain keeps its
// cases in its own map.
var authzCases = merge(accountCases, componentCases, environmentCases, deployCases, governanceCases, resolverCases, approvalCases, zoneCases,
	stackCases, instanceCases, eventCases, driftCases, ttlCases, clusterCases, provisionCases, policyCases)

func merge(maps ...map[string]authzCase) map[string]authzCase {
	out := map[string]authzCase{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

var accountCases = map[string]authzCase{
	"tenant.Service.List": {
		refused: []refusal{{adminB, errHidden}},
		served:  []actor{readerA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			got, err := w.tenants.List(context.Background(), p)
			for _, x := range got {
				if !p.Member(x.ID) {
					t.Errorf("%s lists %s, not theirs", p.Email, x.Name)
				}
			}
			return shown(got, err, func(x tenant.Tenant) bool { return x.ID == w.a.ID })
		},
		then: func(t *testing.T, w *world) {
			all, err := w.tenants.List(context.Background(), w.admin)
			must(t, err)
			if len(all) != 2 {
				t.Fatalf("provider admin lists %d tenants, want 2", len(all))
			}
		},
	},
	"tenant.Service.Get": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {stranger, problem.ErrNotFound}},
		served:  []actor{readerA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.tenants.Get(context.Background(), p, w.a.ID)
			return err
		},
	},
	"tenant.Service.Create": {
		refused: []refusal{{adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.tenants.Create(context.Background(), p, "Allowed")
			return err
		},
	},
	"tenant.Service.Rename": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.tenants.Rename(context.Background(), p, w.a.ID, "Tenant A, renamed")
			return err
		},
		then: func(t *testing.T, w *world) {
			got, err := w.tenants.Get(context.Background(), w.adminA, w.a.ID)
			must(t, err)
			if got.Name != "Tenant A, renamed" {
				t.Fatalf("tenant A is named %q after the rename", got.Name)
			}
			_, err = w.tenants.Rename(context.Background(), w.admin, w.a.ID, "tenant b")
			wantField(t, err, "name")
		},
	},
	"tenant.Service.Delete": {
		refused: []refusal{{adminA, problem.ErrNotFound}, {userA, problem.ErrNotFound}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			empty := fixture(w, "empty tenant", func() tenant.Tenant {
				tn, err := w.tenants.Create(context.Background(), w.admin, "Empty")
				must(t, err)
				return tn
			})
			return w.tenants.Delete(context.Background(), p, empty.ID)
		},
		then: func(t *testing.T, w *world) {
			// A tenant with people in it stays, and says so.
			err := w.tenants.Delete(context.Background(), w.admin, w.a.ID)
			wantField(t, err, "tenant")
			if !strings.Contains(err.Error(), "still has 3 members") {
				t.Fatalf("deleting tenant A: %v", err)
			}
		},
	},
	"tenant.Service.Members": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			members, err := w.tenants.Members(context.Background(), p, w.a.ID)
			if err == nil && len(members) != 3 {
				t.Errorf("tenant A has %d members, want 3", len(members))
			}
			return err
		},
	},
	"tenant.Service.SetMember": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {userA, problem.ErrForbidden}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.tenants.SetMember(context.Background(), p, w.a.ID, w.readerA.UserID, access.User)
			return err
		},
		then: func(t *testing.T, w *world) {
			// Nobody makes themselves an admin of A.
			ctx := context.Background()
			_, err := w.tenants.SetMember(ctx, w.adminB, w.a.ID, w.adminB.UserID, access.TenantAdmin)
			wantErr(t, err, problem.ErrNotFound)
			_, err = w.tenants.SetMember(ctx, w.userA, w.a.ID, w.userA.UserID, access.TenantAdmin)
			wantErr(t, err, problem.ErrForbidden)
		},
	},
	"tenant.Service.RemoveMember": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {userA, problem.ErrForbidden}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			return w.tenants.RemoveMember(context.Background(), p, w.a.ID, w.readerA.UserID)
		},
		then: func(t *testing.T, w *world) {
			members, err := w.tenants.Members(context.Background(), w.adminA, w.a.ID)
			must(t, err)
			if len(members) != 2 {
				t.Fatalf("tenant A has %d members after the removal, want 2", len(members))
			}
		},
	},
	"tenant.Service.UserIDByEmail": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {userA, problem.ErrForbidden}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			id, err := w.tenants.UserIDByEmail(context.Background(), p, w.a.ID, "admin-b@example.com")
			if err == nil && id != w.adminB.UserID {
				t.Errorf("found %s, want %s", id, w.adminB.UserID)
			}
			return err
		},
	},
	"user.Service.List": {
		refused: []refusal{{userA, problem.ErrForbidden}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			got, err := w.users.List(context.Background(), p)
			if err != nil {
				return err
			}
			for _, u := range got {
				if u.ID == w.adminB.UserID || u.ID == w.admin.UserID {
					t.Errorf("tenant admin of A sees %s, who is not in A", u.Email)
				}
			}
			if len(got) != 3 {
				t.Errorf("tenant admin of A sees %d users, want A's 3", len(got))
			}
			return nil
		},
	},
	"user.Service.Get": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {readerA, problem.ErrNotFound}},
		served:  []actor{adminA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.users.Get(context.Background(), p, w.userA.UserID)
			return err
		},
		then: func(t *testing.T, w *world) {
			_, err := w.users.Get(context.Background(), w.adminA, w.adminB.UserID)
			wantErr(t, err, problem.ErrNotFound)
		},
	},
	"user.Service.Create": {
		refused: []refusal{{adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.users.Create(context.Background(), p, user.NewUser{Email: "x@example.com", Password: "long enough password"})
			return err
		},
	},
	"audit.Service.List": {
		refused: []refusal{{userA, problem.ErrForbidden}, {adminB, errHidden}},
		served:  []actor{adminA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			page, err := w.audit.List(context.Background(), p, audit.Filter{Limit: 200})
			for _, e := range page.Events {
				if !p.ProviderAdmin && !p.Can(access.AuditRead, e.TenantID.UUID) {
					t.Errorf("%s sees event %s of tenant %v", p.Email, e.Action, e.TenantID)
				}
			}
			return shown(page.Events, err, func(e dbgen.AuditEvent) bool { return e.TenantID.UUID == w.a.ID })
		},
	},
	"auth.Service.ListTokens": {
		refused: []refusal{{adminB, errHidden}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			mine := w.tokenA(t)
			got, err := w.auth.ListTokens(context.Background(), p)
			for _, tok := range got {
				if tok.UserID != p.UserID {
					t.Errorf("%s lists %s's token", p.Email, tok.UserID)
				}
			}
			return shown(got, err, func(tok dbgen.ApiToken) bool { return tok.ID == mine.Token.ID })
		},
	},
	"auth.Service.CreateToken": {
		open:   "every user makes tokens of their own, which act as them",
		served: []actor{readerA, stranger},
		call: func(t *testing.T, w *world, p access.Principal) error {
			ctx := context.Background()
			tok, err := w.auth.CreateToken(ctx, p, "my token", 0)
			if err != nil {
				return err
			}
			got, err := w.auth.TokenPrincipal(ctx, tok.Secret)
			must(t, err)
			if got.UserID != p.UserID || got.ProviderAdmin != p.ProviderAdmin || !maps.Equal(got.Roles, p.Roles) {
				t.Errorf("the token of %s acts as %+v", p.Email, got)
			}
			return nil
		},
	},
	"auth.Service.RevokeToken": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			return w.auth.RevokeToken(context.Background(), p, w.tokenA(t).Token.ID)
		},
		then: func(t *testing.T, w *world) {
			_, err := w.auth.TokenPrincipal(context.Background(), w.tokenA(t).Secret)
			wantErr(t, err, problem.ErrUnauthenticated)
		},
	},
	"auth.Service.Logout": {
		refused: []refusal{{adminB, errIgnored}}, // B cannot end A's session
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			ctx := context.Background()
			sess := fixture(w, "session", func() auth.Session {
				sess, _, err := w.auth.Login(ctx, "admin-a@example.com", "long enough password", "192.0.2.1")
				must(t, err)
				return sess
			})
			if err := w.auth.Logout(ctx, p, sess.ID); err != nil {
				return err
			}
			_, _, err := w.auth.SessionPrincipal(ctx, sess.Secret)
			if err == nil {
				return errIgnored
			}
			wantErr(t, err, problem.ErrUnauthenticated)
			return nil
		},
	},
}

// tokenA is an API token of A's admin.
func (w *world) tokenA(t *testing.T) auth.NewToken {
	return fixture(w, "tokenA", func() auth.NewToken {
		tok, err := w.auth.CreateToken(context.Background(), w.adminA, "a's token", 0)
		must(t, err)
		return tok
	})
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

// TestAuthz_EveryDataAccessMethodHasATest fails when a data-access method has no case, or its
// case could not tell it from one that refuses everyone, or serves everyone (see problems).
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
	for _, name := range slices.Sorted(maps.Keys(authzCases)) {
		if !contains(methods, name) {
			t.Errorf("authzCases has %s, which is not a data-access method (renamed?)", name)
		}
		for _, p := range authzCases[name].problems() {
			t.Errorf("%s: %s", name, p)
		}
	}
}

// TestAuthz_ACaseMustServeSomeone checks the meta-test's rule on cases it makes up: a case
// that only refuses cannot tell a correct method from one that refuses everyone.
func TestAuthz_ACaseMustServeSomeone(t *testing.T) {
	refuse := func(*testing.T, *world, access.Principal) error { return problem.ErrNotFound }
	for _, c := range []struct {
		name string
		c    authzCase
		ok   bool
	}{
		{"refusals only", authzCase{refused: []refusal{{adminB, problem.ErrNotFound}}, call: refuse}, false},
		{"served only", authzCase{served: []actor{adminA}, call: refuse}, false},
		{"served only, open to all", authzCase{served: []actor{adminA}, open: "anyone may", call: refuse}, true},
		{"refused and served", authzCase{refused: []refusal{{adminB, problem.ErrNotFound}}, served: []actor{adminA}, call: refuse}, true},
		{"one actor both", authzCase{refused: []refusal{{adminA, problem.ErrNotFound}}, served: []actor{adminA}, call: refuse}, false},
		{"no call", authzCase{refused: []refusal{{adminB, problem.ErrNotFound}}, served: []actor{adminA}}, false},
	} {
		if got := c.c.problems(); (len(got) == 0) != c.ok {
			t.Errorf("%s: problems %q, want ok %v", c.name, got, c.ok)
		}
	}
}

func TestAuthz_Methods(t *testing.T) {
	for _, name := range dataAccessMethods(t) {
		c, ok := authzCases[name]
		if !ok {
			continue // reported by TestAuthz_EveryDataAccessMethodHasATest
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c.run(t, newWorld(t))
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
