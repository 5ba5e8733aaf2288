package apptest_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
)

// internalEntryPoints are the methods that take the caller's transaction and act for a principal
// without checking what the principal may do, each with why no request reaches them unchecked.
// A method that takes a transaction first has an authorization case like any other, unless it
// is listed here.
var internalEntryPoints = map[string]string{
	"deploy.Service.StartTx": "a step of a graph (an environment's components, a stack instance's slots) queues it; " +
		"who may deploy or destroy was checked when the graph was asked for, and the step acts for that person",
	"deploy.Service.RequestTx": "a step of a stack instance's run or a transition of its machine queues it; " +
		"who may was checked when the run or the signal was asked for",
	"deploy.Service.ApplyTx": "a stack instance's run applies its slots' previews with it, after the instance's deploy was checked",
	"environment.Lifecycle.Provision": "Lifecycle.Create calls it for an environment it has just checked and recorded, " +
		"and a landing zone for its system environment, which only provider admins may ask for",
	"environment.Lifecycle.StartDecommission": "Lifecycle.Decommission and a landing zone being retired call it after checking the actor; " +
		"the expirer calls it as the system, for an environment whose lifetime is over",
}

// method is an exported method of a domain that acts on behalf of a principal.
type method struct {
	name string
	// tx says it takes the caller's transaction first: (ctx, pgx.Tx, access.Principal, ...).
	tx bool
}

// sources are the files matching pattern of every package under app/, however deep: those of
// the wiring and the harness, each layer's packages and the packages standing on them (a
// domain's web face).
func sources(pattern string) ([]string, error) {
	var out []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == "testdata":
			return filepath.SkipDir
		case d.IsDir():
			return nil
		}
		if ok, _ := filepath.Match(pattern, d.Name()); ok {
			out = append(out, path)
		}
		return nil
	})
	return out, err
}

// dataAccessMethods lists every exported method, in every domain package under app/, that
// acts on behalf of a principal: (ctx, access.Principal, ...), or (ctx, pgx.Tx,
// access.Principal, ...) for one that works in its caller's transaction. It reads the source,
// so a new domain or method is found without being registered anywhere.
func dataAccessMethods(t *testing.T) []method {
	t.Helper()
	files, err := sources("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []method
	fset := token.NewFileSet()
	for _, path := range files {
		// The harness acts for principals too, but it is no domain: nothing it does is reached
		// by a request.
		if strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, "_templ.go") || filepath.Base(filepath.Dir(path)) == "apptest" {
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
			if !ok {
				continue
			}
			params := paramTypes(fn.Type.Params)
			name := f.Name.Name + "." + recv.Name + "." + fn.Name.Name
			switch {
			case len(params) >= 2 && is(params[1], "access", "Principal"):
				out = append(out, method{name: name})
			case len(params) >= 3 && is(params[1], "pgx", "Tx") && is(params[2], "access", "Principal"):
				out = append(out, method{name: name, tx: true})
			}
		}
	}
	slices.SortFunc(out, func(a, b method) int { return strings.Compare(a.name, b.name) })
	return out
}

// paramTypes is the type of each parameter, one for each name: (a, b T) is two.
func paramTypes(list *ast.FieldList) []ast.Expr {
	var out []ast.Expr
	for _, p := range list.List {
		for range max(len(p.Names), 1) {
			out = append(out, p.Type)
		}
	}
	return out
}

// is says whether e is the type pkg.name.
func is(e ast.Expr, pkg, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg
}

// caseMaps are the maps of authorization cases that the domains' tests declare.
type caseMaps struct {
	// where is the package directory holding each case, by the method it tests.
	where map[string]string
	// declared and run are the maps each package directory declares and passes to RunAuthz.
	declared, run map[string][]string
	problems      []string
}

// authzCases reads every test file of app/ for the maps of type map[string]apptest.AuthzCase
// and the calls of apptest.RunAuthz: the cases of each package run in that package's tests.
func authzCases(t *testing.T) caseMaps {
	t.Helper()
	files, err := sources("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	c := caseMaps{where: map[string]string{}, declared: map[string][]string{}, run: map[string][]string{}}
	fset := token.NewFileSet()
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		dir, _ := filepath.Rel("..", filepath.Dir(path))
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, v := range n.Values {
					lit, ok := v.(*ast.CompositeLit)
					if !ok {
						continue
					}
					if m, ok := lit.Type.(*ast.MapType); !ok || !is(m.Value, "apptest", "AuthzCase") {
						continue
					}
					c.declared[dir] = append(c.declared[dir], n.Names[i].Name)
					for _, e := range lit.Elts {
						key, err := strconv.Unquote(e.(*ast.KeyValueExpr).Key.(*ast.BasicLit).Value)
						if err != nil {
							t.Fatalf("%s: a case's key is not a string: %v", fset.Position(e.Pos()), err)
						}
						if prev, ok := c.where[key]; ok {
							c.problems = append(c.problems, key+" has cases in app/"+prev+" and app/"+dir)
						}
						c.where[key] = dir
					}
				}
			case *ast.CallExpr:
				if is(n.Fun, "apptest", "RunAuthz") {
					for _, a := range n.Args[1:] {
						if id, ok := a.(*ast.Ident); ok {
							c.run[dir] = append(c.run[dir], id.Name)
						}
					}
				}
			}
			return true
		})
	}
	return c
}

// TestAuthz_EveryDataAccessMethodHasATest fails when a data-access method has no case, or a
// case is not run or tests no method, or a method that takes a transaction first has neither a
// case nor a place among the internal entry points. Whether each case could tell its method
// from one that refuses everyone, or serves everyone, RunAuthz checks as it runs it.
func TestAuthz_EveryDataAccessMethodHasATest(t *testing.T) {
	methods := dataAccessMethods(t)
	if len(methods) < 10 {
		t.Fatalf("found only %d data-access methods; is the enumeration broken? %v", len(methods), methods)
	}
	cases := authzCases(t)
	if len(cases.where) < 10 {
		t.Fatalf("found only %d authorization cases; is the reading of the tests broken?", len(cases.where))
	}
	for _, p := range cases.problems {
		t.Error(p)
	}
	var missing, unlisted []string
	known := map[string]method{}
	for _, m := range methods {
		known[m.name] = m
		_, tested := cases.where[m.name]
		_, internal := internalEntryPoints[m.name]
		switch {
		case tested && internal:
			t.Errorf("%s has an authorization case and is listed as an internal entry point: drop it from the list", m.name)
		case tested, internal && m.tx:
		case m.tx:
			unlisted = append(unlisted, m.name)
		default:
			missing = append(missing, m.name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("data-access methods without an authorization case:\n  %s", strings.Join(missing, "\n  "))
	}
	if len(unlisted) > 0 {
		t.Errorf("methods that take a transaction first with neither an authorization case nor a place, with a reason, in internalEntryPoints:\n  %s",
			strings.Join(unlisted, "\n  "))
	}
	for _, name := range slices.Sorted(maps.Keys(internalEntryPoints)) {
		m, ok := known[name]
		switch {
		case !ok:
			t.Errorf("internalEntryPoints has %s, which is not a data-access method (renamed?)", name)
		case !m.tx:
			t.Errorf("internalEntryPoints has %s, which takes no transaction: requests reach it, so it has a case", name)
		case strings.TrimSpace(internalEntryPoints[name]) == "":
			t.Errorf("internalEntryPoints has %s without saying why no request reaches it unchecked", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cases.where)) {
		if _, ok := known[name]; !ok {
			t.Errorf("app/%s has a case for %s, which is not a data-access method (renamed?)", cases.where[name], name)
		}
		if pkg, _, _ := strings.Cut(name, "."); pkg != filepath.Base(cases.where[name]) {
			t.Errorf("the case of %s is in app/%s: it belongs beside its method, in package %s", name, cases.where[name], pkg)
		}
	}
	for _, dir := range slices.Sorted(maps.Keys(cases.declared)) {
		for _, name := range cases.declared[dir] {
			if !slices.Contains(cases.run[dir], name) {
				t.Errorf("app/%s declares the cases %s, which its tests never pass to apptest.RunAuthz", dir, name)
			}
		}
	}
}

// TestAuthz_ACaseMustServeSomeone checks the meta-test's rule on cases it makes up: a case
// that only refuses cannot tell a correct method from one that refuses everyone.
func TestAuthz_ACaseMustServeSomeone(t *testing.T) {
	refuse := func(*testing.T, *apptest.World, access.Principal) error { return problem.ErrNotFound }
	for _, c := range []struct {
		name string
		c    apptest.AuthzCase
		ok   bool
	}{
		{"refusals only", apptest.AuthzCase{Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}}, Call: refuse}, false},
		{"served only", apptest.AuthzCase{Served: []apptest.Actor{apptest.AdminA}, Call: refuse}, false},
		{"served only, open to all", apptest.AuthzCase{Served: []apptest.Actor{apptest.AdminA}, Open: "anyone may", Call: refuse}, true},
		{"refused and served", apptest.AuthzCase{Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}}, Served: []apptest.Actor{apptest.AdminA}, Call: refuse}, true},
		{"one actor both", apptest.AuthzCase{Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}}, Served: []apptest.Actor{apptest.AdminA}, Call: refuse}, false},
		{"no call", apptest.AuthzCase{Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}}, Served: []apptest.Actor{apptest.AdminA}}, false},
	} {
		if got := c.c.Problems(); (len(got) == 0) != c.ok {
			t.Errorf("%s: problems %q, want ok %v", c.name, got, c.ok)
		}
	}
}
