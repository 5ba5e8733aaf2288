package environment

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// An environment may expire: a landing zone gives those opened in it a default lifetime and a
// maximum one, a request may ask for its own within the maximum, and tenant admins extend it,
// again within the maximum (counted from the moment they ask). At expiry the environment is
// decommissioned on its own (expiry.go), after a warning at each of two points:
//
//   - "day": a day before, or halfway through a life shorter than two days;
//   - "hour": an hour before, or nine tenths through a life shorter than ten hours.
//
// A life is measured from the environment's creation to its expiry, so an extension moves
// both points.

// ParseTTL reads a lifetime as Go writes durations ("36h", "90m", "1h30m", "45s") or as a
// whole number of days ("7d"); field names it in the error.
func ParseTTL(field, s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 3650 {
			return 0, problem.Invalid(field, "duration", "must be a duration such as 7d, 36h or 90m")
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, problem.Invalid(field, "duration", "must be a duration such as 7d, 36h or 90m")
		}
	}
	if d < time.Second {
		return 0, problem.Invalid(field, "min", "must be at least a second")
	}
	return d.Truncate(time.Second), nil
}

// FormatTTL writes a lifetime as ParseTTL reads it: whole days as days, else hours, minutes
// and seconds without the zero parts.
func FormatTTL(d time.Duration) string {
	const day = 24 * time.Hour
	if d >= day && d%day == 0 {
		return strconv.Itoa(int(d/day)) + "d"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Seconds is a lifetime as the database keeps it; nil for none.
func Seconds(d time.Duration) *int64 {
	if d == 0 {
		return nil
	}
	s := int64(d / time.Second)
	return &s
}

// Lifetime is a lifetime kept in seconds; zero for none.
func Lifetime(seconds *int64) time.Duration {
	if seconds == nil {
		return 0
	}
	return time.Duration(*seconds) * time.Second
}

// warning is a point before an expiry at which people are told of it.
type warning string

const (
	dayBefore  warning = "day"
	hourBefore warning = "hour"
)

// warnAt is when the warning w of an expiry is due, for an environment created at created.
func warnAt(w warning, created, expires time.Time) time.Time {
	life := expires.Sub(created)
	lead := min(24*time.Hour, life/2)
	if w == hourBefore {
		lead = min(time.Hour, life/10)
	}
	return expires.Add(-lead)
}

// expiryOf is when an environment opened in zone z expires: the time asked for (at, or ttl
// from now), which must be within the zone's maximum; else the zone's default, or its maximum
// when it sets only that; else never (nil).
func expiryOf(z dbgen.LandingZone, at *time.Time, ttl string, now time.Time) (*time.Time, error) {
	limit := Lifetime(z.MaxTtlSeconds)
	field := "expires_at"
	var asked time.Time
	switch {
	case at != nil && ttl != "":
		return nil, problem.Invalid("ttl", "exclusive", "give expires_at or ttl, not both")
	case at != nil:
		asked = *at
	case ttl != "":
		field = "ttl"
		d, err := ParseTTL(field, ttl)
		if err != nil {
			return nil, err
		}
		asked = now.Add(d)
	default:
		d := Lifetime(z.DefaultTtlSeconds)
		if d == 0 {
			d = limit
		}
		if d == 0 {
			return nil, nil
		}
		end := now.Add(d)
		return &end, nil
	}
	if !asked.After(now) {
		return nil, problem.Invalid(field, "future", "must be in the future")
	}
	if limit > 0 && asked.After(now.Add(limit)) {
		return nil, problem.Invalid(field, "max", "landing zone %s lets an environment live at most %s: expire it by %s", z.Name, FormatTTL(limit),
			now.Add(limit).UTC().Format(time.RFC3339))
	}
	return &asked, nil
}

// Extension moves an environment's expiry later: to ExpiresAt, or By a lifetime from the
// expiry it has. One of the two is given.
type Extension struct {
	ExpiresAt *time.Time `json:"expires_at"`
	By        string     `json:"by"`
}

// Extend moves an environment's expiry later, within its landing zone's maximum counted from
// now; tenant admins and provider admins may. It returns the environment as it is now.
func (s *Service) Extend(ctx context.Context, actor access.Principal, id uuid.UUID, in Extension) (Environment, error) {
	err := db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		env, err := environmentFor(ctx, q, actor, id)
		if err != nil {
			return err
		}
		if env.ExpiresAt == nil {
			return problem.Invalid("expires_at", "expires", "%s does not expire: there is nothing to extend", env.Name)
		}
		if st := lifecycle.EnvironmentStatus(env.Status); st == lifecycle.EnvironmentDecommissioning || st == lifecycle.EnvironmentDecommissioned {
			return problem.Invalid("status", "state", "%s is %s: it is not extended", env.Name, env.Status)
		}
		now, field := time.Now(), "expires_at"
		var to time.Time
		switch {
		case in.ExpiresAt != nil && in.By != "":
			return problem.Invalid("by", "exclusive", "give expires_at or by, not both")
		case in.ExpiresAt != nil:
			to = *in.ExpiresAt
		case in.By != "":
			field = "by"
			d, err := ParseTTL(field, in.By)
			if err != nil {
				return err
			}
			to = env.ExpiresAt.Add(d)
		default:
			return problem.Invalid("expires_at", "required", "give the new expiry (expires_at) or how much longer it lives (by)")
		}
		if !to.After(*env.ExpiresAt) {
			return problem.Invalid(field, "after", "must be later than the expiry it has, %s", env.ExpiresAt.UTC().Format(time.RFC3339))
		}
		if env.LandingZoneID.Valid {
			z, err := q.GetLandingZone(ctx, env.LandingZoneID.UUID)
			if err != nil {
				return err
			}
			if limit := Lifetime(z.MaxTtlSeconds); limit > 0 && to.After(now.Add(limit)) {
				return problem.Invalid(field, "max", "landing zone %s lets an environment live at most %s from now: extend it to %s at the latest",
					z.Name, FormatTTL(limit), now.Add(limit).UTC().Format(time.RFC3339))
			}
		}
		if err := q.SetEnvironmentExpiry(ctx, dbgen.SetEnvironmentExpiryParams{ID: env.ID, ExpiresAt: &to}); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: env.TenantID, Action: "environment.extend", TargetType: "environment",
			TargetID: env.ID.String(), Diff: map[string]any{"name": env.Name, "expires_at": map[string]any{"from": env.ExpiresAt.UTC(), "to": to.UTC()}}})
	})
	if err != nil {
		return Environment{}, fmt.Errorf("extend environment: %w", err)
	}
	return s.Get(ctx, actor, id)
}

// Expiring reports whether people are warned, at now, that the environment expires: from its
// first warning point until it is taken down.
func (e Environment) Expiring(now time.Time) bool {
	if e.ExpiresAt == nil || e.Status == lifecycle.EnvironmentDecommissioning || e.Status == lifecycle.EnvironmentDecommissioned {
		return false
	}
	return !now.Before(warnAt(dayBefore, e.CreatedAt, *e.ExpiresAt))
}
