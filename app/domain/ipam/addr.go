package ipam

import (
	"errors"
	"net/netip"
	"slices"
)

// span is the addresses from first to last, inclusive.
type span struct{ first, last netip.Addr }

func spanOf(p netip.Prefix) span {
	p = p.Masked()
	return span{first: p.Addr(), last: lastOf(p)}
}

// lastOf is the highest address of p: its host bits all set.
func lastOf(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// ErrFull means no free address or subnet of the size asked for is left in the pool.
var ErrFull = errors.New("the pool is full")

// blocked sorts the spans taken by reserved ranges and allocations.
func blocked(taken []netip.Prefix) []span {
	out := make([]span, len(taken))
	for i, p := range taken {
		out[i] = spanOf(p)
	}
	slices.SortFunc(out, func(a, b span) int { return a.first.Compare(b.first) })
	return out
}

// gateway is the address a pool's subnet routes through: its first usable one, which is never
// handed out.
func gateway(pool netip.Prefix) netip.Addr { return pool.Masked().Addr().Next() }

// nextAddress is the lowest address of pool that is not its network address, its gateway, its
// IPv4 broadcast address, or inside one of taken.
func nextAddress(pool netip.Prefix, taken []netip.Prefix) (netip.Addr, error) {
	s := spanOf(pool)
	last := s.last
	if pool.Addr().Is4() && pool.Bits() < 31 {
		last = last.Prev() // the broadcast address
	}
	candidate := gateway(pool).Next()
	if pool.Bits() >= pool.Addr().BitLen()-1 {
		candidate = s.first // a /31 or /32 (a /127 or /128) has no network or gateway to spare
	}
	for _, b := range blocked(taken) {
		if candidate.Compare(b.first) < 0 {
			break
		}
		if candidate.Compare(b.last) <= 0 {
			candidate = b.last.Next()
			if !candidate.IsValid() {
				return netip.Addr{}, ErrFull
			}
		}
	}
	if !candidate.IsValid() || candidate.Compare(last) > 0 || !pool.Contains(candidate) {
		return netip.Addr{}, ErrFull
	}
	return candidate, nil
}

// nextSubnet is the lowest subnet of pool with the given prefix length that overlaps none of
// taken.
func nextSubnet(pool netip.Prefix, bits int, taken []netip.Prefix) (netip.Prefix, error) {
	if bits < pool.Bits() || bits > pool.Addr().BitLen() {
		return netip.Prefix{}, ErrFull
	}
	candidate := netip.PrefixFrom(pool.Masked().Addr(), bits)
	for _, b := range blocked(taken) {
		c := spanOf(candidate)
		if c.last.Compare(b.first) < 0 {
			break
		}
		if c.first.Compare(b.last) <= 0 {
			// Overlaps: the next aligned subnet past the blocked span.
			next := b.last.Next()
			if !next.IsValid() {
				return netip.Prefix{}, ErrFull
			}
			aligned := netip.PrefixFrom(next, bits).Masked()
			if aligned.Addr() != next {
				after := lastOf(aligned).Next()
				if !after.IsValid() {
					return netip.Prefix{}, ErrFull
				}
				aligned = netip.PrefixFrom(after, bits)
			}
			candidate = aligned
		}
	}
	if !pool.Contains(candidate.Addr()) || !pool.Contains(lastOf(candidate)) {
		return netip.Prefix{}, ErrFull
	}
	return candidate, nil
}

// size is how many addresses a prefix holds, capped for display.
func size(p netip.Prefix) float64 {
	host := p.Addr().BitLen() - p.Bits()
	if host > 62 {
		host = 62
	}
	return float64(uint64(1) << host)
}
