package host

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
		{"tasks/get", `{"taskId":"é"}`, hotParams{taskID: "é"}, true},
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
		if ok != tc.ok || (ok && (got.taskID != tc.want.taskID || got.cursor != tc.want.cursor)) {
			t.Errorf("hotParamsOf(%s, %q) = %+v, %v; want %+v, %v", tc.method, tc.params, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzHotParamsOf holds the hot path to the decoding the SDK would do: params it
// accepts decode (with encoding/json, which reads these shapes as the SDK's decoder
// does; the differential TestHotPathAnswersAsTheSDK covers the SDK itself) to the
// same values, and have no members the method lacks.
func FuzzHotParamsOf(f *testing.F) {
	for _, s := range []string{`{"taskId":"abc"}`, `{}`, `{"cursor":"x"}`, ` { "taskId" : "a" } `, `{"taskId":"a","taskId":"b"}`,
		`{"name":"t","arguments":{"a":[1,{"b":null}]},"_meta":{"progressToken":7,"io.github.mcp-wasmhost/task":{"ttl":60000}}}`,
		`{"name":"t","_meta":{"progressToken":"p"}}`, `{"name":"t","arguments":[]}`, `{"name":"t","_meta":{"a":1.5}}`} {
		f.Add("tasks/get", s)
		f.Add("tasks/list", s)
		f.Add("tools/call", s)
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
		allowed := map[string][]string{"tasks/get": {"taskId"}, "tasks/cancel": {"taskId"}, "tasks/list": {"cursor"},
			"tools/call": {"name", "arguments", "_meta"}}[method]
		for k := range members {
			if !slices.Contains(allowed, k) {
				t.Fatalf("accepted %q for %s: member %q", params, method, k)
			}
		}
		if method != "tools/call" {
			var want struct {
				TaskID string `json:"taskId"`
				Cursor string `json:"cursor"`
			}
			if err := json.Unmarshal([]byte(params), &want); err != nil || want.TaskID != p.taskID || want.Cursor != p.cursor {
				t.Fatalf("hotParamsOf(%s, %q) = %+v; decoding gives %+v, %v", method, params, p, want, err)
			}
			return
		}
		var want mcp.CallToolParamsRaw
		if err := json.Unmarshal([]byte(params), &want); err != nil {
			t.Fatalf("accepted %q, which does not decode as tools/call params: %v", params, err)
		}
		if !reflect.DeepEqual(p.call, &want) {
			t.Fatalf("hotParamsOf(tools/call, %q) = %#v; decoding gives %#v", params, p.call, &want)
		}
	})
}

// TestHotDuplicateDropped: a request that reuses the id of a hot request still in
// flight is dropped unanswered, as the SDK drops a duplicate of its own.
func TestHotDuplicateDropped(t *testing.T) {
	var wrote []jsonrpc.Message
	c := &liftConn{Connection: recordConn{&wrote}, srv: &Server{}}
	c.hot.ctx, c.hot.cancel = context.WithCancel(context.Background())
	c.hot.calls = map[jsonrpc.ID]hotCall{}
	id, err := jsonrpc.MakeID(float64(7))
	if err != nil {
		t.Fatal(err)
	}
	c.hot.calls[id] = hotCall{cancel: func() {}} // a hot request with id 7 in flight
	req := &jsonrpc.Request{ID: id, Method: "tools/call", Params: json.RawMessage(`{"name":"x"}`)}
	if !c.readHot(req) {
		t.Fatal("the duplicate went on to the SDK")
	}
	c.hot.calls[id] = hotCall{} // the SDK's request with id 7 in flight
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
