package egress

import (
	"net/netip"
)

// A special is a range of addresses no request reaches unless the operator allows it.
type special struct {
	prefix netip.Prefix
	reason string
}

// specials are checked in order; the first match names the refusal, so the narrow
// ranges (cloud metadata) come before the ranges that hold them.
var specials = func() []special {
	list := []struct{ cidr, reason string }{
		{"169.254.169.254/32", "cloud metadata address"},
		{"fd00:ec2::254/128", "cloud metadata address"},
		{"0.0.0.0/8", "unspecified address"},
		{"127.0.0.0/8", "loopback address"},
		{"10.0.0.0/8", "private address"},
		{"172.16.0.0/12", "private address"},
		{"192.168.0.0/16", "private address"},
		{"100.64.0.0/10", "shared (CGNAT) address"},
		{"169.254.0.0/16", "link-local address"},
		{"192.0.0.0/24", "IETF protocol address"},
		{"192.0.2.0/24", "documentation address"},
		{"198.18.0.0/15", "benchmarking address"},
		{"198.51.100.0/24", "documentation address"},
		{"203.0.113.0/24", "documentation address"},
		{"224.0.0.0/4", "multicast address"},
		{"255.255.255.255/32", "broadcast address"},
		{"240.0.0.0/4", "reserved address"},
		{"::/128", "unspecified address"},
		{"::1/128", "loopback address"},
		{"fc00::/7", "private address"},
		{"fe80::/10", "link-local address"},
		{"fec0::/10", "site-local address"},
		{"ff00::/8", "multicast address"},
		{"100::/64", "discard address"},
		{"2001:db8::/32", "documentation address"},
		{"64:ff9b:1::/48", "local NAT64 address"},
		{"2001::/32", "Teredo tunnel address"},
		{"2001:10::/28", "ORCHID address"},
		{"2001:20::/28", "ORCHID address"},
		{"::/96", "IPv4-compatible IPv6 address"},
	}
	out := make([]special, len(list))
	for i, s := range list {
		out[i] = special{netip.MustParsePrefix(s.cidr), s.reason}
	}
	return out
}()

var (
	nat64   = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4  = netip.MustParsePrefix("2002::/16")
	mapped4 = netip.MustParsePrefix("::ffff:0:0/96")
)

// Classify says why a request may not reach addr without the operator's leave: the
// range it falls in and its kind ("private address"), or ok for a public address.
// An IPv6 address that embeds an IPv4 one (IPv4-mapped, NAT64 64:ff9b::/96, 6to4
// 2002::/16) is classified by the address it embeds; a zone is never public.
func Classify(addr netip.Addr) (where netip.Prefix, reason string, ok bool) {
	if !addr.IsValid() {
		return netip.Prefix{}, "invalid address", false
	}
	if addr.Zone() != "" {
		return netip.PrefixFrom(addr.WithZone(""), addr.BitLen()), "scoped address", false
	}
	if addr.Is6() {
		a16 := addr.As16()
		var v4 netip.Addr
		switch {
		case mapped4.Contains(addr):
			v4 = netip.AddrFrom4([4]byte(a16[12:16]))
		case nat64.Contains(addr):
			v4 = netip.AddrFrom4([4]byte(a16[12:16]))
		case sixTo4.Contains(addr):
			v4 = netip.AddrFrom4([4]byte(a16[2:6]))
		}
		if v4.IsValid() {
			if p, r, ok := Classify(v4); !ok {
				return p, r + " embedded in " + addr.String(), false
			}
			return netip.Prefix{}, "", true
		}
	}
	for _, s := range specials {
		if s.prefix.Contains(addr) {
			return s.prefix, s.reason, false
		}
	}
	return netip.Prefix{}, "", true
}
