package host

import (
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A guest's tool result is decoded here when it has the common shape: a content
// array of text blocks ({"type": "text", "text": "..."} and nothing else) and
// optionally isError. mcp.CallToolResult's own UnmarshalJSON runs go-sdk's internal
// decoder, which takes a fresh 32 KiB buffer per decode (see
// docs/upstream/go-sdk-json-decoder.md): a third of what a sync call allocated.
// Any other shape (structuredContent, _meta, other content types, annotations, a
// repeated member, \u escapes, bytes that are not UTF-8) is decoded by the SDK, so
// the result is always what the SDK's decoder gives; FuzzFastToolResult holds the
// two to the same value.

// fastToolResult decodes out if it has the common shape; ok false means the SDK's
// decoder must.
func fastToolResult(out []byte) (res *mcp.CallToolResult, ok bool) {
	res = &mcp.CallToolResult{}
	ok = true
	var seenContent, seenIsError bool
	sc := scanner{b: out}
	sc.ws()
	if sc.i >= len(out) || out[sc.i] != '{' {
		return nil, false
	}
	r := sc.object(0, func(key []byte, escaped bool, raw []byte) {
		if !ok || escaped {
			ok = false
			return
		}
		switch string(key) {
		case "content":
			if seenContent {
				ok = false
				return
			}
			seenContent = true
			res.Content, ok = textBlocks(raw)
		case "isError":
			if seenIsError {
				ok = false
				return
			}
			seenIsError = true
			switch string(raw) {
			case "true":
				res.IsError = true
			case "false":
			default:
				ok = false
			}
		default:
			ok = false
		}
	})
	sc.ws()
	if r != scanOK || sc.i != len(out) || !ok {
		return nil, false
	}
	if res.Content == nil {
		res.Content = []mcp.Content{} // as the SDK leaves a result without content
	}
	return res, true
}

// textBlocks decodes a content array of plain text blocks.
func textBlocks(raw []byte) ([]mcp.Content, bool) {
	s := scanner{b: raw}
	if len(raw) == 0 || raw[0] != '[' {
		return nil, false
	}
	s.i++
	s.ws()
	blocks := []mcp.Content{}
	if s.i < len(s.b) && s.b[s.i] == ']' {
		return blocks, true
	}
	for {
		start := s.i
		if s.value(1) != scanOK {
			return nil, false
		}
		b, ok := textBlock(s.b[start:s.i])
		if !ok {
			return nil, false
		}
		blocks = append(blocks, b)
		if done, r := s.next(']'); done {
			return blocks, r == scanOK
		}
	}
}

// textBlock decodes {"type": "text", "text": "..."}, members in either order.
func textBlock(raw []byte) (*mcp.TextContent, bool) {
	var typ, text string
	var seenType, seenText bool
	ok := true
	valid := members(raw, func(key []byte, escaped bool, v []byte) {
		if !ok || escaped {
			ok = false
			return
		}
		switch string(key) {
		case "type":
			ok = !seenType
			seenType = true
			var good bool
			typ, good = jsonText(v)
			ok = ok && good
		case "text":
			ok = ok && !seenText
			seenText = true
			var good bool
			text, good = jsonText(v)
			ok = ok && good
		default:
			ok = false
		}
	})
	if !valid || !ok || !seenType || typ != "text" {
		return nil, false
	}
	return &mcp.TextContent{Text: text}, true
}

// jsonText decodes a JSON string that is valid UTF-8 and has no \u escapes (which
// decoders may read differently when they name lone surrogates); the other escapes
// mean one byte each.
func jsonText(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	in := raw[1 : len(raw)-1]
	if !utf8.Valid(in) {
		return "", false
	}
	esc := 0
	for _, c := range in {
		if c == '\\' {
			esc++
		}
	}
	if esc == 0 {
		return string(in), true
	}
	out := make([]byte, 0, len(in)-esc)
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i >= len(in) {
			return "", false
		}
		switch in[i] {
		case '"', '\\', '/':
			out = append(out, in[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		default: // \u, or not an escape
			return "", false
		}
	}
	return string(out), true
}
