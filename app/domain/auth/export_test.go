package auth

import "time"

// SetClock makes f read the time from now, for tests of codes' time steps and of sign-ins
// that expire.
func (f *Factors) SetClock(now func() time.Time) { f.now = now }
