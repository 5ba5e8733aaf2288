package instance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/domain/component"
	"nimbus/app/domain/stack"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/kernel/secrets"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// Service deploys stacks into environments and acts on their instances for a principal.
type Service struct {
	pool *pgxpool.Pool
	run  *runner
}

// NewService returns the service: deploys queues the slots' operations, keys seals secret
// parameters, queue queues the graph runner's steps.
func NewService(pool *pgxpool.Pool, deploys *deploy.Service, keys *secrets.Keyring, queue jobs.Queue) *Service {
	return &Service{pool: pool, run: &runner{deploys: deploys, keys: keys, jobs: queue}}
}

// Request asks for a stack to be deployed into an environment.
type Request struct {
	StackID       uuid.UUID      `json:"stack_id"`
	Version       int            `json:"version"` // 0: the latest published
	EnvironmentID uuid.UUID      `json:"environment_id"`
	Name          string         `json:"name"`
	Parameters    map[string]any `json:"parameters"`
	// KeepOnFailure keeps what a failed first deploy made, for a retry, instead of taking it down.
	KeepOnFailure bool `json:"keep_on_failure"`
	// PreviewOnly records the instance pending and previews the slots whose inputs are known
	// before anything deploys (see preview.go); Start deploys it after.
	PreviewOnly bool `json:"preview_only"`
}

// Each slot's deployment is named <instance>-<slot>, within the 40 characters of a deployment's
// name: an instance's name leaves room for a slot's 20.
var instanceName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,18}$`)

// Deploy checks the request — the environment, the stack and its version, the name, the
// stack's parameters — records the instance and starts deploying its slots, or only previewing
// them (PreviewOnly), in one transaction.
func (s *Service) Deploy(ctx context.Context, actor access.Principal, req Request) (Instance, error) {
	var id uuid.UUID
	err := db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) (err error) {
		id, err = s.DeployTx(ctx, tx, actor, req)
		return err
	})
	if err != nil {
		return Instance{}, fmt.Errorf("deploy stack: %w", err)
	}
	return s.Get(ctx, actor, id)
}

// DeployTx is Deploy within the caller's transaction, for what records the instance with rows
// of its own; it returns the instance's ID.
func (s *Service) DeployTx(ctx context.Context, tx pgx.Tx, actor access.Principal, req Request) (uuid.UUID, error) {
	q := db.Queries(tx)
	id := uuid.New()
	err := func() error {
		env, err := q.GetEnvironment(ctx, req.EnvironmentID)
		if errors.Is(err, pgx.ErrNoRows) || err == nil && !actor.Can(access.EnvironmentRead, env.TenantID) {
			return problem.Invalid("environment_id", "exists", "no environment with this ID that you can see")
		}
		if err != nil {
			return err
		}
		if !actor.Can(access.StackInstanceDeploy, env.TenantID) {
			return problem.ErrForbidden
		}
		if status, err := q.ShareEnvironment(ctx, env.ID); err != nil {
			return err
		} else if lifecycle.EnvironmentStatus(status) != lifecycle.EnvironmentActive {
			return problem.Invalid("environment_id", "state", "%s is %s: deploy into an active environment", env.Name, status)
		}
		st, err := q.StackToDeploy(ctx, req.StackID)
		if errors.Is(err, pgx.ErrNoRows) || err == nil && st.TenantID.Valid && st.TenantID.UUID != env.TenantID {
			return problem.Invalid("stack_id", "exists", "no stack with this ID that this environment's tenant can use")
		}
		if err != nil {
			return err
		}
		version, err := pick(ctx, q, st, req.Version)
		if err != nil {
			return err
		}
		def, err := stack.LoadVersion(ctx, q, st.ID, version)
		if err != nil {
			return err
		}
		v := &problem.ValidationError{}
		if req.PreviewOnly && req.KeepOnFailure {
			v.Add("keep_on_failure", "preview", "a preview deploys nothing: ask to keep what fails when you deploy the pending instance")
		}
		req.Name = strings.TrimSpace(req.Name)
		if !instanceName.MatchString(req.Name) {
			v.Add("name", "pattern", "must be 1–19 lower-case letters, digits and -, starting with a letter")
		}
		if v.Err() == nil {
			// Each slot's deployment takes a name of the environment's: say now that one is taken,
			// not halfway through the deploy.
			names := make([]string, len(def.Slots))
			for i, sl := range def.Slots {
				names[i] = DeploymentName(req.Name, sl.Name)
			}
			taken, err := q.DeploymentNamesTaken(ctx, dbgen.DeploymentNamesTakenParams{EnvironmentID: env.ID, Names: names})
			if err != nil {
				return err
			}
			if len(taken) > 0 {
				v.Add("name", "unique", "%s already has deployments named %s, which this stack's slots would take", env.Name, strings.Join(taken, ", "))
			}
		}
		plain, keyID, sealed, err := s.run.sealParameters(id, def, req.Parameters, v)
		if err != nil {
			return err
		}
		inst, err := create(ctx, q, dbgen.CreateStackInstanceParams{ID: id, TenantID: env.TenantID, EnvironmentID: env.ID,
			StackID: st.ID, Version: int32(version), Name: req.Name, Parameters: plain, SecretParameters: sealed, SecretKeyID: keyID,
			CreatedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil}})
		if db.IsUniqueViolation(err) {
			return problem.Invalid("name", "unique", "%s already has a stack instance named %q", env.Name, req.Name)
		}
		if err != nil {
			return err
		}
		action := "stack_instance.deploy"
		if req.PreviewOnly {
			action = "stack_instance.preview"
			if err := s.run.preview(ctx, tx, actor, inst, def); err != nil {
				return err
			}
		} else if _, err := s.run.queue(ctx, tx, inst, dbgen.CreateStackRunParams{Kind: string(RunDeploy), RequestedBy: inst.CreatedBy,
			Source: source(ctx), KeepOnFailure: req.KeepOnFailure}); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: env.TenantID, Action: action, TargetType: "stack_instance",
			TargetID: id.String(), Diff: map[string]any{"name": req.Name, "stack": st.Name, "version": version, "environment": env.Name,
				"parameters": json.RawMessage(plain)}})
	}()
	return id, err
}

// pick is the version to deploy: the one asked for, published and not archived, or the latest.
func pick(ctx context.Context, q *dbgen.Queries, st dbgen.StackToDeployRow, asked int) (int, error) {
	if asked == 0 {
		if st.Latest == 0 {
			return 0, problem.Invalid("version", "exists", "%s has no published version", st.Name)
		}
		return int(st.Latest), nil
	}
	archived, err := q.StackVersionArchived(ctx, dbgen.StackVersionArchivedParams{StackID: st.ID, Version: int32(asked)})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, problem.Invalid("version", "exists", "%s has no published version %d", st.Name, asked)
	case err != nil:
		return 0, err
	case archived:
		return 0, problem.Invalid("version", "archived", "version %d of %s is archived; choose another", asked, st.Name)
	}
	return asked, nil
}

// sealParameters checks parameters against the stack's, completes them with defaults, and
// splits them as they are stored: plain ones as JSON, secret ones sealed for the instance.
func (d *runner) sealParameters(id uuid.UUID, def stack.Definition, params map[string]any, v *problem.ValidationError) (json.RawMessage, *string, []byte, error) {
	schema := component.ParseSchema("parameters", def.Parameters, v)
	all := schema.Apply("parameters", params, v)
	if err := v.Err(); err != nil {
		return nil, nil, nil, err
	}
	return d.seal(id, schema, all)
}

// seal splits values as schema marks them: plain ones as JSON, secret ones sealed with the
// master key, bound to id (the instance's or the run's they are kept with). No secret: no
// key and nothing sealed.
func (d *runner) seal(id uuid.UUID, schema *component.Schema, values map[string]any) (json.RawMessage, *string, []byte, error) {
	plain, secret := map[string]any{}, map[string]any{}
	for k, val := range values {
		if schema.Secret(k) {
			secret[k] = val
		} else {
			plain[k] = val
		}
	}
	raw, _ := json.Marshal(plain)
	if len(secret) == 0 {
		return raw, nil, nil, nil
	}
	clear, _ := json.Marshal(secret)
	keyID, sealed, err := d.keys.Seal(clear, id[:])
	if err != nil {
		return nil, nil, nil, fmt.Errorf("seal secret values: %w", err)
	}
	return raw, &keyID, sealed, nil
}

// openParameters opens an instance's secret parameters.
func (d *runner) openParameters(inst dbgen.StackInstance) (map[string]any, error) {
	out, err := d.open(inst.ID, inst.SecretKeyID, inst.SecretParameters)
	if err != nil {
		return nil, fmt.Errorf("secret parameters of %s: %w", inst.Name, err)
	}
	return out, nil
}

// open opens what seal sealed for id.
func (d *runner) open(id uuid.UUID, keyID *string, sealed []byte) (map[string]any, error) {
	out := map[string]any{}
	if len(sealed) == 0 {
		return out, nil
	}
	raw, err := d.keys.Open(deref(keyID), sealed, id[:])
	if err != nil {
		return nil, err
	}
	return out, json.Unmarshal(raw, &out)
}

// Destroy takes every slot of an instance down, in reverse order, once the run under way (if
// any) has ended.
func (s *Service) Destroy(ctx context.Context, actor access.Principal, id uuid.UUID) (Instance, error) {
	return s.ask(ctx, actor, id, access.StackInstanceDestroy, "destroy", dbgen.CreateStackRunParams{}, destroys)
}

// DestroyTx is Destroy within the caller's transaction, for what records the destroy with rows
// of its own.
func (s *Service) DestroyTx(ctx context.Context, tx pgx.Tx, actor access.Principal, id uuid.UUID) error {
	return s.askTx(ctx, tx, actor, id, access.StackInstanceDestroy, dbgen.CreateStackRunParams{}, destroys)
}

func destroys(_ *dbgen.Queries, inst dbgen.StackInstance) (RunKind, error) {
	if lifecycle.InstanceStatus(inst.Status) == lifecycle.InstanceDestroyed || lifecycle.InstanceStatus(inst.Status) == lifecycle.InstanceDestroying {
		return "", problem.Invalid("instance", "state", "%s is %s already", inst.Name, inst.Status)
	}
	return RunDestroy, nil
}

// Retry takes up again what a failed instance was doing: an instance that failed while being
// destroyed is destroyed again, by those who may destroy it; any other deploys what a failed
// deploy left missing.
func (s *Service) Retry(ctx context.Context, actor access.Principal, id uuid.UUID) (Instance, error) {
	return s.ask(ctx, actor, id, access.StackInstanceDeploy, "retry", dbgen.CreateStackRunParams{}, func(q *dbgen.Queries, inst dbgen.StackInstance) (RunKind, error) {
		if lifecycle.InstanceStatus(inst.Status) != lifecycle.InstanceFailed {
			return "", problem.Invalid("instance", "state", "%s is %s: only a failed instance is retried", inst.Name, inst.Status)
		}
		k, err := retries(ctx, q, inst.ID)
		if err == nil && k == RunDestroy && !actor.Can(access.StackInstanceDestroy, inst.TenantID) {
			return "", problem.ErrForbidden
		}
		return k, err
	})
}

// retries is the kind of run retrying a failed instance asks for: a destroy when destroying is
// what failed last, else a deploy.
func retries(ctx context.Context, q *dbgen.Queries, id uuid.UUID) (RunKind, error) {
	last, err := q.LastEndedStackRunKind(ctx, id)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return "", err
	}
	if RunKind(last) == RunDestroy {
		return RunDestroy, nil
	}
	return RunDeploy, nil
}

// ask queues a run of the kind pick chooses (or refuses), with run's other fields (on a first
// deploy, whether to keep what fails), on an instance the actor may act on with perm, audited,
// in one transaction; what names the request in errors.
func (s *Service) ask(ctx context.Context, actor access.Principal, id uuid.UUID, perm access.Permission, what string, run dbgen.CreateStackRunParams, pick func(*dbgen.Queries, dbgen.StackInstance) (RunKind, error)) (Instance, error) {
	err := db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return s.askTx(ctx, tx, actor, id, perm, run, pick) })
	if err != nil {
		return Instance{}, fmt.Errorf("%s stack instance: %w", what, err)
	}
	return s.Get(ctx, actor, id)
}

func (s *Service) askTx(ctx context.Context, tx pgx.Tx, actor access.Principal, id uuid.UUID, perm access.Permission, run dbgen.CreateStackRunParams, pick func(*dbgen.Queries, dbgen.StackInstance) (RunKind, error)) error {
	q := db.Queries(tx)
	inst, err := s.lockFor(ctx, q, actor, id, perm)
	if err != nil {
		return err
	}
	k, err := pick(q, inst)
	if err != nil {
		return err
	}
	run.Kind, run.Source, run.RequestedBy = string(k), source(ctx), uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil}
	if _, err := s.run.queue(ctx, tx, inst, run); err != nil {
		return err
	}
	return audit.Record(ctx, q, actor, audit.Event{Tenant: inst.TenantID, Action: "stack_instance." + string(k), TargetType: "stack_instance",
		TargetID: inst.ID.String(), Diff: map[string]any{"name": inst.Name}})
}

// lockFor locks an instance the actor may see, and refuses them unless they hold perm in its
// tenant. One they may not see is not found.
func (s *Service) lockFor(ctx context.Context, q *dbgen.Queries, actor access.Principal, id uuid.UUID, perm access.Permission) (dbgen.StackInstance, error) {
	inst, err := q.LockStackInstance(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !actor.Can(access.EnvironmentRead, inst.TenantID) {
		return inst, problem.ErrNotFound
	}
	if err != nil {
		return inst, err
	}
	if !actor.Can(perm, inst.TenantID) {
		return inst, problem.ErrForbidden
	}
	return inst, nil
}

// sourceKey marks a request that came through the JSON API, so runs record where they came from.
type sourceKey struct{}

// FromAPI marks ctx as serving a request of the JSON API.
func FromAPI(ctx context.Context) context.Context { return context.WithValue(ctx, sourceKey{}, "api") }

func source(ctx context.Context) string {
	if s, ok := ctx.Value(sourceKey{}).(string); ok {
		return s
	}
	return "person"
}
