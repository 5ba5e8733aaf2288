// Package egress holds where Nimbus may connect on a tenant's behalf, such as a subscription's
// webhook URL: the IANA IPv4 and IPv6 Special-Purpose Address Registries as one table, checked
// when an address is given and again on the address actually dialled, and the few plain words a
// tenant is told a failed request in.
package egress

import "net/netip"

// Reach is what a special-purpose range means for a connection made on a tenant's behalf.
type Reach int

const (
	// Never: the range is refused whatever the operator allows: documentation, benchmarking,
	// reserved, broadcast, multicast, anycast services and the like, where no tenant's receiver
	// lives and where an address may be the machine's own.
	Never Reach = iota
	// Private: the range is the operator's own network (private-use, shared address space,
	// loopback, link-local, unique-local, local-use NAT64), refused unless Policy.AllowPrivate.
	Private
	// Carried: the range carries an IPv4 address (IPv4-mapped, NAT64, 6to4, Teredo), and is
	// reached as that address is.
	Carried
)

// Range is one entry of the registries.
type Range struct {
	Prefix netip.Prefix
	Name   string
	Reach  Reach
	// carries returns the IPv4 addresses an address of the range carries, which are checked
	// too: a connection to it reaches them.
	carries func(netip.Addr) []netip.Addr
}

// String names the range as a refusal does: "192.0.2.0/24, documentation (TEST-NET-1)".
func (r Range) String() string { return r.Prefix.String() + ", " + r.Name }

// registry is the IANA IPv4 Special-Purpose Address Registry and the IPv6 one (as of 2025),
// with the multicast blocks, the deprecated IPv4-compatible IPv6 addresses, and the IPv6 space
// IANA holds reserved outside 2000::/3 (from its IPv6 Address Space registry), so that an
// address no entry names is public unicast. An address takes its most specific entry.
var registry = []Range{
	// IPv4.
	v4("0.0.0.0/8", "this network", Never),
	v4("0.0.0.0/32", "this host on this network", Never),
	v4("10.0.0.0/8", "private-use", Private),
	v4("100.64.0.0/10", "shared address space", Private),
	v4("127.0.0.0/8", "loopback", Private),
	v4("169.254.0.0/16", "link-local", Private),
	v4("172.16.0.0/12", "private-use", Private),
	v4("192.0.0.0/24", "IETF protocol assignments", Never),
	v4("192.0.0.0/29", "IPv4 service continuity prefix", Never),
	v4("192.0.0.8/32", "IPv4 dummy address", Never),
	v4("192.0.0.9/32", "Port Control Protocol anycast", Never),
	v4("192.0.0.10/32", "Traversal Using Relays around NAT anycast", Never),
	v4("192.0.0.170/32", "NAT64/DNS64 discovery", Never),
	v4("192.0.0.171/32", "NAT64/DNS64 discovery", Never),
	v4("192.0.2.0/24", "documentation (TEST-NET-1)", Never),
	v4("192.31.196.0/24", "AS112-v4", Never),
	v4("192.52.193.0/24", "AMT", Never),
	v4("192.88.99.0/24", "deprecated (6to4 relay anycast)", Never),
	v4("192.88.99.2/32", "6a44-relay anycast address", Never),
	v4("192.168.0.0/16", "private-use", Private),
	v4("192.175.48.0/24", "direct delegation AS112 service", Never),
	v4("198.18.0.0/15", "benchmarking", Never),
	v4("198.51.100.0/24", "documentation (TEST-NET-2)", Never),
	v4("203.0.113.0/24", "documentation (TEST-NET-3)", Never),
	v4("224.0.0.0/4", "multicast", Never),
	v4("240.0.0.0/4", "reserved", Never),
	v4("255.255.255.255/32", "limited broadcast", Never),

	// IPv6.
	v6("::1/128", "loopback address", Private),
	v6("::/128", "unspecified address", Never),
	carrier("::ffff:0:0/96", "IPv4-mapped address", Carried, last4),
	// Deprecated (RFC 4291 2.5.5.1) and routed by nothing today; what it carries is named
	// first when that is the reason.
	carrier("::/96", "IPv4-compatible address (deprecated)", Never, last4),
	carrier("64:ff9b::/96", "IPv4-IPv6 translation (NAT64)", Carried, last4),
	carrier("64:ff9b:1::/48", "IPv4-IPv6 translation, local use", Private, nat64At48),
	v6("100::/64", "discard-only address block", Never),
	v6("100:0:0:1::/64", "dummy IPv6 prefix", Never),
	v6("2001::/23", "IETF protocol assignments", Never),
	carrier("2001::/32", "Teredo", Carried, teredo),
	v6("2001:1::1/128", "Port Control Protocol anycast", Never),
	v6("2001:1::2/128", "Traversal Using Relays around NAT anycast", Never),
	v6("2001:1::3/128", "DNS-SD service registration protocol anycast", Never),
	v6("2001:2::/48", "benchmarking", Never),
	v6("2001:3::/32", "AMT", Never),
	v6("2001:4:112::/48", "AS112-v6", Never),
	v6("2001:10::/28", "deprecated (previously ORCHID)", Never),
	v6("2001:20::/28", "ORCHIDv2", Never),
	v6("2001:30::/28", "drone remote ID protocol entity tags", Never),
	v6("2001:db8::/32", "documentation", Never),
	carrier("2002::/16", "6to4", Carried, sixToFour),
	v6("2620:4f:8000::/48", "direct delegation AS112 service", Never),
	v6("3fff::/20", "documentation", Never),
	v6("5f00::/16", "segment routing (SRv6) SIDs", Never),
	v6("fc00::/7", "unique-local", Private),
	v6("fe80::/10", "link-local unicast", Private),
	v6("ff00::/8", "multicast", Never),

	// The IPv6 space outside 2000::/3 that IANA has not allocated.
	v6("::/8", "reserved by IETF", Never),
	v6("100::/8", "reserved by IETF", Never),
	v6("200::/7", "reserved by IETF", Never),
	v6("400::/6", "reserved by IETF", Never),
	v6("800::/5", "reserved by IETF", Never),
	v6("1000::/4", "reserved by IETF", Never),
	v6("4000::/3", "reserved by IETF", Never),
	v6("6000::/3", "reserved by IETF", Never),
	v6("8000::/3", "reserved by IETF", Never),
	v6("a000::/3", "reserved by IETF", Never),
	v6("c000::/3", "reserved by IETF", Never),
	v6("e000::/4", "reserved by IETF", Never),
	v6("f000::/5", "reserved by IETF", Never),
	v6("f800::/6", "reserved by IETF", Never),
	v6("fe00::/9", "reserved by IETF", Never),
	v6("fec0::/10", "reserved by IETF (formerly site-local)", Never),
}

func v4(prefix, name string, reach Reach) Range {
	return Range{Prefix: netip.MustParsePrefix(prefix), Name: name, Reach: reach}
}

func v6(prefix, name string, reach Reach) Range { return v4(prefix, name, reach) }

func carrier(prefix, name string, reach Reach, carries func(netip.Addr) []netip.Addr) Range {
	r := v4(prefix, name, reach)
	r.carries = carries
	return r
}

// last4 is the IPv4 address in the last four bytes (mapped, compatible, NAT64 /96).
func last4(ip netip.Addr) []netip.Addr {
	b := ip.As16()
	return []netip.Addr{netip.AddrFrom4([4]byte(b[12:16]))}
}

// nat64At48 is the IPv4 address an RFC 6052 /48 prefix carries: two bytes before the u octet
// (byte 8) and two after it.
func nat64At48(ip netip.Addr) []netip.Addr {
	b := ip.As16()
	return []netip.Addr{netip.AddrFrom4([4]byte{b[6], b[7], b[9], b[10]})}
}

// sixToFour is the site's IPv4 address, in bytes 2 to 5 (RFC 3056).
func sixToFour(ip netip.Addr) []netip.Addr {
	b := ip.As16()
	return []netip.Addr{netip.AddrFrom4([4]byte(b[2:6]))}
}

// teredo is the server's IPv4 address (bytes 4 to 7) and the client's, stored inverted in the
// last four bytes (RFC 4380).
func teredo(ip netip.Addr) []netip.Addr {
	b := ip.As16()
	return []netip.Addr{netip.AddrFrom4([4]byte(b[4:8])), netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})}
}

// lookup is the most specific entry holding ip.
func lookup(ip netip.Addr) (Range, bool) {
	var best Range
	found := false
	for _, r := range registry {
		if r.Prefix.Contains(ip) && (!found || r.Prefix.Bits() > best.Prefix.Bits()) {
			best, found = r, true
		}
	}
	return best, found
}
