package host_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/host"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
)

// note is one message a listen's stream carried.
type note struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *jsonrpc.Error  `json:"error"`
}

// subscriptionID returns the message's _meta subscriptionId, as JSON.
func (n note) subscriptionID() string {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	raw := n.Params
	if n.Method == "" {
		raw = n.Result
	}
	json.Unmarshal(raw, &p)
	return string(p.Meta["io.modelcontextprotocol/subscriptionId"])
}

// task decodes a notifications/tasks.
func (n note) task(t *testing.T) extTask {
	t.Helper()
	if n.Method != "notifications/tasks" {
		t.Fatalf("message %s %s, want notifications/tasks", n.Method, n.Params)
	}
	var task extTask
	if err := json.Unmarshal(n.Params, &task); err != nil {
		t.Fatal(err)
	}
	return task
}

// sseListen is a subscriptions/listen over Streamable HTTP, read as it streams.
type sseListen struct {
	status int
	header http.Header
	notes  chan note // closed when the response ends
	cancel context.CancelFunc
	body   string // the response body when it is not a stream
}

// listenHTTP opens a 2026-07-28 listen with id and notifications.
func listenHTTP(t *testing.T, url string, id any, caps map[string]any, notifications map[string]any) *sseListen {
	t.Helper()
	if caps == nil {
		caps = map[string]any{}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": map[string]any{
		"notifications": notifications,
		"_meta":         map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": caps},
	}})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	l := &sseListen{status: resp.StatusCode, header: resp.Header, notes: make(chan note, 1024), cancel: cancel}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		resp.Body.Close()
		l.body = b.String()
		close(l.notes)
		return l
	}
	go func() {
		defer close(l.notes)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data:")
			if !ok {
				continue
			}
			var n note
			if json.Unmarshal([]byte(strings.TrimSpace(data)), &n) == nil {
				l.notes <- n
			}
		}
	}()
	return l
}

// next returns the next message, failing after 10 s.
func next(t *testing.T, notes <-chan note) note {
	t.Helper()
	select {
	case n, ok := <-notes:
		if !ok {
			t.Fatal("the listen's stream ended")
		}
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("no message on the listen's stream within 10 s")
	}
	return note{}
}

// quiet fails if a message arrives within d.
func quiet(t *testing.T, notes <-chan note, d time.Duration) {
	t.Helper()
	select {
	case n, ok := <-notes:
		if ok {
			t.Fatalf("unexpected message %s %s%s", n.Method, n.Params, n.Result)
		}
	case <-time.After(d):
	}
}

// ackOf checks that n acknowledges listen id and returns its notifications.
func ackOf(t *testing.T, n note, id string) map[string]any {
	t.Helper()
	if n.Method != "notifications/subscriptions/acknowledged" || n.subscriptionID() != id {
		t.Fatalf("first message %s %s, want the acknowledgement of %s", n.Method, n.Params, id)
	}
	var p struct {
		Notifications map[string]any `json:"notifications"`
	}
	json.Unmarshal(n.Params, &p)
	return p.Notifications
}

// TestListenTasks: a listen naming task IDs is acknowledged first (every ID asked,
// known or not), then gets each task's current state and every later one in order,
// each rendered exactly as tasks/get renders it and tagged with the subscription ID;
// input_required carries the pending requests.
func TestListenTasks(t *testing.T) {
	f := newFixture(t)
	c := &mcptest.Stateless{URL: f.url, Caps: mcptest.TasksExtension()}
	task := extCreate(t, c, "confirm_delete", map[string]any{"filename": "a.txt"})

	l := listenHTTP(t, f.url, "L-1", mcptest.TasksExtension(), map[string]any{"taskIds": []string{task.TaskID, "no-such-task"}})
	if l.status != http.StatusOK {
		t.Fatalf("listen = HTTP %d %s", l.status, l.body)
	}
	ack := ackOf(t, next(t, l.notes), `"L-1"`)
	if got := fmt.Sprint(ack["taskIds"]); got != fmt.Sprint([]any{task.TaskID, "no-such-task"}) {
		t.Errorf("acknowledged taskIds = %v, want both asked", got)
	}
	if len(ack) != 1 {
		t.Errorf("acknowledged %v, want only taskIds", ack)
	}

	var states []string
	var asked extTask
	for {
		n := next(t, l.notes)
		if n.subscriptionID() != `"L-1"` {
			t.Errorf("%s without the subscription ID: %s", n.Method, n.Params)
		}
		got := n.task(t)
		if got.TaskID != task.TaskID {
			t.Fatalf("notification for task %q, asked only %q", got.TaskID, task.TaskID)
		}
		if len(states) == 0 || states[len(states)-1] != got.Status {
			states = append(states, got.Status)
		}
		if got.Status == "input_required" {
			asked = got
			break
		}
	}
	if len(asked.InputRequests) != 1 {
		t.Fatalf("input_required notification has inputRequests %v, want one", asked.InputRequests)
	}
	var key string
	for k := range asked.InputRequests {
		key = k
	}
	must(t, c, "tasks/update", map[string]any{"taskId": task.TaskID, "inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}, nil)
	var last note
	for {
		last = next(t, l.notes)
		got := last.task(t)
		if states[len(states)-1] != got.Status {
			states = append(states, got.Status)
		}
		if got.Status == "completed" || got.Status == "failed" {
			break
		}
	}
	if want := []string{"working", "input_required", "working", "completed"}; !reflect.DeepEqual(states, want) && !reflect.DeepEqual(states, want[1:]) {
		t.Errorf("states notified %v, want %v", states, want)
	}
	// The terminal notification is tasks/get's answer, _meta aside.
	r, err := c.Call("tasks/get", map[string]any{"taskId": task.TaskID}, nil)
	if err != nil || r.Error != nil {
		t.Fatal(err, r.Error)
	}
	var fromGet, fromNote map[string]any
	json.Unmarshal(r.Result, &fromGet)
	json.Unmarshal(last.Params, &fromNote)
	delete(fromGet, "_meta")
	delete(fromNote, "_meta")
	if !reflect.DeepEqual(fromGet, fromNote) {
		t.Errorf("notifications/tasks = %v\ntasks/get = %v", fromNote, fromGet)
	}
	quiet(t, l.notes, 200*time.Millisecond) // nothing after a terminal state

	// A listen for a task already finished gets its final state at once.
	l2 := listenHTTP(t, f.url, 7, mcptest.TasksExtension(), map[string]any{"taskIds": []string{task.TaskID}})
	ackOf(t, next(t, l2.notes), `7`)
	if got := next(t, l2.notes).task(t); got.Status != "completed" {
		t.Errorf("listen on a finished task: %+v", got)
	}

	// Without the extension: -32021, HTTP 400.
	l3 := listenHTTP(t, f.url, 8, map[string]any{}, map[string]any{"taskIds": []string{task.TaskID}})
	if l3.status != http.StatusBadRequest || !strings.Contains(l3.body, "-32021") || !strings.Contains(l3.body, `"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}`) {
		t.Errorf("listen without the extension = HTTP %d %s, want 400 -32021", l3.status, l3.body)
	}
	// A malformed taskIds: -32602.
	l4 := listenHTTP(t, f.url, 9, mcptest.TasksExtension(), map[string]any{"taskIds": "all"})
	if !strings.Contains(l4.body+fmt.Sprint(l4.status), "-32602") {
		t.Errorf("listen with taskIds \"all\" = HTTP %d %s, want -32602", l4.status, l4.body)
	}
}

// TestListenOwnerIsolation: a listen sees only its requester's tasks: naming another
// requester's task is acknowledged like any ID, and nothing of it is ever sent.
func TestListenOwnerIsolation(t *testing.T) {
	f := newFixture(t)
	// The local user's task (a stream connection), and an anonymous HTTP client's.
	local := mcptest.Dial(t, f.stream(t), nil)
	theirs := local.CreateTask("slow_compute", map[string]any{"seconds": 0.2}, map[string]any{}, nil)
	c := &mcptest.Stateless{URL: f.url, Caps: mcptest.TasksExtension()}
	mine := extCreate(t, c, "slow_compute", map[string]any{"seconds": 0.4})

	l := listenHTTP(t, f.url, "iso", mcptest.TasksExtension(), map[string]any{"taskIds": []string{theirs.TaskID, mine.TaskID}})
	ack := ackOf(t, next(t, l.notes), `"iso"`)
	if got := fmt.Sprint(ack["taskIds"]); got != fmt.Sprint([]any{theirs.TaskID, mine.TaskID}) {
		t.Errorf("acknowledged %v, want both IDs as asked", got)
	}
	for {
		got := next(t, l.notes).task(t)
		if got.TaskID != mine.TaskID {
			t.Fatalf("the listen was told of another requester's task: %+v", got)
		}
		if got.Status == "completed" {
			break
		}
	}
	local.WaitStatus(theirs.TaskID, "completed") // finished before mine, never notified
	quiet(t, l.notes, 100*time.Millisecond)
}

// rawStream is a client on a stream transport that sees every message but the
// 2025-11-25 line's notifications/tasks/status.
type rawStream struct {
	t    *testing.T
	conn mcp.Connection
	msgs chan note
}

func dialStream(t *testing.T, tr mcp.Transport) *rawStream {
	t.Helper()
	conn, err := tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	s := &rawStream{t: t, conn: conn, msgs: make(chan note, 4096)}
	go func() {
		defer close(s.msgs)
		for {
			msg, err := conn.Read(context.Background())
			if err != nil {
				return
			}
			b, _ := jsonrpc.EncodeMessage(msg)
			var n note
			json.Unmarshal(b, &n)
			if n.Method == "notifications/tasks/status" {
				continue // 2025-11-25's, sent to every stream connection of the local user
			}
			s.msgs <- n
		}
	}()
	s.send(0, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "1"}})
	if n := next(t, s.msgs); n.Result == nil {
		t.Fatalf("initialize = %s %v", n.Result, n.Error)
	}
	s.send(nil, "notifications/initialized", map[string]any{})
	return s
}

// send writes a request (id nil: a notification).
func (s *rawStream) send(id any, method string, params map[string]any) {
	s.t.Helper()
	b, _ := json.Marshal(params)
	req := &jsonrpc.Request{Method: method, Params: b}
	if id != nil {
		if f, ok := id.(int); ok {
			id = float64(f)
		}
		jid, err := jsonrpc.MakeID(id)
		if err != nil {
			s.t.Fatal(err)
		}
		req.ID = jid
	}
	if err := s.conn.Write(context.Background(), req); err != nil {
		s.t.Fatal(err)
	}
}

// listen opens a listen declaring the Tasks extension for itself.
func (s *rawStream) listen(id any, notifications map[string]any) {
	s.send(id, "subscriptions/listen", map[string]any{"notifications": notifications,
		"_meta": map[string]any{"io.modelcontextprotocol/clientCapabilities": mcptest.TasksExtension()}})
}

// TestListenStdio: on a stream transport (stdio) two listens share the connection;
// each message carries its listen's subscription ID, and a listen the client cancels
// ends without an answer while the other goes on.
func TestListenStdio(t *testing.T) {
	f := newFixture(t)
	s := dialStream(t, f.stream(t))
	ctl := mcptest.Dial(t, f.stream(t), nil) // the same local user, on another connection
	a := ctl.CreateTask("slow_compute", map[string]any{"seconds": 0.3}, map[string]any{}, nil)
	b := ctl.CreateTask("slow_compute", map[string]any{"seconds": 60}, map[string]any{}, nil)

	s.listen("A", map[string]any{"taskIds": []string{a.TaskID}})
	s.listen(2, map[string]any{"taskIds": []string{b.TaskID}})
	byID := map[string][]note{}
	deadline := time.Now().Add(10 * time.Second)
	for len(byID[`"A"`]) < 3 || len(byID[`2`]) < 2 { // ack, working, completed; ack, working
		if time.Now().After(deadline) {
			t.Fatalf("messages so far: %v", byID)
		}
		n := next(t, s.msgs)
		if n.Method == "" {
			t.Fatalf("a response on the stream: %s %s %v", n.ID, n.Result, n.Error)
		}
		byID[n.subscriptionID()] = append(byID[n.subscriptionID()], n)
	}
	for id, task := range map[string]string{`"A"`: a.TaskID, `2`: b.TaskID} {
		notes := byID[id]
		ackOf(t, notes[0], id)
		for _, n := range notes[1:] {
			if got := n.task(t); got.TaskID != task {
				t.Errorf("listen %s got task %s, asked for %s", id, got.TaskID, task)
			}
		}
	}
	if got := byID[`"A"`][len(byID[`"A"`])-1].task(t); got.Status != "completed" {
		t.Errorf("listen A's last = %+v", got)
	}

	// Cancelling listen 2 ends it without an answer; listen A still hears.
	s.send(nil, "notifications/cancelled", map[string]any{"requestId": 2})
	s.send("ping", "ping", map[string]any{}) // answered once the cancel was taken
	if n := next(t, s.msgs); string(n.ID) != `"ping"` {
		t.Fatalf("after cancelling listen 2: %s %s %s %v, want the ping's answer", n.Method, n.Params, n.Result, n.Error)
	}
	ctl.MustCall("tasks/cancel", map[string]any{"taskId": b.TaskID}, nil)
	c := ctl.CreateTask("slow_compute", map[string]any{"seconds": 0.05}, map[string]any{}, nil)
	s.listen("C", map[string]any{"taskIds": []string{c.TaskID}})
	for {
		n := next(t, s.msgs)
		if n.Method == "" || n.subscriptionID() == `2` {
			t.Fatalf("after cancelling listen 2: %s %s %s %v", n.Method, n.Params, n.Result, n.Error)
		}
		if n.subscriptionID() == `"C"` && n.Method == "notifications/tasks" && n.task(t).Status == "completed" {
			break
		}
	}
}

// TestListenResourceUpdated: a guest's resource_updated reaches the listens naming
// the URI, on stdio and over HTTP, tagged with their subscription IDs; URIs the
// server does not offer are not acknowledged.
func TestListenResourceUpdated(t *testing.T) {
	f := newFeatureServer(t)
	s := dialStream(t, f.stream(t))
	s.listen(1, map[string]any{"resourceSubscriptions": []string{"test://watched-resource", "test://nowhere"}})
	s.listen(2, map[string]any{"resourceSubscriptions": []string{"test://static-text"}})
	acks := map[string]map[string]any{}
	for len(acks) < 2 {
		n := next(t, s.msgs)
		acks[n.subscriptionID()] = ackOf(t, n, n.subscriptionID())
	}
	if got := fmt.Sprint(acks["1"]); got != "map[resourceSubscriptions:[test://watched-resource]]" {
		t.Errorf("listen 1 acknowledged %s, want only the URI offered", got)
	}
	// A listen of which nothing is honoured ends at once with its result.
	s.listen(3, map[string]any{"resourceSubscriptions": []string{"test://nowhere"}, "toolsListChanged": true})
	if got := ackOf(t, next(t, s.msgs), "3"); len(got) != 0 {
		t.Errorf("listen 3 acknowledged %v, want nothing", got)
	}
	if n := next(t, s.msgs); string(n.ID) != "3" || !strings.Contains(string(n.Result), `"resultType":"complete"`) {
		t.Errorf("listen 3 then got %s %s %s, want its result", n.Method, n.ID, n.Result)
	}
	// Over HTTP too.
	h := listenHTTP(t, f.url, "H", nil, map[string]any{"resourceSubscriptions": []string{"test://watched-resource"}})
	ackOf(t, next(t, h.notes), `"H"`)

	other := mcptest.Dial(t, &mcp.StreamableClientTransport{Endpoint: f.url}, nil)
	other.MustCall("tools/call", map[string]any{"name": "test_resource_updated", "arguments": map[string]string{"uri": "test://watched-resource"}}, nil)
	n := next(t, s.msgs)
	if n.Method != "notifications/resources/updated" || n.subscriptionID() != "1" || !strings.Contains(string(n.Params), `"uri":"test://watched-resource"`) {
		t.Errorf("stdio listen got %s %s, want the update tagged 1", n.Method, n.Params)
	}
	n = next(t, h.notes)
	if n.Method != "notifications/resources/updated" || n.subscriptionID() != `"H"` {
		t.Errorf("HTTP listen got %s %s, want the update tagged \"H\"", n.Method, n.Params)
	}
	select {
	case n := <-s.msgs:
		t.Errorf("listen 2 (another URI) got %s %s", n.Method, n.Params)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestListenLimit: a requester may hold MaxListensPerRequester listens; the next is
// refused with -32000 (HTTP 429 with Retry-After), and one ending makes room.
func TestListenLimit(t *testing.T) {
	f := newFixture(t)
	open := make([]*sseListen, 0, host.MaxListensPerRequester)
	for i := range host.MaxListensPerRequester {
		l := listenHTTP(t, f.url, i, mcptest.TasksExtension(), map[string]any{"taskIds": []string{"x"}})
		ackOf(t, next(t, l.notes), fmt.Sprint(i))
		open = append(open, l)
	}
	over := listenHTTP(t, f.url, "over", mcptest.TasksExtension(), map[string]any{"taskIds": []string{"x"}})
	if over.status != http.StatusTooManyRequests || over.header.Get("Retry-After") == "" ||
		!strings.Contains(over.body, `"code":-32000`) || !strings.Contains(over.body, "MaxListensPerRequester") || !strings.Contains(over.body, `"id":"over"`) {
		t.Errorf("listen %d = HTTP %d %s, want 429 -32000", host.MaxListensPerRequester+1, over.status, over.body)
	}
	open[0].cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		l := listenHTTP(t, f.url, "again", mcptest.TasksExtension(), map[string]any{"taskIds": []string{"x"}})
		if l.status == http.StatusOK {
			ackOf(t, next(t, l.notes), `"again"`)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after one listen ended: HTTP %d %s", l.status, l.body)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// On stdio, the local user's listens are bounded the same way.
	s := dialStream(t, f.stream(t))
	for i := range host.MaxListensPerRequester + 1 {
		s.listen(i+1, map[string]any{"taskIds": []string{"x"}})
	}
	acks, refused := 0, 0
	for acks+refused < host.MaxListensPerRequester+1 {
		n := next(t, s.msgs)
		switch {
		case n.Method == "notifications/subscriptions/acknowledged":
			acks++
		case n.Error != nil && n.Error.Code == -32000:
			refused++
		default:
			t.Fatalf("unexpected %s %s %v", n.Method, n.Result, n.Error)
		}
	}
	if acks != host.MaxListensPerRequester || refused != 1 {
		t.Errorf("stdio: %d acknowledged, %d refused; want %d and 1", acks, refused, host.MaxListensPerRequester)
	}
}

// TestListenOverflow: a client that stops reading while its listen's queue overflows
// gets, once it reads again, the notifications written so far and then the listen's
// result: the listen ended, and the server holds nothing more for it.
func TestListenOverflow(t *testing.T) {
	f := newFeatureServer(t)
	ct, st := mcp.NewInMemoryTransports()
	if _, err := f.srv.Connect(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	conn, err := ct.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	write := func(id any, method string, params any) {
		b, _ := json.Marshal(params)
		req := &jsonrpc.Request{Method: method, Params: b}
		if id != nil {
			req.ID, _ = jsonrpc.MakeID(id)
		}
		if err := conn.Write(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	read := func() note {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		msg, err := conn.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := jsonrpc.EncodeMessage(msg)
		var n note
		json.Unmarshal(b, &n)
		return n
	}
	write(float64(0), "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}})
	read()
	write(nil, "notifications/initialized", map[string]any{})
	write("slow", "subscriptions/listen", map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{"test://watched-resource"}}})
	ackOf(t, read(), `"slow"`)

	// The client reads nothing while another client announces more updates than
	// the listen's queue holds.
	other := mcptest.Dial(t, &mcp.StreamableClientTransport{Endpoint: f.url}, nil)
	const updates = 280 // the queue holds 256
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < updates; i += 8 {
				other.MustCall("tools/call", map[string]any{"name": "test_resource_updated", "arguments": map[string]string{"uri": "test://watched-resource"}}, nil)
			}
		}()
	}
	wg.Wait()
	got := 0
	for {
		n := read()
		if n.Method == "notifications/resources/updated" {
			got++
			continue
		}
		if string(n.ID) != `"slow"` || n.Error != nil || !strings.Contains(string(n.Result), `"resultType":"complete"`) || n.subscriptionID() != `"slow"` {
			t.Fatalf("after %d updates: %s %s %s %v, want the listen's result", got, n.Method, n.ID, n.Result, n.Error)
		}
		break
	}
	if got >= updates {
		t.Errorf("all %d updates were delivered: the queue never overflowed", got)
	}
	t.Logf("%d of %d updates delivered before the listen ended", got, updates)
}
