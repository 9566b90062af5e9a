// Command jobs is a bundled mcp-wasmhost plugin that drives an asynchronous job API
// (submit, poll, fetch the result, cancel; plugins/jobs/fakejobs is a fake one to
// try it with) through the host's "http" request:
//
//   - run_job, always an MCP Task, submits a job, reports the job's percent done as
//     the task's progress, and completes with the job's result, or fails with its
//     failure. Right after submitting it registers DELETE on the job with the host
//     ("http_on_cancel"), which the host sends itself if the task is cancelled
//     (the guest's instance is torn down at once: docs/ABI.md). It also holds a
//     lease on the job, the backstop for a server that dies: the service cancels a
//     job nobody polls for leaseMS. When it gives up waiting itself (wait_s), it
//     cancels the job with DELETE.
//   - deploy shows the change it would submit and asks the user to approve it
//     (elicitation; input_required in a task); only an approval sends anything.
//
// The service's base URL is the guest's environment variable JOBS_URL (config.toml
// env), default http://127.0.0.1:8787.
//
// Build (from the repository root): make plugins
package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	guest "github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest"
	"github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest/nethttp"
)

const defaultBaseURL = "http://127.0.0.1:8787"

// Polling: the first poll after firstPoll, each later one 1.5 times later, at most
// maxPoll apart, well inside the lease the job is submitted with. maxPolls keeps a
// call within the host's 100 requests per call (the submit, the result and a DELETE
// besides).
const (
	firstPoll = 100 * time.Millisecond
	maxPoll   = 2 * time.Second
	leaseMS   = 3 * maxPoll / time.Millisecond
	maxPolls  = 95
)

// Limits of wait_s.
const (
	defaultWait = 10 * time.Minute
	maxWait     = time.Hour
)

type runArgs struct {
	Kind       string `json:"kind" jsonschema:"the job's kind, as the service knows it (fakejobs: upper, echo, fail)"`
	Input      string `json:"input" jsonschema:"the job's input"`
	DurationMS int    `json:"duration_ms,omitempty" jsonschema:"fakejobs only: how long the job runs; 0: the service's default"`
	WaitS      int    `json:"wait_s,omitempty" jsonschema:"give up and cancel the job after this many seconds, 1-3600; 0: 600"`
}

type deployArgs struct {
	Service string `json:"service" jsonschema:"what to deploy"`
	Version string `json:"version" jsonschema:"which version"`
}

// job is the service's view of a job (fakejobs.Job).
type job struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Percent int    `json:"percent"`
	Message string `json:"message"`
}

// submission is the body of POST /jobs.
type submission struct {
	Kind       string `json:"kind"`
	Input      string `json:"input"`
	DurationMS int    `json:"duration_ms,omitempty"`
	LeaseMS    int    `json:"lease_ms,omitempty"`
}

func main() {}

func init() {
	guest.Add(guest.Tool{
		Name:        "run_job",
		Title:       "Run a job",
		Description: "Submits a job to the job service, follows its progress, and returns its result when it ends. Cancelling the task cancels the job. A job still running after wait_s, or after about 3 minutes of polling (the host allows 100 requests per call), is cancelled.",
		TaskSupport: guest.TaskRequired,
	}, runJob)
	guest.Add(guest.Tool{
		Name:        "deploy",
		Title:       "Deploy, after approval",
		Description: "Prepares a deploy job, shows it to the user, and submits it only if the user approves. Returns the submitted job's id.",
		TaskSupport: guest.TaskOptional,
	}, deploy)
}

func baseURL() (*url.URL, error) {
	s := os.Getenv("JOBS_URL")
	if s == "" {
		s = defaultBaseURL
	}
	u, err := url.Parse(strings.TrimSuffix(s, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("JOBS_URL %q is not an http or https URL", s)
	}
	return u, nil
}

func runJob(c *guest.Call, in runArgs) (*guest.Result, error) {
	wait := defaultWait
	switch {
	case in.WaitS < 0 || time.Duration(in.WaitS)*time.Second > maxWait:
		return guest.Errorf("wait_s %d out of range 1-%d", in.WaitS, int(maxWait/time.Second)), nil
	case in.WaitS > 0:
		wait = time.Duration(in.WaitS) * time.Second
	}
	if in.DurationMS < 0 {
		return guest.Errorf("duration_ms %d is negative", in.DurationMS), nil
	}
	base, err := baseURL()
	if err != nil {
		return guest.Errorf("%v", err), nil
	}
	var j job
	if err := call("POST", base.String()+"/jobs", submission{Kind: in.Kind, Input: in.Input, DurationMS: in.DurationMS, LeaseMS: int(leaseMS)}, &j, 201); err != nil {
		return guest.Errorf("submit the job: %v", err), nil
	}
	jobURL := base.String() + "/jobs/" + url.PathEscape(j.ID)
	c.Log(guest.LevelInfo, "submitted job %s", j.ID)
	// If the task is cancelled the host sends this DELETE itself; the lease stays as
	// the backstop for a server that dies.
	if err := nethttp.OnCancel(&nethttp.FetchRequest{Method: "DELETE", URL: jobURL, Headers: map[string]string{"Accept": "application/json"}}); err != nil {
		c.Log(guest.LevelWarning, "register the cancellation of job %s: %v", j.ID, err)
	}
	deadline := time.Now().Add(wait)
	every := firstPoll
	for polls := 0; j.Status == "running"; polls++ {
		if polls == maxPolls || time.Now().Add(every).After(deadline) {
			err := call("DELETE", jobURL, nil, &j, 200)
			if err != nil {
				return guest.Errorf("job %s still running after %v; cancelling it failed: %v", j.ID, wait, err), nil
			}
			return guest.Errorf("job %s still running after %d polls in %v: cancelled it", j.ID, polls, wait), nil
		}
		time.Sleep(every)
		every = min(every*3/2, maxPoll)
		if err := call("GET", jobURL, nil, &j, 200); err != nil {
			return guest.Errorf("poll job %s: %v", j.ID, err), nil
		}
		if j.Status == "running" {
			c.Progress(float64(j.Percent), 100, j.Message)
		}
	}
	switch j.Status {
	case "succeeded":
		var r struct {
			Result string `json:"result"`
		}
		if err := call("GET", jobURL+"/result", nil, &r, 200); err != nil {
			return guest.Errorf("fetch the result of job %s: %v", j.ID, err), nil
		}
		c.Progress(100, 100, "done")
		return guest.Text(r.Result), nil
	case "failed":
		return guest.Errorf("job %s failed: %s", j.ID, j.Message), nil
	default:
		return guest.Errorf("job %s ended %s: %s", j.ID, j.Status, j.Message), nil
	}
}

func deploy(c *guest.Call, in deployArgs) (*guest.Result, error) {
	if in.Service == "" || in.Version == "" {
		return guest.Errorf("service and version are required"), nil
	}
	base, err := baseURL()
	if err != nil {
		return guest.Errorf("%v", err), nil
	}
	body := submission{Kind: "deploy", Input: in.Service + "@" + in.Version}
	shown, _ := json.Marshal(body)
	target := base.String() + "/jobs"
	ans, err := c.Elicit(fmt.Sprintf("Approve this change? It sends POST %s with %s", target, shown),
		map[string]any{"type": "object", "properties": map[string]any{
			"approve": map[string]any{"type": "boolean", "title": "Approve", "description": "Send the request"},
		}, "required": []string{"approve"}})
	if err != nil {
		return guest.Errorf("ask for approval: %v", err), nil
	}
	if !ans.Accepted() || ans.Content["approve"] != true {
		return guest.Text("Not approved (" + ans.Action + "): nothing was sent."), nil
	}
	var j job
	if err := call("POST", target, body, &j, 201); err != nil {
		return guest.Errorf("submit the deploy: %v", err), nil
	}
	return guest.Text(fmt.Sprintf("Approved: submitted job %s (%s).", j.ID, j.Status)), nil
}

// call makes one request with a JSON body (nil: none) and decodes the JSON answer
// into out, which must come with status want.
func call(method, u string, body, out any, want int) error {
	req := nethttp.FetchRequest{Method: method, URL: u, Headers: map[string]string{"Accept": "application/json"}}
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		req.Body = b
		req.Headers["Content-Type"] = "application/json"
	}
	res, err := nethttp.Fetch(req)
	if err != nil {
		return err
	}
	if res.Status != want {
		return fmt.Errorf("%s %s: HTTP status %d: %s", method, u, res.Status, snippet(res.Body))
	}
	if err := json.Unmarshal(res.Body, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not the JSON expected: %v", method, u, err)
	}
	return nil
}

func snippet(b []byte) string {
	s := strings.ToValidUTF8(strings.TrimSpace(string(b)), "\uFFFD")
	if len(s) > 200 {
		n := 200
		for !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return s
}
