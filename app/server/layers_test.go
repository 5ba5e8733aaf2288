package server_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// layers are the rows of ARCHITECTURE.md's drawing, from the top down.
var layers = [][]string{
	{"apptest"},
	{"cli", "server"},
	{"tenant", "user", "dashboard"},
	{"provision", "landingzone", "environment", "instance"},
	{"deploy", "approval", "event", "poller"},
	{"stack", "policy", "component", "paramform"},
	{"resolver", "governance", "ipam", "cluster", "auth", "audit"},
	{"web", "pulumix", "system"},
	{"lifecycle", "outbox", "outcome", "problem", "access", "graph", "secrets", "objstore", "sandbox", "egress", "cursor", "expression"},
}

// No package of app/ imports one on a row above its own, and every package has a row.
func TestLayers_ImportsRunDown(t *testing.T) {
	row := map[string]int{}
	for i, names := range layers {
		for _, n := range names {
			row[n] = i
		}
	}
	dirs, err := os.ReadDir(filepath.Join(".."))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		from, ok := row[d.Name()]
		if !ok {
			t.Errorf("app/%s has no row in the layers: place it in ARCHITECTURE.md's drawing and here", d.Name())
			continue
		}
		err := filepath.WalkDir(filepath.Join("..", d.Name()), func(path string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			checked++
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				rest, ok := strings.CutPrefix(p, "nimbus/app/")
				if !ok {
					continue
				}
				to := strings.Split(rest, "/")[0]
				if r, ok := row[to]; ok && r < from {
					t.Errorf("%s imports app/%s, a row above app/%s", path, to, d.Name())
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 100 {
		t.Fatalf("read %d files: is the test still in app/server?", checked)
	}
}
