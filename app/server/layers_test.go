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

// floors are the folders of app/ from the top down, as ARCHITECTURE.md draws them: a package
// imports packages of its own floor or of floors below it, never above. The packages of a
// layer's folder (kernel, platform, domain, orchestration) share its floor.
var floors = [][]string{
	{"apptest", "cli"},
	{"server"},
	{"orchestration"},
	{"domain"},
	{"platform"},
	{"kernel"},
}

// No package of app/ imports one on a floor above its own, and every folder has a floor.
func TestLayers_ImportsRunDown(t *testing.T) {
	floor := map[string]int{}
	for i, names := range floors {
		for _, n := range names {
			floor[n] = i
		}
	}
	dirs, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		from, ok := floor[d.Name()]
		if !ok {
			t.Errorf("app/%s stands on no floor: place it in ARCHITECTURE.md's drawing and here", d.Name())
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
				if f, ok := floor[to]; ok && f < from {
					t.Errorf("%s imports app/%s, a floor above app/%s", path, rest, d.Name())
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
