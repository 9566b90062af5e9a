package host

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestHotParamsOf(t *testing.T) {
	for _, tc := range []struct {
		method, params string
		want           hotParams
		ok             bool
	}{
		{"tasks/get", `{"taskId":"abc"}`, hotParams{taskID: "abc"}, true},
		{"tasks/get", " {\n\t\"taskId\" :\r \"abc\" } ", hotParams{taskID: "abc"}, true},
		{"tasks/cancel", `{"taskId":""}`, hotParams{}, true},
		{"tasks/list", `{}`, hotParams{}, true},
		{"tasks/list", `{"cursor":"c1"}`, hotParams{cursor: "c1"}, true},
		{"tasks/get", `{}`, hotParams{}, false},
		{"tasks/get", ``, hotParams{}, false},
		{"tasks/get", `null`, hotParams{}, false},
		{"tasks/get", `{"taskId":"a","x":1}`, hotParams{}, false},
		{"tasks/get", `{"taskId":"a",}`, hotParams{}, false},
		{"tasks/get", `{"taskId":"a"}x`, hotParams{}, false},
		{"tasks/get", `{"taskId":"a\"b"}`, hotParams{}, false},
		{"tasks/get", `{"taskId":"é"}`, hotParams{}, false},
		{"tasks/get", "{\"taskId\":\"a\tb\"}", hotParams{}, false},
		{"tasks/get", `{"taskid":"a"}`, hotParams{}, false},
		{"tasks/get", `{"taskId":1}`, hotParams{}, false},
		{"tasks/get", `{"taskId":"a"`, hotParams{}, false},
		{"tasks/get", `{"cursor":"a"}`, hotParams{}, false},
		{"tasks/list", `{"taskId":"a"}`, hotParams{}, false},
		{"tasks/update", `{"taskId":"a"}`, hotParams{}, false},
		{"tasks/result", `{"taskId":"a"}`, hotParams{}, false},
	} {
		got, ok := hotParamsOf(tc.method, json.RawMessage(tc.params))
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("hotParamsOf(%s, %q) = %+v, %v; want %+v, %v", tc.method, tc.params, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzHotParamsOf holds the hot path to the decoding the SDK would do: params it
// accepts decode (strictly, exactly the method's members) to the same values.
func FuzzHotParamsOf(f *testing.F) {
	for _, s := range []string{`{"taskId":"abc"}`, `{}`, `{"cursor":"x"}`, ` { "taskId" : "a" } `, `{"taskId":"a","taskId":"b"}`} {
		f.Add("tasks/get", s)
		f.Add("tasks/list", s)
	}
	f.Fuzz(func(t *testing.T, method, params string) {
		p, ok := hotParamsOf(method, json.RawMessage(params))
		if !ok {
			return
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal([]byte(params), &members); err != nil {
			t.Fatalf("accepted %q, which does not decode: %v", params, err)
		}
		var want hotParams
		for k, v := range members {
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				t.Fatalf("accepted %q: member %q is not a string", params, k)
			}
			switch {
			case k == "taskId" && method != "tasks/list":
				want.taskID = s
			case k == "cursor" && method == "tasks/list":
				want.cursor = s
			default:
				t.Fatalf("accepted %q for %s: member %q", params, method, k)
			}
		}
		if p != want {
			t.Fatalf("hotParamsOf(%s, %q) = %+v; decoding gives %+v", method, params, p, want)
		}
	})
}

// TestHotDuplicateDropped: a request that reuses the id of a hot request still in
// flight is dropped unanswered, as the SDK drops a duplicate of its own.
func TestHotDuplicateDropped(t *testing.T) {
	var wrote []jsonrpc.Message
	c := &liftConn{Connection: recordConn{&wrote}, srv: &Server{}}
	c.hot.ctx, c.hot.cancel = context.WithCancel(context.Background())
	c.hot.calls = map[jsonrpc.ID]bool{}
	id, err := jsonrpc.MakeID(float64(7))
	if err != nil {
		t.Fatal(err)
	}
	c.hot.calls[id] = true // a hot request with id 7 in flight
	req := &jsonrpc.Request{ID: id, Method: "tools/call", Params: json.RawMessage(`{"name":"x"}`)}
	if !c.readHot(req) {
		t.Fatal("the duplicate went on to the SDK")
	}
	c.hot.calls[id] = false // the SDK's request with id 7 in flight
	if c.readHot(req) {
		t.Fatal("the SDK's duplicate was kept from it")
	}
	if len(wrote) != 0 {
		t.Errorf("wrote %v", wrote)
	}
}

// recordConn is a connection that records what is written to it.
type recordConn struct{ wrote *[]jsonrpc.Message }

func (r recordConn) Read(context.Context) (jsonrpc.Message, error) { select {} }
func (r recordConn) Write(_ context.Context, m jsonrpc.Message) error {
	*r.wrote = append(*r.wrote, m)
	return nil
}
func (r recordConn) Close() error      { return nil }
func (r recordConn) SessionID() string { return "" }
