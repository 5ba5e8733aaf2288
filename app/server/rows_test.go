package server_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// No exported function or method of app/ takes or returns a row sqlc generates: a package hands
// others its own types, so a change of the schema is not a change of every package's API. The
// queries handle (*dbgen.Queries) is a transaction, not a row, and may pass.
func TestLayers_NoGeneratedRowCrossesAPackage(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, "_templ.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		checked++
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || !fn.Name.IsExported() || !exportedReceiver(fn) {
				continue
			}
			for _, list := range []*ast.FieldList{fn.Type.Params, fn.Type.Results} {
				for _, row := range generatedRows(list) {
					t.Errorf("%s: %s passes dbgen.%s: give it a type of its own package", fset.Position(fn.Pos()), fn.Name.Name, row)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("read %d files: is the test still in app/server?", checked)
	}
}

// exportedReceiver reports whether fn is a function, or a method of an exported type.
func exportedReceiver(fn *ast.FuncDecl) bool {
	if fn.Recv == nil {
		return true
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if index, ok := typ.(*ast.IndexExpr); ok {
		typ = index.X
	}
	id, ok := typ.(*ast.Ident)
	return !ok || id.IsExported()
}

// generatedRows names the types of package dbgen in list, but the queries handle.
func generatedRows(list *ast.FieldList) []string {
	if list == nil {
		return nil
	}
	var out []string
	for _, field := range list.List {
		ast.Inspect(field.Type, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "dbgen" && sel.Sel.Name != "Queries" {
				out = append(out, sel.Sel.Name)
			}
			return true
		})
	}
	return out
}
