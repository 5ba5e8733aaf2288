package event

import "testing"

func TestPublicOnly(t *testing.T) {
	for addr, public := range map[string]bool{
		"127.0.0.1:443": false, "[::1]:443": false, "10.1.2.3:443": false, "192.168.0.9:8443": false, "172.20.0.1:443": false,
		"169.254.169.254:80": false, "0.0.0.0:443": false, "[fd00::1]:443": false, "[fe80::1]:443": false,
		"203.0.113.7:443": true, "[2001:db8::7]:443": true, "8.8.8.8:443": true,
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
