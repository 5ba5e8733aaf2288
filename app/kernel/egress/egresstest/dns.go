// Package egresstest gives tests a name server of their own, so that a test can point a name
// at any address (a documentation range, loopback) and see what a connection to it does.
package egresstest

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// Resolver returns a resolver that asks a name server answering names with addresses (A and
// AAAA records; any other name does not exist). The server stops when the test ends.
func Resolver(t testing.TB, names map[string][]netip.Addr) *net.Resolver {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			if answer := answer(buf[:n], names); answer != nil {
				conn.WriteTo(answer, from)
			}
		}
	}()
	server := conn.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", server)
	}}
}

const (
	typeA    = 1
	typeAAAA = 28
)

// answer is the response to one query: its question, and a record for each of the name's
// addresses of the type asked for.
func answer(query []byte, names map[string][]netip.Addr) []byte {
	if len(query) < 12 || binary.BigEndian.Uint16(query[4:6]) != 1 {
		return nil
	}
	var labels []string
	at := 12
	for at < len(query) && query[at] != 0 {
		n := int(query[at])
		if at+1+n > len(query) {
			return nil
		}
		labels = append(labels, string(query[at+1:at+1+n]))
		at += 1 + n
	}
	end := at + 5 // the name's last byte, its type and its class
	if end > len(query) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(query[at+1 : at+3])
	addrs, known := names[strings.ToLower(strings.Join(labels, "."))]

	out := append([]byte{}, query[:2]...)
	flags := uint16(0x8580) // a response, authoritative, recursion desired and available
	if !known {
		flags |= 3 // no such name
	}
	var records [][]byte
	for _, a := range addrs {
		if a.Is4() && qtype == typeA || a.Is6() && qtype == typeAAAA {
			rdata := a.AsSlice()
			rr := []byte{0xc0, 12} // the name, pointing at the question's
			rr = binary.BigEndian.AppendUint16(rr, qtype)
			rr = binary.BigEndian.AppendUint16(rr, 1) // class IN
			rr = binary.BigEndian.AppendUint32(rr, 60)
			rr = binary.BigEndian.AppendUint16(rr, uint16(len(rdata)))
			records = append(records, append(rr, rdata...))
		}
	}
	out = binary.BigEndian.AppendUint16(out, flags)
	out = binary.BigEndian.AppendUint16(out, 1)
	out = binary.BigEndian.AppendUint16(out, uint16(len(records)))
	out = append(out, 0, 0, 0, 0)
	out = append(out, query[12:end]...)
	for _, rr := range records {
		out = append(out, rr...)
	}
	return out
}
