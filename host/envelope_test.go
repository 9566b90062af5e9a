package host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
)

// decodeLineSDK is how decodeLine decoded a line before it scanned the envelope itself
// (depth scan, json.Valid, jsonrpc.DecodeMessage): the reference the differential tests
// hold it to.
func decodeLineSDK(line []byte) (jsonrpc.Message, []byte) {
	if depth := nesting(line); depth > MaxMessageDepth {
		return nil, errorLine(peekID(line), codeInvalidRequest,
			fmt.Sprintf("message refused: nested deeper than %d levels", MaxMessageDepth))
	}
	if !json.Valid(line) {
		return nil, errorLine(nil, codeParseError, "parse error: the line is not one JSON value")
	}
	if line = bytes.TrimSpace(line); line[0] != '{' {
		msg := "invalid request: not a JSON-RPC message object"
		if line[0] == '[' {
			msg = "invalid request: JSON-RPC batches are not supported"
		}
		return nil, errorLine(nil, codeInvalidRequest, msg)
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return nil, errorLine(peekID(line), codeInvalidRequest, "invalid request: "+err.Error())
	}
	return msg, nil
}

// sameDecoding reports how decodeLine and decodeLineSDK differ on line, or "".
func sameDecoding(line []byte) string {
	msg, reply := decodeLine(line)
	want, wantReply := decodeLineSDK(line)
	if !bytes.Equal(reply, wantReply) {
		return fmt.Sprintf("answer %q, want %q", reply, wantReply)
	}
	if (msg == nil) != (want == nil) {
		return fmt.Sprintf("message %v, want %v", msg, want)
	}
	switch w := want.(type) {
	case *jsonrpc.Request:
		g, ok := msg.(*jsonrpc.Request)
		if !ok || g.ID != w.ID || g.Method != w.Method || !bytes.Equal(g.Params, w.Params) ||
			(g.Params == nil) != (w.Params == nil) || g.Extra != nil {
			return fmt.Sprintf("request %#v, want %#v", msg, w)
		}
	case *jsonrpc.Response:
		g, ok := msg.(*jsonrpc.Response)
		if !ok || g.ID != w.ID || !bytes.Equal(g.Result, w.Result) ||
			(g.Result == nil) != (w.Result == nil) || !reflect.DeepEqual(g.Error, w.Error) || g.Extra != nil {
			return fmt.Sprintf("response %#v, want %#v", msg, w)
		}
	}
	return ""
}

// envelopeCorpus is lines in the usual shape and lines at every edge of it.
var envelopeCorpus = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":"abc","method":"tasks/get","params":{"taskId":"x"}}`,
	` {"jsonrpc" : "2.0" , "id" : -12 , "method" : "tools/call" , "params" : { "a" : [1, 2.5e3, true, false, null] } } `,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized","params":null}`,
	`{"jsonrpc":"2.0","id":1,"result":{}}`,
	`{"jsonrpc":"2.0","id":1,"result":null}`,
	`{"jsonrpc":"2.0","id":1}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`,
	`{"jsonrpc":"2.0","id":1,"error":null}`,
	`{"jsonrpc":"2.0","id":null,"method":"x"}`,
	`{"jsonrpc":"2.0","id":null}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"x"}`,
	`{"jsonrpc":"2.0","id":1e3,"method":"x"}`,
	`{"jsonrpc":"2.0","id":-0,"method":"x"}`,
	`{"jsonrpc":"2.0","id":123456789012345,"method":"x"}`,
	`{"jsonrpc":"2.0","id":1234567890123456789,"method":"x"}`,
	`{"jsonrpc":"2.0","id":9e99,"method":"x"}`,
	`{"jsonrpc":"2.0","id":true,"method":"x"}`,
	`{"jsonrpc":"2.0","id":[],"method":"x"}`,
	`{"jsonrpc":"2.0","id":"a\"b","method":"x"}`,
	`{"jsonrpc":"2.0","id":"\u00e9","method":"x"}`,
	`{"jsonrpc":"2.0","id":"é","method":"x"}`,
	"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"x\"}",
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}",
	`{"jsonrpc":"2.0","id":1,"method":""}`,
	`{"jsonrpc":"2.0","id":1,"method":null}`,
	`{"jsonrpc":"2.0","id":1,"method":5}`,
	`{"jsonrpc":"2.0","id":1,"method":"a\nb"}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","method":"y"}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}`,
	`{"jsonrpc":1,"jsonrpc":"2.0","id":1,"method":"x"}`,
	`{"jsonrpc":"1.0","id":1,"method":"x"}`,
	`{"jsonrpc":"2\u002e0","id":1,"method":"x"}`,
	`{"jsonrpc":null,"id":1,"method":"x"}`,
	`{"jsonrpc":2.0,"id":1,"method":"x"}`,
	`{"id":1,"method":"x"}`,
	`{"\u0069d":1,"jsonrpc":"2.0","method":"x"}`,
	`{"ID":1,"jsonrpc":"2.0","method":"x"}`,
	`{"Method":"x","jsonrpc":"2.0","id":1}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","extra":{"deep":[[[]]]}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":[1,2]}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":"s"}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","result":1}`,
	`{}`,
	`{"jsonrpc":"2.0"}`,
	`[]`, `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `"ping"`, `1`, `null`, `true`,
	`{"jsonrpc":"2.0","id":1,"method":"x"} {}`,
	`{"jsonrpc":"2.0","id":1,"method":"x"}x`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/li`,
	`{"jsonrpc":"2.0","id":01,"method":"x"}`,
	`{"jsonrpc":"2.0","id":1.,"method":"x"}`,
	`{"jsonrpc":"2.0","id":1e,"method":"x"}`,
	`{"jsonrpc":"2.0","id":-,"method":"x"}`,
	`{"jsonrpc":"2.0","id":1,"method":"x",}`,
	`{"jsonrpc":"2.0","id":1,"method":"\x"}`,
	`{"jsonrpc":"2.0","id":1,"method":"\u12"}`,
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\tb\"}",
	`{"jsonrpc":"2.0","id":1,"method":"x","params":tru}`,
	"\v{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}",
	"\u00a0{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}",
	`hello`, "\xff\xfe",
	`{"jsonrpc":"2.0","id":7,"params":` + strings.Repeat("[", MaxMessageDepth) + `x`,
	`{"jsonrpc":"2.0","id":7,"x":1,:` + strings.Repeat("[", MaxMessageDepth),
	`{"jsonrpc":"2.0","id":7,"method":"x","params":` + strings.Repeat("[", MaxMessageDepth-1) + strings.Repeat("]", MaxMessageDepth-1) + `}`,
	`{"jsonrpc":"2.0","id":7,"method":"x","params":` + strings.Repeat("[", MaxMessageDepth) + strings.Repeat("]", MaxMessageDepth) + `}`,
	strings.Repeat("[", MaxMessageDepth+1),
	strings.Repeat("{\"a\":", MaxMessageDepth+1),
}

// TestDecodeLineMatchesSDK: on every line of the corpus the envelope decoder gives the
// same message, or the same error answer byte for byte, as json.Valid followed by
// jsonrpc.DecodeMessage.
func TestDecodeLineMatchesSDK(t *testing.T) {
	for _, line := range envelopeCorpus {
		if d := sameDecoding([]byte(line)); d != "" {
			t.Errorf("decodeLine(%.80q): %s", line, d)
		}
	}
}

// FuzzDecodeLineDifferential holds decodeLine to the SDK's decoding on any line.
func FuzzDecodeLineDifferential(f *testing.F) {
	for _, s := range envelopeCorpus {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if len(bytes.TrimSpace(line)) == 0 {
			return // skipped before decoding
		}
		if d := sameDecoding(line); d != "" {
			t.Fatalf("decodeLine(%q): %s", line, d)
		}
	})
}

// FuzzPlainCall: whatever a client POSTs, choosing the answer's framing neither panics
// nor hangs.
func FuzzPlainCall(f *testing.F) {
	catalog, err := plugins.NewCatalog(nil)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range envelopeCorpus {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{},"_meta":{"io.modelcontextprotocol/clientInfo":{}}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","name":"y","_meta":null,"t\u0061sk":{}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if plainCall(catalog, body) {
			t.Fatalf("plainCall(%q) = true with no tools", body)
		}
	})
}
