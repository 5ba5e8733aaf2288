package ipam

import (
	"net/netip"
	"testing"
)

func prefixes(s ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(s))
	for i, p := range s {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}

func TestNextAddress(t *testing.T) {
	for _, c := range []struct {
		pool  string
		taken []netip.Prefix
		want  string
	}{
		{"10.0.0.0/24", nil, "10.0.0.2"},                                      // .0 network, .1 gateway
		{"10.0.0.0/24", prefixes("10.0.0.2/32", "10.0.0.3/32"), "10.0.0.4"},   // in order
		{"10.0.0.0/24", prefixes("10.0.0.3/32"), "10.0.0.2"},                  // a hole first
		{"10.0.0.0/24", prefixes("10.0.0.0/28", "10.0.0.16/32"), "10.0.0.17"}, // a reserved range
		{"10.0.0.0/24", prefixes("10.0.0.16/32", "10.0.0.0/28"), "10.0.0.17"}, // in any order
		{"10.0.0.0/30", prefixes("10.0.0.2/32"), ""},                          // .3 is the broadcast
		{"2001:db8::/64", prefixes("2001:db8::2/128"), "2001:db8::3"},         // IPv6 has no broadcast
		{"2001:db8::/126", prefixes("2001:db8::2/127"), ""},                   // ::3 taken too
		{"10.0.0.0/24", prefixes("10.0.0.0/24"), ""},                          // all reserved
	} {
		got, err := nextAddress(netip.MustParsePrefix(c.pool), c.taken)
		if c.want == "" {
			if err != ErrFull {
				t.Errorf("%s minus %v: %v %v, want full", c.pool, c.taken, got, err)
			}
			continue
		}
		if err != nil || got.String() != c.want {
			t.Errorf("%s minus %v: %v %v, want %s", c.pool, c.taken, got, err, c.want)
		}
	}
}

func TestNextSubnet(t *testing.T) {
	for _, c := range []struct {
		pool  string
		bits  int
		taken []netip.Prefix
		want  string
	}{
		{"10.0.0.0/16", 24, nil, "10.0.0.0/24"},
		{"10.0.0.0/16", 24, prefixes("10.0.0.0/24"), "10.0.1.0/24"},
		{"10.0.0.0/16", 24, prefixes("10.0.0.5/32"), "10.0.1.0/24"}, // one address blocks its /24
		{"10.0.0.0/16", 26, prefixes("10.0.0.0/26", "10.0.0.128/26"), "10.0.0.64/26"},
		{"10.0.0.0/16", 23, prefixes("10.0.1.0/24"), "10.0.2.0/23"}, // aligned to its size
		{"10.0.0.0/24", 24, prefixes("10.0.0.7/32"), ""},
		{"10.0.0.0/24", 16, nil, ""}, // larger than the pool
		{"2001:db8::/48", 64, prefixes("2001:db8::/64"), "2001:db8:0:1::/64"},
	} {
		got, err := nextSubnet(netip.MustParsePrefix(c.pool), c.bits, c.taken)
		if c.want == "" {
			if err != ErrFull {
				t.Errorf("/%d of %s minus %v: %v %v, want full", c.bits, c.pool, c.taken, got, err)
			}
			continue
		}
		if err != nil || got.String() != c.want {
			t.Errorf("/%d of %s minus %v: %v %v, want %s", c.bits, c.pool, c.taken, got, err, c.want)
		}
	}
}
