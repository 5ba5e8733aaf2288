package resolver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"nimbus/app/kernel/objstore/s3test"
	"nimbus/app/kernel/problem"
	"nimbus/db"
	"nimbus/db/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(s3test.Around(m)) }

func TestPattern_VariablesAndRendering(t *testing.T) {
	d := Deployment{Name: "web", Tenant: "Acme Corp", Environment: "Dev", Component: "simcloud-machine", SemanticType: "virtualmachine"}
	if got := render("{tenant}-{env}-{type}-{seq:03d}", d, 7); got != "acme-corp-dev-virtualmachine-007" {
		t.Errorf("rendered %q", got)
	}
	if got := render("{deployment}.{component}-{seq}", d, 12); got != "web-simcloud-machine-12" {
		t.Errorf("rendered %q: a dot is not part of a host name", got)
	}
	for pattern, want := range map[string]string{
		"{tenant}-{colour}-{seq}": "{colour} is not a variable",
		"{env}-{seq":              "brace",
		"{env}":                   "needs {seq}",
		"{env:03d}-{seq}":         "only {seq} takes a width",
		"":                        "write a pattern",
	} {
		v := &problem.ValidationError{}
		checkPattern(pattern, v)
		if err := v.Err(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", pattern, err, want)
		}
	}
}

func TestBindings_ParsedAndChecked(t *testing.T) {
	b, err := ParseBindings(json.RawMessage(`{"ip_address": "ipam", "gw": "ipam.gateway", "name": "naming.fqdn"}`))
	if err != nil || len(b) != 3 || b[0] != (Binding{"gw", "ipam", "gateway"}) || b[2] != (Binding{"name", "naming", "fqdn"}) {
		t.Fatalf("%+v %v", b, err)
	}
	for target, want := range map[string]string{"dns": "not a resolver", "ipam.mac": "gives address"} {
		if err := CheckBinding("x", target); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", target, err, want)
		}
	}
}

func TestImageCatalog_ParametersWinOverDefaultsAndAMissSaysWhat(t *testing.T) {
	q := db.Queries(dbtest.Pool(t))
	ctx := context.Background()
	c := Call{Config: json.RawMessage(`{"os_family": "debian", "os_version": "12"}`), Deployment: Deployment{Provider: "simcloud"},
		Params: map[string]any{}}
	got, err := imageResolver{}.Resolve(ctx, q, c)
	if err != nil || got["image_id"] != "debian-12" {
		t.Fatalf("the defaults: %v %v", got, err)
	}
	c.Params = map[string]any{"os_family": "Ubuntu", "os_version": "24.04"}
	if got, err = (imageResolver{}).Resolve(ctx, q, c); err != nil || got["image_id"] != "ubuntu-24.04" {
		t.Fatalf("the deployment's own choice: %v %v", got, err)
	}
	c.Params = map[string]any{"os_version": "11"}
	if _, err = (imageResolver{}).Resolve(ctx, q, c); err == nil || !strings.Contains(err.Error(), "no debian 11 image for amd64 on simcloud") {
		t.Fatalf("a miss: %v", err)
	}
}

func TestSecret_LengthAndAlphabet(t *testing.T) {
	got, err := secretResolver{}.Resolve(context.Background(), nil, Call{Config: json.RawMessage(`{"length": 40, "alphabet": "abcdefghij"}`)})
	if err != nil {
		t.Fatal(err)
	}
	s := got["value"].(string)
	if len(s) != 40 || strings.Trim(s, "abcdefghij") != "" {
		t.Fatalf("secret %q", s)
	}
	v := &problem.ValidationError{}
	secretResolver{}.Check(context.Background(), nil, Scope{}, json.RawMessage(`{"length": 4}`), v)
	if problem.FieldOf(v.Err()) != "config.length" {
		t.Fatalf("a short secret: %v", v.Err())
	}
}

func TestTargetsAreAllBindable(t *testing.T) {
	targets := Targets()
	for _, want := range []string{"ipam", "ipam.subnet", "naming.fqdn", "image_catalog.image_name", "secret_provisioner"} {
		if !slices.Contains(targets, want) {
			t.Errorf("Targets() = %v, lacks %s", targets, want)
		}
	}
	for _, target := range targets {
		if err := CheckBinding("x", target); err != nil {
			t.Errorf("%s is offered but refused: %v", target, err)
		}
	}
	if slices.Contains(targets, "naming.name") {
		t.Error("naming.name is offered beside naming, which means the same")
	}
}
