package lifecycle

// InstanceStatus is where a stack instance stands as a whole; its stack's state machine is
// apart. Environments, tenants' namespaces and provisioning read it, so it lives here.
type InstanceStatus string

// The statuses of a stack instance.
const (
	InstancePending    InstanceStatus = "pending"
	InstanceDeploying  InstanceStatus = "deploying"
	InstanceActive     InstanceStatus = "active"
	InstanceDegraded   InstanceStatus = "degraded"
	InstanceFailed     InstanceStatus = "failed"
	InstanceDestroying InstanceStatus = "destroying"
	InstanceDestroyed  InstanceStatus = "destroyed"
	InstanceUpgrading  InstanceStatus = "upgrading"
)

// Instances is a stack instance's life. A pending instance discarded holds nothing to take
// down: it is destroyed at once.
var Instances = Machine[InstanceStatus]{
	Name: "stack instance", Table: "stack_instances", Column: "status", Writer: "app/orchestration/instance/transition.go", Start: InstancePending,
	Moves: map[InstanceStatus][]InstanceStatus{
		InstancePending:    {InstanceDeploying, InstanceDestroying, InstanceDestroyed},
		InstanceDeploying:  {InstanceActive, InstanceFailed, InstanceDestroying},
		InstanceActive:     {InstanceDegraded, InstanceUpgrading, InstanceDestroying},
		InstanceDegraded:   {InstanceActive, InstanceDegraded, InstanceUpgrading, InstanceDestroying},
		InstanceUpgrading:  {InstanceActive, InstanceDegraded, InstanceUpgrading, InstanceFailed},
		InstanceFailed:     {InstanceDeploying, InstanceFailed, InstanceDestroying},
		InstanceDestroying: {InstanceFailed, InstanceDestroyed},
	},
}
