package plugins

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/canonjson"
)

// fastSchemas are schemas on the fast path: the bundled plugins' and those of Go
// plugins (jsonschema.For), and each keyword the fast path knows.
var fastSchemas = []string{
	`{"type":"object"}`,
	`{"type":"object","properties":{},"additionalProperties":false}`,
	`{"type":"object","properties":{"text":{"type":"string","description":"The text."}},"required":["text"],"additionalProperties":false}`,
	`{"type":"object","properties":{"data":{"type":"string"}},"required":["data"],"additionalProperties":false}`,
	`{"type":"object","properties":{"bytes":{"type":"integer","minimum":0},"chars":{"type":"integer","minimum":0},` +
		`"words":{"type":"integer","minimum":0},"lines":{"type":"integer","minimum":0}},"required":["bytes","chars","words","lines"],"additionalProperties":false}`,
	`{"type":"object","properties":{"sha256":{"type":"string","pattern":"^[0-9a-f]{64}$"}},"required":["sha256"],"additionalProperties":false}`,
	`{"type":"object","properties":{"json":{"type":"string","description":"the JSON document"},"indent":{"type":["null","integer"],"description":"spaces"}},"required":["json"],"additionalProperties":false}`,
	`{"type":"object","properties":{"to":{"type":"integer"},"delay_ms":{"type":"integer"}},"required":["to"],"additionalProperties":false}`,
	`{"type":"object","properties":{"n":{"type":"number","minimum":-1.5,"maximum":10}}}`,
	`{"type":"object","properties":{"s":{"type":"string","minLength":2,"maxLength":3}},"title":"t","$comment":"c","x-extra":1}`,
	`{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":2}}}`,
	`{"type":"object","properties":{"o":{"type":"object","properties":{"k":{"type":"boolean"}},"required":["k"]}}}`,
	`{"type":"object","additionalProperties":{"type":"string"}}`,
	`{"type":"object","properties":{"any":{},"yes":true,"null":{"type":"null"}}}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`,
	`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"a":{"type":["string","number"]}}}`,
	`{"type":"object","properties":{"p":{"type":"string","pattern":"é+","format":"email","default":"x","examples":["a"]}}}`,
	`{"type":"object","required":["a","b"]}`,
}

// fastValues are argument documents for every schema above: valid, invalid, and
// malformed in each way the full check reports.
var fastValues = []string{
	`{}`, ` { } `, `{"text":"abc"}`, `{"text":5}`, `{"text":"a","x":1}`, `{"text":"a","text":"b"}`,
	`{"text":"\ud800"}`, `{"text":"\udc00"}`, `{"text":"\ud83d\ude00"}`, `{"text":"\ud83d\u0041"}`, `{"text":"a\u0000b\n\"\\\/\b\f\r\t"}`,
	`{"te\u0078t":"a"}`, `{"text":"a","te\u0078t":"b"}`, `{"data":"QUJD"}`, `[1]`, `1`, `"x"`, `null`, `{"text":"a"`, `{"text":"a"}x`,
	`{"text":"a"}{}`, `{"text":"a",}`, `{,}`, `{"text" "a"}`, `{'a':1}`, "{\"text\":\"a\tb\"}", `{"a":tru}`, `{"a":nul}`,
	`{"bytes":1,"chars":1,"words":0,"lines":1}`, `{"bytes":-1,"chars":1,"words":0,"lines":1}`, `{"bytes":1.5,"chars":1,"words":0,"lines":1}`,
	`{"bytes":1.0,"chars":1e0,"words":0,"lines":1}`, `{"bytes":1,"chars":1,"words":0}`, `{"bytes":1,"chars":1,"words":0,"lines":1,"x":0}`,
	`{"sha256":"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}`, `{"sha256":"BA7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}`,
	`{"json":"{}","indent":2}`, `{"json":"{}","indent":null}`, `{"json":"{}","indent":2.5}`, `{"json":"{}","indent":"2"}`,
	`{"to":10}`, `{"to":1e400}`, `{"to":-0}`, `{"to":01}`, `{"to":1.}`, `{"to":.5}`, `{"to":-}`, `{"to":1e}`, `{"to":123456789012345678901234567890}`,
	`{"to":9007199254740993}`, `{"to":-9223372036854775808}`, `{"to":999999999999999999}`, `{"to":1E+2}`, `{"to":1e-2}`,
	`{"n":-1.5}`, `{"n":-1.6}`, `{"n":10}`, `{"n":10.000000000000002}`, `{"n":"10"}`,
	`{"s":"ab"}`, `{"s":"a"}`, `{"s":"abcd"}`, `{"s":"éé"}`, `{"s":"\u00e9\u00e9\u00e9"}`, `{"s":"😀😀😀😀"}`,
	`{"a":[]}`, `{"a":["x"]}`, `{"a":["x","y","z"]}`, `{"a":[1]}`, `{"a":["x",]}`, `{"a":[,]}`, `{"a":["x" "y"]}`,
	`{"o":{"k":true}}`, `{"o":{}}`, `{"o":{"k":1}}`, `{"o":[]}`, `{"o":{"k":false,"k":true}}`,
	`{"any":[{"x":null}],"yes":1,"null":null}`, `{"null":false}`, `{"a":1,"b":2}`, `{"a":1}`, `{"p":"éé"}`, `{"p":"e"}`, `{"p":"\u00e9"}`,
	`{"a":` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + `}`, `{"a":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`,
	`{"a":` + strings.Repeat(`{"a":`, 64) + `1` + strings.Repeat("}", 64) + `}`,
	`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"a":1,"b":2}`,
	`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k3":1}`,
	`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":1,"k15":2}`,
}

// fastAgrees fails unless the fast path and the full check agree on value, and the
// check gives the full check's error.
func fastAgrees(t *testing.T, s *Schema, schema, value string) {
	t.Helper()
	doc := []byte(value)
	full := fullCheckArguments(s, doc)
	if utf8.Valid(doc) {
		if fast := accepts(s.fast, doc); fast != (full == nil) {
			t.Errorf("schema %s, value %.200s: fast path accepts %v, full check %v", schema, value, fast, full)
		}
		if accepts(nil, doc) {
			var v any
			_, cerr := canonjson.Canonical(doc)
			if err := json.Unmarshal(doc, &v); err != nil || cerr != nil {
				t.Errorf("value %.200s: well-formed to the fast path, but decode = %v, canonical = %v", value, err, cerr)
			} else if _, ok := v.(map[string]any); !ok {
				t.Errorf("value %.200s: well-formed to the fast path, but not an object", value)
			}
		}
	}
	if got := checkArguments(s, doc); !sameError(got, full, func() error { return fullCheckArguments(s, doc) }) {
		t.Errorf("schema %s, value %.200s: checkArguments = %v, want %v", schema, value, got, full)
	}
}

// sameError reports whether got is want, or another error that again() gives:
// jsonschema-go's messages follow map order (which member fails first, in which order
// additional properties are named). Messages naming many properties in another order
// are the same bytes, sorted.
func sameError(got, want error, again func() error) bool {
	if (got == nil) != (want == nil) {
		return false
	}
	for range 50 {
		if got == nil || got.Error() == want.Error() {
			return true
		}
		want = again()
	}
	sorted := func(err error) string {
		b := []byte(err.Error())
		slices.Sort(b)
		return string(b)
	}
	return strings.Contains(got.Error(), "additional properties") && sorted(got) == sorted(want)
}

// TestFastPathAgrees: for every schema on the fast path and every value, the fast
// path accepts exactly what the full check (decode, canonical form, jsonschema-go)
// accepts, and the error is the full check's.
func TestFastPathAgrees(t *testing.T) {
	for _, schema := range fastSchemas {
		s := mustCompile(t, schema)
		if s.fast == nil {
			t.Errorf("schema %s is not on the fast path", schema)
			continue
		}
		for _, value := range fastValues {
			fastAgrees(t, s, schema, value)
		}
	}
}

// TestOffFastPath: schemas with a keyword the fast path does not know are checked by
// jsonschema-go, after one pass that checks the form.
func TestOffFastPath(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","properties":{"a":{"enum":["x"]}}}`,
		`{"type":"object","properties":{"a":{"const":1}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/s"}},"$defs":{"s":{"type":"string"}}}`,
		`{"type":"object","anyOf":[{"required":["a"]}]}`,
		`{"type":"object","patternProperties":{"^a":{"type":"string"}}}`,
		`{"type":"object","properties":{"a":{"exclusiveMinimum":1}}}`,
		`{"type":"object","properties":{"a":{"multipleOf":2}}}`,
		`{"type":"object","properties":{"a":{"uniqueItems":true}}}`,
		`{"type":"object","properties":{"a":false}}`,
		`{"type":"object","properties":{"a":{"type":[]}}}`,
		`{"type":"object","minProperties":1}`,
		`{"type":"object","$anchor":"x"}`,
		`{"type":"object","properties":{"a":{"$schema":"http://json-schema.org/draft-07/schema#","type":"string"}}}`,
		tree, union,
	} {
		s := mustCompile(t, schema)
		if s.fast != nil {
			t.Errorf("schema %s is on the fast path", schema)
		}
		for _, value := range fastValues {
			again := func() error { return fullCheckArguments(s, []byte(value)) }
			if got, want := checkArguments(s, []byte(value)), again(); !sameError(got, want, again) {
				t.Errorf("schema %s, value %.200s: checkArguments = %v, want %v", schema, value, got, want)
			}
		}
	}
}

// TestFastWorkBound: the bound the fast path trusts is above the work the full check
// estimates, and refuses what the full check would refuse.
func TestFastWorkBound(t *testing.T) {
	for _, schema := range fastSchemas {
		s := mustCompile(t, schema)
		for _, value := range append(fastValues, `{"a":[`+strings.TrimSuffix(strings.Repeat("1,", 10000), ",")+`]}`,
			`{"text":"`+strings.Repeat("x", 100000)+`"}`, `{"a":[`+strings.TrimSuffix(strings.Repeat("[[[]]],", 1000), ",")+`]}`) {
			var v any
			if json.Unmarshal([]byte(value), &v) != nil {
				continue
			}
			w, err := s.estimate(v)
			if err != nil {
				continue
			}
			if b := s.fastWorkBound(len(value)); b < w {
				t.Errorf("schema %s, value %.80s: fastWorkBound = %d, under the estimate %d", schema, value, b, w)
			}
		}
		if s.fastWorkBound(s.fastMax) > MaxCheckWork || s.fastWorkBound(s.fastMax+1) <= MaxCheckWork {
			t.Errorf("schema %s: fastMax = %d is not the longest document within the bound", schema, s.fastMax)
		}
		t.Logf("schema %.60s: fast path up to %d bytes", schema, s.fastMax)
	}
}

// FuzzFastPath: for any schema on the fast path and any value, the fast path and the
// full check agree.
func FuzzFastPath(f *testing.F) {
	for i, schema := range fastSchemas {
		f.Add([]byte(schema), []byte(fastValues[i*7%len(fastValues)]))
		f.Add([]byte(schema), []byte(fastValues[(i*7+3)%len(fastValues)]))
	}
	f.Fuzz(func(t *testing.T, schema, value []byte) {
		s, err := compileSchema(schema)
		if err != nil || s.fast == nil || len(value) > s.fastMax {
			return
		}
		fastAgrees(t, s, string(schema), string(value))
	})
}

// FuzzFastPathValues: for every schema of fastSchemas and any value, the fast path
// and the full check agree.
func FuzzFastPathValues(f *testing.F) {
	for i, value := range fastValues {
		f.Add(uint8(i), []byte(value))
	}
	schemas := make([]*Schema, len(fastSchemas))
	for i, schema := range fastSchemas {
		s, err := compileSchema([]byte(schema))
		if err != nil {
			f.Fatal(err)
		}
		schemas[i] = s
	}
	f.Fuzz(func(t *testing.T, i uint8, value []byte) {
		k := int(i) % len(schemas)
		if len(value) > schemas[k].fastMax {
			return
		}
		fastAgrees(t, schemas[k], fastSchemas[k], string(value))
	})
}

// TestCallInput: the guest's input document is json.Marshal's, byte for byte.
func TestCallInput(t *testing.T) {
	values := append([]string{` {"a" : 1}`, "{\"a\":\n1}", `{"a":"<b>&"}`, "{\"a\":\"\u2028\u2029\"}", `{"a":"\u003c"}`,
		`{"a":"x y\t"}`, `{"a":"\"}"}`, `{"a":"\\"}`, `{"a":"\\\" "}`, `{"a" :1}`, `{"a":[1, 2]}`, "{\"a\":\"\xff\"}"}, fastValues...)
	for _, v := range values {
		want, werr := json.Marshal(struct {
			Tool      string          `json:"tool"`
			Arguments json.RawMessage `json:"arguments"`
		}{"to<ol", json.RawMessage(v)})
		got, err := callInput("to<ol", json.RawMessage(v))
		if string(got) != string(want) || (err == nil) != (werr == nil) {
			t.Errorf("callInput(%.100s) = %s, %v; want %s, %v", v, got, err, want, werr)
		}
	}
}

// FuzzCallInput: the guest's input document is json.Marshal's, byte for byte.
func FuzzCallInput(f *testing.F) {
	for _, v := range fastValues {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		want, werr := json.Marshal(struct {
			Tool      string          `json:"tool"`
			Arguments json.RawMessage `json:"arguments"`
		}{"tool", json.RawMessage(v)})
		got, err := callInput("tool", json.RawMessage(v))
		if string(got) != string(want) || (err == nil) != (werr == nil) {
			t.Errorf("callInput(%q) = %s, %v; want %s, %v", v, got, err, want, werr)
		}
	})
}

// BenchmarkCallInput builds the guest's input document: "copy" as Call does now,
// "marshal" as before (json.Marshal, which checks and compacts the arguments again).
//
//	go test ./plugins -run NONE -bench CallInput -count 6
func BenchmarkCallInput(b *testing.B) {
	for _, bc := range []struct{ name, args string }{
		{"small", `{"text":"abc"}`},
		{"1KiB", `{"text":"` + strings.Repeat("lorem ipsum ", 85) + `"}`},
		{"go json_format", `{"json":"{\"a\":[1,2,{\"b\":null}]}","indent":2}`},
	} {
		args := json.RawMessage(bc.args)
		b.Run(bc.name+"/copy", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := callInput("sha256", args); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/marshal", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := json.Marshal(struct {
					Tool      string          `json:"tool"`
					Arguments json.RawMessage `json:"arguments"`
				}{"sha256", args}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzProtocolErrorSkip: where protocolError skips its decode (mayHoldKey), the
// decode finds no error either.
func FuzzProtocolErrorSkip(f *testing.F) {
	for _, s := range []string{`{"content":[{"type":"text","text":"x"}]}`, `{"error":{"code":-32000,"message":"m"}}`,
		`{"ERROR":{"code":-32000,"message":"m"}}`, `{"\u0065rror":{"code":-32000,"message":"m"}}`, `{"content":[],"eRrOr":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		if mayHoldKey(out, "error") {
			return
		}
		var doc struct {
			Error *struct{} `json:"error"`
		}
		if json.Unmarshal(out, &doc) == nil && doc.Error != nil {
			t.Errorf("mayHoldKey(%q) = false, but the document has an error", out)
		}
	})
}

func TestMayHoldKey(t *testing.T) {
	for _, tt := range []struct {
		doc  string
		want bool
	}{
		{`{"content":[{"type":"text","text":"ok"}],"structuredContent":{"n":1}}`, false},
		{`{"error":{}}`, true}, {`{"ErRoR":{}}`, true}, {`{"\u0065rror":{}}`, true}, {`{"content":[{"type":"text","text":"an error"}]}`, true},
		{`{"err":1}`, false}, {`erro`, false}, {``, false},
	} {
		if got := mayHoldKey([]byte(tt.doc), "error"); got != tt.want {
			t.Errorf("mayHoldKey(%s) = %v, want %v", tt.doc, got, tt.want)
		}
	}
}
