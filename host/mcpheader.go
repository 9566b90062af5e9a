package host

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
)

// x-mcp-header on the wire (SEP-2243, MCP 2026-07-28): a tools/call over HTTP carries
// each argument a tool annotated (plugins.ParamHeader) also as the header
// Mcp-Param-{Name}, and the server must refuse the call, HTTP 400 with -32020, when a
// header does not match the body, is missing, carries characters a header value may
// not, or is Base64 that does not decode. go-sdk v1.8.0 checks some of it
// (streamable_headers.go: missing, mismatched and bad Base64, comparing the first
// value as sent); paramHeaderMismatch checks all of it first, also what go-sdk lets
// through: a header sent twice (go-sdk reads only the first), bytes that are not
// visible ASCII (Go's HTTP server accepts bytes 0x80-0xFF in values), Base64 that
// decodes to something other than UTF-8, and leading or trailing blanks (OWS), which
// are trimmed before comparing as for every MCP header.

// paramHeaderPrefix starts the header that mirrors an annotated argument.
const paramHeaderPrefix = "Mcp-Param-"

// paramHeaderMismatch checks the Mcp-Param-* headers of a tools/call body against its
// arguments. It returns the request's id and what is wrong, or "" when the headers
// are right (or the body is not a tools/call of a tool with annotations).
func (s *Server) paramHeaderMismatch(h http.Header, body []byte) (json.RawMessage, string) {
	if !bytes.Contains(body, []byte("tools/call")) && !bytes.Contains(body, []byte(`\`)) {
		return nil, ""
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name      string                     `json:"name"`
			Arguments map[string]json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" {
		return nil, ""
	}
	t, ok := s.catalog.Lookup(msg.Params.Name)
	if !ok {
		return nil, ""
	}
	for _, ph := range t.ParamHeaders() {
		if problem := checkParamHeader(h, ph, msg.Params.Arguments[ph.Property]); problem != "" {
			return msg.ID, "header mismatch: " + problem
		}
	}
	return nil, ""
}

// checkParamHeader checks the header of one annotated argument (arg is nil when
// absent) and says what is wrong, or "".
func checkParamHeader(h http.Header, ph plugins.ParamHeader, arg json.RawMessage) string {
	name := paramHeaderPrefix + ph.Name
	values := h.Values(name)
	absent := arg == nil || bytes.Equal(bytes.TrimSpace(arg), []byte("null"))
	switch {
	case len(values) > 1:
		return fmt.Sprintf("%s header sent %d times; send it once", name, len(values))
	case absent && len(values) == 1:
		return fmt.Sprintf("%s header sent, but argument %q is absent", name, ph.Property)
	case absent:
		return ""
	case len(values) == 0:
		return fmt.Sprintf("missing %s header for argument %q", name, ph.Property)
	}
	raw := strings.Trim(values[0], " \t")
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; (c < 0x21 || c > 0x7e) && c != ' ' && c != '\t' {
			return fmt.Sprintf("%s header: byte %d (%#02x) is not visible ASCII; send such values Base64-encoded as =?base64?...?=", name, i, c)
		}
	}
	value, err := decodeParamHeader(raw)
	if err != nil {
		return fmt.Sprintf("%s header: %v", name, err)
	}
	if !paramEqual(ph.Type, value, arg) {
		return fmt.Sprintf("%s header value %q does not match argument %q", name, raw, ph.Property)
	}
	return ""
}

// decodeParamHeader decodes a header value that may be Base64 (=?base64?...?=).
func decodeParamHeader(v string) (string, error) {
	enc, ok := strings.CutPrefix(v, "=?base64?")
	if !ok {
		return v, nil
	}
	if enc, ok = strings.CutSuffix(enc, "?="); !ok {
		return v, nil
	}
	b, err := base64.StdEncoding.Strict().DecodeString(enc)
	if err != nil {
		return "", fmt.Errorf("invalid Base64 in =?base64?...?=: %v", err)
	}
	if !utf8.Valid(b) {
		return "", errors.New("the decoded Base64 is not UTF-8 text")
	}
	return string(b), nil
}

// paramEqual reports whether a decoded header value equals a JSON argument of the
// annotated type: the string itself, an integer in decimal, or true or false.
func paramEqual(typ, value string, arg json.RawMessage) bool {
	switch typ {
	case "string":
		var s string
		return json.Unmarshal(arg, &s) == nil && s == value
	case "integer":
		var n json.Number
		if json.Unmarshal(arg, &n) != nil {
			return false
		}
		a, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil {
			return false
		}
		b, err := strconv.ParseInt(value, 10, 64)
		return err == nil && a == b
	case "boolean":
		var b bool
		return json.Unmarshal(arg, &b) == nil && strconv.FormatBool(b) == value
	}
	return false
}
