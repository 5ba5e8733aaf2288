package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/outbox"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/app/platform/pulumix"
	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// What a deployment's drift stands at.
const (
	InSync       = "in_sync"
	Drifted      = "drifted"
	DriftUnknown = "unknown" // never checked
)

// settleDrift records what an operation that succeeded says of its deployment's drift, in the
// transaction that ends it: a check, what it found; a reconcile (an update that read the
// resources back first) or an accept (a refresh), that the resources are as the state records
// again. A deployment found drifted, or drifted otherwise than before, is told as
// drift.detected; one found in sync after it was drifted, as drift.resolved.
func settleDrift(ctx context.Context, q *dbgen.Queries, op dbgen.Operation) error {
	kind := Kind(op.Kind)
	if kind != KindDriftCheck && kind != KindRefresh && !(kind == KindUpdate && op.Refresh) {
		return nil
	}
	found := []pulumix.Drifted{}
	if kind == KindDriftCheck {
		steps, err := q.ListOperationSteps(ctx, op.ID)
		if err != nil {
			return err
		}
		for _, s := range steps {
			if s.Name == StepDrift {
				if err := json.Unmarshal(s.Result, &found); err != nil {
					return fmt.Errorf("what the drift check found: %w", err)
				}
			}
		}
	}
	status := InSync
	if len(found) > 0 {
		status = Drifted
	}
	raw, _ := json.Marshal(found)
	was, err := recordDrift(ctx, q, op.DeploymentID, status, raw)
	if err != nil {
		return err
	}
	e := outbox.Event{Subject: was.Name, Tenant: was.TenantID, Environment: was.EnvironmentID,
		Instance: was.StackInstanceID.UUID, Deployment: op.DeploymentID,
		Data: map[string]any{"deployment": was.Name, "operation": op.ID.String(), "kind": op.Kind, "resources": found}}
	switch {
	case status == Drifted && (was.Was != Drifted || !sameDrift(was.WasDrift, raw)):
		e.Type = "drift.detected"
	case status == InSync && was.Was == Drifted:
		e.Type = "drift.resolved"
	default:
		return nil
	}
	return outbox.Emit(ctx, q, e)
}

// sameDrift reports whether two lists of drifted resources say the same.
func sameDrift(a, b []byte) bool {
	var x, y []pulumix.Drifted
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ax, _ := json.Marshal(x)
	by, _ := json.Marshal(y)
	return bytes.Equal(ax, by)
}

// DriftScanArgs asks for the drift checks that are due to be queued.
type DriftScanArgs struct{}

// Kind names the job in River.
func (DriftScanArgs) Kind() string { return "drift_scan" }

// InsertOpts puts the scan in the housekeeping queue; the checks it queues are operations.
func (DriftScanArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: jobs.HousekeepingQueue}
}

// DriftScanner queues the drift checks that are due (see DriftDue): deployments in
// environments whose own drift interval, or else their landing zone's, is set.
type DriftScanner struct {
	river.WorkerDefaults[DriftScanArgs]
	pool *pgxpool.Pool
}

// NewDriftScanner returns the scanner.
func NewDriftScanner(pool *pgxpool.Pool) *DriftScanner { return &DriftScanner{pool: pool} }

// Timeout bounds one scan.
func (w *DriftScanner) Timeout(*river.Job[DriftScanArgs]) time.Duration { return time.Minute }

// driftBatch is the most checks one scan queues: the rest wait for the next scan, so that a
// zone whose interval was just set does not start every check at once.
const driftBatch = 50

// Work queues the checks that are due, each in a transaction of its own that finds its
// deployment still deployed and idle.
func (w *DriftScanner) Work(ctx context.Context, _ *river.Job[DriftScanArgs]) error {
	queue, err := jobs.FromContext(ctx)
	if err != nil {
		return err
	}
	due, err := dbgen.New(w.pool).DriftDue(ctx, driftBatch)
	if err != nil {
		return fmt.Errorf("drift checks due: %w", err)
	}
	for _, id := range due {
		err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
			q := dbgen.New(tx)
			d, err := q.GetDeployment(ctx, id)
			if err != nil {
				return err
			}
			if status, err := q.ShareEnvironment(ctx, d.EnvironmentID); err != nil || lifecycle.EnvironmentStatus(status) != lifecycle.EnvironmentActive {
				return err
			}
			if err := q.LockDeployment(ctx, id); err != nil {
				return err
			}
			if d, err = q.GetDeployment(ctx, id); err != nil || DeploymentStatus(d.Status) != Deployed {
				return err
			}
			if busy, err := q.AnyOperationPending(ctx, id); err != nil || busy {
				return err
			}
			_, err = queueOperation(ctx, tx, queue, id, KindDriftCheck, uuid.Nil, inputs{Plain: map[string]any{}})
			return err
		})
		if err != nil {
			return fmt.Errorf("queue the drift check of %s: %w", id, err)
		}
	}
	return nil
}

// DriftSchedule looks for drift checks that are due every quarter of a minute: checks run at
// most that much later than their interval says.
func DriftSchedule() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(15*time.Second),
		func() (river.JobArgs, *river.InsertOpts) { return DriftScanArgs{}, nil },
		&river.PeriodicJobOpts{ID: "drift_scan"})
}

// DriftInterval is how often an environment's deployments are checked for drift: its own
// setting, else its landing zone's. Nil is never; an environment's own zero turns its zone's off.
type DriftInterval struct {
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

// TenantDriftFloor is the shortest drift interval a tenant's admins may set for their
// environment: every check is an engine run on the shared workers. Provider admins may set any.
const TenantDriftFloor = 15 * time.Minute

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

// EnvironmentDriftInterval returns how often the environment's deployments are checked.
func (s *Service) EnvironmentDriftInterval(ctx context.Context, actor access.Principal, envID uuid.UUID) (DriftInterval, error) {
	q := dbgen.New(s.pool)
	env, err := q.GetEnvironment(ctx, envID)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !actor.Can(access.EnvironmentRead, env.TenantID) {
		return DriftInterval{}, problem.ErrNotFound
	}
	if err != nil {
		return DriftInterval{}, err
	}
	row, err := q.DriftIntervals(ctx, envID)
	if err != nil {
		return DriftInterval{}, err
	}
	out := DriftInterval{Own: intervalIn(row.Own), Zone: intervalIn(row.Zone)}
	out.Effective = out.Zone
	if out.Own != nil {
		out.Effective = out.Own
	}
	if out.Effective != nil && *out.Effective == 0 {
		out.Effective = nil
	}
	return out, nil
}

// SetEnvironmentDriftInterval sets how often the environment's deployments are checked for
// drift, overriding its zone's: nil follows the zone, zero turns checks off. Its tenant's
// admins may.
func (s *Service) SetEnvironmentDriftInterval(ctx context.Context, actor access.Principal, envID uuid.UUID, every *time.Duration) (DriftInterval, error) {
	env, err := dbgen.New(s.pool).GetEnvironment(ctx, envID)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !actor.Can(access.EnvironmentRead, env.TenantID) {
		return DriftInterval{}, problem.ErrNotFound
	}
	if err != nil {
		return DriftInterval{}, err
	}
	if !actor.Can(access.EnvironmentManage, env.TenantID) {
		return DriftInterval{}, problem.ErrForbidden
	}
	if every != nil && *every < 0 {
		return DriftInterval{}, problem.Invalid("drift_interval", "positive", "must not be negative")
	}
	if every != nil && *every > 0 && *every < TenantDriftFloor && !actor.ProviderAdmin {
		return DriftInterval{}, problem.Invalid("drift_interval", "minimum", "must be at least %s: each check runs the engine", TenantDriftFloor)
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := dbgen.New(tx)
		if err := q.SetEnvironmentDriftInterval(ctx, dbgen.SetEnvironmentDriftIntervalParams{ID: envID, Seconds: seconds(every)}); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: env.TenantID, Action: "environment.drift_interval", TargetType: "environment",
			TargetID: envID.String(), Diff: map[string]any{"drift_interval": durationText(every)}})
	})
	if err != nil {
		return DriftInterval{}, fmt.Errorf("set the drift interval of environment %s: %w", envID, err)
	}
	return s.EnvironmentDriftInterval(ctx, actor, envID)
}

// SetZoneDriftInterval sets how often the deployments of the zone's environments are checked
// for drift, nil for never; provider admins may, and only they see zones.
func (s *Service) SetZoneDriftInterval(ctx context.Context, actor access.Principal, zoneID uuid.UUID, every *time.Duration) (*Interval, error) {
	if !actor.ProviderAdmin {
		return nil, problem.ErrNotFound
	}
	if every != nil && *every <= 0 {
		return nil, problem.Invalid("drift_interval", "positive", "must be longer than zero: leave it empty for never")
	}
	q := dbgen.New(s.pool)
	if _, err := q.ZoneDriftInterval(ctx, zoneID); errors.Is(err, pgx.ErrNoRows) {
		return nil, problem.ErrNotFound
	} else if err != nil {
		return nil, err
	}
	var now float64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := dbgen.New(tx)
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
