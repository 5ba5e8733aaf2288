package lifecycle

// EnvironmentStatus is where an environment is in its life:
// planned → provisioning → active | failed → decommissioning → decommissioned. Deployments,
// stack instances, tenants and the dashboard read it, so it lives here.
type EnvironmentStatus string

// The statuses of an environment.
const (
	EnvironmentPlanned         EnvironmentStatus = "planned"
	EnvironmentProvisioning    EnvironmentStatus = "provisioning"
	EnvironmentActive          EnvironmentStatus = "active"
	EnvironmentFailed          EnvironmentStatus = "failed"
	EnvironmentDecommissioning EnvironmentStatus = "decommissioning"
	EnvironmentDecommissioned  EnvironmentStatus = "decommissioned"
)

// Environments is an environment's life. A provisioning may be stopped by a decommissioning: a
// landing zone retired while its system services deploy takes them down.
var Environments = Machine[EnvironmentStatus]{
	Name: "environment", Table: "environments", Column: "status", Writer: "app/orchestration/environment/transition.go", Start: EnvironmentActive,
	Moves: map[EnvironmentStatus][]EnvironmentStatus{
		EnvironmentPlanned:         {EnvironmentProvisioning, EnvironmentActive},
		EnvironmentProvisioning:    {EnvironmentActive, EnvironmentFailed, EnvironmentDecommissioning},
		EnvironmentActive:          {EnvironmentDecommissioning},
		EnvironmentFailed:          {EnvironmentProvisioning, EnvironmentDecommissioning},
		EnvironmentDecommissioning: {EnvironmentDecommissioned, EnvironmentFailed},
	},
}

// Moving reports whether an environment is on its way somewhere: planned, provisioning or
// decommissioning. Its page follows it live until it arrives.
func (s EnvironmentStatus) Moving() bool {
	return s == EnvironmentPlanned || s == EnvironmentProvisioning || s == EnvironmentDecommissioning
}
