package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/domain/governance"
	"nimbus/app/domain/resolver"
	"nimbus/app/kernel/access"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Standing is what a deployment's page offers besides the deployment itself: the form of the
// version it pins, as its environment and its tenant's governance shape it, the versions it
// may move to, and whether it was ever deployed.
type Standing struct {
	InputSchema json.RawMessage
	// Bound maps the pinned version's bound inputs onto their resolver types, keeping those the
	// deployment's environment resolves; Resolved says it resolves some.
	Bound    map[string]string
	Resolved bool
	// Limits are the tenant's effective rule for each parameter.
	Limits map[string]governance.Limits
	// Upgrades are the newer versions, not archived, newest first; none for those who may not
	// upgrade the deployment.
	Upgrades []Upgrade
	// Fresh is true while the deployment has no resources of its own (see neverDeployed).
	Fresh bool
}

// Upgrade is a version a deployment may be upgraded to.
type Upgrade struct {
	Version   int
	Changelog string
}

// Standing returns the standing of the deployment with the ID to those who see it.
func (s *Service) Standing(ctx context.Context, actor access.Principal, id uuid.UUID) (Standing, error) {
	d, err := s.get(ctx, actor, id)
	if err != nil {
		return Standing{}, err
	}
	q := db.Queries(s.pool)
	ver, err := q.GetComponentVersion(ctx, dbgen.GetComponentVersionParams{ComponentID: d.ComponentID, Version: d.Version})
	if err != nil {
		return Standing{}, fmt.Errorf("version %d of deployment %s: %w", d.Version, id, err)
	}
	st := Standing{InputSchema: ver.InputSchema}
	if actor.Can(access.ComponentUpgrade, d.TenantID) {
		versions, err := q.ListComponentVersions(ctx, d.ComponentID)
		if err != nil {
			return Standing{}, fmt.Errorf("versions of deployment %s: %w", id, err)
		}
		for _, v := range versions {
			if v.Version > d.Version && v.ArchivedAt == nil {
				st.Upgrades = append(st.Upgrades, Upgrade{Version: int(v.Version), Changelog: v.Changelog})
			}
		}
		slices.SortFunc(st.Upgrades, func(a, b Upgrade) int { return b.Version - a.Version })
	}
	if st.Fresh, err = neverDeployed(ctx, q, d.ID, DeploymentStatus(d.Status)); err != nil {
		return Standing{}, err
	}
	if st.Bound, st.Resolved, err = s.bindings(ctx, ver.ResolverBindings, d.EnvironmentID); err != nil {
		return Standing{}, err
	}
	rule, err := governance.Effective(ctx, q, d.TenantID, d.ComponentID)
	if err != nil {
		return Standing{}, err
	}
	st.Limits = rule.Parameters
	return st, nil
}

// NeverDeployed reports whether the deployment with the ID has no resources of its own yet
// (see neverDeployed), to those who see it.
func (s *Service) NeverDeployed(ctx context.Context, actor access.Principal, id uuid.UUID) (bool, error) {
	d, err := s.get(ctx, actor, id)
	if err != nil {
		return false, err
	}
	return neverDeployed(ctx, db.Queries(s.pool), d.ID, DeploymentStatus(d.Status))
}

// Awaited is the request for approval an operation waits on, and how far it got.
type Awaited struct {
	ID                  uuid.UUID // nil when the operation has no request
	Approvals, Required int
}

// AwaitedApproval returns the latest request for approval of the operation with the ID, to
// those who see the operation.
func (s *Service) AwaitedApproval(ctx context.Context, actor access.Principal, operationID uuid.UUID) (Awaited, error) {
	if _, err := s.Operation(ctx, actor, operationID); err != nil {
		return Awaited{}, err
	}
	a, err := db.Queries(s.pool).ApprovalOfOperation(ctx, operationID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Awaited{}, nil
	}
	if err != nil {
		return Awaited{}, fmt.Errorf("approval of operation %s: %w", operationID, err)
	}
	return Awaited{ID: a.ID, Approvals: int(a.Approvals), Required: int(a.ApprovalsRequired)}, nil
}

// bindings maps a version's bound inputs onto their resolver types, keeping those the
// environment resolves when one is given (and saying it resolves some); with no environment,
// all of them.
func (s *Service) bindings(ctx context.Context, raw []byte, environmentID uuid.UUID) (map[string]string, bool, error) {
	all, err := resolver.ParseBindings(raw)
	if err != nil {
		return nil, false, nil // the deploy itself reports it
	}
	out := map[string]string{}
	if environmentID == uuid.Nil {
		for _, b := range all {
			out[b.Input] = b.Type
		}
		return out, false, nil
	}
	configured, err := resolver.Configured(ctx, db.Queries(s.pool), environmentID)
	if err != nil {
		return nil, false, err
	}
	for _, b := range resolver.Active(all, configured) {
		out[b.Input] = b.Type
	}
	return out, len(out) > 0, nil
}
