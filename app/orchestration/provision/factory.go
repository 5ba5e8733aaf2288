// Package provision gives tenants their place on a landing zone's Kubernetes cluster: the
// zone's tenant factory, a provider stack, deployed once per tenant into the zone's system
// environment, makes the tenant's namespace and what bounds it; a tenant's own Kubernetes
// deploys then run in that namespace.
package provision

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"nimbus/app/domain/cluster"
	"nimbus/app/domain/stack"
	"nimbus/db/dbgen"
)

// FactoryName is the name the tenant factory's stack is created under.
const FactoryName = "tenant-factory"

// tiers are the quota values of each tier: the factory's wiring maps a tier to them, so a tier
// is one word to the person provisioning a tenant and a change of tier updates the quota in
// place.
var tiers = []struct{ name, cpu, memory, pods string }{
	{"small", "2", "4Gi", "20"},
	{"medium", "4", "8Gi", "40"},
	{"large", "8", "16Gi", "80"},
}

// tierValue is a CEL expression choosing one quota value by the tier that tier (a CEL
// expression) names.
func tierValue(tier string, value func(name, cpu, memory, pods string) string) string {
	parts := make([]string, len(tiers))
	for i, t := range tiers {
		parts[i] = fmt.Sprintf("%q: %q", t.name, value(t.name, t.cpu, t.memory, t.pods))
	}
	return "{" + strings.Join(parts, ", ") + "}[" + tier + "]"
}

// quotaInputs wires the quota's tier and values from tier, a CEL expression.
func quotaInputs(tier string) map[string]string {
	return map[string]string{
		"tier":   tier,
		"cpu":    tierValue(tier, func(_, cpu, _, _ string) string { return cpu }),
		"memory": tierValue(tier, func(_, _, memory, _ string) string { return memory }),
		"pods":   tierValue(tier, func(_, _, _, pods string) string { return pods }),
	}
}

var factoryParameters = json.RawMessage(`{
  "type": "object",
  "x-order": ["namespace", "tier", "domain"],
  "required": ["namespace"],
  "properties": {
    "namespace": {
      "type": "string",
      "title": "Namespace",
      "description": "The tenant's namespace on the cluster.",
      "pattern": "^[a-z][a-z0-9-]{0,18}$"
    },
    "tier": {
      "type": "string",
      "title": "Tier",
      "description": "How much the namespace may use: small (2 CPU, 4Gi, 20 pods), medium (4 CPU, 8Gi, 40 pods) or large (8 CPU, 16Gi, 80 pods).",
      "enum": ["small", "medium", "large"],
      "default": "small"
    },
    "domain": {
      "type": "string",
      "title": "Domain",
      "description": "The domain under which each tenant's ingress answers, as <namespace>.<domain>.",
      "pattern": "^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$",
      "default": "apps.example.com"
    }
  }
}`)

var changeTierInputs = json.RawMessage(`{
  "type": "object",
  "required": ["tier"],
  "properties": {
    "tier": {"type": "string", "title": "Tier", "enum": ["small", "medium", "large"]}
  }
}`)

// parts are the factory's slots, in order, and the built-in component each deploys.
var parts = []struct{ slot, component string }{
	{"namespace", "k8s-namespace"}, {"quota", "k8s-quota"}, {"network", "k8s-network-policy"},
	{"access", "k8s-tenant-access"}, {"secret", "k8s-secret"}, {"ingress", "k8s-ingress"},
}

// FactoryDraft is the tenant factory's definition, made of the built-in Kubernetes components
// at their latest versions: the namespace first, the rest wired to its name. The secret's
// password comes from the zone's secret provisioner; the ingress answers at
// <namespace>.<domain> for the tenant's service web.
func FactoryDraft(ctx context.Context, q *dbgen.Queries) (stack.Definition, error) {
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = p.component
	}
	rows, err := q.ProviderComponentsByName(ctx, dbgen.ProviderComponentsByNameParams{Provider: cluster.Provider, Names: names})
	if err != nil {
		return stack.Definition{}, err
	}
	latest := map[string]stack.Slot{}
	for _, r := range rows {
		latest[r.Name] = stack.Slot{Component: r.ID, Version: int(r.LatestVersion)}
	}
	ns := stack.Wiring{Kind: stack.Output, Slot: "namespace", Output: "namespace"}
	param := func(name string) stack.Wiring { return stack.Wiring{Kind: stack.Param, Param: name} }
	expr := func(e string) stack.Wiring { return stack.Wiring{Kind: stack.Expression, Expr: e} }
	quota := map[string]stack.Wiring{"namespace": ns}
	for input, e := range quotaInputs("params.tier") {
		quota[input] = expr(e)
	}
	quota["tier"] = param("tier")
	inputs := map[string]map[string]stack.Wiring{
		"namespace": {"name": param("namespace"), "pod_security": {Kind: stack.Literal, Value: "restricted"}},
		"quota":     quota,
		"ingress": {"namespace": ns, "host": expr(`params.namespace + "." + params.domain`),
			"service": {Kind: stack.Literal, Value: "web"}},
	}
	var slots []stack.Slot
	var redeploy []stack.Action
	for _, p := range parts {
		s, ok := latest[p.component]
		if !ok || s.Version == 0 {
			return stack.Definition{}, fmt.Errorf("the built-in component %s is missing or unpublished", p.component)
		}
		s.Name, s.Inputs = p.slot, inputs[p.slot]
		if s.Inputs == nil {
			s.Inputs = map[string]stack.Wiring{"namespace": ns}
		}
		slots = append(slots, s)
		redeploy = append(redeploy, stack.Action{Slot: p.slot, Do: stack.Redeploy})
	}
	return stack.Definition{
		Parameters: factoryParameters,
		Slots:      slots,
		Machine:    stack.Machine{States: []stack.State{{Name: "active", Initial: true}}},
		Operations: []stack.Operation{
			{Name: "change_tier", DisplayName: "Change tier", InputSchema: changeTierInputs, RequiredStates: []string{"active"},
				Description: "Update the namespace's quota and limits to another tier's, in place.",
				Actions:     []stack.Action{{Slot: "quota", Do: stack.Update, Inputs: quotaInputs("inputs.tier")}}},
			{Name: "reconcile", DisplayName: "Run again", RequiredStates: []string{"active"},
				Description: "Deploy every part again as it is defined: nothing changes unless the cluster was changed by hand.",
				Actions:     redeploy},
		},
	}, nil
}
