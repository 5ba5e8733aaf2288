package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/problem"
	"nimbus/db/dbgen"
)

// Check is the check of an operation's plan: the version of its zone's policies it answered
// to, how many policies and resources were checked, and what did not comply.
type Check struct {
	Version    int32       `json:"version"`
	Policies   int32       `json:"policies"`
	Resources  int32       `json:"resources"`
	Violations []Violation `json:"violations"`
}

// Of returns the violations of the level.
func (c *Check) Of(level Level) []Violation {
	var out []Violation
	for _, v := range c.Violations {
		if v.Level == level {
			out = append(out, v)
		}
	}
	return out
}

// Refusal is the operation's error when a mandatory policy failed, naming each resource, policy
// and message; nil when none did.
func (c *Check) Refusal() error {
	failed := c.Of(Mandatory)
	if len(failed) == 0 {
		return nil
	}
	parts := make([]string, len(failed))
	for i, v := range failed {
		parts[i] = fmt.Sprintf("mandatory policy %s refused %s %s: %s", v.Policy, v.Type, v.Name, v.Message)
		if v.Detail != "" {
			parts[i] += " (" + v.Detail + ")"
		}
	}
	return &problem.Denied{Message: strings.Join(parts, "; ")}
}

// current is the zone's latest set of policies, the enabled ones: none when the zone has none.
func current(ctx context.Context, q *dbgen.Queries, op uuid.UUID) (zone uuid.UUID, version int32, rules []Policy, err error) {
	z, err := q.OperationPolicyZone(ctx, op)
	if err != nil || !z.Valid {
		return uuid.Nil, 0, nil, err
	}
	v, err := q.LatestPlanPolicyVersion(ctx, z.UUID)
	if errors.Is(err, pgx.ErrNoRows) {
		return z.UUID, 0, nil, nil
	}
	if err != nil {
		return uuid.Nil, 0, nil, err
	}
	var all []Rule
	if err := json.Unmarshal(v.Policies, &all); err != nil {
		return uuid.Nil, 0, nil, fmt.Errorf("policy version %d of landing zone %s: %w", v.Version, z.UUID, err)
	}
	for _, r := range all {
		if r.Enabled {
			rules = append(rules, Policy{Rule: r, LandingZoneID: z.UUID})
		}
	}
	return z.UUID, v.Version, rules, nil
}

// Applies reports whether an operation's plan answers to policies: its landing zone has an
// enabled one.
func Applies(ctx context.Context, q *dbgen.Queries, op uuid.UUID) (bool, error) {
	_, _, rules, err := current(ctx, q, op)
	return len(rules) > 0, err
}

// CheckPlan checks an operation's plan against its zone's latest policies and records the
// check; nil when the zone has no enabled policy. The caller ends the operation with the
// check's Refusal.
func CheckPlan(ctx context.Context, q *dbgen.Queries, op uuid.UUID, plan []Resource) (*Check, error) {
	zone, version, rules, err := current(ctx, q, op)
	if err != nil || len(rules) == 0 {
		return nil, err
	}
	s, err := q.OperationPolicySubject(ctx, op)
	if err != nil {
		return nil, err
	}
	others, err := declared(ctx, q, op)
	if err != nil {
		return nil, err
	}
	checking, cancel := context.WithTimeout(ctx, checkTime)
	defer cancel()
	c := &Check{Version: version, Policies: int32(len(rules)), Violations: evaluate(checking, rules, Subject(s), plan, others)}
	for _, r := range plan {
		if r.Checked() {
			c.Resources++
		}
	}
	violations, err := json.Marshal(c.Violations)
	if err != nil {
		return nil, err
	}
	err = q.RecordPolicyCheck(ctx, dbgen.RecordPolicyCheckParams{OperationID: op, LandingZoneID: zone, Version: version,
		Policies: c.Policies, Resources: c.Resources, Violations: violations})
	if err != nil {
		return nil, fmt.Errorf("record the policy check of operation %s: %w", op, err)
	}
	return c, nil
}

// stale refuses to carry out a preview whose plan was checked against other policies than its
// zone has now.
func stale() error {
	return problem.Invalid("operation", "stale", "the landing zone's policies changed after the preview this operation applies: preview it again")
}

// Carry gives an operation that carries out a preview the check of that preview's plan, when
// the zone's policies are still those it was checked against, and refuses it when they are not.
func Carry(ctx context.Context, q *dbgen.Queries, op, preview uuid.UUID) error {
	_, version, rules, err := current(ctx, q, op)
	if err != nil || len(rules) == 0 {
		return err
	}
	c, err := q.GetPolicyCheck(ctx, preview)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && c.Version != version {
		return stale()
	}
	if err != nil {
		return err
	}
	return q.CopyPolicyCheck(ctx, dbgen.CopyPolicyCheckParams{OperationID: op, PreviewID: preview})
}

// Holds refuses to apply an operation's plan when its zone's policies are no longer those the
// plan was checked against: changed while the operation waited for approval, or made since its
// preview, which then checked nothing.
func Holds(ctx context.Context, q *dbgen.Queries, op uuid.UUID) error {
	_, version, rules, err := current(ctx, q, op)
	if err != nil || len(rules) == 0 {
		return err
	}
	c, err := q.GetPolicyCheck(ctx, op)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && c.Version != version {
		return problem.Invalid("operation", "stale", "the landing zone's policies changed after this operation's plan was checked: run it again")
	}
	return err
}

// OfOperation returns the check of an operation's plan, or nil when it had none. The caller
// has shown the actor may read the operation.
func OfOperation(ctx context.Context, q *dbgen.Queries, op uuid.UUID) (*Check, error) {
	row, err := q.GetPolicyCheck(ctx, op)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c := &Check{Version: row.Version, Policies: row.Policies, Resources: row.Resources}
	if err := json.Unmarshal(row.Violations, &c.Violations); err != nil {
		return nil, fmt.Errorf("the policy check of operation %s: %w", op, err)
	}
	return c, nil
}
