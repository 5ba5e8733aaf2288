package egress

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestTold_AFailedRequestIsToldInPlainWords makes requests that fail in each way a receiver
// can fail, over real connections, and checks that what a tenant would be told is the category,
// never the network's words.
func TestTold_AFailedRequestIsToldInPlainWords(t *testing.T) {
	closedPort := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}()
	hangsUp := listen(t, func(c net.Conn) { c.Close() })
	silent := listen(t, func(c net.Conn) { <-t.Context().Done(); c.Close() })
	selfSigned := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(selfSigned.Close)
	plain := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(plain.Close)
	noDNS := &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no name server here")
	}}

	for _, c := range []struct {
		name, url string
		policy    Policy
		want      string
	}{
		{"a closed port", "https://" + closedPort + "/", Policy{AllowPrivate: true}, Unreachable},
		{"a name that does not resolve", "https://hooks.example.com/", Policy{AllowPrivate: true}, Unreachable},
		{"a receiver that hangs up", "https://" + hangsUp + "/", Policy{AllowPrivate: true}, ClosedEarly},
		{"a receiver that never answers", "https://" + silent + "/", Policy{AllowPrivate: true}, TimedOut},
		{"a certificate nobody signed", selfSigned.URL, Policy{AllowPrivate: true}, Untrusted},
		{"a receiver without TLS", strings.Replace(plain.URL, "http:", "https:", 1), Policy{AllowPrivate: true}, NoTLS},
		{"a loopback address", selfSigned.URL, Policy{}, "the address is not allowed: 127.0.0.0/8, loopback"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dialer := &net.Dialer{Control: c.policy.Control, Resolver: noDNS}
			client := &http.Client{Timeout: 500 * time.Millisecond, Transport: &http.Transport{DialContext: dialer.DialContext}}
			resp, err := client.Post(c.url, "application/json", strings.NewReader("{}"))
			if err == nil {
				resp.Body.Close()
				t.Fatalf("the request was answered %s", resp.Status)
			}
			if got := Told(err); got != c.want {
				t.Fatalf("told %q of %q, want %q", got, err, c.want)
			}
		})
	}
}

// listen accepts connections on a loopback port for as long as the test runs, handing each
// to serve.
func listen(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return ln.Addr().String()
}
