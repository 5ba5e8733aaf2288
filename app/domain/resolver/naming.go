package resolver

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/uuid"

	"nimbus/app/kernel/problem"
	"nimbus/db/dbgen"
)

// namingResolver issues names from a pattern such as {tenant}-{env}-{type}-{seq:03d}, with a
// number per pattern that only grows, so a name is never handed out twice.
type namingResolver struct{}

// namingConfig is an environment's naming configuration.
type namingConfig struct {
	Pattern string `json:"pattern"`
	Domain  string `json:"domain"`
}

// NamingVariables are what a pattern may use, with what each stands for.
var NamingVariables = []struct{ Name, Meaning string }{
	{"tenant", "the tenant's name"},
	{"env", "the environment's name"},
	{"type", "the component's semantic type, such as virtualmachine"},
	{"component", "the component's name"},
	{"deployment", "the deployment's name"},
	{"seq", "a number that grows by one with each name; {seq:03d} pads it to three digits"},
}

var (
	variable   = regexp.MustCompile(`\{([a-z]+)(?::(0[1-9]d))?\}`)
	anyBrace   = regexp.MustCompile(`[{}]`)
	notInName  = regexp.MustCompile(`[^a-z0-9-]+`)
	domainName = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
)

func (namingResolver) Type() string      { return "naming" }
func (namingResolver) Outputs() []string { return []string{"name", "fqdn"} }

func (namingResolver) Check(_ context.Context, _ *dbgen.Queries, _ Scope, raw json.RawMessage, v *problem.ValidationError) {
	var c namingConfig
	if err := strictJSON(raw, &c); err != nil {
		v.Add("config", "json", "must be {\"pattern\": …, \"domain\": …}: %v", err)
		return
	}
	checkPattern(c.Pattern, v)
	if c.Domain != "" && !domainName.MatchString(strings.ToLower(c.Domain)) {
		v.Add("config.domain", "domain", "%q is not a domain name such as dev.example.com", c.Domain)
	}
}

// checkPattern refuses a pattern with an unknown variable, a stray brace, or no number: without
// {seq} every deployment would get the same name.
func checkPattern(pattern string, v *problem.ValidationError) {
	if strings.TrimSpace(pattern) == "" {
		v.Add("config.pattern", "required", "write a pattern such as {tenant}-{env}-{type}-{seq:03d}")
		return
	}
	seq := false
	for _, m := range variable.FindAllStringSubmatch(pattern, -1) {
		known := false
		for _, k := range NamingVariables {
			known = known || k.Name == m[1]
		}
		switch {
		case !known:
			v.Add("config.pattern", "variable", "{%s} is not a variable; use %s", m[1], variableList())
		case m[2] != "" && m[1] != "seq":
			v.Add("config.pattern", "variable", "only {seq} takes a width, as in {seq:03d}")
		case m[1] == "seq":
			seq = true
		}
	}
	if anyBrace.MatchString(variable.ReplaceAllString(pattern, "")) {
		v.Add("config.pattern", "syntax", "has a brace that is not part of a variable such as {env} or {seq:03d}")
	}
	if !seq {
		v.Add("config.pattern", "seq", "needs {seq}, or every deployment would get the same name")
	}
}

func variableList() string {
	names := make([]string, len(NamingVariables))
	for i, k := range NamingVariables {
		names[i] = "{" + k.Name + "}"
	}
	return strings.Join(names, ", ")
}

// render fills the pattern's variables; {seq} becomes seq, or stays as it is when seq < 0, which
// gives the scope a sequence counts within.
func render(pattern string, d Deployment, seq int64) string {
	out := variable.ReplaceAllStringFunc(pattern, func(v string) string {
		m := variable.FindStringSubmatch(v)
		switch m[1] {
		case "tenant":
			return d.Tenant
		case "env":
			return d.Environment
		case "type":
			return d.SemanticType
		case "component":
			return d.Component
		case "deployment":
			return d.Name
		case "seq":
			if seq < 0 {
				return v
			}
			if m[2] != "" {
				return fmt.Sprintf("%"+m[2], seq)
			}
			return fmt.Sprint(seq)
		}
		return v
	})
	if seq < 0 {
		return strings.ToLower(out)
	}
	// Names become host names: lower case letters, digits and single hyphens.
	return strings.Trim(notInName.ReplaceAllString(strings.ToLower(out), "-"), "-")
}

func (namingResolver) Resolve(ctx context.Context, q *dbgen.Queries, c Call) (map[string]any, error) {
	var cfg namingConfig
	if err := json.Unmarshal(c.Config, &cfg); err != nil {
		return nil, err
	}
	held, err := q.DeploymentName(ctx, dbgen.DeploymentNameParams{DeploymentID: uuid.NullUUID{UUID: c.Deployment.ID, Valid: true}, Input: c.Input})
	if err == nil {
		return map[string]any{"name": held.Name, "fqdn": held.Fqdn}, nil
	}
	scope := sequenceKey(c.Owner, cfg.Pattern, c.Deployment)
	// A name someone took by other means is skipped, never handed out twice.
	for range 1000 {
		n, err := q.NextInSequence(ctx, scope)
		if err != nil {
			return nil, err
		}
		name := render(cfg.Pattern, c.Deployment, n)
		fqdn := name
		if cfg.Domain != "" {
			fqdn = name + "." + strings.ToLower(cfg.Domain)
		}
		taken, err := q.NameTaken(ctx, dbgen.NameTakenParams{EnvironmentID: c.Deployment.EnvID, Name: name})
		if err != nil {
			return nil, err
		}
		if taken {
			continue
		}
		if _, err := q.IssueName(ctx, dbgen.IssueNameParams{EnvironmentID: c.Deployment.EnvID, Name: name, Fqdn: fqdn,
			DeploymentID: uuid.NullUUID{UUID: c.Deployment.ID, Valid: true}, OperationID: uuid.NullUUID{UUID: c.Operation, Valid: c.Operation != uuid.Nil},
			Input: c.Input}); err != nil {
			return nil, err
		}
		return map[string]any{"name": name, "fqdn": fqdn}, nil
	}
	return nil, fmt.Errorf("no free name after 1000 tries of %s", cfg.Pattern)
}

// sequenceKey names the sequence a name takes its number from: one per configuration's owner
// and pattern as rendered without the number, so acme-dev-{seq} and acme-prod-{seq} count
// apart.
func sequenceKey(owner uuid.UUID, pattern string, d Deployment) string {
	return owner.String() + ":" + render(pattern, d, -1)
}

// PreviewName is the name the pattern configured on owner would give d next, for the
// configuration form; it takes no number.
func PreviewName(ctx context.Context, q *dbgen.Queries, owner uuid.UUID, pattern string, d Deployment) (string, error) {
	v := &problem.ValidationError{}
	checkPattern(pattern, v)
	if err := v.Err(); err != nil {
		return "", err
	}
	last, err := q.LastInSequence(ctx, sequenceKey(owner, pattern, d))
	if err != nil {
		return "", err
	}
	return render(pattern, d, last+1), nil
}

// strictJSON decodes raw into v, refusing fields v does not have.
func strictJSON(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
