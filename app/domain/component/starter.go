package component

import (
	"fmt"
	"slices"
	"strings"
)

// Starter is the draft a new component starts from: small, valid, and of the semantic type
// chosen.
type Starter struct {
	Code         string `json:"code"`
	InputSchema  string `json:"input_schema"`
	OutputSchema string `json:"output_schema"`
}

// simcloudStarters are runnable on the simulated cloud, one per semantic type it realises.
var simcloudStarters = map[string]Starter{
	"VirtualMachine": {
		Code: `name: my-component
runtime: yaml
config:
  name:
    type: string
resources:
  machine:
    type: simcloud:index:Machine
    properties:
      name: ${name}
      cores: 2
outputs:
  machine_id: ${machine.id}
  ip_address: ${machine.ip}
`,
		InputSchema: `{
  "type": "object",
  "required": ["name"],
  "properties": {
    "name": {"type": "string", "title": "Name", "description": "Name of the machine"}
  }
}`,
		OutputSchema: `{
  "type": "object",
  "properties": {
    "machine_id": {"type": "string", "title": "Machine ID"},
    "ip_address": {"type": "string", "title": "IP address"}
  }
}`,
	},
	"BlockStorage": {
		Code: `name: my-component
runtime: yaml
config:
  name:
    type: string
resources:
  disk:
    type: simcloud:index:Disk
    properties:
      name: ${name}
      sizeGb: 10
outputs:
  disk_id: ${disk.id}
`,
		InputSchema: `{
  "type": "object",
  "required": ["name"],
  "properties": {
    "name": {"type": "string", "title": "Name", "description": "Name of the disk"}
  }
}`,
		OutputSchema: `{
  "type": "object",
  "properties": {
    "disk_id": {"type": "string", "title": "Disk ID"}
  }
}`,
	},
	"VirtualNetwork": {
		Code: `name: my-component
runtime: yaml
config:
  name:
    type: string
resources:
  network:
    type: simcloud:index:Network
    properties:
      name: ${name}
      cidr: 10.10.0.0/24
outputs:
  network_id: ${network.id}
`,
		InputSchema: `{
  "type": "object",
  "required": ["name"],
  "properties": {
    "name": {"type": "string", "title": "Name", "description": "Name of the network"}
  }
}`,
		OutputSchema: `{
  "type": "object",
  "properties": {
    "network_id": {"type": "string", "title": "Network ID"}
  }
}`,
	},
}

// starterFor is the draft a new component of semanticType on provider starts from.
// resourceType is the Pulumi type that realises the semantic type on the provider, "" when
// none is mapped. On the simulated cloud the starter runs as it is; elsewhere it names the
// resource and leaves its properties to the author.
func starterFor(provider, semanticType, resourceType string) Starter {
	if s, ok := simcloudStarters[semanticType]; ok && provider == "simcloud" {
		return s
	}
	note := "# Set the properties " + resourceType + " needs; see its provider's documentation."
	if resourceType == "" {
		resourceType = PackageOf(provider) + ":index:" + semanticType
		note = fmt.Sprintf("# No %s resource type realises %s yet: name the one to use here, and map it on the providers page.", provider, semanticType)
	}
	resource := strings.ToLower(semanticType[:1]) + semanticType[1:]
	return Starter{
		Code: fmt.Sprintf(`name: my-component
runtime: yaml
config:
  name:
    type: string
resources:
  %s:
    %s
    type: %s
    properties:
      name: ${name}
outputs:
  id: ${%s.id}
`, resource, note, resourceType, resource),
		InputSchema: `{
  "type": "object",
  "required": ["name"],
  "properties": {
    "name": {"type": "string", "title": "Name"}
  }
}`,
		OutputSchema: `{
  "type": "object",
  "properties": {
    "id": {"type": "string", "title": "ID"}
  }
}`,
	}
}

// Starter is the draft a new component of semanticType on provider starts from; false when
// either is unknown.
func (s Semantics) Starter(provider, semanticType string) (Starter, bool) {
	if !slices.Contains(s.Providers, provider) || !slices.Contains(s.SemanticTypes, semanticType) {
		return Starter{}, false
	}
	mapped := ""
	for _, rt := range s.ResourceTypes {
		if rt.Provider == provider && rt.SemanticType == semanticType {
			mapped = rt.PulumiType
		}
	}
	return starterFor(provider, semanticType, mapped), true
}
