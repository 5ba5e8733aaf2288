package component

// The program a new component starts from: small, valid, and runnable on the simulated cloud.
const (
	starterProgram = `name: my-component
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
`
	starterInputs = `{
  "type": "object",
  "required": ["name"],
  "properties": {
    "name": {"type": "string", "description": "Name of the network"}
  }
}`
	starterOutputs = `{
  "type": "object",
  "properties": {
    "network_id": {"type": "string"}
  }
}`
)
