package policy

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/uuid"

	"nimbus/app/domain/component"
	"nimbus/app/kernel/problem"
	"nimbus/db/dbgen"
)

// Declared is a resource that another slot of the same stack instance declares in its
// program. A stack instance's slots deploy one by one, each once the outputs it reads exist, so
// no one preview plans the whole instance; what the other slots declare lets a policy ask
// something of the instance as a whole ("every Namespace comes with a ResourceQuota") from
// each slot's plan. It is checked when its own slot deploys, never here.
type Declared struct {
	Type string
	Name string
	Slot string
}

func (d Declared) value() map[string]string {
	return map[string]string{"type": d.Type, "name": d.Name, "slot": d.Slot}
}

// declared reads what the other slots of the stack instance whose slot an operation's
// deployment holds declare, in the stack version the operation's run brings the instance to;
// nothing for a deployment of no stack instance. The programs were checked when published:
// only their resources are read, and providers, as in a plan, are left out.
func declared(ctx context.Context, q *dbgen.Queries, op uuid.UUID) ([]Declared, error) {
	rows, err := q.OperationStackPrograms(ctx, op)
	if err != nil {
		return nil, fmt.Errorf("the other slots of operation %s: %w", op, err)
	}
	var out []Declared
	for _, r := range rows {
		prog := component.ParseYAML(r.Code, component.Scope{ProviderLevel: true}, &problem.ValidationError{})
		if prog == nil {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(prog.Resources)) {
			if typ := prog.Resources[name]; !strings.HasPrefix(typ, "pulumi:providers:") {
				out = append(out, Declared{Type: typ, Name: name, Slot: r.Slot})
			}
		}
	}
	return out, nil
}
