package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"nimbus/app/domain/component"
	"nimbus/app/domain/ipam"
	"nimbus/app/domain/resolver"
	"nimbus/app/kernel/problem"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs/saga"
)

// resolve fills the operation's bound inputs with what the version's resolvers hand out, checks
// them against the version's inputs, and stores the completed parameters on the operation,
// all in one transaction: a crash leaves either nothing or everything, and a second run gets
// what the first was handed. It returns what it handed out, for the step's checkpoint, and the
// operation as it stored it.
func (w *Worker) resolve(ctx context.Context, dep dbgen.GetDeploymentRow, op dbgen.Operation, ver dbgen.GetComponentVersionRow) (json.RawMessage, dbgen.Operation, error) {
	bindings, err := resolver.ParseBindings(ver.ResolverBindings)
	if err != nil {
		return nil, op, err
	}
	if len(bindings) == 0 {
		return nil, op, nil
	}
	v := &problem.ValidationError{}
	schema := component.ParseSchema("input_schema", ver.InputSchema, v)
	if schema == nil {
		return nil, op, v.Err()
	}
	// What to ask for is decided before the transaction, which a deployment with nothing to
	// ask for (no resolver configured where it lives, say) never opens.
	configured, err := resolver.Configured(ctx, db.Queries(w.pool), dep.EnvironmentID)
	if err != nil {
		return nil, op, saga.Transient(err)
	}
	secrets, err := openSecrets(w.keys, dep.ID, op.SecretKeyID, op.SecretParameters)
	if err != nil {
		return nil, op, saga.Transient(err)
	}
	held, err := openSecrets(w.keys, dep.ID, dep.SecretKeyID, dep.SecretParameters)
	if err != nil {
		return nil, op, saga.Transient(err)
	}
	// A secret made for the deployment before is kept: making a new one is a rotation.
	var ask []resolver.Binding
	kept := false
	for _, b := range resolver.Active(bindings, configured) {
		rotate := slices.Contains(op.Rotate, b.Input)
		if resolver.Secret(b.Type) && !rotate && (secrets[b.Input] != nil || held[b.Input] != nil) {
			if secrets[b.Input] == nil {
				secrets[b.Input], kept = held[b.Input], true
			}
			continue
		}
		ask = append(ask, b)
	}
	if len(ask) == 0 && !kept {
		// Nothing to hand out and nothing kept: the parameters stay as they are.
		return json.RawMessage("{}"), op, nil
	}
	var values map[string]any
	err = db.Tx(ctx, w.pool, func(q *dbgen.Queries) error {
		rc, err := q.ResolverContext(ctx, dep.ID)
		if err != nil {
			return err
		}
		params := map[string]any{}
		if err := json.Unmarshal(op.Parameters, &params); err != nil {
			return err
		}
		refers, err := referred(ctx, q, dep.EnvironmentID, schema, params)
		if err != nil {
			return err
		}
		d := resolver.Deployment{ID: dep.ID, Name: dep.Name, Tenant: rc.TenantName, Environment: rc.EnvironmentName,
			EnvID: dep.EnvironmentID, Component: rc.ComponentName, SemanticType: strings.ToLower(rc.SemanticType), Provider: rc.Provider,
			Refers: refers}
		if values, err = resolver.Resolve(ctx, q, ask, d, op.ID, params); err != nil {
			return err
		}
		for _, b := range ask {
			if msg := schema.Check(b.Input, values[b.Input]); msg != "" {
				return fmt.Errorf("%w %s: the %s resolver gave a value that %s", resolver.ErrUnresolved, b.Input, b.Type, msg)
			}
			if resolver.Secret(b.Type) || schema.Secret(b.Input) {
				secrets[b.Input] = values[b.Input]
				values[b.Input] = "[secret]" // what the step's checkpoint keeps
			} else {
				params[b.Input] = values[b.Input]
			}
		}
		completed, _ := json.Marshal(params)
		op.Parameters = completed
		if len(secrets) == 0 {
			return fill(ctx, q, op.ID, completed, "", nil)
		}
		raw, _ := json.Marshal(secrets)
		keyID, sealed, err := w.keys.Seal(raw, dep.ID[:])
		if err != nil {
			return err
		}
		op.SecretKeyID, op.SecretParameters = &keyID, sealed
		return fill(ctx, q, op.ID, completed, keyID, sealed)
	})
	if errors.Is(err, resolver.ErrUnresolved) || errors.Is(err, ipam.ErrFull) {
		return nil, op, err // the same next time: final
	}
	if err != nil {
		return nil, op, saga.Transient(err)
	}
	out, err := json.Marshal(values)
	return out, op, err
}

// referred are the live deployments of the environment that the inputs name by an output's
// value (x-refers-to), in input order; a value naming none (a network made outside Nimbus)
// names nothing here.
func referred(ctx context.Context, q *dbgen.Queries, env uuid.UUID, schema *component.Schema, params map[string]any) ([]uuid.UUID, error) {
	var out []uuid.UUID
	for _, name := range schema.Names() {
		ref := schema.Properties[name].RefersTo
		value, _ := params[name].(string)
		if ref == nil || value == "" {
			continue
		}
		ids, err := q.ReferredDeployments(ctx, dbgen.ReferredDeploymentsParams{EnvironmentID: env, SemanticType: ref.SemanticType,
			Output: ref.Output, Value: value})
		if err != nil {
			return nil, err
		}
		if len(ids) > 0 {
			out = append(out, ids[0])
		}
	}
	return out, nil
}
