package host_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/host"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
)

// TestTaskLogListen2026: on the stateless 2026-07-28 wire a task's log URI is in its
// _meta, a subscriptions/listen that names it is acknowledged and told, tagged with
// its subscription ID, as the log grows, and resources/read answers the log as a
// private, never-fresh resource.
func TestTaskLogListen2026(t *testing.T) {
	e := testenv.Engine(t)
	p := testenv.Load(t, e, testenv.Spec(t, "journal", "testdata/wasm/journal.wasm"))
	catalog, err := plugins.NewCatalog([]*plugins.Plugin{p})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := host.New(catalog, host.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	hs := httptest.NewServer(srv.HTTPHandler())
	t.Cleanup(hs.Close)
	url := hs.URL + "/mcp"
	c := &mcptest.Stateless{URL: url, Caps: mcptest.TasksExtension()}

	res, err := c.Call("tools/call", map[string]any{"name": "journal_repeat", "arguments": map[string]any{"op": "log", "count": 100000}}, nil)
	if err != nil || res.Error != nil {
		t.Fatalf("tools/call = %v, %v", res, err)
	}
	var created struct {
		ResultType string            `json:"resultType"`
		TaskID     string            `json:"taskId"`
		Meta       map[string]string `json:"_meta"`
	}
	json.Unmarshal(res.Result, &created)
	uri := created.Meta["io.github.mcp-wasmhost/log"]
	if created.ResultType != "task" || uri != "mcp-wasmhost://tasks/"+created.TaskID+"/log" {
		t.Fatalf("tools/call = %s; want a task whose _meta names its log", res.Result)
	}
	defer c.Call("tasks/cancel", map[string]any{"taskId": created.TaskID}, nil)

	l := listenHTTP(t, url, "log", mcptest.TasksExtension(), map[string]any{"resourceSubscriptions": []string{uri}})
	if got := ackOf(t, next(t, l.notes), `"log"`); !strings.Contains(mustJSON(got), `"`+uri+`"`) {
		t.Errorf("listen acknowledged %v, want the log's URI", got)
	}
	n := next(t, l.notes)
	if n.Method != "notifications/resources/updated" || n.subscriptionID() != `"log"` || !strings.Contains(string(n.Params), uri) {
		t.Errorf("listen got %s %s, want the log's update tagged with its subscription", n.Method, n.Params)
	}

	read, err := c.Call("resources/read", map[string]any{"uri": uri}, nil)
	if err != nil || read.Error != nil {
		t.Fatalf("resources/read = %v, %v", read, err)
	}
	var page struct {
		CacheScope string `json:"cacheScope"`
		TTLMs      *int   `json:"ttlMs"`
		Contents   []struct {
			Text string `json:"text"`
		} `json:"contents"`
	}
	json.Unmarshal(read.Result, &page)
	if page.CacheScope != "private" || page.TTLMs == nil || *page.TTLMs != 0 || len(page.Contents) != 1 ||
		!strings.HasPrefix(page.Contents[0].Text, "case 1234: PASS") {
		t.Errorf("resources/read of the log = %s; want its lines, private with ttlMs 0", read.Result)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
