package component

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"nimbus/app/domain/proxmox"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/kernel/secrets"
	"nimbus/app/platform/audit"
	"nimbus/app/platform/pulumix"
	"nimbus/app/platform/tracing"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// CheckStatus is where a check stands.
type CheckStatus string

// The statuses of a check.
const (
	CheckQueued    CheckStatus = "queued"
	CheckRunning   CheckStatus = "running"
	CheckSucceeded CheckStatus = "succeeded"
	CheckFailed    CheckStatus = "failed"
)

// CheckMachine is a check's life; this file alone records checks and moves them. A running
// check whose worker stopped is taken up again where it stands.
var CheckMachine = lifecycle.Machine[CheckStatus]{
	Name: "component check", Table: "component_checks", Column: "status", Writer: "app/domain/component/check.go", Start: CheckQueued,
	Moves: map[CheckStatus][]CheckStatus{
		CheckQueued:  {CheckRunning, CheckFailed},
		CheckRunning: {CheckRunning, CheckSucceeded, CheckFailed},
	},
}

// Check is one preview of a draft by the real engine.
type Check struct {
	ID          uuid.UUID      `json:"id"`
	ComponentID uuid.UUID      `json:"component_id"`
	Status      CheckStatus    `json:"status"`
	Output      string         `json:"output"`
	Changes     map[string]int `json:"changes"`
	CreatedAt   time.Time      `json:"created_at"`
	StartedAt   *time.Time     `json:"started_at"`
	FinishedAt  *time.Time     `json:"finished_at"`
}

// Done reports whether the check has finished, either way.
func (c Check) Done() bool { return CheckMachine.Ended(c.Status) }

func checkFromRow(r dbgen.ComponentCheck) Check {
	c := Check{ID: r.ID, ComponentID: r.ComponentID, Status: CheckStatus(r.Status), Output: r.Output, CreatedAt: r.CreatedAt,
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Changes: map[string]int{}}
	_ = json.Unmarshal(r.Changes, &c.Changes)
	return c
}

// CheckArgs asks a worker to run a check.
type CheckArgs struct {
	CheckID uuid.UUID `json:"check_id"`
}

// Kind names the job in River.
func (CheckArgs) Kind() string { return "component_check" }

// InsertOpts puts checks in a queue of their own, with workers of their own, so that deploys
// never wait behind them.
func (CheckArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: jobs.CheckQueue} }

// Limits on checks. Each tenant counts on its own; checks of provider-level components count
// together, as one more tenant.
const (
	// DefaultChecksPerMinute is how many checks a tenant may ask for in a minute.
	DefaultChecksPerMinute = 30
	// DefaultChecksPerTenant is how many of a tenant's checks run at once.
	DefaultChecksPerTenant = 2
)

// LimitCheckRequests sets how many checks one tenant may ask for in a minute; zero keeps the
// default.
func (s *Service) LimitCheckRequests(perMinute int) *Service {
	if perMinute > 0 {
		s.checksPerMinute = perMinute
	}
	return s
}

// RequestCheck snapshots the draft and queues a check of it; authors of the component may. A
// Proxmox component's draft previews with the API access of zone, a Proxmox landing zone that
// has one (CheckZones lists them); zone is ignored for any other component.
func (s *Service) RequestCheck(ctx context.Context, actor access.Principal, id, zone uuid.UUID) (Check, error) {
	c, err := s.Get(ctx, actor, id)
	if err != nil {
		return Check{}, err
	}
	if !can(actor, access.ComponentDefinitionUpdate, c.TenantID) {
		return Check{}, problem.ErrForbidden
	}
	if c.Language != "yaml" {
		return Check{}, problem.Invalid("language", "check", "only YAML programs can be checked here so far")
	}
	var out Check
	err = db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		zone, err := checkZone(ctx, q, actor, c, zone)
		if err != nil {
			return err
		}
		if err := s.allowCheck(ctx, q, c.TenantID); err != nil {
			return err
		}
		row, err := q.CreateCheck(ctx, dbgen.CreateCheckParams{ComponentID: id, Code: c.Code, InputSchema: c.InputSchema,
			RequestedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil}, LandingZoneID: zone})
		if err != nil {
			return err
		}
		out = checkFromRow(row)
		// The request's span names the check; the job carries the span on to the worker.
		ctx := tracing.Tag(ctx, tracing.CheckID.String(row.ID.String()))
		if _, err := s.jobs.InsertTx(ctx, tx, CheckArgs{CheckID: row.ID}, nil); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: tenantOf(c), Action: "component.check", TargetType: "component",
			TargetID: id.String(), Diff: map[string]any{"name": c.Name, "check": row.ID}})
	})
	if err != nil {
		return Check{}, fmt.Errorf("request check: %w", err)
	}
	return out, nil
}

// queueCheck records a check of a program and input schema that no one asked for in person
// (a commit pushed to a linked repository) and queues it in tx.
func (s *Service) queueCheck(ctx context.Context, tx pgx.Tx, component uuid.UUID, code string, schema json.RawMessage) (dbgen.ComponentCheck, error) {
	row, err := db.Queries(tx).CreateCheck(ctx, dbgen.CreateCheckParams{ComponentID: component, Code: code, InputSchema: schema})
	if err != nil {
		return row, err
	}
	ctx = tracing.Tag(ctx, tracing.CheckID.String(row.ID.String()))
	_, err = s.jobs.InsertTx(ctx, tx, CheckArgs{CheckID: row.ID}, nil)
	return row, err
}

// providerAdminsCheck is why a tenant's author cannot check a Proxmox component.
const providerAdminsCheck = "a Proxmox component is checked with a landing zone's Proxmox API access, which only provider admins may use"

// checkZone is the landing zone whose Proxmox API access a check of c previews with: for a
// Proxmox component, the zone the actor chose, which must be a Proxmox zone with its access;
// none for any other component. The access is the provider's: only provider admins use it.
func checkZone(ctx context.Context, q *dbgen.Queries, actor access.Principal, c Component, zone uuid.UUID) (uuid.NullUUID, error) {
	if c.Provider != proxmox.Provider {
		return uuid.NullUUID{}, nil
	}
	zones, err := proxmox.Zones(ctx, q)
	if err != nil {
		return uuid.NullUUID{}, err
	}
	switch {
	case len(zones) == 0:
		return uuid.NullUUID{}, problem.Invalid("landing_zone_id", "proxmox_access", "%s", proxmox.NoZoneWithAccess)
	case !actor.ProviderAdmin:
		return uuid.NullUUID{}, problem.Invalid("landing_zone_id", "provider_admin", "%s", providerAdminsCheck)
	case zone == uuid.Nil:
		return uuid.NullUUID{}, problem.Invalid("landing_zone_id", "required", "choose the Proxmox landing zone whose API access the check previews with")
	}
	for _, z := range zones {
		if z.ID == zone {
			return uuid.NullUUID{UUID: zone, Valid: true}, nil
		}
	}
	return uuid.NullUUID{}, problem.Invalid("landing_zone_id", "proxmox_access", "must be a Proxmox landing zone that has its Proxmox API access")
}

// CheckZones are the landing zones a check of a Proxmox component may preview with: the
// Proxmox zones that have their API access. Provider admins only, as is their access.
func (s *Service) CheckZones(ctx context.Context, actor access.Principal) ([]proxmox.Zone, error) {
	if !actor.ProviderAdmin {
		return nil, problem.ErrForbidden
	}
	return proxmox.Zones(ctx, db.Queries(s.pool))
}

// allowCheck refuses a check when the tenant asked for checksPerMinute of them in the last
// minute. The count is of the tenant's check rows, so every replica sees the same; the lock,
// held to the end of the transaction that adds the row, keeps two requests from both taking
// the last place.
func (s *Service) allowCheck(ctx context.Context, q *dbgen.Queries, tenant *uuid.UUID) error {
	t := nullTenant(tenant)
	if err := q.LockTenantPlaces(ctx, dbgen.LockTenantPlacesParams{Scope: "checks.request", TenantID: t}); err != nil {
		return err
	}
	recent, err := q.RecentChecks(ctx, dbgen.RecentChecksParams{TenantID: t, WindowSecs: time.Minute.Seconds()})
	if err != nil {
		return err
	}
	if recent.N < int64(s.checksPerMinute) {
		return nil
	}
	wait := max(1, int(math.Ceil(recent.FreesIn)))
	whose := "this tenant"
	if tenant == nil {
		whose = "provider-level components"
	}
	return &problem.TooManyRequests{
		RetryAfter: wait,
		Message: fmt.Sprintf("too many checks: %s may ask for %d a minute; try again in %d seconds",
			whose, s.checksPerMinute, wait),
	}
}

func nullTenant(tenant *uuid.UUID) uuid.NullUUID {
	if tenant == nil {
		return uuid.NullUUID{}
	}
	return uuid.NullUUID{UUID: *tenant, Valid: true}
}

// Check returns a check of a component the actor may see.
func (s *Service) Check(ctx context.Context, actor access.Principal, checkID uuid.UUID) (Check, error) {
	row, err := db.Queries(s.pool).GetCheck(ctx, checkID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Check{}, problem.ErrNotFound
	}
	if err != nil {
		return Check{}, fmt.Errorf("get check: %w", err)
	}
	c, err := s.Get(ctx, actor, row.ComponentID)
	if err != nil {
		return Check{}, err
	}
	// A check shows the draft it ran on: it is for the component's authors only.
	if !can(actor, access.ComponentDefinitionUpdate, c.TenantID) {
		return Check{}, problem.ErrNotFound
	}
	return checkFromRow(row), nil
}

// maxCheckOutput bounds what is kept of the engine's output (as AppendCheckOutput does).
const maxCheckOutput = 256 << 10

// checkTimeout bounds one check; a preview of one component takes seconds.
const checkTimeout = 10 * time.Minute

// CheckWorker runs checks with the Pulumi runner, at most so many of one tenant's at once
// (jobs.PerTenant says how): a check whose tenant runs its share waits queued, its worker free
// for other tenants' checks. A check left running by a node that died counts against its
// tenant only until its timeout has passed; River's rescuer later runs its job again, and the
// claim takes it over (StartCheck accepts a check found running).
type CheckWorker struct {
	river.WorkerDefaults[CheckArgs]
	pool   *pgxpool.Pool
	runner *pulumix.Runner // nil when no toolchain is installed
	keys   *secrets.Keyring
	log    *slog.Logger
	places jobs.PerTenant
}

// NewCheckWorker returns the worker; runner may be nil, and then checks fail saying why; keys
// opens the Proxmox API access a check previews with. It runs DefaultChecksPerTenant of a
// tenant's checks at once unless PerTenant says otherwise.
func NewCheckWorker(pool *pgxpool.Pool, runner *pulumix.Runner, keys *secrets.Keyring, log *slog.Logger) *CheckWorker {
	return &CheckWorker{pool: pool, runner: runner, keys: keys, log: log,
		places: jobs.PerTenant{Scope: "checks.run", Limit: DefaultChecksPerTenant, Wait: time.Second}}
}

// PerTenant sets how many of one tenant's checks run at once, on all nodes together; zero
// keeps the default.
func (w *CheckWorker) PerTenant(n int) *CheckWorker {
	if n > 0 {
		w.places.Limit = n
	}
	return w
}

// Timeout bounds one check.
func (w *CheckWorker) Timeout(*river.Job[CheckArgs]) time.Duration { return checkTimeout }

// Work runs the check and records its result. Engine complaints are a failed check, not a
// failed job; only trouble reaching the database makes River try again.
func (w *CheckWorker) Work(ctx context.Context, job *river.Job[CheckArgs]) error {
	q := db.Queries(w.pool)
	row, claimed, err := w.claim(ctx, job.Args.CheckID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // already finished, or the component is gone
	}
	if err != nil {
		return err
	}
	if !claimed {
		return w.places.Snooze()
	}
	ctx = tracing.Tag(ctx, tracing.CheckID.String(row.ID.String())) // the job's span, and the engine's beneath it
	finish := func(status CheckStatus, output string, changes map[string]int) error {
		// Postgres refuses text that starts inside a character; CutTail starts at one.
		output = pulumix.CutTail(output, maxCheckOutput)
		ch, _ := json.Marshal(changes)
		return db.Queries(w.pool).FinishCheck(context.WithoutCancel(ctx), dbgen.FinishCheckParams{ID: row.ID, Status: string(status), Output: output, Changes: ch})
	}
	if w.runner == nil {
		return finish(CheckFailed, "the Pulumi toolchain is not installed on this server: run go tool task toolchain, or set NIMBUS_PULUMI_DIR", nil)
	}
	v := &problem.ValidationError{}
	in := ParseSchema("input_schema", row.InputSchema, v)
	if in == nil {
		said := make([]string, len(v.Fields))
		for i, f := range v.Fields {
			said[i] = f.Message
		}
		return finish(CheckFailed, "The input schema cannot be read: "+strings.Join(said, "; "), nil)
	}
	live := &liveOutput{flush: func(s string) {
		if err := q.AppendCheckOutput(ctx, dbgen.AppendCheckOutputParams{ID: row.ID, Output: s}); err != nil {
			w.log.Warn("check progress not saved", "check", row.ID, "err", err)
		}
	}}
	st := pulumix.Stack{Code: row.Code}
	st.Config, st.Secrets = placeholders(in, ParseYAML(row.Code, Scope{}, &problem.ValidationError{}))
	if row.LandingZoneID.Valid {
		creds, err := proxmox.Open(ctx, q, w.keys, row.LandingZoneID.UUID)
		if errors.Is(err, proxmox.ErrNoAccess) {
			return finish(CheckFailed, "the check could not run: "+err.Error(), nil)
		}
		if err != nil {
			return err
		}
		if err := creds.Give(&st); err != nil {
			return finish(CheckFailed, "the check could not run: "+err.Error(), nil)
		}
	}
	res, err := w.runner.Check(ctx, st, live)
	live.Close()
	if err != nil && ctx.Err() != nil {
		return err // stopped by a shutdown or the job's timeout: River runs it again
	}
	if err != nil {
		return finish(CheckFailed, "the check could not run: "+err.Error(), nil)
	}
	status := CheckFailed
	if res.Succeeded {
		status = CheckSucceeded
	}
	return finish(status, res.Output, res.Changes)
}

// claim marks the check running, unless its tenant already runs its share of checks: then it
// returns false and the check stays queued. pgx.ErrNoRows means there is nothing to run.
func (w *CheckWorker) claim(ctx context.Context, id uuid.UUID) (dbgen.ComponentCheck, bool, error) {
	var (
		row     dbgen.ComponentCheck
		claimed bool
	)
	err := db.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		tenant, err := q.CheckTenant(ctx, id)
		if err != nil {
			return err
		}
		room, err := w.places.Room(ctx, q, tenant, func() (int64, error) {
			return q.CountRunningChecks(ctx, dbgen.CountRunningChecksParams{TenantID: tenant, ID: id,
				StaleSecs: (checkTimeout + time.Minute).Seconds()})
		})
		if err != nil || !room {
			return err
		}
		row, err = q.StartCheck(ctx, id)
		claimed = err == nil
		return err
	})
	return row, claimed, err
}

// placeholders gives every input a value for a check: its default, else something of its
// type. Inputs the schema marks secret, or the program declares secret, are set as secrets, as
// a deploy sets them; prog may be nil.
func placeholders(s *Schema, prog *Program) (plain map[string]any, secret map[string]string) {
	plain, secret = map[string]any{}, map[string]string{}
	for _, name := range s.Names() {
		p := s.Properties[name]
		v := p.Default
		if v == nil && len(p.Enum) > 0 {
			v = p.Enum[0]
		}
		if v == nil {
			switch p.Type {
			case "string":
				v = "nimbus-check"
			case "integer", "number":
				v = 1.0
				if p.Minimum != nil {
					v = *p.Minimum
				}
			case "boolean":
				v = false
			case "array":
				v = []any{}
			case "object":
				v = map[string]any{}
			}
		}
		if p.Secret || prog != nil && prog.Config[name].Secret {
			secret[name] = secretText(v)
			continue
		}
		plain[name] = v
	}
	return plain, secret
}

// secretText is a secret input's value as secret config holds it: text, which the engine
// converts to the declared type as it does plain config.
func secretText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
