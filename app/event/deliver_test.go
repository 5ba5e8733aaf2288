package event

import "testing"

func TestPublicOnly(t *testing.T) {
	for addr, public := range map[string]bool{
		"127.0.0.1:443": false, "[::1]:443": false, "10.1.2.3:443": false, "192.168.0.9:8443": false, "172.20.0.1:443": false,
		"169.254.169.254:80": false, "0.0.0.0:443": false, "[fd00::1]:443": false, "[fe80::1]:443": false,
		"100.100.100.200:80": false, "198.18.0.1:443": false, "240.0.0.1:443": false, "255.255.255.255:443": false,
		"[64:ff9b::a00:1]:443": false, "[2002:a00:1::]:443": false, "[::ffff:127.0.0.1]:443": false,
		"[64:ff9b::808:808]:443": true, "203.0.113.7:443": true, "[2001:db8::7]:443": true, "8.8.8.8:443": true,
	} {
		if err := publicOnly("tcp", addr, nil); (err == nil) != public {
			t.Errorf("%s: %v, want public %v", addr, err, public)
		}
	}
}

func TestTakesType(t *testing.T) {
	for _, c := range []struct {
		globs []string
		typ   string
		want  bool
	}{
		{nil, "deployment.failed", true},
		{[]string{"deployment.*"}, "deployment.failed", true},
		{[]string{"deployment.*"}, "stack.state_changed", false},
		{[]string{"stack.state_changed", "drift.*"}, "drift.detected", true},
		{[]string{"deployment"}, "deployment.failed", false},
	} {
		if got := takesType(c.globs, c.typ); got != c.want {
			t.Errorf("%v takes %s: %v, want %v", c.globs, c.typ, got, c.want)
		}
	}
}

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"  plain  ": "plain", "nul\x00here": "nulhere", "bad\xffutf8": "bad\uFFFDutf8", "ééééé": "éé",
	} {
		max := 100
		if in == "ééééé" {
			max = 5
		}
		if got := clean(in, max); got != want {
			t.Errorf("clean(%q, %d) = %q, want %q", in, max, got, want)
		}
	}
}
