package egress

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Resolver looks up a name's addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Options configure a [Client]. Nil means every default.
type Options struct {
	// Logger gets the audit line of every request. Nil means slog.Default().
	Logger *slog.Logger
	// Resolver looks up names. Nil means net.DefaultResolver.
	Resolver Resolver
	// Observe, if set, hears of every request as it ends (metrics): the configured
	// origin of the rule that allowed it ("" when none did; never the URL) and the
	// decision, DecisionAllowed, DecisionRefused or DecisionFailed.
	Observe func(plugin, origin, decision string)
	// Propagate, if set, adds headers to every request sent (and to every hop
	// of a redirect) from the call's ctx: the trace context (traceparent), so
	// that a trace runs on into the upstream. It runs after the policy's checks
	// and the operator's headers, and only sets headers the guest may not set.
	Propagate func(ctx context.Context, h http.Header)
}

// Decisions on a request, as Options.Observe hears them.
const (
	DecisionAllowed = "allowed" // sent; whatever the upstream answered
	DecisionRefused = "refused" // refused by the policy or a limit; nothing was sent
	DecisionFailed  = "failed"  // allowed, but failed on the way (connect, timeout, a response too large)
)

// Client makes one plugin's requests under its policy. It is safe for concurrent use.
type Client struct {
	plugin string
	rules  []*rule
	limits Limits
	log    *slog.Logger
	res    Resolver
	slots  chan struct{}
	trans  []*http.Transport // one per rule: its roots and its allowed addresses

	observe   func(plugin, origin, decision string)
	propagate func(ctx context.Context, h http.Header)
}

// New checks p and returns the client of the plugin named plugin. Every problem of
// the policy is reported together.
func New(plugin string, p Policy, opts *Options) (*Client, error) {
	if opts == nil {
		opts = &Options{}
	}
	c := &Client{plugin: plugin, limits: p.Limits.withDefaults(), log: opts.Logger, res: opts.Resolver,
		observe: opts.Observe, propagate: opts.Propagate}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.res == nil {
		c.res = net.DefaultResolver
	}
	var errs []error
	for i, r := range p.Rules {
		cr, err := newRule(i, r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.rules = append(c.rules, cr)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("plugin %s: net policy: %w", plugin, err)
	}
	c.slots = make(chan struct{}, c.limits.MaxConcurrent)
	for _, r := range c.rules {
		c.trans = append(c.trans, c.transport(r))
	}
	return c, nil
}

// Close drops the idle connections of every rule.
func (c *Client) Close() {
	for _, t := range c.trans {
		t.CloseIdleConnections()
	}
}

// Call says which call a request belongs to, for the audit line and the per-call limit.
type Call struct {
	Tool string // or what else the guest serves
	Task string // the task's ID, "" outside a task
	Seq  int    // 1 for the call's first request, 2 for the next...
	// OnCancel marks the request the guest registered with "http_on_cancel", made by
	// the host after the call was cancelled.
	OnCancel bool
	// Seen, if set, is told each origin the request named (a redirect's too),
	// whether the policy allowed it or not: for the call's audit line.
	Seen func(origin string)
}

// Request is the guest's "http" params (docs/ABI.md).
type Request struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"` // base64 (standard, padded)
}

// Reply is the "http" reply.
type Reply struct {
	Status  int                 `json:"status"`
	Headers map[string][]string `json:"headers"`
	Body    string              `json:"body"` // base64 (standard, padded)
}

// DecodeRequest reads a guest's "http" params strictly: unknown fields, a missing
// method or URL, a body that is not base64 are errors.
func DecodeRequest(params []byte) (Request, []byte, error) {
	var r Request
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Request{}, nil, fmt.Errorf("http params: %w", err)
	}
	if dec.More() {
		return Request{}, nil, errors.New("http params: trailing data")
	}
	if r.Method == "" {
		r.Method = http.MethodGet
	}
	if !validMethod(r.Method) {
		return Request{}, nil, fmt.Errorf("http params: method %q is not an upper-case HTTP method", r.Method)
	}
	if r.URL == "" {
		return Request{}, nil, errors.New("http params: url is required")
	}
	for k, v := range r.Headers {
		if !validToken(k) {
			return Request{}, nil, fmt.Errorf("http params: header name %q is not a token", k)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return Request{}, nil, fmt.Errorf("http params: header %q holds a line break or NUL", k)
		}
	}
	body, err := base64.StdEncoding.DecodeString(r.Body)
	if err != nil {
		return Request{}, nil, errors.New("http params: body is not standard base64")
	}
	return r, body, nil
}

// Do serves one "http" request of a guest and returns the reply's JSON. A refusal
// or failure is an error whose text is for the guest and the person reading the
// log; it never holds an injected header's value.
func (c *Client) Do(ctx context.Context, call Call, params []byte) ([]byte, error) {
	start := time.Now()
	a := audit{method: "?", origin: "?"}
	reply, err := c.do(ctx, call, params, &a)
	attrs := []slog.Attr{
		slog.String("plugin", c.plugin), slog.String("tool", call.Tool),
		slog.String("method", a.method), slog.String("origin", a.origin),
		slog.Int("status", a.status), slog.Int("sent", a.sent), slog.Int("received", a.received),
		slog.Duration("took", time.Since(start).Round(time.Microsecond)),
	}
	if call.Task != "" {
		attrs = append(attrs, slog.String("task", call.Task))
	}
	if call.OnCancel {
		attrs = append(attrs, slog.Bool("on_cancel", true))
	}
	if err != nil {
		err = fmt.Errorf("plugin %s: %w", c.plugin, err)
		attrs = append(attrs, slog.String("denied_by", a.deniedBy), slog.String("err", err.Error()))
	}
	c.log.LogAttrs(ctx, slog.LevelInfo, "egress", attrs...)
	if call.Seen != nil && a.origin != "?" {
		for _, o := range strings.Split(a.origin, " -> ") {
			call.Seen(o)
		}
	}
	if c.observe != nil {
		decision := DecisionAllowed
		switch {
		case err != nil && !a.wentOut:
			decision = DecisionRefused
		case err != nil:
			decision = DecisionFailed
		}
		c.observe(c.plugin, a.rule, decision)
	}
	return reply, err
}

type audit struct {
	method, origin string
	status         int
	sent, received int
	deniedBy       string
	rule           string // the configured origin that allowed the request, for metrics
	wentOut        bool   // a request was sent (a later refusal is then a failure)
}

// Check refuses params that Do would refuse before sending anything: malformed
// params, a body over the limit, a URL, method or header the policy refuses. It
// serves "http_on_cancel", whose request is made later, when the call is cancelled.
func (c *Client) Check(params []byte) error {
	_, err := c.prepare(params, &audit{})
	if err != nil {
		err = fmt.Errorf("plugin %s: %w", c.plugin, err)
	}
	return err
}

// prepared is a request that passed the policy, ready to send.
type prepared struct {
	method string
	body   []byte
	t      target
	r      *rule
	hdr    http.Header
}

func (c *Client) prepare(params []byte, a *audit) (prepared, error) {
	req, body, err := DecodeRequest(params)
	if err != nil {
		a.deniedBy = "params"
		return prepared{}, err
	}
	a.method = req.Method
	if len(body) > c.limits.MaxRequestBytes {
		a.deniedBy = "max_request_bytes"
		return prepared{}, fmt.Errorf("the request body of %d bytes exceeds %d", len(body), c.limits.MaxRequestBytes)
	}
	t, r, err := c.check(req.Method, req.URL)
	if t.scheme != "" {
		a.origin = t.origin()
	}
	if err != nil {
		var ref *refusal
		if errors.As(err, &ref) {
			a.deniedBy = ref.rule
		}
		if t.scheme != "" {
			a.rule = c.originOf(t) // refused by the rule of this origin (method, path, address)
		}
		return prepared{}, err
	}
	a.rule = r.originOf(t)
	hdr := http.Header{}
	for k, v := range req.Headers {
		ck := http.CanonicalHeaderKey(k)
		if forbiddenHeaders[ck] {
			a.deniedBy = "header"
			return prepared{}, fmt.Errorf("%s refused: the guest may not set header %s", t.origin(), ck)
		}
		if _, ok := r.headers[ck]; ok {
			a.deniedBy = r.name()
			return prepared{}, fmt.Errorf("%s refused: header %s is set by the operator (%s), not the guest", t.origin(), ck, r.name())
		}
		hdr.Set(ck, v)
	}
	return prepared{method: req.Method, body: body, t: t, r: r, hdr: hdr}, nil
}

func (c *Client) do(ctx context.Context, call Call, params []byte, a *audit) ([]byte, error) {
	if call.Seq > c.limits.MaxPerCall {
		a.deniedBy = "max_per_call"
		return nil, fmt.Errorf("this call made more than %d requests", c.limits.MaxPerCall)
	}
	p, err := c.prepare(params, a)
	if err != nil {
		return nil, err
	}
	body, t, r, hdr := p.body, p.t, p.r, p.hdr

	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.slots }()
	ctx, cancel := context.WithTimeout(ctx, c.limits.Timeout)
	defer cancel()

	method, first := p.method, t
	for hop := 0; ; hop++ {
		hreq, err := http.NewRequestWithContext(ctx, method, t.url.String(), bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.origin(), err)
		}
		if len(body) == 0 {
			hreq.Body, hreq.ContentLength = http.NoBody, 0
		}
		sameOrigin := t.origin() == first.origin()
		for k, v := range hdr {
			if !sameOrigin && (k == "Authorization" || k == "Cookie") {
				continue // credentials stay with the origin they were meant for
			}
			hreq.Header[k] = v
		}
		for k, v := range r.headers {
			hreq.Header[k] = v
		}
		if hreq.Header.Get("User-Agent") == "" {
			hreq.Header.Set("User-Agent", "mcp-wasmhost")
		}
		if c.propagate != nil {
			c.propagate(ctx, hreq.Header)
		}
		a.sent += len(body)
		a.wentOut = true
		resp, err := c.trans[r.index].RoundTrip(hreq)
		if err != nil {
			return nil, c.transportError(ctx, t, err, a)
		}
		loc := resp.Header.Get("Location")
		if redirect(resp.StatusCode) && loc != "" {
			resp.Body.Close()
			if hop >= DefaultMaxRedirects {
				a.deniedBy = "redirects"
				return nil, fmt.Errorf("%s: more than %d redirects", first.origin(), DefaultMaxRedirects)
			}
			next, err := t.url.Parse(loc)
			if err != nil {
				return nil, fmt.Errorf("%s: bad redirect Location", t.origin())
			}
			if resp.StatusCode == http.StatusSeeOther || (resp.StatusCode == 301 || resp.StatusCode == 302) && method == http.MethodPost {
				method, body = http.MethodGet, nil
			}
			nt, nr, err := c.check(method, next.String())
			if err != nil {
				var ref *refusal
				if errors.As(err, &ref) {
					a.deniedBy = ref.rule
				}
				if nt.scheme != "" {
					a.origin = first.origin() + " -> " + nt.origin()
				}
				return nil, fmt.Errorf("redirect from %s: %w", t.origin(), err)
			}
			t, r = nt, nr
			a.origin = first.origin() + " -> " + t.origin()
			continue
		}
		defer resp.Body.Close()
		a.status = resp.StatusCode
		data, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.limits.MaxResponseBytes)+1))
		a.received = len(data)
		if err != nil {
			return nil, c.transportError(ctx, t, err, a)
		}
		if len(data) > c.limits.MaxResponseBytes {
			a.deniedBy = "max_response_bytes"
			return nil, fmt.Errorf("%s: the response body exceeds %d bytes", t.origin(), c.limits.MaxResponseBytes)
		}
		out := Reply{Status: resp.StatusCode, Headers: map[string][]string(resp.Header), Body: base64.StdEncoding.EncodeToString(data)}
		if out.Headers == nil {
			out.Headers = map[string][]string{}
		}
		return json.Marshal(out)
	}
}

func redirect(code int) bool {
	switch code {
	case 301, 302, 303, 307, 308:
		return true
	}
	return false
}

// transportError says why a request did not complete, naming a refusal the dialer
// made and the time limit when it struck.
func (c *Client) transportError(ctx context.Context, t target, err error, a *audit) error {
	var ref *refusal
	switch {
	case errors.As(err, &ref):
		a.deniedBy = ref.rule
		return ref
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		a.deniedBy = "timeout"
		return fmt.Errorf("%s: no answer within the time limit", t.origin())
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", t.origin(), ctx.Err())
	}
	// A transport error may quote the URL; the origin is all a log needs.
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			err = inner
		}
	}
	return fmt.Errorf("%s: %v", t.origin(), err)
}

// originOf is the configured origin that names t's, "" if none does.
func (c *Client) originOf(t target) string {
	for _, r := range c.rules {
		if r.matchOrigin(t) {
			return r.originOf(t)
		}
	}
	return ""
}

// check finds the rule that allows method on raw, or says why none does.
func (c *Client) check(method, raw string) (target, *rule, error) {
	t, err := parseTarget(raw)
	if err != nil {
		return target{}, nil, err
	}
	var r *rule
	for _, cr := range c.rules {
		if cr.matchOrigin(t) {
			r = cr
			break
		}
	}
	if r == nil {
		return t, nil, &refusal{what: t.origin(), reason: "no [[plugins.net]] rule allows this origin", rule: "origins"}
	}
	if r.methods != nil && !r.methods[method] {
		return t, nil, &refusal{what: t.origin(), reason: fmt.Sprintf("method %s is not allowed by %s", method, r.name()), rule: r.name()}
	}
	if r.prefixes != nil {
		path, ok := cleanPath(t.url.EscapedPath())
		allowed := false
		for _, p := range r.prefixes {
			allowed = allowed || ok && strings.HasPrefix(path, p)
		}
		if !allowed {
			return t, nil, &refusal{what: t.origin(), reason: fmt.Sprintf("path is not under the prefixes of %s", r.name()), rule: r.name()}
		}
	}
	if t.ip.IsValid() {
		if err := r.checkAddr(t.origin(), t.ip); err != nil {
			return t, nil, err
		}
	}
	return t, r, nil
}

// cleanPath refuses paths that could climb out of a prefix on the server's side:
// dot segments and encoded slashes or dots.
func cleanPath(p string) (string, bool) {
	if p == "" {
		p = "/"
	}
	lower := strings.ToLower(p)
	if strings.Contains(lower, "%2f") || strings.Contains(lower, "%2e") || strings.Contains(lower, "%5c") || strings.Contains(p, "\\") {
		return "", false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return "", false
		}
	}
	return p, true
}

// checkAddr refuses ip unless it is public or the rule allows it; what names the
// request in the error.
func (r *rule) checkAddr(what string, ip netip.Addr) error {
	if r.allows(ip) {
		return nil
	}
	if p, reason, ok := Classify(ip); !ok {
		return &refusal{what: what, reason: fmt.Sprintf("%s (%s); allow it in [[plugins.net]] allow_addresses", reason, p), rule: "address"}
	}
	return nil
}

// transport is the rule's: it dials only addresses it checked, and verifies TLS
// against the rule's roots.
func (c *Client) transport(r *rule) *http.Transport {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		pn, _ := strconv.Atoi(port)
		var ips []netip.Addr
		if ip, err := netip.ParseAddr(host); err == nil {
			ips = []netip.Addr{ip}
		} else {
			ips, err = c.res.LookupNetIP(ctx, "ip", host)
			if err != nil {
				return nil, fmt.Errorf("look up %s: %w", host, err)
			}
		}
		var refused error
		var lastErr error
		for _, ip := range ips {
			ip = ip.Unmap() // a looked-up IPv4 address, in whichever form the resolver gave it
			if err := r.checkAddr(host+" ("+ip.String()+")", ip); err != nil {
				refused = err
				continue
			}
			conn, err := d.DialContext(ctx, network, netip.AddrPortFrom(ip, uint16(pn)).String())
			if err == nil {
				return conn, nil
			}
			lastErr = err
		}
		if lastErr != nil {
			return nil, lastErr
		}
		if refused != nil {
			return nil, refused
		}
		return nil, fmt.Errorf("look up %s: no address", host)
	}
	return &http.Transport{
		Proxy:                  nil, // never the environment's proxy
		DialContext:            dial,
		TLSClientConfig:        &tls.Config{RootCAs: r.roots, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
		IdleConnTimeout:        90 * time.Second,
		MaxIdleConnsPerHost:    4,
		ResponseHeaderTimeout:  0, // the request's own timeout bounds it
	}
}
