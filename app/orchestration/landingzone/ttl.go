package landingzone

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/environment"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Lifetimes are how long the environments opened in a zone live, as environment.ParseTTL
// reads them: Default for one that asks for nothing, Max for any. Empty for none; a zone with
// only a maximum gives it as the default.
type Lifetimes struct {
	Default string `json:"default_ttl"`
	Max     string `json:"max_ttl"`
}

// lifetimesOf is a zone's lifetimes as people write them.
func lifetimesOf(z dbgen.LandingZone) Lifetimes {
	var out Lifetimes
	if d := environment.Lifetime(z.DefaultTtlSeconds); d > 0 {
		out.Default = environment.FormatTTL(d)
	}
	if d := environment.Lifetime(z.MaxTtlSeconds); d > 0 {
		out.Max = environment.FormatTTL(d)
	}
	return out
}

// SetLifetimes sets how long the environments opened in a zone from now on live, and how far
// they may be extended; provider admins may. Environments opened before keep their expiry.
func (s *Service) SetLifetimes(ctx context.Context, actor access.Principal, id uuid.UUID, in Lifetimes) (Zone, error) {
	if !actor.Can(access.LandingZoneManage, uuid.Nil) {
		return Zone{}, problem.ErrForbidden
	}
	v := &problem.ValidationError{}
	def, limit := lifetime("default_ttl", in.Default, v), lifetime("max_ttl", in.Max, v)
	if def > 0 && limit > 0 && def > limit {
		v.Add("default_ttl", "max", "must be at most the maximum, %s", environment.FormatTTL(limit))
	}
	if err := v.Err(); err != nil {
		return Zone{}, err
	}
	err := db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		z, err := zoneFor(ctx, q, id)
		if err != nil {
			return err
		}
		if err := q.SetLandingZoneTTL(ctx, dbgen.SetLandingZoneTTLParams{ID: z.ID, DefaultTtlSeconds: environment.Seconds(def),
			MaxTtlSeconds: environment.Seconds(limit)}); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "landing_zone.lifetimes", TargetType: "landing_zone", TargetID: z.ID.String(),
			Diff: map[string]any{"name": z.Name, "from": lifetimesOf(z), "to": in}})
	})
	if err != nil {
		return Zone{}, fmt.Errorf("set the lifetimes of landing zone: %w", err)
	}
	return s.Get(ctx, actor, id)
}

// lifetime reads a lifetime given in field, zero when none is; what does not read is added to v.
func lifetime(field, s string, v *problem.ValidationError) time.Duration {
	if strings.TrimSpace(s) == "" {
		return 0
	}
	d, err := environment.ParseTTL(field, s)
	var bad *problem.ValidationError
	if errors.As(err, &bad) {
		v.Fields = append(v.Fields, bad.Fields...)
	}
	return d
}
