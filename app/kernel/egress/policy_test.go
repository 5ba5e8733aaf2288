package egress

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// TestCheck_EveryRegistryEntryIsRefusedNamingIt tries an address of each entry of the
// registries, with private addresses allowed and not: each is refused naming its range, and the
// setting opens only the operator's own networks.
func TestCheck_EveryRegistryEntryIsRefusedNamingIt(t *testing.T) {
	cases := []struct {
		addr, in string
		// private: the range opens when private addresses are allowed.
		private bool
	}{
		{"0.1.2.3", "0.0.0.0/8", false},
		{"0.0.0.0", "0.0.0.0/32", false},
		{"10.1.2.3", "10.0.0.0/8", true},
		{"100.100.100.200", "100.64.0.0/10", true},
		{"127.0.0.1", "127.0.0.0/8", true},
		{"169.254.169.254", "169.254.0.0/16", true},
		{"172.20.0.1", "172.16.0.0/12", true},
		{"192.0.0.100", "192.0.0.0/24", false},
		{"192.0.0.5", "192.0.0.0/29", false},
		{"192.0.0.8", "192.0.0.8/32", false},
		{"192.0.0.9", "192.0.0.9/32", false},
		{"192.0.0.10", "192.0.0.10/32", false},
		{"192.0.0.170", "192.0.0.170/32", false},
		{"192.0.0.171", "192.0.0.171/32", false},
		{"192.0.2.2", "192.0.2.0/24", false},
		{"192.31.196.1", "192.31.196.0/24", false},
		{"192.52.193.1", "192.52.193.0/24", false},
		{"192.88.99.1", "192.88.99.0/24", false},
		{"192.88.99.2", "192.88.99.2/32", false},
		{"192.168.0.9", "192.168.0.0/16", true},
		{"192.175.48.1", "192.175.48.0/24", false},
		{"198.19.255.1", "198.18.0.0/15", false},
		{"198.51.100.7", "198.51.100.0/24", false},
		{"203.0.113.7", "203.0.113.0/24", false},
		{"224.0.0.251", "224.0.0.0/4", false},
		{"239.255.255.250", "224.0.0.0/4", false},
		{"240.0.0.1", "240.0.0.0/4", false},
		{"255.255.255.255", "255.255.255.255/32", false},

		{"::1", "::1/128", true},
		{"::", "::/128", false},
		{"::8.8.8.8", "::/96", false},
		{"64:ff9b:1:808:8:800::", "64:ff9b:1::/48", true},
		{"100::1", "100::/64", false},
		{"100:0:0:1::1", "100:0:0:1::/64", false},
		{"2001:100::1", "2001::/23", false},
		{"2001:1::1", "2001:1::1/128", false},
		{"2001:1::2", "2001:1::2/128", false},
		{"2001:1::3", "2001:1::3/128", false},
		{"2001:2::1", "2001:2::/48", false},
		{"2001:3::1", "2001:3::/32", false},
		{"2001:4:112::1", "2001:4:112::/48", false},
		{"2001:10::1", "2001:10::/28", false},
		{"2001:20::1", "2001:20::/28", false},
		{"2001:30::1", "2001:30::/28", false},
		{"2001:db8::7", "2001:db8::/32", false},
		{"2620:4f:8000::1", "2620:4f:8000::/48", false},
		{"3fff:123::1", "3fff::/20", false},
		{"5f00::1", "5f00::/16", false},
		{"fd00::1", "fc00::/7", true},
		{"fe80::1", "fe80::/10", true},
		{"fe80::1%eth0", "fe80::/10", true},
		{"ff02::1", "ff00::/8", false},

		{"1:2::3", "::/8", false},
		{"101::1", "100::/8", false},
		{"300::1", "200::/7", false},
		{"500::1", "400::/6", false},
		{"900::1", "800::/5", false},
		{"1234::1", "1000::/4", false},
		{"4000::1", "4000::/3", false},
		{"6000::1", "6000::/3", false},
		{"8000::1", "8000::/3", false},
		{"a000::1", "a000::/3", false},
		{"c000::1", "c000::/3", false},
		{"e000::1", "e000::/4", false},
		{"f000::1", "f000::/5", false},
		{"f800::1", "f800::/6", false},
		{"fe00::1", "fe00::/9", false},
		{"fec0::1", "fec0::/10", false},
	}
	named := map[netip.Prefix]bool{}
	for _, c := range cases {
		ip, in := netip.MustParseAddr(c.addr), netip.MustParsePrefix(c.in)
		named[in] = true
		err := Policy{}.Check(ip)
		var refused *Refused
		if !errors.As(err, &refused) || refused.In.Prefix != in || !strings.Contains(err.Error(), c.in+", ") {
			t.Errorf("%s: %v, want it refused in %s", c.addr, err, c.in)
			continue
		}
		if err := (Policy{AllowPrivate: true}).Check(ip); (err == nil) != c.private {
			t.Errorf("%s with private addresses allowed: %v, want allowed %v", c.addr, err, c.private)
		}
	}
	// Every entry has a case here (those that carry IPv4 addresses below).
	for _, r := range registry {
		if !named[r.Prefix] && r.Reach != Carried {
			t.Errorf("no case tries %s", r)
		}
	}
}

// TestCheck_AnIPv6AddressCarryingAnIPv4OneIsCheckedAsThatOne covers the IPv6 forms whose
// connections reach an IPv4 address: mapped, compatible, NAT64, 6to4 and Teredo.
func TestCheck_AnIPv6AddressCarryingAnIPv4OneIsCheckedAsThatOne(t *testing.T) {
	for _, c := range []struct {
		addr string
		// in and inPrivate are the ranges it is refused in, without and with private addresses
		// allowed; empty when it is allowed.
		in, inPrivate string
	}{
		{"::ffff:8.8.8.8", "", ""},
		{"::ffff:127.0.0.1", "127.0.0.0/8", ""},
		{"::ffff:192.0.2.2", "192.0.2.0/24", "192.0.2.0/24"},
		{"::127.0.0.1", "127.0.0.0/8", "::/96"},
		{"::192.0.2.2", "192.0.2.0/24", "192.0.2.0/24"},
		{"64:ff9b::8.8.8.8", "", ""},
		{"64:ff9b::10.0.0.1", "10.0.0.0/8", ""},
		{"64:ff9b::192.0.2.2", "192.0.2.0/24", "192.0.2.0/24"},
		{"64:ff9b::198.51.100.1", "198.51.100.0/24", "198.51.100.0/24"},
		// Local-use NAT64 carries its IPv4 address around the u octet.
		{"64:ff9b:1:c000:2:200::", "192.0.2.0/24", "192.0.2.0/24"},
		{"64:ff9b:1:7f00:0:100::", "127.0.0.0/8", ""},
		{"2002:808:808::1", "", ""},
		{"2002:a00:1::", "10.0.0.0/8", ""},
		{"2002:c000:202::1", "192.0.2.0/24", "192.0.2.0/24"},
		{"2002:cb00:7101::1", "203.0.113.0/24", "203.0.113.0/24"},
		// Teredo: the server 65.54.227.120 and the client 8.8.8.8 (its bytes inverted).
		{"2001:0:4136:e378::f7f7:f7f7", "", ""},
		// RFC 4380's own example: the client is 192.0.2.45.
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "192.0.2.0/24", "192.0.2.0/24"},
		{"2001:0:7f00:1::f7f7:f7f7", "127.0.0.0/8", ""},
		{"2001:0:4136:e378::80ff:fefe", "127.0.0.0/8", ""},
	} {
		for _, p := range []Policy{{}, {AllowPrivate: true}} {
			want := c.in
			if p.AllowPrivate {
				want = c.inPrivate
			}
			err := p.Check(netip.MustParseAddr(c.addr))
			var refused *Refused
			switch {
			case want == "" && err != nil:
				t.Errorf("%s (private allowed %v): %v, want it allowed", c.addr, p.AllowPrivate, err)
			case want != "" && (!errors.As(err, &refused) || refused.In.Prefix.String() != want):
				t.Errorf("%s (private allowed %v): %v, want it refused in %s", c.addr, p.AllowPrivate, err, want)
			case refused != nil && refused.Addr.Is4() && !strings.Contains(err.Error(), netip.MustParseAddr(c.addr).String()+" carries "):
				t.Errorf("%s: %q does not say which address carries %s", c.addr, err, refused.Addr)
			}
		}
	}
}

func TestCheck_PublicAddressesPass(t *testing.T) {
	for _, addr := range []string{
		"8.8.8.8", "1.1.1.1", "192.0.1.255", "192.0.3.1", "192.88.98.1", "198.17.255.255", "198.20.0.1", "198.51.99.255",
		"203.0.114.1", "100.128.0.1", "172.32.0.1", "223.255.255.255",
		"2606:4700:4700::1111", "2a00:1450:4001:81d::200e", "2001:db9::1", "2001:200::1", "3fff:1000::1", "2003::1",
	} {
		if err := (Policy{}).Check(netip.MustParseAddr(addr)); err != nil {
			t.Errorf("%s: %v, want it public", addr, err)
		}
	}
}

func TestControl_RefusesTheAddressAboutToBeDialled(t *testing.T) {
	for address, allowed := range map[string]bool{
		"192.0.2.2:443": false, "[2001:db8::1]:443": false, "[64:ff9b:1::1]:443": false, "[::ffff:127.0.0.1]:443": false,
		"[fe80::1%eth0]:443": false, "8.8.8.8:443": true, "[2606:4700:4700::1111]:443": true,
	} {
		if err := (Policy{}).Control("tcp", address, nil); (err == nil) != allowed {
			t.Errorf("dial %s: %v, want allowed %v", address, err, allowed)
		}
	}
}

func TestCheckHost_RefusesAnAddressInAnyOfItsForms(t *testing.T) {
	for _, c := range []struct {
		host           string
		refused        bool
		refusedPrivate bool
	}{
		{"192.0.2.2", true, true},
		{"[2001:db8::1]", true, true},
		{"[::ffff:192.0.2.2]", true, true},
		{"3221225986", true, true}, // 192.0.2.2 as one number
		{"0xc0.0.2.2", true, true},
		{"0177.0.0.1", true, true},
		{"127.1", true, true},
		{"127.0.0.1", true, false},
		{"localhost", true, false},
		{"api.LocalHost.", true, false},
		{"[fd00::1]", true, false},
		{"8.8.8.8", false, false},
		{"hooks.example.com", false, false},
		{"123.example", false, false},
		{"deadbeef", false, false},
	} {
		if err := (Policy{}).CheckHost(c.host); (err != nil) != c.refused {
			t.Errorf("%s: %v, want refused %v", c.host, err, c.refused)
		}
		if err := (Policy{AllowPrivate: true}).CheckHost(c.host); (err != nil) != c.refusedPrivate {
			t.Errorf("%s with private addresses allowed: %v, want refused %v", c.host, err, c.refusedPrivate)
		}
	}
}
