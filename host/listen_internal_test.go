package host

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzListenRequest: a listen's params are hostile bytes. Lifting them never panics;
// what comes out is JSON whose lifted part is the transport's own (the id and stream
// given, whatever the client put under the key) with taskIds as sent, and go-sdk's
// params decoding of it hands the handler back exactly that.
func FuzzListenRequest(f *testing.F) {
	for _, s := range []string{
		`{"notifications":{"taskIds":["a","b"]}}`,
		`{"notifications":{"taskIds":"all","resourceSubscriptions":["test://x"]},"_meta":{"io.github.mcp-wasmhost/listen":{"id":"evil","stream":"s1","taskIds":["x"]}}}`,
		`{"notifications":{"toolsListChanged":true}}`,
		`{"_meta":null}`, `{"_meta":[]}`, `{"notifications":null}`, `null`, `[]`, `"x"`, ``, `{`,
	} {
		f.Add([]byte(s), []byte(`7`))
	}
	f.Fuzz(func(t *testing.T, params, id []byte) {
		if !json.Valid(id) {
			return
		}
		out := liftListen(params, id, "tok")
		if bytes.Equal(out, params) {
			return // left for go-sdk to refuse
		}
		if !json.Valid(out) {
			t.Fatalf("liftListen(%q) = %q, not JSON", params, out)
		}
		var p mcp.SubscriptionsListenParams
		if err := json.Unmarshal(out, &p); err != nil {
			return // go-sdk refuses it
		}
		l := takeListenLift(&p)
		if l == nil {
			t.Fatalf("liftListen(%q) = %q: nothing lifted", params, out)
		}
		var want, got any
		json.Unmarshal(id, &want)
		json.Unmarshal(l.ID, &got)
		if l.Stream != "tok" || !jsonEqual(want, got) {
			t.Fatalf("lifted %+v from %q, want id %s and stream tok", l, params, id)
		}
		if _, left := p.Meta[listenMetaKey]; left {
			t.Fatal("takeListenLift left the key in _meta")
		}
		var in struct {
			Notifications struct {
				TaskIDs json.RawMessage `json:"taskIds"`
			} `json:"notifications"`
		}
		if json.Unmarshal(params, &in) == nil && !jsonEqualRaw(in.Notifications.TaskIDs, l.TaskIDs) {
			t.Fatalf("lifted taskIds %s, sent %s", l.TaskIDs, in.Notifications.TaskIDs)
		}
	})
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func jsonEqualRaw(a, b json.RawMessage) bool {
	var x, y any
	if len(a) == 0 || len(b) == 0 {
		return len(a) == 0 && len(b) == 0 || string(bytes.TrimSpace(a)) == "null" || string(bytes.TrimSpace(b)) == "null"
	}
	json.Unmarshal(a, &x)
	json.Unmarshal(b, &y)
	return jsonEqual(x, y)
}
