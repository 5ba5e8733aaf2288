// Package drift keeps the schedule of drift checks: how often each environment's deployments
// are checked (its own interval, else its landing zone's), and the scan that queues the checks
// that are due. A check itself is an operation of the engine (deploy), which records what it found.
package drift

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Service reads and sets drift intervals on behalf of a principal.
type Service struct{ pool *pgxpool.Pool }

// NewService returns the service.
func NewService(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

// Setting is how often an environment's deployments are checked for drift: its own
// setting, else its landing zone's. Nil is never; an environment's own zero turns its zone's off.
type Setting struct {
	Own       *Interval `json:"own"`
	Zone      *Interval `json:"zone"`
	Effective *Interval `json:"effective"`
}

// Interval is a duration that reads and writes as Go writes it: 6h, 90m, 30s.
type Interval time.Duration

// MarshalJSON writes the duration as text.
func (i Interval) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(i).String()) }

func intervalIn(seconds float64) *Interval {
	if seconds < 0 {
		return nil
	}
	i := Interval(time.Duration(seconds * float64(time.Second)))
	return &i
}

// TenantFloor is the shortest drift interval a tenant's admins may set for their
// environment: every check is an engine run on the shared workers. Provider admins may set any.
const TenantFloor = 15 * time.Minute

// ParseInterval reads an interval setting: a duration such as 6h or 30m, or "" for none.
// Zero is allowed only where it turns a zone's setting off (zeroAllowed).
func ParseInterval(field, text string, zeroAllowed bool) (*time.Duration, error) {
	if text == "" {
		return nil, nil
	}
	d, err := time.ParseDuration(text)
	switch {
	case err != nil:
		return nil, problem.Invalid(field, "duration", "must be a duration such as 6h, 90m or 30s")
	case d < 0 || d == 0 && !zeroAllowed:
		return nil, problem.Invalid(field, "positive", "must be longer than zero")
	case d > 0 && d < time.Second:
		return nil, problem.Invalid(field, "minimum", "must be at least a second")
	}
	return &d, nil
}

func seconds(d *time.Duration) pgtype.Float8 {
	if d == nil {
		return pgtype.Float8{}
	}
	return pgtype.Float8{Float64: d.Seconds(), Valid: true}
}

// EnvironmentInterval returns how often the environment's deployments are checked.
func (s *Service) EnvironmentInterval(ctx context.Context, actor access.Principal, envID uuid.UUID) (Setting, error) {
	q := db.Queries(s.pool)
	env, err := q.GetEnvironment(ctx, envID)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !actor.Can(access.EnvironmentRead, env.TenantID) {
		return Setting{}, problem.ErrNotFound
	}
	if err != nil {
		return Setting{}, err
	}
	row, err := q.DriftIntervals(ctx, envID)
	if err != nil {
		return Setting{}, err
	}
	out := Setting{Own: intervalIn(row.Own), Zone: intervalIn(row.Zone)}
	out.Effective = out.Zone
	if out.Own != nil {
		out.Effective = out.Own
	}
	if out.Effective != nil && *out.Effective == 0 {
		out.Effective = nil
	}
	return out, nil
}

// SetEnvironmentInterval sets how often the environment's deployments are checked for
// drift, overriding its zone's: nil follows the zone, zero turns checks off. Its tenant's
// admins may.
func (s *Service) SetEnvironmentInterval(ctx context.Context, actor access.Principal, envID uuid.UUID, every *time.Duration) (Setting, error) {
	env, err := db.Queries(s.pool).GetEnvironment(ctx, envID)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !actor.Can(access.EnvironmentRead, env.TenantID) {
		return Setting{}, problem.ErrNotFound
	}
	if err != nil {
		return Setting{}, err
	}
	if !actor.Can(access.EnvironmentManage, env.TenantID) {
		return Setting{}, problem.ErrForbidden
	}
	if every != nil && *every < 0 {
		return Setting{}, problem.Invalid("drift_interval", "positive", "must not be negative")
	}
	if every != nil && *every > 0 && *every < TenantFloor && !actor.ProviderAdmin {
		return Setting{}, problem.Invalid("drift_interval", "minimum", "must be at least %s: each check runs the engine", TenantFloor)
	}
	err = db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		if err := q.SetEnvironmentDriftInterval(ctx, dbgen.SetEnvironmentDriftIntervalParams{ID: envID, Seconds: seconds(every)}); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: env.TenantID, Action: "environment.drift_interval", TargetType: "environment",
			TargetID: envID.String(), Diff: map[string]any{"drift_interval": durationText(every)}})
	})
	if err != nil {
		return Setting{}, fmt.Errorf("set the drift interval of environment %s: %w", envID, err)
	}
	return s.EnvironmentInterval(ctx, actor, envID)
}

// SetZoneInterval sets how often the deployments of the zone's environments are checked
// for drift, nil for never; provider admins may, and only they see zones.
func (s *Service) SetZoneInterval(ctx context.Context, actor access.Principal, zoneID uuid.UUID, every *time.Duration) (*Interval, error) {
	if !actor.ProviderAdmin {
		return nil, problem.ErrNotFound
	}
	if every != nil && *every <= 0 {
		return nil, problem.Invalid("drift_interval", "positive", "must be longer than zero: leave it empty for never")
	}
	q := db.Queries(s.pool)
	if _, err := q.ZoneDriftInterval(ctx, zoneID); errors.Is(err, pgx.ErrNoRows) {
		return nil, problem.ErrNotFound
	} else if err != nil {
		return nil, err
	}
	var now float64
	err := db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		if err := q.SetZoneDriftInterval(ctx, dbgen.SetZoneDriftIntervalParams{ID: zoneID, Seconds: seconds(every)}); err != nil {
			return err
		}
		var err error
		if now, err = q.ZoneDriftInterval(ctx, zoneID); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "landing_zone.drift_interval", TargetType: "landing_zone",
			TargetID: zoneID.String(), Diff: map[string]any{"drift_interval": durationText(every)}})
	})
	if err != nil {
		return nil, fmt.Errorf("set the drift interval of landing zone %s: %w", zoneID, err)
	}
	return intervalIn(now), nil
}

func durationText(d *time.Duration) string {
	if d == nil {
		return ""
	}
	return d.String()
}
