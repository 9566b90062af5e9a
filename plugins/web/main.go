// Command web is a bundled mcp-wasmhost plugin that fetches web pages through the
// host's "http" request (sdk-guest/nethttp) and returns them as plain text or as
// markdown-ish text, within a byte limit. It reaches only the origins config.toml
// grants it in [[plugins.net]].
//
// Build (from the repository root): make plugins
package main

import (
	"fmt"
	"mime"
	"net/url"
	"strings"
	"unicode/utf8"

	guest "github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest"
	"github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest/nethttp"
)

// Limits of max_bytes: the text returned, not the page fetched (the host caps the
// response body with [plugins.net_limits] max_response_bytes).
const (
	defaultMaxBytes = 64 << 10
	maxMaxBytes     = 512 << 10
)

type fetchArgs struct {
	URL      string `json:"url" jsonschema:"the page to fetch: http or https"`
	MaxBytes int    `json:"max_bytes,omitempty" jsonschema:"largest text returned in bytes, 1-524288; 0 or absent: 65536"`
	Format   string `json:"format,omitempty" jsonschema:"text (default) or markdown: headings, [links](url), list items"`
}

func main() {}

func init() {
	guest.Add(guest.Tool{
		Name:        "fetch",
		Title:       "Fetch a web page",
		Description: "Fetches a web page and returns its readable text (format text) or markdown (headings, links as [text](url), list items), without scripts and styles, cut at max_bytes.",
		Annotations: &guest.Annotations{ReadOnlyHint: true, OpenWorldHint: ptr(true)},
		TaskSupport: guest.TaskOptional,
	}, fetch)
}

func ptr[T any](v T) *T { return &v }

func fetch(c *guest.Call, in fetchArgs) (*guest.Result, error) {
	limit := in.MaxBytes
	switch {
	case limit == 0:
		limit = defaultMaxBytes
	case limit < 0 || limit > maxMaxBytes:
		return guest.Errorf("max_bytes %d out of range 1-%d", limit, maxMaxBytes), nil
	}
	var markdown bool
	switch in.Format {
	case "", "text":
	case "markdown":
		markdown = true
	default:
		return guest.Errorf("format %q: want text or markdown", in.Format), nil
	}
	u, err := url.Parse(in.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return guest.Errorf("url %q: want an http or https URL", in.URL), nil
	}
	res, err := nethttp.Fetch(nethttp.FetchRequest{URL: u.String(),
		Headers: map[string]string{"Accept": "text/html, text/plain;q=0.9, */*;q=0.1"}})
	if err != nil {
		return guest.Errorf("fetch %s: %v", u.Redacted(), err), nil
	}
	if res.Status < 200 || res.Status > 299 {
		return guest.Errorf("fetch %s: HTTP status %d", u.Redacted(), res.Status), nil
	}
	var ctype string
	if v := res.Headers["Content-Type"]; len(v) > 0 {
		ctype, _, _ = mime.ParseMediaType(v[0])
	}
	var text string
	switch {
	case ctype == "" || ctype == "text/html" || ctype == "application/xhtml+xml":
		text = Convert(string(res.Body), u, markdown)
	case strings.HasPrefix(ctype, "text/"):
		text = strings.ToValidUTF8(string(res.Body), "\uFFFD")
	default:
		return guest.Errorf("fetch %s: content type %s is not text", u.Redacted(), ctype), nil
	}
	text, cut := truncate(text, limit)
	if cut {
		c.Log(guest.LevelInfo, "page text cut at %d bytes", limit)
		text += fmt.Sprintf("\n\n[truncated at %d bytes]", limit)
	}
	return guest.Text(text), nil
}

// truncate cuts s to at most n bytes at a rune boundary.
func truncate(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}
