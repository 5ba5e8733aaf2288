package egress

import (
	"fmt"
	"net/netip"
	"strings"
	"syscall"
)

// Policy says which addresses a connection made on a tenant's behalf may reach: public unicast
// addresses, and with AllowPrivate the ranges of Reach Private too. Documentation, reserved and
// the other ranges stay closed whatever the setting: no receiver lives there, and one of them
// may be the machine's own address.
type Policy struct {
	AllowPrivate bool
}

// Refused says that an address is in a range a tenant's connection may not reach.
type Refused struct {
	// Addr is the address refused; when it was carried by an IPv6 address, Carrier is that one.
	Addr    netip.Addr
	Carrier netip.Addr
	In      Range
}

func (e *Refused) Error() string {
	if e.Carrier.IsValid() {
		return fmt.Sprintf("%s carries %s, which is in %s", e.Carrier, e.Addr, e.In)
	}
	return fmt.Sprintf("%s is in %s", e.Addr, e.In)
}

// Check refuses an address the policy does not let a tenant reach, with a *Refused naming its
// range; an IPv6 address carrying an IPv4 one is refused when that one is.
func (p Policy) Check(ip netip.Addr) error {
	if r := p.refused(ip.WithZone("")); r != nil {
		return r
	}
	return nil
}

func (p Policy) refused(ip netip.Addr) *Refused {
	r, ok := lookup(ip)
	if !ok {
		return nil
	}
	if r.carries != nil {
		for _, inner := range r.carries(ip) {
			if refused := p.refused(inner); refused != nil {
				refused.Carrier = ip
				return refused
			}
		}
	}
	if r.Reach == Carried || r.Reach == Private && p.AllowPrivate {
		return nil
	}
	return &Refused{Addr: ip, In: r}
}

// Control is a net.Dialer's Control: it runs on the address about to be dialled, after its name
// was resolved, so that no name (nor a change of its answer since the URL was saved) can point
// a connection inside.
func (p Policy) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("dial %q: not an address and port: %w", address, err)
	}
	return p.Check(ap.Addr())
}

// CheckHost refuses a URL's host that is an address the policy does not let a tenant reach, or
// an IPv4 address written in one of the old forms (3232235521, 0x7f.1, 0177.0.0.1) that
// resolvers still read, which would hide one. A name passes: it is checked when dialled,
// against what it resolves to then.
func (p Policy) CheckHost(host string) error {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if ip, err := netip.ParseAddr(host); err == nil {
		return p.Check(ip)
	}
	if numeric(host) {
		return fmt.Errorf("%s is an IPv4 address in an old form: write it as four decimal numbers, such as 192.0.2.1", host)
	}
	if name := strings.ToLower(strings.TrimSuffix(host, ".")); name == "localhost" || strings.HasSuffix(name, ".localhost") {
		// RFC 6761: resolvers answer these with loopback without asking anyone.
		if err := p.Check(netip.AddrFrom4([4]byte{127, 0, 0, 1})); err != nil {
			return fmt.Errorf("%s is loopback: %w", host, err)
		}
	}
	return nil
}

// numeric says whether every label of host is a number in decimal, octal or hex: the forms
// inet_aton reads as an IPv4 address, which a domain name never is (its last label has a letter).
func numeric(host string) bool {
	for label := range strings.SplitSeq(strings.TrimSuffix(host, "."), ".") {
		digits := strings.TrimPrefix(strings.ToLower(label), "0x")
		hex := len(digits) < len(label)
		if digits == "" && !hex {
			return false
		}
		for _, c := range digits {
			if !('0' <= c && c <= '9' || hex && 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}
