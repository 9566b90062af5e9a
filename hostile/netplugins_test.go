package hostile_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins/jobs/fakejobs"
)

// bundledNet starts the binary serving the bundled plugin name (plugins/<name>) in a
// worker, granted origin on loopback, with the plugin keys extra. onRequest answers elicitations (nil: none).
func bundledNet(t *testing.T, name, origin, extra string, onRequest func(*jsonrpc.Request) (any, error)) (*mcptest.Client, *testenv.SyncBuffer) {
	t.Helper()
	return bundledNetRule(t, name, origin, extra, "", onRequest)
}

// bundledNetRule is bundledNet with more keys in the plugin's [[plugins.net]] rule
// (rule), and extra may set the plugin's timeout (default 20s).
func bundledNetRule(t *testing.T, name, origin, extra, rule string, onRequest func(*jsonrpc.Request) (any, error)) (*mcptest.Client, *testenv.SyncBuffer) {
	t.Helper()
	if !strings.Contains(extra, "timeout =") {
		extra = "timeout = \"20s\"\n" + extra
	}
	wasm := testenv.Path("plugins/" + name + "/" + name + ".wasm")
	b, err := os.ReadFile(wasm)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`[server]
cache_dir = %q

[tasks]
store = "memory"
poll_interval = "10ms"

[[plugins]]
name = %q
path = %q
sha256 = %q
%s

[[plugins.net]]
origins = [%q]
allow_addresses = ["127.0.0.1/32"]
%s
`, testenv.CacheDir(), name, wasm, digest(b), extra, origin, rule)
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "--config", path)
	stderr := &testenv.SyncBuffer{}
	cmd.Stderr = stderr
	if onRequest == nil {
		onRequest = func(*jsonrpc.Request) (any, error) { return nil, errors.New("no") }
	}
	return mcptest.Dial(t, &mcp.CommandTransport{Command: cmd}, onRequest), stderr
}

// toolText calls tool and returns its text content and isError.
func toolText(t *testing.T, c *mcptest.Client, tool string, args any) (string, bool) {
	t.Helper()
	raw, err := c.Call(context.Background(), "tools/call", map[string]any{"name": tool, "arguments": args})
	if err != nil {
		t.Fatalf("%s(%v): %v", tool, args, err)
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Content) != 1 {
		t.Fatalf("%s(%v) = %s, %v", tool, args, raw, err)
	}
	return res.Content[0].Text, res.IsError
}

const webPage = `<!doctype html><html><head><title>Docs</title>
<style>body { font: 12px sans-serif }</style><script>alert("<b>no</b>")</script></head>
<body><nav><a href="/">Home</a></nav>
<h1>Getting started</h1>
<p>Install the <a href="/dl?os=linux&amp;arch=amd64">binary</a>, then run it.</p>
<ul><li>fast</li><li>safe &amp; small</li></ul>
<h2>More</h2><p>See &quot;docs&quot;.</p></body></html>`

// TestWebPlugin: the bundled web plugin fetches a page from a local server through
// the host and returns its text or markdown, within its byte limit.
func TestWebPlugin(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, webPage)
		case "/plain":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "just <text>")
		case "/long":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<p>"+strings.Repeat("word ", 2000)+"</p>")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	c, _ := bundledNet(t, "web", srv.URL, "", nil)
	for _, tc := range []struct {
		name    string
		args    map[string]any
		want    string
		isError bool
	}{
		{"text", map[string]any{"url": srv.URL + "/page"},
			"Home\n\nGetting started\n\nInstall the binary, then run it.\n\n- fast\n- safe & small\n\nMore\n\nSee \"docs\".", false},
		{"markdown", map[string]any{"url": srv.URL + "/page", "format": "markdown"},
			"[Home](" + srv.URL + "/)\n\n# Getting started\n\nInstall the [binary](" + srv.URL + "/dl?os=linux&arch=amd64), then run it.\n\n- fast\n- safe & small\n\n## More\n\nSee \"docs\".", false},
		{"plain text as it is", map[string]any{"url": srv.URL + "/plain"}, "just <text>", false},
		{"byte limit", map[string]any{"url": srv.URL + "/long", "max_bytes": 12}, "word word wo\n\n[truncated at 12 bytes]", false},
		{"not found", map[string]any{"url": srv.URL + "/nope"}, "fetch " + srv.URL + "/nope: HTTP status 404", true},
		{"unlisted origin", map[string]any{"url": "http://127.0.0.2:1/"}, "refused: no [[plugins.net]] rule allows this origin", true},
		{"bad format", map[string]any{"url": srv.URL + "/page", "format": "pdf"}, `format "pdf": want text or markdown`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, isErr := toolText(t, c, "web_fetch", tc.args)
			if isErr != tc.isError || (tc.isError && !strings.Contains(got, tc.want)) || (!tc.isError && got != tc.want) {
				t.Errorf("web_fetch(%v) = %q (isError %v), want %q (isError %v)", tc.args, got, isErr, tc.want, tc.isError)
			}
		})
	}
}

// latestJob is the ID fakejobs gave the last job submitted (j1, j2, ...).
func latestJob(svc *fakejobs.Service) string {
	n := 0
	for _, e := range svc.Events() {
		if e == "POST /jobs" {
			n++
		}
	}
	return fmt.Sprintf("j%d", n)
}

// nextJob is the ID fakejobs will give the next job.
func nextJob(svc *fakejobs.Service) string {
	var n int
	fmt.Sscanf(latestJob(svc), "j%d", &n)
	return fmt.Sprintf("j%d", n+1)
}

func sawEvent(svc *fakejobs.Service, want string) bool {
	return slices.Contains(svc.Events(), want)
}

// TestJobsPlugin: the bundled jobs plugin against the fake job service: a task's
// progress follows the job and it completes with the job's result; a job the plugin
// gives up on is cancelled with DELETE. TestJobsOnCancel covers a cancelled task.
func TestJobsPlugin(t *testing.T) {
	svc := fakejobs.New(time.Minute)
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	c, _ := bundledNet(t, "jobs", srv.URL, fmt.Sprintf("env = { JOBS_URL = %q }", srv.URL), nil)

	t.Run("progress follows the job to its result", func(t *testing.T) {
		task := c.CreateTask("jobs_run_job", map[string]any{"kind": "upper", "input": "hello jobs", "duration_ms": 1500},
			map[string]any{}, map[string]any{"progressToken": "job-1"})
		if got := finalStatus(t, c, task.TaskID, generous+10*time.Second); got != "completed: " {
			t.Fatalf("task = %q, want completed", got)
		}
		if got := resultText(t, c, task.TaskID); got != "HELLO JOBS" {
			t.Errorf("tasks/result = %q, want the job's result %q", got, "HELLO JOBS")
		}
		var last float64
		var percents []float64
		for _, n := range c.NotificationsOf("notifications/progress") {
			var p struct {
				Token    string  `json:"progressToken"`
				Progress float64 `json:"progress"`
				Total    float64 `json:"total"`
				Message  string  `json:"message"`
			}
			if json.Unmarshal(n.Params, &p) != nil || p.Token != "job-1" {
				continue
			}
			if p.Progress <= last && len(percents) > 0 || p.Total != 100 {
				t.Errorf("progress %s after %v, want increasing percent of 100", n.Params, last)
			}
			last = p.Progress
			percents = append(percents, p.Progress)
		}
		// The job reports its percent at each poll (100, 150, 225, 337, 506, 759 ms...).
		if len(percents) < 3 || percents[len(percents)-1] != 100 || percents[0] >= 100 {
			t.Errorf("progress = %v, want the job's percent at several polls, then 100", percents)
		}
		t.Logf("progress: %v", percents)
		id := latestJob(svc)
		if !sawEvent(svc, "GET /jobs/"+id+"/result") {
			t.Errorf("the service saw %q, want the result fetched", svc.Events())
		}
	})

	t.Run("a failed job fails the task", func(t *testing.T) {
		task := c.CreateTask("jobs_run_job", map[string]any{"kind": "fail", "input": "x", "duration_ms": 200}, map[string]any{}, nil)
		got := finalStatus(t, c, task.TaskID, generous)
		if want := "job " + latestJob(svc) + " failed: the job failed, as kind fail does"; !strings.HasPrefix(got, "failed: ") || !strings.Contains(got, want) {
			t.Errorf("task = %q, want failed with %q", got, want)
		}
	})

	t.Run("giving up sends DELETE", func(t *testing.T) {
		task := c.CreateTask("jobs_run_job", map[string]any{"kind": "echo", "input": "long", "wait_s": 1}, map[string]any{}, nil)
		got := finalStatus(t, c, task.TaskID, generous)
		id := latestJob(svc)
		if !strings.HasPrefix(got, "failed: ") || !strings.Contains(got, "job "+id+" still running after") {
			t.Errorf("task = %q, want failed, giving up", got)
		}
		if !sawEvent(svc, "DELETE /jobs/"+id) {
			t.Errorf("the service saw %q, want DELETE /jobs/%s", svc.Events(), id)
		}
		if j, _ := svc.Lookup(id); j.Status != "cancelled" || j.Message != "cancelled by the client" {
			t.Errorf("job %s = %+v, want cancelled by the client", id, j)
		}
	})
}

// TestJobsOnCancel: run_job registers DELETE on its job with the host
// ("http_on_cancel"), which the host sends itself when the task is cancelled, in a
// worker and trusted in process, well before the job's 6 s lease would end it. A
// task that completes, or ends at its time limit, sends nothing; a registration the
// policy refuses fails with the rule's message.
func TestJobsOnCancel(t *testing.T) {
	for _, mode := range []struct{ name, extra string }{{"worker", ""}, {"trusted", "trusted = true"}} {
		t.Run(mode.name, func(t *testing.T) {
			svc := fakejobs.New(time.Minute)
			srv := httptest.NewServer(svc)
			t.Cleanup(srv.Close)
			env := fmt.Sprintf("env = { JOBS_URL = %q }\n", srv.URL)
			c, _ := bundledNet(t, "jobs", srv.URL, env+mode.extra, nil)

			t.Run("tasks/cancel sends DELETE", func(t *testing.T) {
				id := nextJob(svc)
				task := c.CreateTask("jobs_run_job", map[string]any{"kind": "echo", "input": "long"}, map[string]any{}, nil)
				if !eventually(func() bool { return sawEvent(svc, "GET /jobs/"+id) }) {
					t.Fatalf("the job was never polled: %q", svc.Events())
				}
				start := time.Now()
				c.MustCall("tasks/cancel", map[string]any{"taskId": task.TaskID}, nil)
				if got := c.Get(task.TaskID); got.Status != "cancelled" {
					t.Errorf("task = %s, want cancelled", got)
				}
				// Not the lease (6 s without a poll): the host's DELETE.
				if !eventuallyWithin(3*time.Second, func() bool { return sawEvent(svc, "DELETE /jobs/"+id) }) {
					t.Fatalf("the service saw %q within 3 s of tasks/cancel, want DELETE /jobs/%s", svc.Events(), id)
				}
				t.Logf("DELETE /jobs/%s arrived %v after tasks/cancel", id, time.Since(start).Round(time.Millisecond))
				if j, _ := svc.Lookup(id); j.Status != "cancelled" || j.Message != "cancelled by the client" {
					t.Errorf("job %s = %+v, want cancelled by the client", id, j)
				}
			})

			t.Run("a completed task sends no DELETE", func(t *testing.T) {
				task := c.CreateTask("jobs_run_job", map[string]any{"kind": "upper", "input": "x", "duration_ms": 200}, map[string]any{}, nil)
				if got := finalStatus(t, c, task.TaskID, generous+10*time.Second); got != "completed: " {
					t.Fatalf("task = %q, want completed", got)
				}
				time.Sleep(300 * time.Millisecond)
				if id := latestJob(svc); sawEvent(svc, "DELETE /jobs/"+id) {
					t.Errorf("the service saw %q, want no DELETE of the completed job %s", svc.Events(), id)
				}
			})
		})
	}

	t.Run("a time-limit end sends no DELETE", func(t *testing.T) {
		svc := fakejobs.New(time.Minute)
		srv := httptest.NewServer(svc)
		t.Cleanup(srv.Close)
		c, _ := bundledNet(t, "jobs", srv.URL, fmt.Sprintf("env = { JOBS_URL = %q }\ntimeout = \"2s\"", srv.URL), nil)
		task := c.CreateTask("jobs_run_job", map[string]any{"kind": "echo", "input": "long"}, map[string]any{}, nil)
		got := finalStatus(t, c, task.TaskID, generous+10*time.Second)
		if !strings.Contains(got, "time limit") {
			t.Fatalf("task = %q, want failed at its time limit", got)
		}
		time.Sleep(500 * time.Millisecond)
		if id := latestJob(svc); sawEvent(svc, "DELETE /jobs/"+id) {
			t.Errorf("the service saw %q, want no DELETE after the time limit", svc.Events())
		}
	})

	t.Run("a refused registration fails with the rule's message", func(t *testing.T) {
		svc := fakejobs.New(time.Minute)
		srv := httptest.NewServer(svc)
		t.Cleanup(srv.Close)
		c, stderr := bundledNetRule(t, "jobs", srv.URL, fmt.Sprintf("env = { JOBS_URL = %q }", srv.URL), `methods = ["GET", "POST"]`, nil)
		task := c.CreateTask("jobs_run_job", map[string]any{"kind": "upper", "input": "x", "duration_ms": 200}, map[string]any{}, nil)
		if got := finalStatus(t, c, task.TaskID, generous+10*time.Second); got != "completed: " {
			t.Fatalf("task = %q, want completed", got)
		}
		want := "register the cancellation of job " + latestJob(svc) + ": plugin jobs: " + srv.URL + " refused: method DELETE is not allowed by"
		if !eventually(func() bool { return strings.Contains(stderr.String(), want) }) {
			t.Errorf("the server log has no %q:\n%s", want, stderr.String())
		}
	})
}

// TestJobsApproval: jobs_deploy asks the user (input_required inside its task) and
// sends its request only when the user approves.
func TestJobsApproval(t *testing.T) {
	svc := fakejobs.New(time.Minute)
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	var mu sync.Mutex
	var answer map[string]any
	var asked []string
	c, _ := bundledNet(t, "jobs", srv.URL, fmt.Sprintf("env = { JOBS_URL = %q }", srv.URL), func(r *jsonrpc.Request) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		if r.Method != "elicitation/create" {
			return nil, errors.New("no")
		}
		var p struct {
			Message string `json:"message"`
		}
		json.Unmarshal(r.Params, &p)
		asked = append(asked, p.Message)
		return answer, nil
	})
	for _, tc := range []struct {
		name   string
		answer map[string]any
		want   string
		sent   bool
	}{
		{"declined", map[string]any{"action": "decline"}, "Not approved (decline): nothing was sent.", false},
		{"accepted but not approved", map[string]any{"action": "accept", "content": map[string]any{"approve": false}}, "Not approved (accept): nothing was sent.", false},
		{"cancelled", map[string]any{"action": "cancel"}, "Not approved (cancel): nothing was sent.", false},
		{"approved", map[string]any{"action": "accept", "content": map[string]any{"approve": true}}, "Approved: submitted job j1 (running).", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			answer, asked = tc.answer, nil
			mu.Unlock()
			before := len(svc.Events())
			task := c.CreateTask("jobs_deploy", map[string]any{"service": "api", "version": "1.2.3"}, map[string]any{}, nil)
			if got := finalStatus(t, c, task.TaskID, generous); got != "completed: " {
				t.Fatalf("task = %q, want completed", got)
			}
			if got := resultText(t, c, task.TaskID); got != tc.want {
				t.Errorf("tasks/result = %q, want %q", got, tc.want)
			}
			mu.Lock()
			want := `POST ` + srv.URL + `/jobs with {"kind":"deploy","input":"api@1.2.3"}`
			if len(asked) != 1 || !strings.Contains(asked[0], want) {
				t.Errorf("the user was asked %q, want one question showing %q", asked, want)
			}
			mu.Unlock()
			events := svc.Events()[before:]
			if tc.sent && !slices.Equal(events, []string{"POST /jobs"}) || !tc.sent && len(events) != 0 {
				t.Errorf("the service saw %q (sent %v)", events, tc.sent)
			}
		})
	}
}
