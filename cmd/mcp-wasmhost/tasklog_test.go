package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks/sqlstore"
)

// longrunConfig is a config serving the bundled longrun plugin (in a worker) on a
// task store of the test's own, with extra [tasks] keys.
func longrunConfig(t *testing.T, tasksTOML string) string {
	t.Helper()
	return writeConfig(t, fmt.Sprintf("[server]\ncache_dir = %q\n\n[tasks]\ndata_dir = %q\n%s\n", testenv.CacheDir(), t.TempDir(), tasksTOML)+
		pluginTOML(t, "longrun", "plugins/longrun/longrun.wasm", "")+"timeout = \"10m\"\n")
}

// logPage is a task log as resources/read returns it.
type logPage struct {
	Text string
	Meta struct {
		Offset, Next, End, Dropped int64
		Status                     string
	}
}

func readLog(t *testing.T, c *mcptest.Client, uri string) logPage {
	t.Helper()
	var res struct {
		Contents []struct {
			Text string `json:"text"`
			Meta map[string]struct {
				Offset  int64  `json:"offset"`
				Next    int64  `json:"next"`
				End     int64  `json:"end"`
				Dropped int64  `json:"dropped"`
				Status  string `json:"status"`
			} `json:"_meta"`
		} `json:"contents"`
	}
	c.MustCall("resources/read", map[string]any{"uri": uri}, &res)
	if len(res.Contents) != 1 {
		t.Fatalf("resources/read(%s) = %d contents, want 1", uri, len(res.Contents))
	}
	p := logPage{Text: res.Contents[0].Text}
	m := res.Contents[0].Meta["io.github.mcp-wasmhost/log"]
	p.Meta.Offset, p.Meta.Next, p.Meta.End, p.Meta.Dropped, p.Meta.Status = m.Offset, m.Next, m.End, m.Dropped, m.Status
	return p
}

// createLogged starts tool as a task and returns its ID and its log's URI, which the
// CreateTaskResult names in _meta.
func createLogged(t *testing.T, c *mcptest.Client, tool string, args any) (id, uri string) {
	t.Helper()
	var res struct {
		Meta map[string]string `json:"_meta"`
		Task mcptest.Task      `json:"task"`
	}
	c.MustCall("tools/call", map[string]any{"name": tool, "arguments": args, "task": map[string]any{"ttl": 600000}}, &res)
	uri = res.Meta["io.github.mcp-wasmhost/log"]
	if res.Task.TaskID == "" || uri != "mcp-wasmhost://tasks/"+res.Task.TaskID+"/log" {
		t.Fatalf("tools/call(%s) = %+v; want a task whose _meta names its log", tool, res)
	}
	return res.Task.TaskID, uri
}

// waitLogLines polls a task log until it has at least n lines.
func waitLogLines(t *testing.T, c *mcptest.Client, uri string, n int) logPage {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		p := readLog(t, c, uri)
		if strings.Count(p.Text, "\n") >= n {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("log %s has %q after a minute, want %d lines", uri, p.Text, n)
		}
	}
}

// TestTaskLogLive: a client reads a running task's log as it grows, is told of its
// growth through its subscription (at most every 100 ms), and reads on from an
// offset; the log's bound drops the oldest lines and says so.
func TestTaskLogLive(t *testing.T) {
	cmd := exec.Command(binary, "--config", longrunConfig(t, "max_log_kib = 1"))
	owner := mcptest.Dial(t, &mcp.CommandTransport{Command: cmd}, nil)

	id, uri := createLogged(t, owner, "longrun_testrun", map[string]any{"cases": 40, "case_ms": 50, "fail_every": 7})
	owner.MustCall("resources/subscribe", map[string]any{"uri": uri}, nil)
	first := waitLogLines(t, owner, uri, 5)
	if first.Meta.Status != "working" || !strings.HasPrefix(first.Text, "case 1: PASS\n") {
		t.Errorf("log of the running task = %q (%s); want its first cases while it works", first.Text, first.Meta.Status)
	}
	owner.WaitStatus(id, "completed")
	updates := 0
	for _, n := range owner.NotificationsOf("notifications/resources/updated") {
		if strings.Contains(string(n.Params), uri) {
			updates++
		}
	}
	if updates < 5 || updates > 40 {
		t.Errorf("%d notifications/resources/updated for 40 lines over 2 s; want several, at most one per line", updates)
	}
	t.Logf("%d update notifications for 40 lines over 2 s", updates)
	// Read on from where the first read ended: exactly the rest.
	var rest struct {
		Contents []struct {
			Text string `json:"text"`
		} `json:"contents"`
	}
	owner.MustCall("resources/read", map[string]any{"uri": uri + "?offset=" + strconv.FormatInt(first.Meta.Next, 10)}, &rest)
	whole := readLog(t, owner, uri)
	if len(rest.Contents) != 1 || first.Text+rest.Contents[0].Text != whole.Text || !strings.HasSuffix(whole.Text, "case 40: PASS\n") ||
		strings.Count(whole.Text, "FAIL") != 5 {
		t.Errorf("log read in two parts = %q + %q, whole %q; want the same 40 cases", first.Text, rest.Contents, whole.Text)
	}
	if e := owner.CallErr("resources/read", map[string]any{"uri": uri + "?offset=-1"}); e == nil {
		t.Error("resources/read with a negative offset succeeded")
	}

	// 300 lines of about 14 bytes with a 1 KiB bound: the oldest are dropped, and a
	// reader from the start is told.
	id2, uri2 := createLogged(t, owner, "longrun_testrun", map[string]any{"cases": 300})
	owner.WaitStatus(id2, "completed")
	p := readLog(t, owner, uri2)
	if p.Meta.Dropped == 0 || p.Meta.End-p.Meta.Dropped > 1024 || !strings.HasPrefix(p.Text, "[mcp-wasmhost: the first ") ||
		!strings.HasSuffix(p.Text, "case 300: PASS\n") {
		t.Errorf("bounded log = %q (%+v); want the marker, then the last lines within 1 KiB", p.Text, p.Meta)
	}
}

// TestTaskLogOwner: over HTTP, another session's client is told a task's log does
// not exist, and cannot subscribe to it.
func TestTaskLogOwner(t *testing.T) {
	url, _ := startHTTP(t, longrunConfig(t, ""))
	owner := mcptest.Dial(t, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	other := mcptest.Dial(t, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	id, uri := createLogged(t, owner, "longrun_testrun", map[string]any{"cases": 3})
	owner.WaitStatus(id, "completed")
	if p := readLog(t, owner, uri); strings.Count(p.Text, "\n") != 3 {
		t.Errorf("owner's read of its log = %q, want 3 lines", p.Text)
	}
	if e := other.CallErr("resources/read", map[string]any{"uri": uri}); e == nil || !strings.Contains(e.Message, "not found") {
		t.Errorf("resources/read of another session's task log = %v; want not found", e)
	}
	if e := other.CallErr("resources/subscribe", map[string]any{"uri": uri}); e == nil {
		t.Error("resources/subscribe to another session's task log succeeded; want not found")
	}
}

// lastCase is the highest case number a testrun log shows.
func lastCase(text string) int {
	last := 0
	for _, m := range regexp.MustCompile(`(?m)^case (\d+): `).FindAllStringSubmatch(text, -1) {
		if n, _ := strconv.Atoi(m[1]); n > last {
			last = n
		}
	}
	return last
}

// resumedLog is a log that a resumed task's guest wrote over its two runs: steps
// holds how often each step (a testrun case, a crunch position) was logged, last the
// highest one logged before the resume, and at the step the resume said it started
// from.
type resumedLog struct {
	steps    map[int64]int
	last, at int64
}

// readResumedLog reads log: step matches one step's line, resumed the line the
// guest writes when it starts again; each has the step number as its first group.
func readResumedLog(t *testing.T, log string, step, resumed *regexp.Regexp) resumedLog {
	t.Helper()
	loc := resumed.FindStringSubmatchIndex(log)
	if loc == nil {
		t.Fatalf("log = %q; want a line saying where the task resumed", log)
	}
	r := resumedLog{steps: map[int64]int{}}
	r.at, _ = strconv.ParseInt(log[loc[2]:loc[3]], 10, 64)
	for i, part := range []string{log[:loc[0]], log[loc[1]:]} {
		for _, m := range step.FindAllStringSubmatch(part, -1) {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			r.steps[n]++
			if i == 0 {
				r.last = max(r.last, n)
			}
		}
	}
	return r
}

// redone is the steps the log shows done twice: once before the resume, again after.
func (r resumedLog) redone() []int64 {
	var twice []int64
	for n, c := range r.steps {
		if c > 1 {
			twice = append(twice, n)
		}
	}
	slices.Sort(twice)
	return twice
}

// resumedMessage is the statusMessage of a task resumed from its last checkpoint
// after its server stopped, for the resume'th time with max_resumes = max.
func resumedMessage(resume, max int) string {
	return fmt.Sprintf("resumed from its last checkpoint after the server running it stopped (resume %d of at most %d)", resume, max)
}

// waitResumed polls tasks/get until the task is working with statusMessage msg
// (resumedMessage(1, 3) when msg is ""); it fails if the task ends first.
func waitResumed(t *testing.T, c *mcptest.Client, id, msg string) mcptest.Task {
	t.Helper()
	if msg == "" {
		msg = resumedMessage(1, 3)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		got := c.Get(id)
		if got.Status == "working" && got.StatusMessage == msg {
			return got
		}
		if got.Status != "working" || time.Now().After(deadline) {
			t.Fatalf("task %s is %s (%q); want it working, with %q", id, got.Status, got.StatusMessage, msg)
		}
	}
}

// TestResumeAfterSIGKILL: the server is killed (SIGKILL) while a resumable task runs;
// the next server on the same store resumes it from its last checkpoint, saying so in
// its statusMessage while it works, and it completes with the right totals. The log,
// which survives the kill, shows the cases the guest ran twice: at most one (one
// checkpoint interval), the one it logged but had not checkpointed when it was
// killed. A task of a tool that is not resumable fails with the reason, as before.
func TestResumeAfterSIGKILL(t *testing.T) {
	cfg := longrunConfig(t, "")
	cfg = appendPlugin(t, cfg, pluginTOML(t, "toolbox", "plugins/toolbox/toolbox.wasm", ""))
	start := func() (*mcptest.Client, *exec.Cmd) {
		cmd := exec.Command(binary, "--config", cfg)
		return mcptest.Dial(t, &mcp.CommandTransport{Command: cmd}, nil), cmd
	}
	a, cmdA := start()
	id, uri := createLogged(t, a, "longrun_testrun", map[string]any{"cases": 60, "case_ms": 50, "fail_every": 10})
	plain := a.CreateTask("toolbox_timer", map[string]any{"seconds": 600}, map[string]any{"ttl": 600000}, nil)
	before := waitLogLines(t, a, uri, 15)
	if err := cmdA.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmdA.Wait()
	reached := lastCase(before.Text)

	b, _ := start()
	resumed := waitResumed(t, b, id, "")
	var res struct {
		StructuredContent struct {
			Cases, Passed, Failed, ResumedFrom, Resumes int
		} `json:"structuredContent"`
	}
	b.WaitStatus(id, "completed")
	b.MustCall("tasks/result", map[string]any{"taskId": id}, &res)
	got := res.StructuredContent
	if got.Passed != 54 || got.Failed != 6 || got.Resumes != 1 {
		t.Errorf("resumed testrun = %+v; want 54 passed, 6 failed, resumed once", got)
	}
	log := readLog(t, b, uri).Text
	if !strings.HasSuffix(log, "case 60: FAIL (case 60 is a multiple of 10)\n") {
		t.Errorf("log after the resume = %q; want every case to 60", log)
	}
	r := readResumedLog(t, log, regexp.MustCompile(`(?m)^case (\d+): `), regexp.MustCompile(`(?m)^resumed at case (\d+) \(resume 1\)$`))
	redone := r.redone()
	// testrun logs a case, then checkpoints it: killed between the two, it runs that
	// case again (redone = [last]); otherwise it goes on with the next (redone = []).
	if int(r.at) != got.ResumedFrom || r.at < int64(reached) || len(redone) > 1 || r.at != r.last+1-int64(len(redone)) ||
		len(redone) == 1 && redone[0] != r.last {
		t.Errorf("killed after case %d (the log showed %d before the kill); resumed from case %d (result: %d), and ran cases %v twice: want at most one checkpoint interval (1 case) redone",
			r.last, reached, r.at, got.ResumedFrom, redone)
	}
	for n := int64(1); n <= 60; n++ {
		if r.steps[n] == 0 {
			t.Errorf("case %d is not in the log", n)
		}
	}
	t.Logf("killed after case %d; resumed from case %d, redid %d (statusMessage %q)", r.last, r.at, len(redone), resumed.StatusMessage)
	lost := b.WaitStatus(plain.TaskID, "failed")
	if !strings.Contains(lost.StatusMessage, "server running this task stopped") {
		t.Errorf("task of a tool that is not resumable = %q; want failed with the reason", lost.StatusMessage)
	}
}

// fold is longrun crunch's checksum over 1..n (plugins/longrun Fold), recomputed
// here to check the resumed result.
func fold(n int64) string {
	var sum uint64
	for i := int64(1); i <= n; i++ {
		v := uint64(i) * 0x9E3779B97F4A7C15
		v ^= v >> 29
		sum = sum*6364136223846793005 + v
	}
	return fmt.Sprintf("%016x", sum)
}

// TestResumeCrunchAfterSIGKILL: crunch, killed (SIGKILL) with its server after a few
// checkpoints, is resumed by the next server on the same data_dir from its last
// checkpoint (its statusMessage says so while it works) and completes with the
// checksum of the whole sequence. crunch saves a checkpoint, then logs it: the log
// that survived the kill shows that no chunk logged before it was folded again,
// and that the resume started at the last checkpoint logged, or the one after it
// (saved but not yet logged). So the work lost is at most the chunk that was being
// folded: less than one checkpoint interval.
func TestResumeCrunchAfterSIGKILL(t *testing.T) {
	const n, every = 60_000_000, 4_000_000 // about 15 chunks of 0.2 s
	cfg := longrunConfig(t, "")
	start := func() (*mcptest.Client, *exec.Cmd) {
		cmd := exec.Command(binary, "--config", cfg)
		return mcptest.Dial(t, &mcp.CommandTransport{Command: cmd}, nil), cmd
	}
	a, cmdA := start()
	id, uri := createLogged(t, a, "longrun_crunch", map[string]any{"n": n, "checkpoint_every": every})
	waitLogLines(t, a, uri, 2)
	if err := cmdA.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmdA.Wait()
	want := fold(n)

	b, _ := start()
	waitResumed(t, b, id, "")
	b.WaitStatus(id, "completed")
	var res struct {
		StructuredContent struct {
			Checksum    string
			ResumedFrom int64
			Resumes     int
		} `json:"structuredContent"`
	}
	b.MustCall("tasks/result", map[string]any{"taskId": id}, &res)
	got := res.StructuredContent
	if got.Checksum != want || got.Resumes != 1 {
		t.Errorf("resumed crunch = %+v; want checksum %s, resumed once", got, want)
	}
	log := readLog(t, b, uri).Text
	r := readResumedLog(t, log, regexp.MustCompile(`(?m)^step (\d+) of \d+$`), regexp.MustCompile(`(?m)^resumed at step (\d+) \(resume 1\)$`))
	if r.at != got.ResumedFrom || r.at == 0 || r.at%every != 0 || r.at < r.last || r.at > r.last+every || len(r.redone()) > 0 {
		t.Errorf("log %q: resumed at step %d (result: %d) after step %d was logged, and folded steps %v twice; want the last checkpoint, at most one interval (%d) after the last step logged, nothing redone",
			log, r.at, got.ResumedFrom, r.last, r.redone(), every)
	}
	if r.steps[n] != 1 {
		t.Errorf("log %q; want it to end at step %d", log, n)
	}
	t.Logf("killed after step %d was logged; resumed from step %d of %d", r.last, r.at, n)
}

// TestResumeLimit: a resumable task whose worker process dies under it at every
// attempt is started again max_resumes times, then failed, saying why.
func TestResumeLimit(t *testing.T) {
	cfg := longrunConfig(t, "max_resumes = 2")
	cmd := exec.Command(binary, "--config", cfg, "--log-level", "debug")
	serverLog := &testenv.SyncBuffer{}
	cmd.Stderr = serverLog
	defer func() {
		if t.Failed() {
			t.Logf("server log:\n%s", serverLog)
		}
	}()
	c := mcptest.Dial(t, &mcp.CommandTransport{Command: cmd}, nil)
	id, uri := createLogged(t, c, "longrun_testrun", map[string]any{"cases": 100000, "case_ms": 20})
	waitLogLines(t, c, uri, 1)
	for kill := 1; kill <= 3; kill++ {
		// Kill every worker of the server while this attempt's guest runs. The next
		// attempt is the one whose resume line a case follows: a case logged after
		// the last attempt was seen can be that attempt's own, sent just before its
		// worker died (then a kill finds no guest to stop).
		killWorkers(cmd)
		if kill < 3 {
			waitLogged(t, c, uri, regexp.MustCompile(fmt.Sprintf(`(?m)^resumed at case \d+ \(resume %d\)\ncase \d+: `, kill)))
		}
	}
	got := c.WaitStatus(id, "failed")
	if !strings.Contains(got.StatusMessage, "max_resumes") {
		t.Errorf("task whose worker died 3 times = %q; want failed naming max_resumes", got.StatusMessage)
	}
	if log := readLog(t, c, uri).Text; strings.Count(log, "resumed at case") != 2 {
		t.Errorf("log = ...%q; want two resumes noted", log[max(0, len(log)-300):])
	}
}

// killWorkers kills (SIGKILL) every worker process of the server cmd runs.
func killWorkers(cmd *exec.Cmd) {
	for _, pid := range testenv.Children(cmd.Process.Pid) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// waitLogged polls a task log until it holds line (a whole line) and returns it.
func waitLogged(t *testing.T, c *mcptest.Client, uri string, line *regexp.Regexp) string {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		p := readLog(t, c, uri)
		if line.MatchString(p.Text) {
			return p.Text
		}
		if time.Now().After(deadline) {
			t.Fatalf("log %s = ...%q after a minute; want a line matching %s", uri, p.Text[max(0, len(p.Text)-300):], line)
		}
	}
}

// TestResumeLimitAcrossStops: max_resumes bounds a task's restarts after its worker
// died and its resumes after its server was killed together, one count kept in the
// store. With max_resumes = 2: the worker dies (restart 1, in the same server), then
// the server is killed (SIGKILL) and the next one resumes the task (resume 2, which
// checkpoint_load reports), then that server's worker dies, and the task fails,
// saying that a worker stop ended it after 2 resumes, as many as max_resumes allows.
func TestResumeLimitAcrossStops(t *testing.T) {
	cfg := longrunConfig(t, "max_resumes = 2")
	serverLog := &testenv.SyncBuffer{}
	defer func() {
		if t.Failed() {
			t.Logf("server logs:\n%s", serverLog)
		}
	}()
	start := func() (*mcptest.Client, *exec.Cmd) {
		cmd := exec.Command(binary, "--config", cfg)
		cmd.Stderr = serverLog
		return mcptest.Dial(t, &mcp.CommandTransport{Command: cmd}, nil), cmd
	}
	a, cmdA := start()
	id, uri := createLogged(t, a, "longrun_testrun", map[string]any{"cases": 100000, "case_ms": 20})
	waitLogLines(t, a, uri, 3)
	killWorkers(cmdA)
	waitResumed(t, a, id, "started again from its last checkpoint after its worker process stopped (resume 1 of at most 2)")
	waitLogged(t, a, uri, regexp.MustCompile(`(?m)^resumed at case \d+ \(resume 1\)\n(case \d+: .*\n){3}`))
	if err := cmdA.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmdA.Wait()

	b, cmdB := start()
	waitResumed(t, b, id, resumedMessage(2, 2))
	waitLogged(t, b, uri, regexp.MustCompile(`(?m)^resumed at case \d+ \(resume 2\)\n(case \d+: .*\n){3}`))
	killWorkers(cmdB)
	got := b.WaitStatus(id, "failed")
	const want = "tool returned an error: its worker process stopped under it, and it is not started again: it was resumed 2 times already, as many as max_resumes (2) allows (server and worker stops count alike)"
	if !strings.HasPrefix(got.StatusMessage, want) {
		t.Errorf("task after a worker death, a SIGKILL and a worker death = %q; want failed with %q", got.StatusMessage, want)
	}
	// The result has the whole of it, the worker's own error last.
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	b.MustCall("tasks/result", map[string]any{"taskId": id}, &res)
	if whole := strings.TrimPrefix(want, "tool returned an error: ") + ` (plugin "longrun": the worker process running this call stopped`; !res.IsError ||
		len(res.Content) != 1 || !strings.HasPrefix(res.Content[0].Text, whole) {
		t.Errorf("tasks/result = %+v; want an error result starting %q", res, whole)
	}
	log := readLog(t, b, uri).Text
	if n := strings.Count(log, "resumed at case"); n != 2 || strings.Contains(log, "(resume 3)") {
		t.Errorf("log = ...%q; want two resumes noted (1 and 2), no third", log[max(0, len(log)-300):])
	}
	t.Logf("failed with %q", got.StatusMessage)
}

// TestPeerAdoptsResumable: two servers share one data_dir (the default SQLite
// store). A resumable testrun task runs on A; A is killed (SIGKILL) mid-run, and B,
// running all along and not restarted, finds A gone at its next check (every
// sqlstore.RenewEvery), adopts the orphaned task at its next look (every
// tasks.AdoptEvery), resumes it from its last checkpoint and completes it with the
// right totals, redoing at most one case; the client reads it all through B.
func TestPeerAdoptsResumable(t *testing.T) {
	// Adoption takes at most one check and one look after the kill, plus the time
	// their commits take (here: with the race detector, on a shared machine).
	const slack = time.Second
	bound := sqlstore.RenewEvery + tasks.AdoptEvery + slack
	cfg := longrunConfig(t, "")
	serverLog := &testenv.SyncBuffer{}
	defer func() {
		if t.Failed() {
			t.Logf("server logs:\n%s", serverLog)
		}
	}()
	start := func() (*mcptest.Client, *exec.Cmd) {
		cmd := exec.Command(binary, "--config", cfg)
		cmd.Stderr = serverLog
		return mcptest.Dial(t, &mcp.CommandTransport{Command: cmd}, nil), cmd
	}
	a, cmdA := start()
	b, _ := start()
	// 120 cases of 50 ms: 6 s in all, so that about half are left after the kill
	// and B's resume has work to do whenever within the bound it adopts the task.
	id, uri := createLogged(t, a, "longrun_testrun", map[string]any{"cases": 120, "case_ms": 50, "fail_every": 10})
	if got := b.Get(id); got.Status != "working" {
		t.Fatalf("A's task seen through B = %s (%q), want working", got.Status, got.StatusMessage)
	}
	before := waitLogLines(t, b, uri, 15)
	if err := cmdA.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmdA.Wait()
	killed := time.Now()
	reached := lastCase(before.Text)

	var resumed mcptest.Task
	for ; ; time.Sleep(5 * time.Millisecond) {
		resumed = b.Get(id)
		if resumed.Status != "working" || resumed.StatusMessage == resumedMessage(1, 3) || time.Since(killed) > bound+5*time.Second {
			break
		}
	}
	took := time.Since(killed)
	if resumed.Status != "working" || resumed.StatusMessage != resumedMessage(1, 3) {
		t.Fatalf("A's task, %v after A was killed, seen through B = %s (%q); want it working, resumed by B", took.Round(time.Millisecond), resumed.Status, resumed.StatusMessage)
	}
	if took > bound {
		t.Errorf("B resumed the task %v after A was killed; want within %v (RenewEvery %v + AdoptEvery %v + %v for the commits)",
			took.Round(time.Millisecond), bound, sqlstore.RenewEvery, tasks.AdoptEvery, slack)
	}
	t.Logf("B resumed the task %v after A was killed (bound %v)", took.Round(time.Millisecond), bound)

	got := b.WaitStatus(id, "completed")
	if got.StatusMessage != "" && got.StatusMessage != resumedMessage(1, 3) {
		t.Logf("completed with statusMessage %q", got.StatusMessage)
	}
	var res struct {
		StructuredContent struct {
			Cases, Passed, Failed, ResumedFrom, Resumes int
		} `json:"structuredContent"`
	}
	b.MustCall("tasks/result", map[string]any{"taskId": id}, &res)
	sum := res.StructuredContent
	if sum.Cases != 120 || sum.Passed != 108 || sum.Failed != 12 || sum.Resumes != 1 {
		t.Errorf("testrun resumed by B = %+v; want 120 cases, 108 passed, 12 failed, resumed once", sum)
	}
	log := readLog(t, b, uri).Text
	r := readResumedLog(t, log, regexp.MustCompile(`(?m)^case (\d+): `), regexp.MustCompile(`(?m)^resumed at case (\d+) \(resume 1\)$`))
	redone := r.redone()
	if int(r.at) != sum.ResumedFrom || r.at < int64(reached) || len(redone) > 1 || r.at != r.last+1-int64(len(redone)) ||
		len(redone) == 1 && redone[0] != r.last {
		t.Errorf("A killed after case %d (B's read showed %d before the kill); B resumed from case %d (result: %d), and cases %v ran twice: want A's last checkpoint, at most one case redone",
			r.last, reached, r.at, sum.ResumedFrom, redone)
	}
	for n := int64(1); n <= 120; n++ {
		if r.steps[n] == 0 {
			t.Errorf("case %d is not in the log", n)
		}
	}
	t.Logf("A killed after case %d; B resumed from case %d, redid %d", r.last, r.at, len(redone))
}

// appendPlugin adds a plugin table to the config file at path.
func appendPlugin(t *testing.T, path, table string) string {
	t.Helper()
	return writeConfig(t, readFile(t, path)+table)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestResumeAsksAgain: a resumable task that was waiting for the user's answer when
// its server was killed asks again once the next server resumes it, and completes
// with the answer given there.
func TestResumeAsksAgain(t *testing.T) {
	cfg := longrunConfig(t, "")
	never := make(chan struct{})
	defer close(never)
	cmdA := exec.Command(binary, "--config", cfg)
	a := mcptest.Dial(t, &mcp.CommandTransport{Command: cmdA}, func(*jsonrpc.Request) (any, error) {
		<-never // the first client never answers
		return nil, nil
	})
	id, _ := createLogged(t, a, "longrun_testrun", map[string]any{"cases": 6, "confirm_at": 3})
	a.WaitStatus(id, "input_required")
	if err := cmdA.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmdA.Wait()

	asked := 0
	b := mcptest.Dial(t, &mcp.CommandTransport{Command: exec.Command(binary, "--config", cfg)}, func(r *jsonrpc.Request) (any, error) {
		asked++
		if r.Method != "elicitation/create" || !strings.Contains(string(r.Params), "reached case 3") {
			return nil, fmt.Errorf("unexpected %s %s", r.Method, r.Params)
		}
		return map[string]any{"action": "accept", "content": map[string]any{"go_on": true}}, nil
	})
	var res struct {
		StructuredContent struct{ Passed, Resumes, ResumedFrom int } `json:"structuredContent"`
	}
	b.MustCall("tasks/result", map[string]any{"taskId": id}, &res)
	if got := res.StructuredContent; got.Passed != 6 || got.Resumes != 1 || got.ResumedFrom != 3 || asked != 1 {
		t.Errorf("after the resume: %+v, asked %d times; want 6 passed, resumed once from case 3, asked once", got, asked)
	}
}

// TestTaskLogListen2026: on the stateless 2026-07-28 wire with the Tasks extension, a
// task's CreateTaskResult names its log in _meta; a subscriptions/listen naming that
// URI is acknowledged, then told each time the log grows (at most every 100 ms), each
// notification tagged with the listen's subscription ID; and resources/read returns
// the log while the task works.
func TestTaskLogListen2026(t *testing.T) {
	url, serverLog := startHTTP(t, longrunConfig(t, ""))
	defer func() {
		if t.Failed() {
			t.Logf("server log:\n%s", serverLog)
		}
	}()
	c := &mcptest.Stateless{URL: url, Caps: mcptest.TasksExtension()}
	res, err := c.Call("tools/call", map[string]any{"name": "longrun_testrun", "arguments": map[string]any{"cases": 40, "case_ms": 50}}, nil)
	if err != nil || res.Error != nil {
		t.Fatalf("tools/call = %+v, %v", res, err)
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

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	resp := rawPost(ctx, t, http.DefaultClient, url, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"},
		map[string]any{"jsonrpc": "2.0", "id": "log", "method": "subscriptions/listen", "params": map[string]any{
			"notifications": map[string]any{"resourceSubscriptions": []string{uri}},
			"_meta": map[string]any{
				"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
				"io.modelcontextprotocol/clientCapabilities": mcptest.TasksExtension(),
			}}})
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("subscriptions/listen = HTTP %d %s, want an event stream", resp.StatusCode, ct)
	}
	type message struct {
		Method string `json:"method"`
		Params struct {
			URI           string         `json:"uri"`
			Notifications map[string]any `json:"notifications"`
			Meta          map[string]any `json:"_meta"`
		} `json:"params"`
	}
	messages := make(chan message, 256)
	go func() {
		defer close(messages)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m message
				if json.Unmarshal([]byte(data), &m) != nil {
					continue
				}
				select {
				case messages <- m:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	nextMessage := func() message {
		t.Helper()
		select {
		case m, ok := <-messages:
			if !ok {
				t.Fatal("the listen's stream ended")
			}
			return m
		case <-time.After(30 * time.Second):
			t.Fatal("no message on the listen's stream within 30 s")
		}
		return message{}
	}
	ack := nextMessage()
	if ack.Method != "notifications/subscriptions/acknowledged" || ack.Params.Meta["io.modelcontextprotocol/subscriptionId"] != "log" ||
		!strings.Contains(fmt.Sprint(ack.Params.Notifications["resourceSubscriptions"]), uri) {
		t.Fatalf("first message on the listen = %+v, want the acknowledgement of subscription \"log\" naming %s", ack, uri)
	}
	for updates := 0; updates < 2; {
		m := nextMessage()
		if m.Method != "notifications/resources/updated" {
			continue
		}
		if m.Params.URI != uri || m.Params.Meta["io.modelcontextprotocol/subscriptionId"] != "log" {
			t.Fatalf("update %+v; want the log's URI, tagged with subscription \"log\"", m)
		}
		updates++
	}

	read, err := c.Call("resources/read", map[string]any{"uri": uri}, nil)
	if err != nil || read.Error != nil {
		t.Fatalf("resources/read = %+v, %v", read, err)
	}
	var page struct {
		Contents []struct {
			Text string                    `json:"text"`
			Meta map[string]map[string]any `json:"_meta"`
		} `json:"contents"`
	}
	json.Unmarshal(read.Result, &page)
	if len(page.Contents) != 1 || page.Contents[0].Meta["io.github.mcp-wasmhost/log"]["status"] != "working" ||
		!strings.HasPrefix(page.Contents[0].Text, "case 1: PASS\n") {
		t.Errorf("resources/read of the log = %s; want its first cases while the task works", read.Result)
	}

	// The task completes; its log was told as it grew, about every 100 ms over 2 s.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got, err := c.Call("tasks/get", map[string]any{"taskId": created.TaskID}, nil)
		if err != nil || got.Error != nil {
			t.Fatalf("tasks/get = %+v, %v", got, err)
		}
		var task struct {
			Status string `json:"status"`
		}
		json.Unmarshal(got.Result, &task)
		if task.Status == "completed" {
			break
		}
		if task.Status != "working" || time.Now().After(deadline) {
			t.Fatalf("task = %s, want it to complete", got.Result)
		}
	}
}

// TestCheckpointBounds: a checkpoint over [tasks] max_checkpoint_kib, or over the
// ABI's 1 MiB, is refused with FAILED and a reason that the guest reads (journal.c
// puts it in its result); checkpoint_save params over the ABI's bound (1 MiB in
// base64, plus 4 KiB) are refused with TOO_LARGE before the host reads them.
func TestCheckpointBounds(t *testing.T) {
	cfg := appendPlugin(t, longrunConfig(t, "max_checkpoint_kib = 1"), pluginTOML(t, "journal", "testdata/wasm/journal.wasm", ""))
	c := mcptest.Dial(t, &mcp.CommandTransport{Command: exec.Command(binary, "--config", cfg)}, nil)
	for _, tc := range []struct {
		size int
		want string
	}{
		{1024, "done"},
		{1025, "checkpoint 1 failed: FAILED: checkpoint_save: a checkpoint of 1025 bytes is larger than the 1024 bytes a task may keep"},
		{1<<20 + 1, "checkpoint 1 failed: FAILED: checkpoint_save: a checkpoint of 1048577 bytes is larger than the ABI's 1048576"},
		{1<<20 + 4<<10, "checkpoint 1 failed: TOO_LARGE"},
	} {
		task := c.CreateTask("journal_repeat", map[string]any{"op": "checkpoint", "count": 1, "size": tc.size}, map[string]any{"ttl": 60000}, nil)
		var res struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		c.MustCall("tasks/result", map[string]any{"taskId": task.TaskID}, &res)
		if len(res.Content) != 1 || res.Content[0].Text != tc.want || res.IsError != (tc.want != "done") {
			t.Errorf("checkpoint of %d bytes = %+v; want %q", tc.size, res, tc.want)
		}
	}
}
