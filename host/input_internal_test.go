package host

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// inputBridge is a bridge in a synchronous 2026-07-28 round with answers: the
// "input" request is served from them (or ends the round) without a session.
func inputBridge(caps *mcp.ClientCapabilities, answers map[string]json.RawMessage) *bridge {
	return &bridge{caps: caps, mrtr: &mrtrRun{answers: answers, cancel: func() {}}}
}

var everyCap = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}, Sampling: &mcp.SamplingCapabilities{},
	RootsV2: &mcp.RootCapabilities{}}

// TestInputRequest: the guest's "input" request is checked, each request goes under
// its key, undeclared capabilities are left out, and answers are checked for their
// kind.
func TestInputRequest(t *testing.T) {
	elicit := `{"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object"}}}`
	roots := `{"method":"roots/list"}`
	sample := `{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5}}`
	accept := json.RawMessage(`{"action":"accept","content":{"name":"A"}}`)
	rootsAnswer := json.RawMessage(`{"roots":[{"uri":"file:///a"}]}`)
	tests := []struct {
		name    string
		caps    *mcp.ClientCapabilities
		params  string
		answers map[string]json.RawMessage
		want    string // the reply, or the error's text
		pending []string
	}{
		{"answered", everyCap, `{"requests":{"a":` + elicit + `,"b":` + roots + `}}`,
			map[string]json.RawMessage{"a": accept, "b": rootsAnswer, "zzz": accept},
			`{"responses":{"a":{"action":"accept","content":{"name":"A"}},"b":{"roots":[{"uri":"file:///a"}]}}}`, nil},
		{"one missing", everyCap, `{"requests":{"a":` + elicit + `,"b":` + roots + `}}`,
			map[string]json.RawMessage{"a": accept}, errInputPending.Error(), []string{"b"}},
		{"undeclared left out", &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}},
			`{"requests":{"a":` + elicit + `,"s":` + sample + `}}`, nil, errInputPending.Error(), []string{"s"}},
		{"nothing declared", &mcp.ClientCapabilities{}, `{"requests":{"a":` + elicit + `}}`, nil, sandbox.ErrUnavailable.Error(), nil},
		{"wrong kind of answer", everyCap, `{"requests":{"a":` + elicit + `}}`,
			map[string]json.RawMessage{"a": rootsAnswer}, `inputResponses["a"]`, nil},
		{"root without uri", everyCap, `{"requests":{"b":` + roots + `}}`,
			map[string]json.RawMessage{"b": json.RawMessage(`{"roots":[{"name":"x"}]}`)}, "roots[0] has no uri", nil},
		{"no requests", everyCap, `{"requests":{}}`, nil, "1-16 requests", nil},
		{"too many", everyCap, `{"requests":{` + manyKeys(17, roots) + `}}`, nil, "1-16 requests, not 17", nil},
		{"unknown method", everyCap, `{"requests":{"a":{"method":"ping"}}}`, nil, `method "ping"`, nil},
		{"empty key", everyCap, `{"requests":{"":` + roots + `}}`, nil, "a key must be", nil},
		{"bad sampling", everyCap, `{"requests":{"s":{"method":"sampling/createMessage","params":{"messages":[]}}}}`, nil, "maxTokens", nil},
		{"not json", everyCap, `{"requests":`, nil, "input params", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := inputBridge(tt.caps, tt.answers)
			out, err := b.input(context.Background(), []byte(tt.params))
			got := string(out)
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("input = %s, want %s", got, tt.want)
			}
			pending, _, _ := b.mrtr.asked()
			var keys []string
			for _, p := range pending {
				keys = append(keys, p.key)
			}
			if strings.Join(keys, ",") != strings.Join(tt.pending, ",") {
				t.Errorf("pending keys = %v, want %v", keys, tt.pending)
			}
		})
	}
}

func manyKeys(n int, req string) string {
	var parts []string
	for i := range n {
		parts = append(parts, `"k`+string(rune('a'+i))+`":`+req)
	}
	return strings.Join(parts, ",")
}

// FuzzInputRequest: whatever a guest sends as an "input" request and a client as its
// answers, the host neither panics nor hands the guest an answer it did not check.
func FuzzInputRequest(f *testing.F) {
	f.Add([]byte(`{"requests":{"a":{"method":"elicitation/create","params":{"message":"m"}},"b":{"method":"roots/list"}}}`),
		[]byte(`{"a":{"action":"accept"},"b":{"roots":[{"uri":"file:///x"}]}}`))
	f.Add([]byte(`{"requests":{"s":{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{}}],"maxTokens":1}}}}`),
		[]byte(`{"s":{"role":"assistant","content":{"type":"text"}}}`))
	f.Add([]byte(`{"requests":{"x":{"method":"roots/list","params":null}}}`), []byte(`{"x":12}`))
	f.Fuzz(func(t *testing.T, params, answers []byte) {
		var a map[string]json.RawMessage
		json.Unmarshal(answers, &a)
		b := inputBridge(everyCap, a)
		out, err := b.input(context.Background(), params)
		if err != nil {
			if out != nil {
				t.Fatalf("an error with a reply: %s, %v", out, err)
			}
			return
		}
		var reply inputReply
		if err := json.Unmarshal(out, &reply); err != nil {
			t.Fatalf("reply %s: %v", out, err)
		}
		if len(reply.Responses) == 0 {
			t.Fatalf("a reply without responses: %s", out)
		}
	})
}
