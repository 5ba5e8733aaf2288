package views_test

import (
	"testing"

	"nimbus/views"
)

func TestValue(t *testing.T) {
	for _, c := range []struct {
		in   any
		want string
	}{
		{nil, "—"},
		{"", "—"},
		{"web-1", "web-1"},
		{float64(4), "4"},
		{2.5, "2.5"},
		{float64(1e9), "1000000000"},
		{true, "yes"},
		{[]any{"a", float64(2)}, "a, 2"},
		{[]any{}, "—"},
		{map[string]any{"b": "x", "a": float64(1)}, "a: 1; b: x"},
		{map[string]any{}, "—"},
	} {
		if got := views.Value(c.in); got != c.want {
			t.Errorf("Value(%#v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestValues(t *testing.T) {
	got := views.Values(map[string]any{"ip": "10.0.0.4", "token": "[secret]"}, "password")
	want := []views.KeyValue{{Key: "ip", Value: "10.0.0.4"}, {Key: "password", Value: "—", Secret: true}, {Key: "token", Value: "[secret]", Secret: true}}
	if len(got) != len(want) {
		t.Fatalf("Values = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Values[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestStatusWord(t *testing.T) {
	if got := views.StatusWord("awaiting_approval"); got != "awaiting approval" {
		t.Errorf("StatusWord = %q", got)
	}
}
