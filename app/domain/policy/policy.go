// Package policy keeps a landing zone's plan policies: CEL expressions over each resource a
// preview plans, checked after the preview of an operation and before anything is applied. A
// mandatory policy that a resource fails stops the operation; an advisory one is shown. Every
// change of a zone's policies makes a new version of its set, kept forever, and each operation
// records the version its plan was checked against.
package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Level says what a failed policy does, as CrossGuard's enforcement levels do.
type Level string

const (
	// Mandatory stops the operation after its preview, before anything is applied.
	Mandatory Level = "mandatory"
	// Advisory is shown with the preview, on the operation and to its approvers.
	Advisory Level = "advisory"
)

// Rule is a policy as a version of the zone's set keeps it.
type Rule struct {
	ID         uuid.UUID `json:"id"`
	Name       string    `json:"name"`
	Message    string    `json:"message"`
	Expression string    `json:"expression"`
	Level      Level     `json:"level"`
	Enabled    bool      `json:"enabled"`
}

// Policy is one of a landing zone's policies as it is now.
type Policy struct {
	Rule
	LandingZoneID uuid.UUID `json:"landing_zone_id"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// Version is the zone's set of policies after one change.
type Version struct {
	Version    int32     `json:"version"`
	Change     string    `json:"change"` // create, edit or remove
	PolicyName string    `json:"policy_name"`
	Policies   []Rule    `json:"policies"`
	ChangedBy  string    `json:"changed_by"`
	CreatedAt  time.Time `json:"created_at"`
}

// Input is what a provider admin gives for a policy. Enabled defaults to true.
type Input struct {
	Name       string `json:"name"`
	Message    string `json:"message"`
	Expression string `json:"expression"`
	Level      Level  `json:"level"`
	Enabled    *bool  `json:"enabled"`
}

// Service keeps the landing zones' policies. Provider admins only: others are told a zone's
// policies are not there.
type Service struct {
	pool *pgxpool.Pool
}

// NewService returns the service.
func NewService(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

var validName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

const maxMessage = 500

// check validates in, the expression compiled and type-checked.
func (in *Input) check() error {
	v := &problem.ValidationError{}
	in.Name = strings.TrimSpace(in.Name)
	in.Message = strings.TrimSpace(in.Message)
	switch {
	case in.Name == "":
		v.Add("name", "required", "is required")
	case !validName.MatchString(in.Name):
		v.Add("name", "pattern", "must start with a lowercase letter and hold only lowercase letters, digits and hyphens, at most 63")
	}
	switch {
	case in.Message == "":
		v.Add("message", "required", "is required: it is what people read when a resource fails the policy")
	case len(in.Message) > maxMessage:
		v.Add("message", "max_length", "must be at most %d characters", maxMessage)
	}
	if in.Level != Mandatory && in.Level != Advisory {
		v.Add("level", "one_of", "must be mandatory or advisory")
	}
	if _, err := compile(in.Expression); err != nil {
		v.Add("expression", "cel", "%s", err)
	}
	return v.Err()
}

func (in Input) enabled() bool { return in.Enabled == nil || *in.Enabled }

// List returns the zone's policies by name.
func (s *Service) List(ctx context.Context, actor access.Principal, zoneID uuid.UUID) ([]Policy, error) {
	if err := s.see(ctx, actor, zoneID); err != nil {
		return nil, err
	}
	rows, err := db.Queries(s.pool).ListPlanPolicies(ctx, zoneID)
	if err != nil {
		return nil, fmt.Errorf("list the policies of landing zone %s: %w", zoneID, err)
	}
	out := make([]Policy, len(rows))
	for i, r := range rows {
		out[i] = view(r)
	}
	return out, nil
}

// Get returns one of the zone's policies.
func (s *Service) Get(ctx context.Context, actor access.Principal, zoneID, id uuid.UUID) (Policy, error) {
	if err := s.see(ctx, actor, zoneID); err != nil {
		return Policy{}, err
	}
	row, err := db.Queries(s.pool).GetPlanPolicy(ctx, dbgen.GetPlanPolicyParams{ID: id, LandingZoneID: zoneID})
	if errors.Is(err, pgx.ErrNoRows) {
		return Policy{}, problem.ErrNotFound
	}
	if err != nil {
		return Policy{}, fmt.Errorf("get policy %s: %w", id, err)
	}
	return view(row), nil
}

// Versions returns every version of the zone's set, newest first.
func (s *Service) Versions(ctx context.Context, actor access.Principal, zoneID uuid.UUID) ([]Version, error) {
	if err := s.see(ctx, actor, zoneID); err != nil {
		return nil, err
	}
	rows, err := db.Queries(s.pool).ListPlanPolicyVersions(ctx, zoneID)
	if err != nil {
		return nil, fmt.Errorf("list the policy versions of landing zone %s: %w", zoneID, err)
	}
	out := make([]Version, len(rows))
	for i, r := range rows {
		out[i] = Version{Version: r.Version, Change: r.Change, PolicyName: r.PolicyName, ChangedBy: r.ChangedByEmail, CreatedAt: r.CreatedAt}
		if err := json.Unmarshal(r.Policies, &out[i].Policies); err != nil {
			return nil, fmt.Errorf("policy version %d: %w", r.Version, err)
		}
	}
	return out, nil
}

// Create adds a policy to the zone: a new version of its set.
func (s *Service) Create(ctx context.Context, actor access.Principal, zoneID uuid.UUID, in Input) (Policy, error) {
	if !actor.ProviderAdmin {
		return Policy{}, problem.ErrForbidden
	}
	if err := in.check(); err != nil {
		return Policy{}, err
	}
	var out Policy
	err := s.change(ctx, actor, zoneID, "create", func(q *dbgen.Queries) (dbgen.PlanPolicy, error) {
		return q.CreatePlanPolicy(ctx, dbgen.CreatePlanPolicyParams{LandingZoneID: zoneID, Name: in.Name, Message: in.Message,
			Expression: in.Expression, Level: string(in.Level), Enabled: in.enabled()})
	}, &out)
	return out, err
}

// Update changes one of the zone's policies: a new version of its set.
func (s *Service) Update(ctx context.Context, actor access.Principal, zoneID, id uuid.UUID, in Input) (Policy, error) {
	if !actor.ProviderAdmin {
		return Policy{}, problem.ErrForbidden
	}
	if err := in.check(); err != nil {
		return Policy{}, err
	}
	var out Policy
	err := s.change(ctx, actor, zoneID, "edit", func(q *dbgen.Queries) (dbgen.PlanPolicy, error) {
		return q.UpdatePlanPolicy(ctx, dbgen.UpdatePlanPolicyParams{ID: id, LandingZoneID: zoneID, Name: in.Name, Message: in.Message,
			Expression: in.Expression, Level: string(in.Level), Enabled: in.enabled()})
	}, &out)
	return out, err
}

// Remove takes a policy out of the zone's set: a new version of it. Earlier versions keep it.
func (s *Service) Remove(ctx context.Context, actor access.Principal, zoneID, id uuid.UUID) error {
	if !actor.ProviderAdmin {
		return problem.ErrForbidden
	}
	return s.change(ctx, actor, zoneID, "remove", func(q *dbgen.Queries) (dbgen.PlanPolicy, error) {
		return q.DeletePlanPolicy(ctx, dbgen.DeletePlanPolicyParams{ID: id, LandingZoneID: zoneID})
	}, nil)
}

// change makes one change of the zone's policies, its new version of the set and its audit
// event, in one transaction; the zone's row is locked first, so versions follow one another.
func (s *Service) change(ctx context.Context, actor access.Principal, zoneID uuid.UUID, kind string,
	do func(q *dbgen.Queries) (dbgen.PlanPolicy, error), out *Policy) error {
	err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		if _, err := q.LockPolicyZone(ctx, zoneID); err != nil {
			return err
		}
		row, err := do(q)
		if err != nil {
			return err
		}
		ver, err := q.AddPlanPolicyVersion(ctx, dbgen.AddPlanPolicyVersionParams{LandingZoneID: zoneID, Change: kind, PolicyName: row.Name,
			ChangedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil}})
		if err != nil {
			return err
		}
		diff := map[string]any{"version": ver.Version, "name": row.Name}
		if kind != "remove" {
			diff["message"], diff["expression"], diff["level"], diff["enabled"] = row.Message, row.Expression, row.Level, row.Enabled
		}
		if out != nil {
			*out = view(row)
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "landing_zone.policy." + kind, TargetType: "plan_policy",
			TargetID: row.ID.String(), Diff: diff})
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return problem.ErrNotFound
	case db.IsUniqueViolation(err):
		return problem.Invalid("name", "unique", "the landing zone has a policy named so already")
	case err != nil:
		return fmt.Errorf("%s a policy of landing zone %s: %w", kind, zoneID, err)
	}
	return nil
}

// see answers whether the actor may read the zone's policies, and whether the zone is there.
func (s *Service) see(ctx context.Context, actor access.Principal, zoneID uuid.UUID) error {
	if !actor.ProviderAdmin {
		return problem.ErrNotFound
	}
	_, err := db.Queries(s.pool).GetLandingZone(ctx, zoneID)
	if errors.Is(err, pgx.ErrNoRows) {
		return problem.ErrNotFound
	}
	return err
}

func view(r dbgen.PlanPolicy) Policy {
	return Policy{Rule: Rule{ID: r.ID, Name: r.Name, Message: r.Message, Expression: r.Expression, Level: Level(r.Level), Enabled: r.Enabled},
		LandingZoneID: r.LandingZoneID, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}
