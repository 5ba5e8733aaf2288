package server_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file a person wrote is read whole by the next one: none runs past 500 lines, and the
// wiring stays a page (generated code, templ's and sqlc's, is not read so).
func TestSizes_HandWrittenFilesStayReadable(t *testing.T) {
	const root = "../.."
	limits := map[string]int{"app/server/server.go": 200}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "dbgen" || d.Name() == "node_modules" || d.Name() == "vendor" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_templ.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		limit, ok := limits[filepath.ToSlash(rel)]
		if !ok {
			limit = 500
		}
		if n := bytes.Count(src, []byte("\n")); n > limit {
			t.Errorf("%s has %d lines, more than %d: split it by what changes together", filepath.ToSlash(rel), n, limit)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
