package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/domain/component"
	"nimbus/app/domain/governance"
	"nimbus/app/domain/resolver"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Preview queues a preview of what the change would do to the deployment, without doing it:
// its parameters, and its version when one is given (the deployed one otherwise).
func (s *Service) Preview(ctx context.Context, actor access.Principal, id uuid.UUID, c Change) (Operation, error) {
	return s.request(ctx, actor, id, KindPreview, c)
}

// Start deploys a deployment that was only previewed, or whose deploy failed, with the change
// laid over its parameters.
func (s *Service) Start(ctx context.Context, actor access.Principal, id uuid.UUID, c Change) (Operation, error) {
	return s.request(ctx, actor, id, KindDeploy, c)
}

// Update applies new parameters to a deployment; a failed update rolls back to the previous ones.
func (s *Service) Update(ctx context.Context, actor access.Principal, id uuid.UUID, c Change) (Operation, error) {
	return s.request(ctx, actor, id, KindUpdate, c)
}

// Upgrade moves a deployment to a newer published version (the latest when none is given),
// its parameters checked again against that version's inputs; a failed upgrade rolls back.
func (s *Service) Upgrade(ctx context.Context, actor access.Principal, id uuid.UUID, c Change) (Operation, error) {
	return s.request(ctx, actor, id, KindUpgrade, c)
}

// Refresh reads back what the deployment's resources look like now, for drift.
func (s *Service) Refresh(ctx context.Context, actor access.Principal, id uuid.UUID) (Operation, error) {
	return s.request(ctx, actor, id, KindRefresh, Change{})
}

// CheckDrift queues a drift check: what the cloud has, compared with what the stack recorded.
func (s *Service) CheckDrift(ctx context.Context, actor access.Principal, id uuid.UUID) (Operation, error) {
	return s.request(ctx, actor, id, KindDriftCheck, Change{})
}

// Reconcile puts back what drifted: an update that reads the resources back first and applies
// the deployment's own version and parameters again. Accepting a drift instead is a Refresh.
func (s *Service) Reconcile(ctx context.Context, actor access.Principal, id uuid.UUID) (Operation, error) {
	return s.request(ctx, actor, id, KindUpdate, Change{reconcile: true})
}

// Destroy queues the destruction of a deployment; tenant admins may.
func (s *Service) Destroy(ctx context.Context, actor access.Principal, id uuid.UUID) (Operation, error) {
	return s.request(ctx, actor, id, KindDestroy, Change{})
}

// permission is what each kind of operation asks of the actor in the deployment's tenant.
var permission = map[Kind]access.Permission{
	KindPreview: access.ComponentPreview, KindDeploy: access.ComponentDeploy, KindUpdate: access.ComponentDeploy,
	KindRefresh: access.ComponentDeploy, KindUpgrade: access.ComponentUpgrade, KindDestroy: access.ComponentDestroy,
	KindDriftCheck: access.ComponentPreview,
}

// request checks that the actor may ask for kind and that the deployment is in a state to
// take it, works out the inputs it brings, and queues it behind any operation already there.
func (s *Service) request(ctx context.Context, actor access.Principal, id uuid.UUID, kind Kind, c Change) (Operation, error) {
	d, err := s.get(ctx, actor, id)
	if err != nil {
		return Operation{}, err
	}
	if !actor.Can(permission[kind], d.TenantID) {
		return Operation{}, problem.ErrForbidden
	}
	if err := ownedByStack(d, kind); err != nil {
		return Operation{}, err
	}
	// Its parameters are judged once enqueue found the deployment able to take the operation,
	// under its lock: a deployment that cannot take it says so first.
	return s.enqueue(ctx, actor, d, kind, c, func(q *dbgen.Queries, d dbgen.GetDeploymentRow) (inputs, error) {
		if kind == KindRefresh || kind == KindDestroy || kind == KindDriftCheck {
			return inputs{Plain: map[string]any{}, Refresh: c.reconcile}, nil
		}
		in, err := s.target(ctx, q, d, kind, c)
		in.Refresh = c.reconcile
		return in, err
	}, nil)
}

// ownedByStack refuses people a change of a deployment that holds a slot of a stack instance:
// the instance's runs change it, with its wiring, and its state would no longer say what is
// there. Looking (a preview, a refresh) is left to them.
func ownedByStack(d dbgen.GetDeploymentRow, kind Kind) error {
	if !d.StackInstanceID.Valid || kind == KindPreview || kind == KindRefresh || kind == KindDriftCheck {
		return nil
	}
	return problem.Invalid("deployment", "stack", "%s holds slot %s of a stack instance: %s it through the instance", d.Name, slotName(d.Slot), kind)
}

// Apply carries out what a succeeded preview showed, with exactly its version, parameters and
// the engine's plan, which refuses any change the preview did not show:
// the deploy of a deployment not deployed yet, else its upgrade or its update. A preview made
// before the deployment last changed shows a diff that no longer holds, and is refused.
func (s *Service) Apply(ctx context.Context, actor access.Principal, previewID uuid.UUID) (Operation, error) {
	q := db.Queries(s.pool)
	p, err := q.OperationView(ctx, previewID)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !actor.Can(access.EnvironmentRead, p.TenantID) {
		return Operation{}, problem.ErrNotFound
	}
	if err != nil {
		return Operation{}, err
	}
	if Kind(p.Kind) != KindPreview || Status(p.Status) != Succeeded {
		return Operation{}, problem.Invalid("operation", "preview", "only a succeeded preview can be applied; this is a %s that %s", p.Kind, p.Status)
	}
	if p.SourceCommit != "" {
		return Operation{}, problem.Invalid("operation", "git", "this previews branch %s of the component's repository, not a version: merge it and publish a version to deploy it", p.SourceRef)
	}
	d, err := s.get(ctx, actor, p.DeploymentID)
	if err != nil {
		return Operation{}, err
	}
	if err := ownedByStack(d, KindUpdate); err != nil {
		return Operation{}, err
	}
	fresh, err := neverDeployed(ctx, q, d.ID, DeploymentStatus(d.Status))
	if err != nil {
		return Operation{}, err
	}
	kind := KindUpdate
	switch {
	case fresh:
		kind = KindDeploy
	case p.TargetVersion.Int32 > d.Version:
		kind = KindUpgrade
	}
	if !actor.Can(permission[kind], d.TenantID) {
		return Operation{}, problem.ErrForbidden
	}
	in, err := applying(p)
	if err != nil {
		return Operation{}, err
	}
	return s.enqueue(ctx, actor, d, kind, Change{Version: int(in.Version)}, func(*dbgen.Queries, dbgen.GetDeploymentRow) (inputs, error) {
		return in, nil
	}, &p.CreatedAt)
}

// applying is what an operation carrying out a preview brings: exactly the preview's version
// and parameters, resolved ones included, and the preview whose plan it takes.
func applying(p dbgen.OperationViewRow) (inputs, error) {
	in := inputs{Version: p.TargetVersion.Int32, Plain: map[string]any{}, Sealed: p.SecretParameters, Applies: p.ID}
	if p.SecretKeyID != nil {
		in.KeyID = *p.SecretKeyID
	}
	if err := json.Unmarshal(p.Parameters, &in.Plain); err != nil {
		return in, fmt.Errorf("parameters of the preview: %w", err)
	}
	return in, nil
}

// ApplyTx queues, in the caller's transaction, the first deploy of a deployment recorded by
// Plan carrying out its succeeded preview, as Apply does, on behalf of the user whose request
// led to it: a step of a graph, whose permission was checked when the graph was asked for.
func (s *Service) ApplyTx(ctx context.Context, tx pgx.Tx, actor access.Principal, previewID uuid.UUID) (uuid.UUID, error) {
	q := db.Queries(tx)
	p, err := q.OperationView(ctx, previewID)
	if err != nil {
		return uuid.Nil, err
	}
	if Kind(p.Kind) != KindPreview || Status(p.Status) != Succeeded {
		return uuid.Nil, fmt.Errorf("operation %s is a %s that %s, not a succeeded preview", p.ID, p.Kind, p.Status)
	}
	d, err := lockedDeployment(ctx, q, p.DeploymentID)
	if err != nil {
		return uuid.Nil, err
	}
	in, err := applying(p)
	if err != nil {
		return uuid.Nil, err
	}
	if err := s.allowed(ctx, q, d, KindDeploy, Change{Version: int(in.Version)}); err != nil {
		return uuid.Nil, err
	}
	op, err := s.queue(ctx, tx, actor, d.ID, KindDeploy, in)
	if err != nil {
		return uuid.Nil, err
	}
	return op.ID, audit.Record(ctx, q, actor, audit.Event{Tenant: d.TenantID, Action: "deployment.deploy", TargetType: "deployment",
		TargetID: d.ID.String(), Diff: map[string]any{"name": d.Name, "kind": KindDeploy, "applies": p.ID}})
}

// enqueue records the operation, with the inputs bringing makes it, audited, in one
// transaction that holds the deployment's row, so that what allowed saw stays true until the
// operation is queued; a worker may take it before the disk has it (db.ToldTx). previewedAt,
// for an applied preview, refuses it when the deployment changed since.
func (s *Service) enqueue(ctx context.Context, actor access.Principal, d dbgen.GetDeploymentRow, kind Kind, c Change,
	bringing func(q *dbgen.Queries, d dbgen.GetDeploymentRow) (inputs, error), previewedAt *time.Time) (Operation, error) {
	var op dbgen.Operation
	err := db.ToldTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		// An environment being provisioned or decommissioned takes no changes from people: its
		// steps would not know what to make of them. Its lock comes first, as in every writer.
		if status, err := q.ShareEnvironment(ctx, d.EnvironmentID); err != nil {
			return err
		} else if s := lifecycle.EnvironmentStatus(status); s != lifecycle.EnvironmentActive && s != lifecycle.EnvironmentFailed {
			return problem.Invalid("deployment", "state", "%s is in an environment that is %s: wait until it is active", d.Name, status)
		}
		d, err := lockedDeployment(ctx, q, d.ID)
		if err != nil {
			return err
		}
		if err := s.allowed(ctx, q, d, kind, c); err != nil {
			return err
		}
		if previewedAt != nil {
			changed, err := q.ChangedSince(ctx, dbgen.ChangedSinceParams{DeploymentID: d.ID, Since: *previewedAt})
			if err != nil {
				return err
			}
			if changed {
				return problem.Invalid("operation", "stale", "%s changed after this preview: preview it again", d.Name)
			}
		}
		in, err := bringing(q, d)
		if err != nil {
			return err
		}
		if op, err = s.queue(ctx, tx, actor, d.ID, kind, in); err != nil {
			return err
		}
		diff := map[string]any{"name": d.Name, "kind": kind}
		if in.Version != 0 {
			diff["version"], diff["parameters"] = in.Version, in.Plain
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: d.TenantID, Action: "deployment." + string(kind),
			TargetType: "deployment", TargetID: d.ID.String(), Diff: diff})
	})
	if err != nil {
		return Operation{}, fmt.Errorf("%s: %w", kind, err)
	}
	return s.Operation(ctx, actor, op.ID)
}

// neverDeployed reports whether the deployment has no resources of its own yet: pending, in
// its first deploy (which may yet fail and remove what it made), or failed or cancelled without
// ever having been deployed.
func neverDeployed(ctx context.Context, q *dbgen.Queries, id uuid.UUID, status DeploymentStatus) (bool, error) {
	switch status {
	case Pending:
		return true, nil
	case Deploying, Broken, Interrupted:
		deployed, err := q.HasBeenDeployed(ctx, id)
		return !deployed, err
	}
	return false, nil
}

// allowed refuses an operation the deployment's state rules out, saying why.
func (s *Service) allowed(ctx context.Context, q *dbgen.Queries, d dbgen.GetDeploymentRow, kind Kind, c Change) error {
	if DeploymentStatus(d.Status) == Destroyed {
		return problem.Invalid("deployment", "state", "%s is destroyed", d.Name)
	}
	if destroying, err := q.PendingOperation(ctx, dbgen.PendingOperationParams{DeploymentID: d.ID, Kind: string(KindDestroy)}); err != nil {
		return err
	} else if destroying {
		return problem.Invalid("deployment", "state", "%s is being destroyed", d.Name)
	}
	fresh, err := neverDeployed(ctx, q, d.ID, DeploymentStatus(d.Status))
	if err != nil {
		return err
	}
	switch kind {
	case KindDeploy:
		if !fresh {
			return problem.Invalid("deployment", "state", "%s has been deployed: change it with an update or an upgrade", d.Name)
		}
		if deploying, err := q.PendingOperation(ctx, dbgen.PendingOperationParams{DeploymentID: d.ID, Kind: string(KindDeploy)}); err != nil {
			return err
		} else if deploying {
			return problem.Invalid("deployment", "state", "%s is being deployed already", d.Name)
		}
	case KindUpdate, KindUpgrade, KindRefresh, KindDriftCheck:
		if fresh {
			return problem.Invalid("deployment", "state", "%s has not been deployed yet: deploy it first", d.Name)
		}
	}
	if kind == KindUpgrade && c.Version != 0 && int32(c.Version) <= d.Version && !(c.Back && int32(c.Version) < d.Version) {
		return problem.Invalid("version", "newer", "version %d is not newer than the deployed version %d", c.Version, d.Version)
	}
	if (kind == KindUpdate || kind == KindDeploy) && c.Version != 0 && int32(c.Version) != d.Version {
		return problem.Invalid("version", "same", "an %s keeps version %d: upgrade to change it", kind, d.Version)
	}
	return nil
}

// target is the version and parameters the operation brings, checked against that version's
// inputs.
func (s *Service) target(ctx context.Context, q *dbgen.Queries, d dbgen.GetDeploymentRow, kind Kind, c Change) (inputs, error) {
	comp, err := q.GetComponent(ctx, d.ComponentID)
	if err != nil {
		return inputs{}, err
	}
	n := d.Version
	switch {
	case kind == KindUpgrade && c.Version == 0:
		n = comp.LatestVersion
		if n <= d.Version {
			return inputs{}, problem.Invalid("version", "newer", "%s has no version newer than %d", comp.Name, d.Version)
		}
	case c.Version != 0:
		n = int32(c.Version)
	}
	ver, err := version(ctx, q, comp, n)
	if err != nil {
		return inputs{}, err
	}
	current, err := s.current(d)
	if err != nil {
		return inputs{}, err
	}
	params := changed(current, c.Parameters, ver.InputSchema, n != d.Version)
	// What resolvers filled in before is filled in again by the operation's own resolve step.
	bindings, err := resolver.ParseBindings(ver.ResolverBindings)
	if err != nil {
		return inputs{}, problem.Invalid("version", "bindings", "version %d cannot be deployed: %v", ver.Version, err)
	}
	configured, err := resolver.Configured(ctx, q, d.EnvironmentID)
	if err != nil {
		return inputs{}, err
	}
	active := resolver.Active(bindings, configured)
	for _, b := range active {
		if _, given := c.Parameters[b.Input]; !given {
			delete(params, b.Input)
		}
	}
	v := &problem.ValidationError{}
	for i, name := range c.Rotate {
		if !slices.ContainsFunc(active, func(b resolver.Binding) bool { return b.Input == name && resolver.Secret(b.Type) }) {
			v.Add(fmt.Sprintf("rotate[%d]", i), "secret", "%s is not an input the secret provisioner fills here", name)
		}
	}
	if kind != KindUpdate && len(c.Rotate) > 0 {
		v.Add("rotate", "kind", "secrets are rotated by an update")
	}
	in, err := s.resolve(ver, d.ID, configured, params, v)
	if err != nil {
		return in, err
	}
	in.Rotate = c.Rotate
	return in, governance.Check(ctx, q, d.TenantID, d.ComponentID, in.Plain)
}

// Offered is an environment the deploy dialog offers, and its tenant.
type Offered struct {
	ID, TenantID     uuid.UUID
	Name, TenantName string
}

// Deployable is what the deploy dialog of a component offers: its latest published version
// with its inputs, and the environments the actor may deploy it into.
type Deployable struct {
	ComponentID uuid.UUID
	Component   string
	Version     int
	InputSchema []byte
	// Bound maps every bound input of the version onto its resolver type; an environment
	// fills those of the types it resolves (Resolves).
	Bound        map[string]string
	Environments []Offered
	// Rule is the tenant's effective governance when every environment offered is one
	// tenant's (the usual case); the server checks it anyway.
	Rule *governance.EffectiveRule
	// Left is how many more deployments the tenant may make of it, when that is limited.
	Left    int
	Limited bool
	// Resolves lists, per environment, the resolver types it configures: there, inputs bound
	// to them are filled in rather than asked for.
	Resolves map[uuid.UUID][]string
	// Referable lists, per input that names another deployment (x-refers-to), the deployments
	// of the offered environments it may name.
	Referable map[string][]Referable
}

// Referable is a deployment an input may name, by the value of one of its outputs.
type Referable struct {
	Value, Deployment, Environment string
	EnvironmentID                  uuid.UUID
}

// Deployable returns the deploy dialog's choices for a component the actor may see: the active
// environments that take it, those of its provider's landing zones or of none.
func (s *Service) Deployable(ctx context.Context, actor access.Principal, componentID uuid.UUID) (Deployable, error) {
	q := db.Queries(s.pool)
	comp, err := q.GetComponent(ctx, componentID)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && comp.TenantID.Valid && !actor.Can(access.ComponentDefinitionRead, comp.TenantID.UUID) {
		return Deployable{}, problem.ErrNotFound
	}
	if err != nil {
		return Deployable{}, err
	}
	ver, err := version(ctx, q, comp, 0)
	if err != nil {
		return Deployable{}, err
	}
	envs, err := q.ListEnvironments(ctx, dbgen.ListEnvironmentsParams{AllTenants: actor.ProviderAdmin, TenantIds: actor.TenantsWith(access.ComponentDeploy)})
	if err != nil {
		return Deployable{}, err
	}
	out := Deployable{ComponentID: comp.ID, Component: comp.Name, Version: int(ver.Version), InputSchema: ver.InputSchema}
	if out.Bound, _, err = s.bindings(ctx, ver.ResolverBindings, uuid.Nil); err != nil {
		return Deployable{}, err
	}
	tenants := map[uuid.UUID]bool{}
	out.Resolves = map[uuid.UUID][]string{}
	for _, e := range envs {
		takes := e.LandingZoneProvider == "" || e.LandingZoneProvider == comp.Provider
		if lifecycle.EnvironmentStatus(e.Status) == lifecycle.EnvironmentActive && takes && (!comp.TenantID.Valid || comp.TenantID.UUID == e.TenantID) {
			out.Environments = append(out.Environments, Offered{ID: e.ID, Name: e.Name, TenantID: e.TenantID, TenantName: e.TenantName})
			tenants[e.TenantID] = true
			configured, err := resolver.Configured(ctx, q, e.ID)
			if err != nil {
				return Deployable{}, err
			}
			out.Resolves[e.ID] = slices.Sorted(maps.Keys(configured))
		}
	}
	if out.Referable, err = referable(ctx, q, ver.InputSchema, out.Environments); err != nil {
		return Deployable{}, err
	}
	if len(tenants) == 1 {
		tenant := out.Environments[0].TenantID
		rule, err := governance.Effective(ctx, q, tenant, comp.ID)
		if err != nil {
			return Deployable{}, err
		}
		out.Rule = &rule
		if out.Left, out.Limited, err = governance.Remaining(ctx, q, tenant, comp.ID); err != nil {
			return Deployable{}, err
		}
	}
	return out, nil
}

func slotName(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// referable finds, for each input of the schema that names another deployment, the deployments
// of the environments it may name.
func referable(ctx context.Context, q *dbgen.Queries, rawSchema []byte, envs []Offered) (map[string][]Referable, error) {
	out := map[string][]Referable{}
	schema := component.ParseSchema("input_schema", rawSchema, &problem.ValidationError{})
	if schema == nil || len(envs) == 0 {
		return out, nil
	}
	ids := make([]uuid.UUID, len(envs))
	for i, e := range envs {
		ids[i] = e.ID
	}
	for name, p := range schema.Properties {
		if p.RefersTo == nil {
			continue
		}
		rows, err := q.ReferableDeployments(ctx, dbgen.ReferableDeploymentsParams{EnvironmentIds: ids, SemanticType: p.RefersTo.SemanticType,
			Output: p.RefersTo.Output})
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			out[name] = append(out[name], Referable{Value: r.Value, Deployment: r.Name, Environment: r.EnvironmentName, EnvironmentID: r.EnvironmentID})
		}
	}
	return out, nil
}
