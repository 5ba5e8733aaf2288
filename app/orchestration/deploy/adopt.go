package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.yaml.in/yaml/v3"

	"nimbus/app/domain/inventory"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/pulumix"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs/saga"
)

// Adopt takes a resource discovery found in a landing zone's cloud (an unmanaged inventory
// item) into a new deployment of a component whose resource type is the resource's, in an
// environment of that zone: the deployment's first operation imports the resource into its
// stack before its up (see run.adopt), so the component manages it from then on as one it
// made, and the item becomes the deployment's. Only provider admins adopt: the zone's cloud
// credentials, with which the resource is imported, are the provider's.
func (s *Service) Adopt(ctx context.Context, actor access.Principal, item uuid.UUID, req Request) (Deployment, Operation, error) {
	q := db.Queries(s.pool)
	found, err := inventory.Adoptable(ctx, q, actor, item)
	if err != nil {
		return Deployment{}, Operation{}, err
	}
	p, err := s.prepare(ctx, q, actor, req)
	if err != nil {
		return Deployment{}, Operation{}, err
	}
	if err := matches(ctx, q, p, found); err != nil {
		return Deployment{}, Operation{}, err
	}
	p.in.Adopts = found.ID
	var op dbgen.Operation
	err = db.ToldTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		// Locked and checked again: ignored meanwhile, or adopted by another request, it is not
		// adopted twice.
		if _, err := inventory.Adoptable(ctx, q, actor, item); err != nil {
			return err
		}
		adoptions, err := q.AdoptionsOf(ctx, uuid.NullUUID{UUID: item, Valid: true})
		if err != nil {
			return err
		}
		if slices.ContainsFunc(adoptions, func(s string) bool { return !Status(s).Ended() }) {
			return problem.Invalid("status", "adopting", "another deployment is adopting this item")
		}
		op, err = s.record(ctx, tx, actor, p, true)
		return err
	})
	if err != nil {
		return Deployment{}, Operation{}, fmt.Errorf("adopt: %w", err)
	}
	d, err := s.Get(ctx, actor, p.id)
	if err != nil {
		return Deployment{}, Operation{}, err
	}
	o, err := s.Operation(ctx, actor, op.ID)
	return d, o, err
}

// matches refuses a component or an environment the found resource cannot be adopted into: a
// component of another resource type, or whose program does not declare exactly one resource of
// the type at its top level (the one the resource becomes), and an environment of another zone.
func matches(ctx context.Context, q *dbgen.Queries, p prepared, found inventory.Found) error {
	if !p.env.LandingZoneID.Valid || p.env.LandingZoneID.UUID != found.Zone {
		return problem.Invalid("environment_id", "zone", "%s is not in the landing zone whose cloud holds %s: choose one of that zone",
			p.env.Name, found.ProviderID)
	}
	types, err := q.ComponentResourceTypes(ctx, dbgen.ComponentResourceTypesParams{ProviderID: p.comp.ProviderID, SemanticTypeID: p.comp.SemanticTypeID})
	if err != nil {
		return err
	}
	if !slices.Contains(types, found.Type) {
		return problem.Invalid("component_id", "type", "%s deploys a %s, and %s is a %s: choose a component of that type",
			p.comp.Name, p.comp.SemanticType, found.ProviderID, found.Type)
	}
	ver, err := q.GetComponentVersion(ctx, dbgen.GetComponentVersionParams{ComponentID: p.comp.ID, Version: p.in.Version})
	if err != nil {
		return err
	}
	if _, err := adopted(ver.Code, found); err != nil {
		return problem.Invalid("component_id", "resource", "%s version %d: %v", p.comp.Name, p.in.Version, err)
	}
	return nil
}

// adopted is the resource of the program that the found one becomes: the program's one
// top-level resource of its type, by the logical name that makes its URN.
func adopted(code string, found inventory.Found) (pulumix.Adopted, error) {
	var program struct {
		Resources map[string]struct {
			Type    string         `yaml:"type"`
			Name    string         `yaml:"name"`
			Options map[string]any `yaml:"options"`
		} `yaml:"resources"`
	}
	if err := yaml.Unmarshal([]byte(code), &program); err != nil {
		return pulumix.Adopted{}, fmt.Errorf("the program is not YAML: %w", err)
	}
	var names []string
	for name, r := range program.Resources {
		if r.Type == found.Type && r.Options["parent"] == nil {
			if r.Name != "" { // the name the URN takes, in place of the key
				name = r.Name
			}
			names = append(names, name)
		}
	}
	if len(names) != 1 {
		return pulumix.Adopted{}, fmt.Errorf("the program declares %d resources of type %s at its top level, and adopting takes exactly one", len(names), found.Type)
	}
	return pulumix.Adopted{Type: found.Type, Name: names[0], ID: found.ProviderID}, nil
}

// adopt imports the resource the operation adopts into the stack (see pulumix.Runner.Adopt),
// under the name the program gives it. A step run again after a crash forgets what an earlier
// attempt may have imported first: the engine refuses to import a resource the state holds.
func (r *run) adopt(ctx context.Context, _ *saga.Run) (json.RawMessage, error) {
	a, err := r.adopted(ctx)
	if err != nil {
		return nil, err
	}
	st, err := r.target(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.w.runner.Forget(ctx, alone(st), a); err != nil {
		return nil, r.engine(err)
	}
	if err := r.w.runner.Adopt(ctx, alone(st), a, r.progress); err != nil {
		return nil, r.engine(err)
	}
	// Adopting must not delete what it adopts: a program whose inputs would make the engine
	// replace the resource (another image, say) is refused before the up, and the import undone.
	// Its log joins the operation's; its events would mark the resources planned twice.
	res, err := r.w.runner.Preview(ctx, st, struct{ io.Writer }{r.progress})
	if err != nil {
		return nil, r.engine(err)
	}
	for _, p := range res.Planned {
		if p.URN == a.URN(st.Name) && (p.Op == "replace" || p.Op == "delete") {
			return nil, problem.Invalid("parameters", "adopt", "the engine would %s %s to give it these parameters, and adopting keeps what it adopts: "+
				"give the parameters the resource has", p.Op, a.ID)
		}
	}
	return json.Marshal(a)
}

// forget undoes adopt: the stack lets go of the resource, which stays in the cloud.
func (r *run) forget(ctx context.Context, _ *saga.Run) error {
	a, err := r.adopted(ctx)
	if err != nil {
		return err
	}
	return r.w.runner.Forget(ctx, alone(r.current), a)
}

// adopted is the resource the operation adopts, as the program names it.
func (r *run) adopted(ctx context.Context) (pulumix.Adopted, error) {
	it, err := db.Queries(r.w.pool).GetInventoryItem(ctx, r.op.Adopts.UUID)
	if err != nil {
		return pulumix.Adopted{}, fmt.Errorf("the item adopted: %w", err)
	}
	ver, err := r.version(ctx, r.op.TargetVersion.Int32)
	if err != nil {
		return pulumix.Adopted{}, err
	}
	return adopted(ver.Code, inventory.Found{ID: it.InventoryItem.ID, Type: it.InventoryItem.Type, ProviderID: it.InventoryItem.ProviderID})
}
