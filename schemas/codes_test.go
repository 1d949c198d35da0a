package schemas

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// TestCodesDocumented fails when an error code is declared without a
// meaning in Codes, or Codes lists one twice or one that is not declared:
// the table is the contract clients read.
func TestCodesDocumented(t *testing.T) {
	declared := map[string]string{} // code → constant
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "codes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Code") {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s is not a string literal", name.Name)
				}
				declared[constant.StringVal(constant.MakeFromLiteral(lit.Value, lit.Kind, 0))] = name.Name
			}
		}
	}
	if len(declared) == 0 {
		t.Fatal("no Code constants found in codes.go")
	}
	listed := map[string]bool{}
	for _, c := range Codes() {
		switch {
		case declared[c.Code] == "":
			t.Errorf("Codes lists %q, which no Code constant in codes.go declares", c.Code)
		case listed[c.Code]:
			t.Errorf("Codes lists %q twice", c.Code)
		case strings.TrimSpace(c.Meaning) == "":
			t.Errorf("Codes gives %s no meaning", declared[c.Code])
		}
		listed[c.Code] = true
	}
	for code, name := range declared {
		if !listed[code] {
			t.Errorf("%s (%q) is missing from Codes", name, code)
		}
	}
}
