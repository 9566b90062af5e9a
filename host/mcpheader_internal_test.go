package host

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
)

// FuzzParamHeaderValues: an Mcp-Param-* header and the argument beside it are hostile
// bytes. Checking them never panics, and a header accepted for a string argument
// decodes to exactly that string.
func FuzzParamHeaderValues(f *testing.F) {
	for _, s := range [][2]string{
		{"us-west", `"us-west"`}, {"=?base64?Y2Fmw6k=?=", `"café"`}, {"42", `42`}, {"true", `true`},
		{"=?base64?!!?=", `"x"`}, {"café", `"café"`}, {" a ", `"a"`}, {"1e3", `1000`}, {"", `""`},
	} {
		f.Add(s[0], []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, value string, arg []byte) {
		for _, typ := range []string{"string", "integer", "boolean"} {
			h := http.Header{}
			h.Set("Mcp-Param-X", value)
			ph := plugins.ParamHeader{Property: "x", Name: "X", Type: typ}
			problem := checkParamHeader(h, ph, arg)
			if problem != "" || typ != "string" || !json.Valid(arg) {
				continue
			}
			var s string
			if json.Unmarshal(arg, &s) != nil {
				t.Fatalf("header %q accepted for non-string argument %s", value, arg)
			}
			if got, err := decodeParamHeader(strings.Trim(value, " \t")); err != nil || got != s {
				t.Fatalf("header %q accepted for %q, decodes to %q (%v)", value, s, got, err)
			}
		}
	})
}
