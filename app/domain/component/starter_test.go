package component

import (
	"strings"
	"testing"
)

// Every starter is a valid draft of its semantic type: on the simulated cloud one that runs as
// it is, elsewhere one naming the provider's resource type, or a placeholder for one.
func TestStarters_AreValidAndOfTheirType(t *testing.T) {
	cases := []struct {
		provider, semanticType, mapped, wants string
	}{
		{"simcloud", "VirtualMachine", "simcloud:index:Machine", "simcloud:index:Machine"},
		{"simcloud", "BlockStorage", "simcloud:index:Disk", "simcloud:index:Disk"},
		{"simcloud", "VirtualNetwork", "simcloud:index:Network", "simcloud:index:Network"},
		{"simcloud", "Database", "", "simcloud:index:Database"},
		{"aws", "VirtualMachine", "aws:ec2/instance:Instance", "aws:ec2/instance:Instance"},
		{"proxmox", "Container", "", "proxmoxve:index:Container"},
	}
	for _, c := range cases {
		t.Run(c.provider+"/"+c.semanticType, func(t *testing.T) {
			st := starterFor(c.provider, c.semanticType, c.mapped)
			if !strings.Contains(st.Code, "type: "+c.wants+"\n") {
				t.Fatalf("the starter does not make a %s:\n%s", c.wants, st.Code)
			}
			d := Draft{Name: "my-component", Language: "yaml", Code: st.Code, InputSchema: []byte(st.InputSchema),
				OutputSchema: []byte(st.OutputSchema), ResolverBindings: []byte("{}")}
			if _, _, err := Validate(&d, allHosts, Scope{Package: PackageOf(c.provider)}); err != nil {
				t.Fatalf("the starter is not valid: %v\n%s", err, st.Code)
			}
		})
	}
}
