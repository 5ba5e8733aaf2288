package policy

import (
	"context"
	"strings"
	"testing"
)

const ingress = "kubernetes:networking.k8s.io/v1:Ingress"

// acme is a tenant's deployment in its namespace acme.
var acme = Subject{Name: "web", Component: "k8s-ingress", Tenant: "Acme", Environment: "dev", Namespace: "acme"}

func plan() []Resource {
	return []Resource{
		{Type: "pulumi:pulumi:Stack", Name: "d-1", Op: "create"},
		{Type: "pulumi:providers:kubernetes", Name: "default", Op: "create"},
		{Type: "kubernetes:core/v1:Namespace", Name: "ns", URN: "urn:ns", Op: "create",
			Inputs: map[string]any{"metadata": map[string]any{"name": "acme"}}},
		{Type: "kubernetes:core/v1:ResourceQuota", Name: "quota", URN: "urn:quota", Op: "create",
			Inputs: map[string]any{"spec": map[string]any{"hard": map[string]any{"pods": "10"}}, "replicas": float64(3)}},
		{Type: ingress, Name: "web", URN: "urn:web", Op: "update",
			Inputs: map[string]any{"spec": map[string]any{"rules": []any{}}, "password": "[secret]"}},
		{Type: "kubernetes:core/v1:Secret", Name: "gone", URN: "urn:gone", Op: "delete"},
	}
}

func TestEvaluate(t *testing.T) {
	cases := []struct {
		name, expr string
		failing    []string // resources that do not comply
		detail     string   // part of the detail of each, when the expression failed
	}{
		{"true passes all", "true", nil, ""},
		{"false fails the checked resources only: not the stack, its providers or what is deleted",
			"false", []string{"ns", "quota", "web"}, ""},
		{"an ingress without TLS", `resource.type != "` + ingress + `" || has(resource.inputs.spec.tls)`, []string{"web"}, ""},
		{"every namespace has a quota in the same plan",
			`resource.type != "kubernetes:core/v1:Namespace" || plan.exists(r, r.type == "kubernetes:core/v1:ResourceQuota")`, nil, ""},
		{"a namespace without a network policy in the plan",
			`resource.type != "kubernetes:core/v1:Namespace" || plan.exists(r, r.type == "kubernetes:networking.k8s.io/v1:NetworkPolicy")`,
			[]string{"ns"}, ""},
		{"names match a convention", `resource.name.matches("^[a-z]{2,5}$")`, nil, ""},
		{"objects are named after the tenant's namespace",
			`!has(resource.inputs.metadata) || resource.inputs.metadata.name.startsWith(deployment.namespace)`, nil, ""},
		{"an ingress's hosts are under the tenant's namespace",
			`resource.type != "` + ingress + `" || deployment.system || resource.inputs.spec.rules.all(r, r.host.endsWith("." + deployment.namespace + ".apps.example.com"))`,
			nil, ""},
		{"the deployment's own names", `deployment.tenant == "Acme" && deployment.component == "k8s-ingress" && deployment.environment == "dev" && deployment.name == "web" && !deployment.system`, nil, ""},
		{"a deployment of another tenant", `deployment.namespace == "globex"`, []string{"ns", "quota", "web"}, ""},
		{"op is what the plan does", `resource.op == "create"`, []string{"web"}, ""},
		{"whole numbers compare with integers", `!has(resource.inputs.replicas) || resource.inputs.replicas == 3`, nil, ""},
		{"secrets are masked", `!has(resource.inputs.password) || resource.inputs.password == "[secret]"`, nil, ""},
		{"a missing key fails closed with the error as detail", `resource.inputs.spec.tls.size() > 0`,
			[]string{"ns", "quota", "web"}, "no such key"},
		{"a result that is not true or false fails", `resource.inputs`, []string{"ns", "quota", "web"}, "not true or false"},
		// Stopped by its cost, or on a busy machine by its time first: either ends it (the
		// expression package tests each limit alone).
		{"endless work is cut off", endless, []string{"ns", "quota", "web"}, "was stopped"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := compile(tc.expr); err != nil {
				t.Fatalf("compile: %v", err)
			}
			got := evaluate(context.Background(), []Policy{{Rule: Rule{Name: "p", Message: "m", Expression: tc.expr, Level: Mandatory, Enabled: true}}}, acme, plan(), nil)
			var names []string
			for _, v := range got {
				names = append(names, v.Name)
				if !strings.Contains(v.Detail, tc.detail) {
					t.Errorf("%s: detail %q, want it to say %q", v.Name, v.Detail, tc.detail)
				}
				if v.Policy != "p" || v.Message != "m" || v.Level != Mandatory {
					t.Errorf("violation %+v does not name the policy", v)
				}
			}
			if strings.Join(names, ",") != strings.Join(tc.failing, ",") {
				t.Errorf("failing %v, want %v", names, tc.failing)
			}
		})
	}
}

// endless would take a very long time: seven nested passes over ten numbers.
var endless = strings.Repeat("[0,1,2,3,4,5,6,7,8,9].all(x, ", 7) + "true" + strings.Repeat(")", 7)

func TestEvaluate_DisabledPoliciesAreNotChecked(t *testing.T) {
	got := evaluate(context.Background(), []Policy{{Rule: Rule{Name: "off", Expression: "false", Level: Mandatory}}}, acme, plan(), nil)
	if len(got) != 0 {
		t.Errorf("a disabled policy failed %v", got)
	}
}

// A slot of a stack instance is checked with what the instance's other slots declare beside its
// own plan, each with its slot; they are read, never checked themselves.
func TestEvaluate_WhatOtherSlotsDeclareIsBesideThePlan(t *testing.T) {
	const namespace, quota = "kubernetes:core/v1:Namespace", "kubernetes:core/v1:ResourceQuota"
	own := []Resource{{Type: namespace, Name: "namespace", URN: "urn:ns", Op: "create",
		Inputs: map[string]any{"metadata": map[string]any{"name": "acme"}}}}
	others := []Declared{{Type: quota, Name: "quota", Slot: "quota"}, {Type: "kubernetes:core/v1:Secret", Name: "credentials", Slot: "secret"}}
	slot := acme
	slot.Slot = "namespace"
	policies := func(expr string) []Policy {
		return []Policy{{Rule: Rule{Name: "p", Expression: expr, Level: Mandatory, Enabled: true}}}
	}
	hasQuota := `resource.type != "` + namespace + `" || plan.exists(r, r.type == "` + quota + `") || declared.exists(r, r.type == "` + quota + `" && r.slot == "quota")`
	if got := evaluate(context.Background(), policies(hasQuota), slot, own, nil); len(got) != 1 {
		t.Errorf("a namespace alone: %v, want it refused", got)
	}
	if got := evaluate(context.Background(), policies(hasQuota), slot, own, others); len(got) != 0 {
		t.Errorf("a namespace whose instance's quota slot declares one: %v", got)
	}
	if got := evaluate(context.Background(), policies(`deployment.slot == "namespace" && size(plan) == 1 && size(declared) == 2`), slot, own, others); len(got) != 0 {
		t.Errorf("the slot, the plan and what is declared, as read: %v", got)
	}
	if got := evaluate(context.Background(), policies("false"), slot, own, others); len(got) != 1 || got[0].Name != "namespace" {
		t.Errorf("what other slots declare was checked: %v", got)
	}
}

// A check out of time fails what it has not checked, saying so, rather than letting it through.
func TestEvaluate_WhatACheckOutOfTimeLeavesFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	got := evaluate(ctx, []Policy{{Rule: Rule{Name: "p", Expression: "true", Level: Mandatory, Enabled: true}}}, acme, plan(), nil)
	var names []string
	for _, v := range got {
		names = append(names, v.Name)
		if !strings.Contains(v.Detail, "not checked: checking the plan took longer than its 30s") {
			t.Errorf("%s: detail %q", v.Name, v.Detail)
		}
	}
	if strings.Join(names, ",") != "ns,quota,web" {
		t.Errorf("failing %v, want every checked resource", names)
	}
	if (&Check{Violations: got}).Refusal() == nil {
		t.Error("a mandatory policy left unchecked did not refuse")
	}
}

func TestCompile_RefusesWithCELsWords(t *testing.T) {
	cases := map[string]string{
		"":                           "empty",
		"resource.type ==":           "line 1, column",
		"resourse.type == \"x\"":     "resourse is not known here",
		"resource.name + 1":          "must give true",
		`"a string"`:                 "must give true",
		"1 + 2":                      "must give true",
		strings.Repeat("a", 5000):    "longer than",
		`resource.name.matches("(")`: `"(" is not a regular expression`,
		`resource.name.matches("[a-z]{1000}[a-z]{1000}[a-z]{1000}x")`: "is too large: it compiles to 3003 steps",
	}
	for expr, want := range cases {
		_, err := compile(expr)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("compile(%.30q) = %v, want an error saying %q", expr, err, want)
		}
	}
}

// A pattern the plan gives is held to the same bounds as a literal one, and so is the text it
// runs over: a resource that would make a check run for seconds fails, saying why.
func TestEvaluate_RegularExpressionsFromThePlanAreBounded(t *testing.T) {
	text := strings.Repeat("a", 100_000)
	own := []Resource{
		{Type: "simcloud:index:Network", Name: "issue", URN: "urn:issue", Op: "create",
			Inputs: map[string]any{"data": text, "pattern": "[a-z]{1000}[a-z]{1000}[a-z]{1000}x"}},
		{Type: "simcloud:index:Network", Name: "work", URN: "urn:work", Op: "create",
			Inputs: map[string]any{"data": text, "pattern": "[a-z]{300}x"}},
		{Type: "simcloud:index:Network", Name: "fine", URN: "urn:fine", Op: "create",
			Inputs: map[string]any{"data": text, "pattern": "^a+$"}},
	}
	p := []Policy{{Rule: Rule{Name: "p", Expression: `resource.inputs.data.matches(resource.inputs.pattern)`, Level: Mandatory, Enabled: true}}}
	got := evaluate(context.Background(), p, acme, own, nil)
	want := map[string]string{"issue": "is too large: it compiles to 3003 steps", "work": "against 100000 bytes is too much work"}
	if len(got) != len(want) {
		t.Fatalf("violations %+v, want %v", got, want)
	}
	for _, v := range got {
		if !strings.Contains(v.Detail, want[v.Name]) {
			t.Errorf("%s: detail %q, want it to say %q", v.Name, v.Detail, want[v.Name])
		}
	}
}

func TestCheck_RefusalNamesResourcePolicyAndMessage(t *testing.T) {
	c := &Check{Violations: []Violation{
		{Policy: "tls", Level: Mandatory, Message: "every Ingress has TLS", Type: ingress, Name: "web"},
		{Policy: "labels", Level: Advisory, Message: "label it", Type: ingress, Name: "web"},
	}}
	err := c.Refusal()
	if err == nil {
		t.Fatal("a mandatory violation did not refuse")
	}
	for _, want := range []string{"tls", "every Ingress has TLS", "web", ingress} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "label it") {
		t.Errorf("refusal %q names an advisory policy", err)
	}
	c.Violations = c.Violations[1:]
	if err := c.Refusal(); err != nil {
		t.Errorf("an advisory violation refused: %v", err)
	}
}
