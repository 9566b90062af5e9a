package egress

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Limits bound one plugin's requests. Each zero field means its default.
type Limits struct {
	// MaxRequestBytes caps the body a guest sends. 0 means [DefaultMaxRequestBytes];
	// the ABI's 64 KiB params limit bounds it in any case.
	MaxRequestBytes int
	// MaxResponseBytes caps the body read from the server; a larger body fails the
	// request. 0 means [DefaultMaxResponseBytes]; at most [MaxResponseBytesLimit],
	// which keeps the reply within the ABI's 1 MiB.
	MaxResponseBytes int
	// Timeout bounds one request, redirects included, inside the call's own
	// deadline. 0 means [DefaultTimeout].
	Timeout time.Duration
	// MaxPerCall is how many requests one call may make. 0 means [DefaultMaxPerCall].
	MaxPerCall int
	// MaxConcurrent is how many of the plugin's requests run at once, across its
	// calls; more wait. 0 means [DefaultMaxConcurrent].
	MaxConcurrent int
}

// Defaults and bounds of [Limits].
const (
	DefaultMaxRequestBytes  = 32 << 10
	DefaultMaxResponseBytes = 512 << 10
	// MaxResponseBytesLimit keeps a reply (base64 grows a body by 4/3, plus headers)
	// within the ABI's 1 MiB reply.
	MaxResponseBytesLimit = 640 << 10
	DefaultTimeout        = 30 * time.Second
	DefaultMaxPerCall     = 64
	DefaultMaxConcurrent  = 8
	// DefaultMaxRedirects is how many redirects one request follows.
	DefaultMaxRedirects = 5
	// maxResponseHeaderBytes bounds the response headers read from a server.
	maxResponseHeaderBytes = 64 << 10
)

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxRequestBytes, DefaultMaxRequestBytes)
	def(&l.MaxResponseBytes, DefaultMaxResponseBytes)
	l.MaxResponseBytes = min(l.MaxResponseBytes, MaxResponseBytesLimit)
	def(&l.MaxPerCall, DefaultMaxPerCall)
	def(&l.MaxConcurrent, DefaultMaxConcurrent)
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	return l
}

// Policy is what one plugin may reach. The zero value reaches nothing.
type Policy struct {
	Rules  []Rule
	Limits Limits
}

// Rule is one [[plugins.net]] table: origins a plugin may reach, and how.
type Rule struct {
	// Origins are "scheme://host[:port]" with scheme http or https; host is a name,
	// "*.suffix" (any name below suffix, not suffix itself), an IPv4 address or a
	// bracketed IPv6 address. No port means the scheme's. At least one.
	Origins []string
	// Methods, upper case, limit the methods; nil allows any.
	Methods []string
	// PathPrefixes limit the paths (each starts with "/"); nil allows any.
	PathPrefixes []string
	// AllowAddresses are addresses or ranges ("127.0.0.1/32") these origins may
	// reach although [Classify] refuses them. Nil allows public addresses only.
	AllowAddresses []string
	// Headers are added to every request to these origins after it is checked, with
	// their values as given (secrets, expanded by the config loader). The guest
	// cannot set them, and they are dropped when a redirect leaves the origin.
	Headers map[string]string
	// CAFile, if set, is a PEM bundle that alone verifies these origins' TLS
	// certificates. "" means the system's roots.
	CAFile string
}

// origin is a parsed allowed origin.
type origin struct {
	scheme string
	host   string // lower case; for a wildcard, the suffix with its leading dot; "" for any host
	wild   bool
	port   int
}

// any reports whether the origin names every host ("https://*"): what the policy then
// guards is the address a name resolves to, which must be public.
func (o origin) any() bool { return o.wild && o.host == "" }

func (o origin) String() string {
	h := o.host
	if o.wild {
		h = "*" + h
	}
	return fmt.Sprintf("%s://%s:%d", o.scheme, h, o.port)
}

// rule is a checked Rule.
type rule struct {
	index    int
	origins  []origin
	methods  map[string]bool
	prefixes []string
	allow    []netip.Prefix
	headers  http.Header
	roots    *x509.CertPool // nil: the system's
}

// originOf is the configured origin of r that t matched, as the config wrote it
// (its port filled in): a label with as many values as the config has origins.
func (r *rule) originOf(t target) string {
	for _, o := range r.origins {
		if o.matches(t) {
			return o.String()
		}
	}
	return r.origins[0].String()
}

func (r *rule) name() string { return fmt.Sprintf("[[plugins.net]] #%d", r.index+1) }

func defaultPort(scheme string) int {
	if scheme == "https" {
		return 443
	}
	return 80
}

func parseOrigin(s string) (origin, error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || (scheme != "http" && scheme != "https") {
		return origin{}, fmt.Errorf("origin %q: want http:// or https:// and a host", s)
	}
	o := origin{scheme: scheme, port: defaultPort(scheme)}
	hostport := rest
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && !strings.HasSuffix(hostport, "]") {
		p, err := strconv.Atoi(hostport[i+1:])
		if err != nil || p < 1 || p > 65535 || strconv.Itoa(p) != hostport[i+1:] {
			return origin{}, fmt.Errorf("origin %q: bad port", s)
		}
		o.port, hostport = p, hostport[:i]
	}
	if hostport == "*" {
		o.wild = true // any host: wild with the empty suffix
		return o, nil
	}
	if h, ok := strings.CutPrefix(hostport, "*."); ok {
		if _, err := checkName(h); err != nil {
			return origin{}, fmt.Errorf("origin %q: %w", s, err)
		}
		o.host, o.wild = "."+h, true
		return o, nil
	}
	h, _, err := parseHost(hostport)
	if err != nil {
		return origin{}, fmt.Errorf("origin %q: %w", s, err)
	}
	o.host = h
	return o, nil
}

// forbiddenHeaders are the guest's to never set: they steer the connection or the
// framing, or claim another origin.
var forbiddenHeaders = map[string]bool{
	"Host": true, "Connection": true, "Content-Length": true, "Transfer-Encoding": true,
	"Te": true, "Trailer": true, "Upgrade": true, "Keep-Alive": true,
	"Proxy-Authorization": true, "Proxy-Connection": true, "Expect": true,
}

func newRule(i int, r Rule) (*rule, error) {
	out := &rule{index: i, headers: http.Header{}}
	var errs []error
	if len(r.Origins) == 0 {
		errs = append(errs, errors.New("no origins"))
	}
	for _, s := range r.Origins {
		o, err := parseOrigin(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out.origins = append(out.origins, o)
	}
	if r.Methods != nil {
		out.methods = map[string]bool{}
		for _, m := range r.Methods {
			if !validMethod(m) {
				errs = append(errs, fmt.Errorf("method %q is not an upper-case HTTP method", m))
			}
			out.methods[m] = true
		}
	}
	for _, p := range r.PathPrefixes {
		if !strings.HasPrefix(p, "/") {
			errs = append(errs, fmt.Errorf("path prefix %q does not start with /", p))
		}
		out.prefixes = append(out.prefixes, p)
	}
	for _, a := range r.AllowAddresses {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			ip, ierr := netip.ParseAddr(a)
			if ierr != nil || ip.Zone() != "" {
				errs = append(errs, fmt.Errorf("allow_addresses: %q is not an address or a CIDR range", a))
				continue
			}
			p = netip.PrefixFrom(ip, ip.BitLen())
		}
		out.allow = append(out.allow, p.Masked())
	}
	for k, v := range r.Headers {
		ck := http.CanonicalHeaderKey(k)
		if !validToken(k) || forbiddenHeaders[ck] {
			errs = append(errs, fmt.Errorf("header %q may not be injected", k))
			continue
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			// Never the value: it is a secret.
			errs = append(errs, fmt.Errorf("header %q: its value holds a line break or NUL", k))
			continue
		}
		out.headers.Set(ck, v)
	}
	for _, o := range out.origins {
		if o.any() && len(out.headers) > 0 {
			// Secrets for every host would go to any host the guest names.
			errs = append(errs, fmt.Errorf("origin %s names every host: it may not carry injected headers", o))
		}
	}
	if r.CAFile != "" {
		pem, err := os.ReadFile(r.CAFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("ca_file: %w", err))
		} else {
			out.roots = x509.NewCertPool()
			if !out.roots.AppendCertsFromPEM(pem) {
				errs = append(errs, fmt.Errorf("ca_file %s: no PEM certificate in it", r.CAFile))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%s: %w", out.name(), err)
	}
	return out, nil
}

// matches reports whether the rule allows target.
func (r *rule) matchOrigin(t target) bool {
	for _, o := range r.origins {
		if o.matches(t) {
			return true
		}
	}
	return false
}

// matches reports whether o names t's origin.
func (o origin) matches(t target) bool {
	if o.scheme != t.scheme || o.port != t.port {
		return false
	}
	return o.wild && strings.HasSuffix(t.host, o.host) || !o.wild && o.host == t.host
}

func (r *rule) allows(a netip.Addr) bool {
	for _, p := range r.allow {
		if p.Contains(a) || p.Contains(a.Unmap()) {
			return true
		}
	}
	return false
}

// target is a checked request URL.
type target struct {
	scheme string
	host   string     // lower case name, or the address's canonical form
	ip     netip.Addr // set when host is an address
	port   int
	url    *url.URL
}

// origin is what the audit line and errors show: no path, no query.
func (t target) origin() string {
	h := t.host
	if t.ip.Is6() {
		h = "[" + h + "]"
	}
	if t.port == defaultPort(t.scheme) {
		return t.scheme + "://" + h
	}
	return t.scheme + "://" + h + ":" + strconv.Itoa(t.port)
}

// refusal is a request the policy refused; its text names the rule.
type refusal struct {
	what   string // the origin, or the URL's shape
	reason string
	rule   string // what refused it, for the audit line
}

func (e *refusal) Error() string { return e.what + " refused: " + e.reason }

// parseTarget parses a guest's URL strictly: http or https, no user info, a host that
// is a DNS name of letters, digits and '-' or a canonical address (a numeric host in
// any other spelling, "0x7f.1" or "2130706433" or "0177.0.0.1", is refused).
func parseTarget(raw string) (target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return target{}, &refusal{what: "url", reason: "not a URL", rule: "url"}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return target{}, &refusal{what: "url", reason: fmt.Sprintf("scheme %q is not http or https", u.Scheme), rule: "url"}
	}
	if u.User != nil {
		return target{}, &refusal{what: u.Scheme + "://…", reason: "user info in the URL", rule: "url"}
	}
	if u.Opaque != "" || u.Host == "" {
		return target{}, &refusal{what: "url", reason: "no host", rule: "url"}
	}
	host, ip, err := parseHost(u.Host)
	if err != nil {
		return target{}, &refusal{what: u.Scheme + "://…", reason: err.Error(), rule: "url"}
	}
	t := target{scheme: u.Scheme, host: host, ip: ip, port: defaultPort(u.Scheme), url: u}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != p {
			return target{}, &refusal{what: u.Scheme + "://" + host, reason: "bad port", rule: "url"}
		}
		t.port = n
	}
	u.Fragment, u.RawFragment = "", ""
	return t, nil
}

// parseHost reads a URL's host[:port] and returns the host: a bracketed IPv6
// address, a canonical dotted IPv4 address or a DNS name.
func parseHost(hostport string) (string, netip.Addr, error) {
	h := hostport
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return "", netip.Addr{}, errors.New("unclosed [ in host")
		}
		ip, err := netip.ParseAddr(h[1:end])
		if err != nil || !ip.Is6() || ip.Zone() != "" {
			return "", netip.Addr{}, fmt.Errorf("host %q is not an IPv6 address", h[:end+1])
		}
		return ip.String(), ip, nil
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 {
		h = h[:i]
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		if !ip.Is4() || ip.String() != h {
			return "", netip.Addr{}, fmt.Errorf("host %q is not a canonical address", h)
		}
		return h, ip, nil
	}
	name, err := checkName(h)
	return name, netip.Addr{}, err
}

// checkName accepts a DNS name of ASCII letters, digits, '-' and '.', whose last
// label is not numeric (WHATWG URL parsers read such a host as an IPv4 address in
// some spelling, which this refuses rather than guesses).
func checkName(h string) (string, error) {
	if h == "" || len(h) > 253 {
		return "", errors.New("empty or overlong host")
	}
	h = strings.ToLower(h)
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "", fmt.Errorf("host %q has an empty or overlong label", h)
		}
		for _, c := range []byte(l) {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "", fmt.Errorf("host %q is not a plain DNS name", h)
			}
		}
	}
	last := labels[len(labels)-1]
	if numeric(last) {
		return "", fmt.Errorf("host %q is a non-canonical numeric address", h)
	}
	return h, nil
}

// numeric reports whether a label reads as a number: decimal, octal or 0x hex.
func numeric(l string) bool {
	if rest, ok := strings.CutPrefix(l, "0x"); ok {
		l = rest
		for _, c := range []byte(l) {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
		return true
	}
	for _, c := range []byte(l) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func validMethod(m string) bool {
	if m == "" || m == "CONNECT" || m == "TRACE" {
		return false
	}
	for _, c := range []byte(m) {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

func validToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
