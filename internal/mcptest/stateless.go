package mcptest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Stateless sends MCP 2026-07-28 requests over Streamable HTTP (SEP-2575): each
// request stands alone, with the protocol version, client info and capabilities in
// its _meta and the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers.
type Stateless struct {
	URL    string
	Caps   map[string]any // the client capabilities sent with every request; nil sends {}
	Client *http.Client   // nil means http.DefaultClient

	id atomic.Int64
}

// TasksExtension is the client capabilities of a client of the Tasks extension.
func TasksExtension() map[string]any {
	return map[string]any{
		"elicitation": map[string]any{},
		"extensions":  map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}},
	}
}

// Response is what the server answered to one request.
type Response struct {
	HTTPStatus int
	Header     http.Header // the HTTP response's
	Result     json.RawMessage
	Error      *jsonrpc.Error
	// Frames are the messages the server sent on the response stream before the
	// answer (notifications, and requests if it wrongly sent any).
	Frames []json.RawMessage
}

// Call sends method with params; header adds or replaces headers (a nil value
// deletes one).
func (s *Stateless) Call(method string, params map[string]any, header map[string]*string) (*Response, error) {
	if params == nil {
		params = map[string]any{}
	}
	caps := s.Caps
	if caps == nil {
		caps = map[string]any{}
	}
	meta, _ := params["_meta"].(map[string]any)
	m := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	for k, v := range meta {
		m[k] = v
	}
	p := map[string]any{}
	for k, v := range params {
		p[k] = v
	}
	p["_meta"] = m
	id := s.id.Add(1)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": p})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodPost, s.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	switch {
	case method == "tools/call", method == "prompts/get":
		req.Header.Set("Mcp-Name", fmt.Sprint(params["name"]))
	case method == "resources/read":
		req.Header.Set("Mcp-Name", fmt.Sprint(params["uri"]))
	case strings.HasPrefix(method, "tasks/") && params["taskId"] != nil:
		req.Header.Set("Mcp-Name", fmt.Sprint(params["taskId"]))
	}
	for k, v := range header {
		if v == nil {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, *v)
		}
	}
	client := s.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := &Response{HTTPStatus: resp.StatusCode, Header: resp.Header}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *jsonrpc.Error  `json:"error"`
	}
	found := false
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data:")
			if !ok {
				continue
			}
			msg.Result, msg.Error = nil, nil
			raw := []byte(strings.TrimSpace(data))
			if json.Unmarshal(raw, &msg) == nil && string(msg.ID) == fmt.Sprint(id) && (msg.Result != nil || msg.Error != nil) {
				found = true
				break
			}
			if len(raw) > 0 {
				out.Frames = append(out.Frames, raw)
			}
		}
	} else {
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		found = json.Unmarshal(buf.Bytes(), &msg) == nil && (msg.Result != nil || msg.Error != nil)
		if !found {
			return nil, fmt.Errorf("%s: HTTP %d: %s", method, resp.StatusCode, bytes.TrimSpace(buf.Bytes()))
		}
	}
	if !found {
		return nil, fmt.Errorf("%s: HTTP %d: no response", method, resp.StatusCode)
	}
	out.Result, out.Error = msg.Result, msg.Error
	return out, nil
}
