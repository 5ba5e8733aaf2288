package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/domain/component"
	"nimbus/app/domain/resolver"
	"nimbus/app/kernel/problem"
	"nimbus/app/kernel/secrets"
	"nimbus/db/dbgen"
)

// inputs are a deployment's parameters for one version of its component, split as they are
// stored: secret ones sealed, bound to the deployment so they cannot be moved to another.
type inputs struct {
	Version int32
	Plain   map[string]any
	Sealed  []byte
	KeyID   string
	Rotate  []string // secret inputs to make up anew
	// Applies is the succeeded preview whose plan the operation carries out, if any.
	Applies uuid.UUID
	// Refresh reads the resources back before changing them: a reconcile.
	Refresh bool
	// Source is the branch whose program a preview brings, for a preview from git.
	Source *Source
	// Adopts is the unmanaged inventory item a first deploy imports (see Service.Adopt).
	Adopts uuid.UUID
}

// version reads a published, unarchived version of the component; 0 asks for the latest.
func version(ctx context.Context, q *dbgen.Queries, comp dbgen.GetComponentRow, n int32) (dbgen.GetComponentVersionRow, error) {
	if n == 0 {
		n = comp.LatestVersion
	}
	ver, err := q.GetComponentVersion(ctx, dbgen.GetComponentVersionParams{ComponentID: comp.ID, Version: n})
	switch {
	case errors.Is(err, pgx.ErrNoRows) || n == 0:
		return ver, problem.Invalid("version", "exists", "%s has no published version %d", comp.Name, n)
	case err != nil:
		return ver, err
	case ver.ArchivedAt != nil:
		return ver, problem.Invalid("version", "archived", "version %d of %s is archived; choose another", n, comp.Name)
	}
	return ver, nil
}

// resolve checks params against the version's input schema, completes them with defaults and
// seals the secret ones for the deployment id. Every problem is reported at once, each under
// "parameters.<name>".
//
// Inputs bound to a resolver the environment configures are left out: the deploy's resolve
// step fills them, and a value given for one is refused.
func (s *Service) resolve(ver dbgen.GetComponentVersionRow, id uuid.UUID, configured map[string]bool, params map[string]any, v *problem.ValidationError) (inputs, error) {
	in := inputs{Version: ver.Version, Plain: map[string]any{}, KeyID: s.keys.CurrentKeyID()}
	schema := component.ParseSchema("input_schema", ver.InputSchema, v)
	if schema == nil || v.Err() != nil {
		return in, v.Err()
	}
	bindings, err := resolver.ParseBindings(ver.ResolverBindings)
	if err != nil {
		return in, problem.Invalid("version", "bindings", "version %d cannot be deployed: %v", ver.Version, err)
	}
	for _, b := range resolver.Active(bindings, configured) {
		if _, given := params[b.Input]; given {
			v.Add("parameters."+b.Input, "resolved", "is set when the deployment is deployed, by the %s resolver", resolver.Label(b.Type))
			// Said once: the schema below no longer has the input and would call it unknown.
			params = maps.Clone(params)
			delete(params, b.Input)
		}
		schema = schema.Without(b.Input)
	}
	all := schema.Apply("parameters", params, v)
	if err := v.Err(); err != nil {
		return in, err
	}
	secret := map[string]any{}
	for k, val := range all {
		if schema.Secret(k) {
			secret[k] = val
		} else {
			in.Plain[k] = val
		}
	}
	if len(secret) > 0 {
		raw, _ := json.Marshal(secret)
		var err error
		if in.KeyID, in.Sealed, err = s.keys.Seal(raw, id[:]); err != nil {
			return in, fmt.Errorf("seal secret parameters: %w", err)
		}
	}
	return in, nil
}

// current returns a deployment's parameters, secret ones opened, for an update to start from.
func (s *Service) current(d dbgen.GetDeploymentRow) (map[string]any, error) {
	params := map[string]any{}
	if err := json.Unmarshal(d.Parameters, &params); err != nil {
		return nil, fmt.Errorf("parameters of %s: %w", d.Name, err)
	}
	secret, err := openSecrets(s.keys, d.ID, d.SecretKeyID, d.SecretParameters)
	if err != nil {
		return nil, err
	}
	maps.Copy(params, secret)
	return params, nil
}

// changed is the parameters an update names, laid over the current ones; a null resets a
// parameter to its default. For an upgrade, parameters the new version no longer has are
// dropped rather than refused: they belonged to the old program.
func changed(current, given map[string]any, schema []byte, upgrade bool) map[string]any {
	out := maps.Clone(current)
	for k, v := range given {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	if upgrade {
		var s component.Schema
		if json.Unmarshal(schema, &s) == nil {
			for k := range out {
				if _, ok := s.Properties[k]; !ok {
					if _, named := given[k]; !named {
						delete(out, k)
					}
				}
			}
		}
	}
	return out
}

// openSecrets opens sealed secret parameters of the deployment id.
func openSecrets(keys *secrets.Keyring, id uuid.UUID, keyID *string, sealed []byte) (map[string]any, error) {
	values := map[string]any{}
	if len(sealed) == 0 {
		return values, nil
	}
	kid := ""
	if keyID != nil {
		kid = *keyID
	}
	raw, err := keys.Open(kid, sealed, id[:])
	if err != nil {
		return nil, fmt.Errorf("secret parameters: %w", err)
	}
	if err := json.Unmarshal(raw, &values); err != nil {
		return nil, fmt.Errorf("secret parameters: %w", err)
	}
	return values, nil
}
