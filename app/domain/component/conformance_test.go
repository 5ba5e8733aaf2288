package component

import (
	"os"
	"slices"
	"strings"
	"testing"

	"nimbus/app/domain/component/corpus"
	"nimbus/app/kernel/problem"
)

// Every conformance program of the pinned engine is a program Pulumi accepts. Nimbus must
// accept each one, or refuse it only for reaching beyond its stack: a provider admin's program
// only for reading the server's files or fetching URLs, a tenant's only by the rules of
// contain.go.
func TestConformance_ProgramsPulumiAcceptsAreRefusedOnlyForReach(t *testing.T) {
	programs := corpus.Programs(t)
	tenantRefusals := map[string]int{}
	tenantAccepted := 0
	for _, p := range programs {
		t.Run(p.Name, func(t *testing.T) {
			v := &problem.ValidationError{}
			prog := ParseYAML(p.Code, Scope{ProviderLevel: true}, v)
			for _, f := range v.Fields {
				if f.Rule != RuleFileAccess && f.Rule != RuleNetworkFetch {
					t.Errorf("provider-level: refused by %s at %d:%d: %s", f.Rule, f.Line, f.Column, f.Message)
				}
			}
			if prog == nil {
				return
			}
			v = &problem.ValidationError{}
			ParseYAML(p.Code, Scope{Package: mainPackage(prog)}, v)
			if len(v.Fields) == 0 {
				tenantAccepted++
			}
			for _, f := range v.Fields {
				if !slices.Contains(ReachRules, f.Rule) || f.Line == 0 {
					t.Errorf("as a tenant's %s program: refused by %s at %d:%d: %s", mainPackage(prog), f.Rule, f.Line, f.Column, f.Message)
				}
				tenantRefusals[f.Rule]++
			}
		})
	}
	t.Logf("%d programs: all accepted as provider-level; %d accepted as tenants' programs, refusals by rule %v",
		len(programs), tenantAccepted, tenantRefusals)
}

// mainPackage is the package most of a program's resources are of: the provider a tenant
// writing it would choose.
func mainPackage(p *Program) string {
	count := map[string]int{}
	best := ""
	for _, typ := range p.Resources {
		parts := strings.Split(typ, ":")
		pkg := parts[0]
		if len(parts) == 3 && pkg == "pulumi" && parts[1] == "providers" {
			pkg = parts[2]
		}
		count[pkg]++
		if count[pkg] > count[best] || count[pkg] == count[best] && pkg < best {
			best = pkg
		}
	}
	return best
}

func TestConformance_CorpusIsOfThePinnedLanguageHost(t *testing.T) {
	script, err := os.ReadFile("../../../scripts/pulumi-toolchain.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), "\nPULUMI_YAML_VERSION="+corpus.YAMLVersion+"\n") {
		t.Fatalf("the toolchain pins another pulumi-yaml than the corpus's %s", corpus.YAMLVersion)
	}
}
