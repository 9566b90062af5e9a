package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/canonjson"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// ArgumentError says why a call's arguments were refused before the guest ran.
type ArgumentError struct {
	Tool   string
	Reason string
}

func (e *ArgumentError) Error() string {
	return fmt.Sprintf("invalid arguments for tool %q: %s", e.Tool, e.Reason)
}

// CheckArguments validates args (nil means {}) against the tool's limits and input
// schema, with bounded work (Schema.Check), unless ctx has ended.
func (t *Tool) CheckArguments(ctx context.Context, args json.RawMessage) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("check arguments for tool %q: %w", t.Name, err)
	}
	if max := t.Plugin.Module.Limits().MaxInputBytes; len(args) > max {
		return &ArgumentError{t.Name, fmt.Sprintf("%d bytes exceeds the plugin's limit of %d", len(args), max)}
	}
	if err := checkArguments(t.input, orEmptyObject(args)); err != nil {
		return &ArgumentError{t.Name, err.Error()}
	}
	return nil
}

// checkArguments checks arguments against the input schema s: in one pass over the
// JSON where s is on the fast path (fastcheck.go), with one decode for jsonschema-go
// where it is not, and with the full check (fullCheckArguments) wherever those do not
// accept, so that its error is the one given.
func checkArguments(s *Schema, args json.RawMessage) error {
	if !utf8.Valid(args) {
		return errors.New("not valid UTF-8")
	}
	switch s.scan(args) {
	case scanAccepted:
		return nil
	case scanWellFormed:
		var v any
		if err := json.Unmarshal(args, &v); err == nil {
			return s.Check(v)
		}
	}
	return fullCheckArguments(s, args)
}

// fullCheckArguments is the check of arguments step by step, each step with its own
// error: decode, canonical form, an object, the schema.
func fullCheckArguments(s *Schema, args json.RawMessage) error {
	if !utf8.Valid(args) {
		return errors.New("not valid UTF-8")
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return err
	}
	// The guest gets args as they are; refuse what its decoder may read otherwise
	// than the one that validated them (a key twice: the last wins here, the first
	// in many decoders).
	if _, err := canonjson.Canonical(args); err != nil {
		return err
	}
	if _, ok := v.(map[string]any); !ok {
		return errors.New("arguments must be a JSON object")
	}
	return s.Check(v)
}

// Call runs the tool in a fresh instance with arguments already checked by
// CheckArguments and returns the guest's CallToolResult document, checked against the
// ABI and the tool's output schema. A guest failure is a *sandbox.GuestError.
func (t *Tool) Call(ctx context.Context, args json.RawMessage, h sandbox.Host) (json.RawMessage, error) {
	input, err := callInput(t.GuestName, orEmptyObject(args))
	if err != nil {
		return nil, fmt.Errorf("encode call of %q: %w", t.Name, err)
	}
	out, err := t.Plugin.Module.Call(ctx, input, h)
	if err != nil {
		return nil, err
	}
	if perr, err := protocolError(out); err != nil {
		return nil, &sandbox.GuestError{Kind: sandbox.KindOutput,
			Message: fmt.Sprintf("tool %q returned a malformed error: %v", t.Name, err)}
	} else if perr != nil {
		return nil, perr
	}
	if err := t.checkOutput(ctx, out); err != nil {
		return nil, &sandbox.GuestError{Kind: sandbox.KindOutput,
			Message: fmt.Sprintf("tool %q returned a malformed result: %v", t.Name, err)}
	}
	return out, nil
}

// callInput is the guest's input document for a call of tool with args: what
// json.Marshal makes of {"tool": tool, "arguments": args}, byte for byte. Marshal
// checks and compacts args again (and escapes <, >, & and U+2028/U+2029), at about
// 25 ns a byte; arguments that one pass (scan) finds well formed and already in that
// form are copied instead.
func callInput(tool string, args json.RawMessage) ([]byte, error) {
	if !accepts(nil, args) || !marshalForm(args) {
		return json.Marshal(struct {
			Tool      string          `json:"tool"`
			Arguments json.RawMessage `json:"arguments"`
		}{tool, args})
	}
	name, err := json.Marshal(tool)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(`{"tool":,"arguments":}`)+len(name)+len(args))
	out = append(append(append(out, `{"tool":`...), name...), `,"arguments":`...)
	return append(append(out, args...), '}'), nil
}

// marshalForm reports whether the well-formed JSON doc is as json.Marshal writes a
// json.RawMessage: no space outside strings, and no <, >, & or U+2028/U+2029, which
// it escapes.
func marshalForm(doc []byte) bool {
	inString := false
	for i := 0; i < len(doc); i++ {
		switch c := doc[i]; {
		case c == '<' || c == '>' || c == '&':
			return false
		case c == 0xE2 && i+2 < len(doc) && doc[i+1] == 0x80 && doc[i+2]&^1 == 0xA8:
			return false
		case inString && c == '\\':
			i++ // the escaped byte is ASCII: skip it
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return true
}

// mayHoldKey reports whether doc may hold an object key that encoding/json matches to
// a struct field named key (lower-case ASCII letters without k and s, which fold from
// U+212A and U+017F): doc has an escape, or key's letters in any case. A result
// document usually has neither, and its decode for an error can be skipped.
func mayHoldKey(doc []byte, key string) bool {
	if bytes.IndexByte(doc, '\\') >= 0 {
		return true
	}
	for i := 0; i+len(key) <= len(doc); i++ {
		if doc[i]|0x20 == key[0] && bytes.EqualFold(doc[i:i+len(key)], []byte(key)) {
			return true
		}
	}
	return false
}

// ProtocolError is a JSON-RPC error a guest chose to answer its call with instead of a
// result (docs/ABI.md): the request failed, as opposed to a tool result with isError.
type ProtocolError struct {
	Code    int64
	Message string
	Data    json.RawMessage
}

func (e *ProtocolError) Error() string { return fmt.Sprintf("%s (code %d)", e.Message, e.Code) }

// protocolError reads an output document of the form {"error": {"code", "message",
// "data"?}}. A guest may use only the server-error codes (-32000 to -32099) and
// -32603 (internal error): the others say something about the request that only the
// host can know.
func protocolError(out []byte) (*ProtocolError, error) {
	if !mayHoldKey(out, "error") {
		return nil, nil // what the decode below finds in it: no error
	}
	var doc struct {
		Error *struct {
			Code    *int64          `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(out, &doc); err != nil || doc.Error == nil {
		return nil, nil // checkOutput reports what is wrong with it
	}
	e := doc.Error
	switch {
	case doc.Content != nil:
		return nil, fmt.Errorf("a result has either content or error, not both")
	case e.Code == nil:
		return nil, fmt.Errorf("error.code is required")
	case *e.Code != -32603 && (*e.Code < -32099 || *e.Code > -32000):
		return nil, fmt.Errorf("error.code %d is not -32603 or in -32099..-32000", *e.Code)
	case e.Message == "":
		return nil, fmt.Errorf("error.message is required")
	}
	return &ProtocolError{Code: *e.Code, Message: e.Message, Data: e.Data}, nil
}

func (t *Tool) checkOutput(ctx context.Context, out []byte) error {
	if !utf8.Valid(out) {
		return fmt.Errorf("not valid UTF-8")
	}
	var res struct {
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent"`
		IsError           bool              `json:"isError"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return fmt.Errorf("not a JSON object with a content array: %v", err)
	}
	if res.Content == nil {
		return fmt.Errorf("content is required")
	}
	for i, c := range res.Content {
		if err := checkContent(c); err != nil {
			return fmt.Errorf("content[%d]: %v", i, err)
		}
	}
	if t.output == nil || res.IsError {
		return nil
	}
	if res.StructuredContent == nil {
		return fmt.Errorf("the tool declares an outputSchema but returned no structuredContent")
	}
	return checkStructured(ctx, t.output, res.StructuredContent)
}

// checkStructured checks structuredContent (valid UTF-8) against the output schema s:
// in one pass over its JSON, without a decode, where s is on the fast path and the
// pass accepts it; else as fullCheckStructured does, with its error.
func checkStructured(ctx context.Context, s *Schema, sc json.RawMessage) error {
	if s.scan(sc) == scanAccepted {
		return ctx.Err()
	}
	return fullCheckStructured(ctx, s, sc)
}

func fullCheckStructured(ctx context.Context, s *Schema, sc json.RawMessage) error {
	var v any
	if err := json.Unmarshal(sc, &v); err != nil {
		return fmt.Errorf("structuredContent: %v", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.Check(v); err != nil {
		return fmt.Errorf("structuredContent does not match the outputSchema: %v", err)
	}
	return nil
}

// orEmptyObject maps absent or null arguments to {}, as MCP clients mean them.
func orEmptyObject(args json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(args); len(t) == 0 || string(t) == "null" {
		return json.RawMessage("{}")
	}
	return args
}
