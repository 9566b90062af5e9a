package host

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"
)

// TestHostCallSpanNames: every method bridge.request serves has its own span name,
// "host call <method>" (only a method of the guest's own is "host call other"). The
// methods are read from request's switch in bridge.go, so a new one cannot be missed.
func TestHostCallSpanNames(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "bridge.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var served []string
	ast.Inspect(f, func(n ast.Node) bool {
		fn, ok := n.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "request" || fn.Recv == nil {
			return true
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if cc, ok := n.(*ast.CaseClause); ok {
				for _, e := range cc.List {
					if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						m, _ := strconv.Unquote(lit.Value)
						served = append(served, m)
					}
				}
			}
			return true
		})
		return false
	})
	if len(served) < 10 {
		t.Fatalf("found %d methods in bridge.request's switch: %q; the test no longer reads it", len(served), served)
	}
	for _, m := range served {
		if got, want := hostCallSpans[m], "host call "+m; got != want {
			t.Errorf("hostCallSpans[%q] = %q, want %q", m, got, want)
		}
	}
	for m := range hostCallSpans {
		if !slices.Contains(served, m) {
			t.Errorf("hostCallSpans names %q, which bridge.request does not serve", m)
		}
	}
}
