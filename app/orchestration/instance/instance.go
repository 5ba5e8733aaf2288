// Package instance runs stacks in environments. A stack instance deploys each slot of its
// stack's version as an ordinary deployment, in the order its wiring draws, independent slots
// at once; it keeps the state of the stack's state machine; and it takes its runs — deploy,
// destroy, upgrade, a transition, a day-2 operation — one at a time, in the order asked.
package instance

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"nimbus/app/kernel/lifecycle"
	"nimbus/db/dbgen"
)

// Instance is a stack deployed in an environment, as people and the API see it.
type Instance struct {
	ID               uuid.UUID                `json:"id"`
	Name             string                   `json:"name"`
	TenantID         uuid.UUID                `json:"tenant_id"`
	TenantName       string                   `json:"tenant_name"`
	EnvironmentID    uuid.UUID                `json:"environment_id"`
	EnvironmentName  string                   `json:"environment_name"`
	StackID          uuid.UUID                `json:"stack_id"`
	StackName        string                   `json:"stack_name"`
	StackDisplayName string                   `json:"stack_display_name"`
	Version          int                      `json:"version"`
	Parameters       map[string]any           `json:"parameters"`
	Status           lifecycle.InstanceStatus `json:"status"`
	// State is the state machine's, empty until every slot was deployed.
	State          string     `json:"state"`
	StateEnteredAt *time.Time `json:"state_entered_at"`
	Error          string     `json:"error"`
	// Retry is the run a retry of a failed instance asks for: destroy when it failed being
	// destroyed, else deploy. Empty unless failed.
	Retry      RunKind    `json:"retry,omitempty"`
	DeployedAt *time.Time `json:"deployed_at"`
	CreatedAt  time.Time  `json:"created_at"`
	// Slots are filled by Get.
	Slots []Slot `json:"slots,omitempty"`
}

// Slot is one slot of an instance and the deployment that holds it.
type Slot struct {
	Name         string         `json:"name"`
	ComponentID  uuid.UUID      `json:"component_id"`
	Version      int            `json:"version"` // the component's, pinned by the stack's version
	After        []string       `json:"after"`
	DeploymentID *uuid.UUID     `json:"deployment_id"`
	Deployment   string         `json:"deployment"`
	Status       string         `json:"status"` // the deployment's; "pending" before it exists
	Outputs      map[string]any `json:"outputs"`
	// Preview is the newest preview of the slot's deployment, if it had one: a pending
	// instance's plan.
	Preview *Preview `json:"preview,omitempty"`
}

func fromRow(r dbgen.GetStackInstanceRow) Instance {
	in := Instance{ID: r.ID, Name: r.Name, TenantID: r.TenantID, TenantName: r.TenantName, EnvironmentID: r.EnvironmentID,
		EnvironmentName: r.EnvironmentName, StackID: r.StackID, StackName: r.StackName, StackDisplayName: r.StackDisplayName,
		Version: int(r.Version), Parameters: map[string]any{}, Status: lifecycle.InstanceStatus(r.Status), StateEnteredAt: r.StateEnteredAt,
		Error: r.Error, DeployedAt: r.DeployedAt, CreatedAt: r.CreatedAt}
	_ = json.Unmarshal(r.Parameters, &in.Parameters)
	if r.CurrentState != nil {
		in.State = *r.CurrentState
	}
	return in
}
