package egresstest

import (
	"net/netip"
	"slices"
	"testing"
)

func TestResolver_AnswersTheNamesItWasGiven(t *testing.T) {
	doc, v6 := netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("2001:db8::1")
	r := Resolver(t, map[string][]netip.Addr{"hooks.example.com": {doc, v6}})
	got, err := r.LookupNetIP(t.Context(), "ip", "Hooks.Example.com")
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, netip.Addr.Compare)
	if !slices.Equal(got, []netip.Addr{doc, v6}) {
		t.Fatalf("hooks.example.com resolved to %v", got)
	}
	if _, err := r.LookupNetIP(t.Context(), "ip", "nowhere.example.com"); err == nil {
		t.Fatal("a name it was not given resolved")
	}
}
