package host_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// hotLines are requests at the edges of the hot path's shapes (hotpath.go): the
// server must answer them with the same bytes whether the hot path or the SDK
// serves them. Each line is sent, in order, without waiting for its answer.
var hotLines = []string{
	// Before initialize: the SDK refuses; the hot path must not answer.
	`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"early"}}`,
	`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"hot","version":"1"}}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	// A sync call that takes a while, so that id 10 is the SDK's while the next
	// tasks/get reuses it.
	`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"slow_compute","arguments":{"seconds":0.3,"label":"hot"}}}`,
	dupLine, // the SDK drops it unanswered

	`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"no-such-task"}}`,
	`{"jsonrpc":"2.0","id":"s","method":"tasks/get","params":{"taskId":"no-such-task"}}`,
	`{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":""}}`,
	`{"jsonrpc":"2.0","id":5,"method":"tasks/get","params":{ "taskId" : "spaced" } }`,
	`{"jsonrpc":"2.0","id":6,"method":"tasks/get","params":{"taskId":"x","extra":1}}`,
	`{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":"x","_meta":{"progressToken":1}}}`,
	`{"jsonrpc":"2.0","id":8,"method":"tasks/get","params":{"taskId":"\u0041b"}}`,
	`{"jsonrpc":"2.0","id":9,"method":"tasks/get","params":{"taskId":5}}`,
	`{"jsonrpc":"2.0","id":11,"method":"tasks/get","params":{"TaskId":"case"}}`,
	`{"jsonrpc":"2.0","id":12,"method":"tasks/get","params":{}}`,
	`{"jsonrpc":"2.0","id":13,"method":"tasks/get","params":null}`,
	`{"jsonrpc":"2.0","id":14,"method":"tasks/get"}`,
	`{"jsonrpc":"2.0","id":15,"method":"tasks/get","params":[]}`,
	`{"jsonrpc":"2.0","id":16,"method":"tasks/get","params":{"taskId":"x","taskId":"y"}}`,
	`{"jsonrpc":"2.0","id":17,"method":"tasks/list","params":{}}`,
	`{"jsonrpc":"2.0","id":18,"method":"tasks/list","params":{"cursor":"bogus"}}`,
	`{"jsonrpc":"2.0","id":19,"method":"tasks/list"}`,
	`{"jsonrpc":"2.0","id":20,"method":"tasks/list","params":{"cursor":5}}`,
	`{"jsonrpc":"2.0","id":21,"method":"tasks/cancel","params":{"taskId":"no-such-task"}}`,
	`{"jsonrpc":"2.0","id":22,"method":"tasks/cancel","params":{"taskId":"é"}}`,
	`{"jsonrpc":"2.0","id":23,"method":"tasks/result","params":{"taskId":"no-such-task"}}`,
	`{"jsonrpc":"2.0","id":24,"method":"tasks/get","params":{"taskId":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	`{"jsonrpc":"2.0","method":"tasks/get","params":{"taskId":"a notification"}}`,
	`{"jsonrpc":"2.0","id":25,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"},"_meta":{"progressToken":30}}}`,
	`{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"name":"nope","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":32,"method":"tools/call","params":{"name":"greet","arguments":{"name":5}}}`,
	`{"jsonrpc":"2.0","id":33,"method":"tools/call","params":{"name":"greet","arguments":[]}}`,
	`{"jsonrpc":"2.0","id":34,"method":"tools/call","params":{"name":"greet"}}`,
	`{"jsonrpc":"2.0","id":35,"method":"tools/call","params":{"name":"gr\u0065et","arguments":{"name":"B"}}}`,
	`{"jsonrpc":"2.0","id":36,"method":"tools/call","params":{"name":"slow_compute","arguments":{"seconds":0,"label":"t"},"task":{"ttl":60000}}}`,
	`{"jsonrpc":"2.0","id":37,"method":"tools/call","params":{"name":"greet","arguments":{"name":"C"},"_meta":{"progressToken":1.5}}}`,
	`{"jsonrpc":"2.0","id":38,"method":"tools/call","params":{"name":"slow_compute","arguments":{"seconds":5,"label":"cancelled"}}}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":38,"reason":"test"}}`,
	`{"jsonrpc":"2.0","id":39,"method":"tools/call","params":{"arguments":{}}}`,
	`{"jsonrpc":"2.0","id":40,"method":"tools/call","params":{"name":"greet","arguments":{"name":"D"},"requestState":"x"}}`,
}

// hotVolatile are the parts of an answer that differ between two runs.
var hotVolatile = regexp.MustCompile(`"(taskId|createdAt|lastUpdatedAt)":"[^"]*"|tasks/[A-Za-z0-9_-]+/log`)

// dupLine reuses the id of the request before it.
const dupLine = `{"jsonrpc":"2.0","id":10,"method":"tasks/get","params":{"taskId":"dup"}}`

// TestHotPathAnswersAsTheSDK sends hotLines with the hot path on and off and
// compares every answer byte for byte.
func TestHotPathAnswersAsTheSDK(t *testing.T) {
	hot, hotServed := hotAnswers(t, true)
	sdk, sdkServed := hotAnswers(t, false)
	if hotServed == 0 || sdkServed != 0 {
		t.Fatalf("hot path answered %d requests with it on and %d with it off", hotServed, sdkServed)
	}
	if !slices.Equal(hot, sdk) {
		t.Errorf("answers differ:\nhot path:\n%s\nSDK:\n%s", strings.Join(hot, "\n"), strings.Join(sdk, "\n"))
	}
}

// hotAnswers sends hotLines to a stdio session and returns every answer, sorted, and
// how many the hot path gave.
func hotAnswers(t *testing.T, hot bool) ([]string, int64) {
	t.Helper()
	f := wireFixture(t)
	f.srv.SetHotPath(hot)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		f.srv.ServeStdio(context.Background(), inR, outW)
		outW.Close()
	}()
	want := 0
	for _, l := range hotLines {
		if strings.Contains(l, `"id":`) && l != dupLine {
			want++
		}
	}
	go func() {
		for _, l := range hotLines {
			if _, err := io.WriteString(inW, l+"\n"); err != nil {
				return
			}
			if strings.Contains(l, `"initialize"`) {
				time.Sleep(100 * time.Millisecond) // let it be served before the rest
			}
		}
	}()
	answers := make(chan []string, 1)
	go func() {
		var got []string
		defer func() { answers <- got }()
		sc := bufio.NewScanner(outR)
		for len(got) < want && sc.Scan() {
			var m struct {
				Method string `json:"method"`
			}
			if json.Unmarshal(sc.Bytes(), &m) == nil && m.Method != "" {
				continue // a notification
			}
			got = append(got, hotVolatile.ReplaceAllString(sc.Text(), `"$1":"<volatile>"`))
		}
	}()
	var got []string
	select {
	case got = <-answers:
	case <-time.After(20 * time.Second):
		t.Fatalf("not %d answers after 20 s", want)
	}
	inW.Close()
	slices.Sort(got)
	return got, f.srv.HotServed()
}
