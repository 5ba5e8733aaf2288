package deploy

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"nimbus/app/domain/policy"
	"nimbus/app/kernel/outcome"
	"nimbus/app/platform/pulumix"
	"nimbus/db/dbgen"
)

// Kind is what an operation does to its deployment.
type Kind string

// The kinds of operation. Each one's steps are listed in steps.go.
const (
	KindPreview Kind = "preview" // shows what a deploy, update or upgrade would do
	KindDeploy  Kind = "deploy"  // makes the deployment's resources for the first time
	KindUpdate  Kind = "update"  // applies new parameters
	KindUpgrade Kind = "upgrade" // moves to a newer version
	KindRefresh Kind = "refresh" // reads back what the resources look like now
	KindDestroy Kind = "destroy" // deletes the resources
	KindRestore Kind = "restore" // replaces the stack's state; runs in its request, not in a worker
	// KindDriftCheck compares what the cloud has with what the stack recorded, changing neither.
	KindDriftCheck Kind = "drift_check"
)

// Label is the kind as a title says it: "Drift check".
func (k Kind) Label() string {
	if k == KindDriftCheck {
		return "Drift check"
	}
	return strings.ToUpper(string(k[:1])) + string(k[1:])
}

// changes reports whether an operation of the kind changes the deployment's resources; a
// preview, a refresh and a drift check leave the deployment as it was, however they end.
func (k Kind) changes() bool { return k != KindPreview && k != KindRefresh && k != KindDriftCheck }

// Status is where an operation stands. Its moves are the functions of lifecycle.go:
//
//	queued ─claim→ running ─finish→ succeeded | failed | cancelled
//	running ─release→ queued (for a retry)    running ─park→ awaiting_approval
//	running ─requeue→ queued (its worker died, and its tenant has no place for it now)
//	awaiting_approval ─resume or rewind→ queued    awaiting_approval ─end→ rejected | cancelled
//	queued ─cancel→ cancelled
type Status string

// The statuses of an operation.
const (
	Queued           Status = "queued"
	Running          Status = "running"
	AwaitingApproval Status = "awaiting_approval"
	Succeeded        Status = "succeeded"
	Failed           Status = "failed"
	Cancelled        Status = "cancelled"
	Rejected         Status = "rejected"
)

// Ended reports whether the operation has ended: it will never run again.
func (s Status) Ended() bool { return OperationMachine.Ended(s) }

// DeploymentStatus is where a deployment stands, moved by the operations on it.
type DeploymentStatus string

// The statuses of a deployment.
const (
	Pending    DeploymentStatus = "pending" // recorded, never deployed
	Deploying  DeploymentStatus = "deploying"
	Upgrading  DeploymentStatus = "upgrading"
	Destroying DeploymentStatus = "destroying"
	Deployed   DeploymentStatus = "deployed"
	Destroyed  DeploymentStatus = "destroyed"
	Broken     DeploymentStatus = "failed" // an operation failed and left it as it could
	// Interrupted is a deployment whose first deploy was cancelled (what it made removed
	// again) or whose destroy was cancelled part way: nothing failed, so it does not say so.
	Interrupted DeploymentStatus = "cancelled"
)

// Every kind and status, in the order lists and their filters name them; the lifecycle tests
// hold them to the schema and to the machines.
var (
	kinds              = names(KindPreview, KindDeploy, KindUpdate, KindUpgrade, KindRefresh, KindDestroy, KindRestore, KindDriftCheck)
	deploymentStatuses = names(Pending, Deploying, Deployed, Broken, Interrupted, Destroying, Destroyed, Upgrading)
	operationStatuses  = names(Queued, Running, AwaitingApproval, Succeeded, Failed, Cancelled, Rejected)
)

func names[S ~string](values ...S) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// Kinds names every kind of operation, for a list filtered by kind.
func Kinds() []string { return slices.Clone(kinds) }

// Statuses names every status of an operation, for a list filtered by status.
func Statuses() []string { return slices.Clone(operationStatuses) }

// DeploymentStatuses names every status of a deployment, for a list filtered by status.
func DeploymentStatuses() []string { return slices.Clone(deploymentStatuses) }

// running is what a deployment shows while an operation of the kind runs on it; a preview and a
// refresh leave it as it is.
func (k Kind) running() DeploymentStatus {
	switch k {
	case KindDeploy, KindUpdate:
		return Deploying
	case KindUpgrade:
		return Upgrading
	case KindDestroy:
		return Destroying
	}
	return ""
}

// busy reports whether the status is one an operation shows only while it runs.
func (s DeploymentStatus) busy() bool { return s == Deploying || s == Upgrading || s == Destroying }

// Operation is one requested action on a deployment.
type Operation struct {
	ID           uuid.UUID      `json:"id"`
	DeploymentID uuid.UUID      `json:"deployment_id"`
	Deployment   string         `json:"deployment,omitempty"`
	Kind         Kind           `json:"kind"`
	Status       Status         `json:"status"`
	Version      int            `json:"version,omitempty"` // the component version it brings, when it brings one
	Parameters   map[string]any `json:"parameters"`        // the plain parameters it applies
	RequestedBy  string         `json:"requested_by,omitempty"`
	// Refresh: the operation reads the resources back before it changes them (a reconcile).
	Refresh bool `json:"refresh,omitempty"`
	// Source is the branch whose program a preview from git brings instead of a version's.
	Source   *Source        `json:"source,omitempty"`
	Error    string         `json:"error,omitempty"`
	ExitCode *int           `json:"exit_code,omitempty"`
	Changes  map[string]int `json:"changes"`
	// Outcome is how it came out, once it ended: what its pages say of the ending is read from
	// it, never from Error.
	Outcome outcome.Outcome `json:"outcome,omitzero"`
	// Position is how many operations on the same deployment come first, while it waits.
	Position int `json:"position,omitempty"`
	// TenantRunning is how many operations of its tenant run, while it waits for one of them
	// to end: a tenant runs only so many at once.
	TenantRunning int `json:"tenant_running,omitempty"`
	// CancelRequested: someone cancelled it while it ran, and it is stopping.
	CancelRequested bool       `json:"cancel_requested,omitempty"`
	LogTruncated    bool       `json:"log_truncated,omitempty"`
	CreatedAt       time.Time  `json:"created_at"`
	StartedAt       *time.Time `json:"started_at"`
	FinishedAt      *time.Time `json:"finished_at"`
}

// Step is one checkpointed step of an operation.
type Step struct {
	Name       string     `json:"name"`
	Status     string     `json:"status"`
	Error      string     `json:"error,omitempty"`
	Attempts   int        `json:"attempts"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

// Resource is what an operation plans or does to one resource of the stack.
type Resource struct {
	URN         string                 `json:"urn"`
	Type        string                 `json:"type"`
	Name        string                 `json:"name"`
	Op          string                 `json:"op"`
	Status      pulumix.ResourceStatus `json:"status"`
	Changes     []pulumix.Change       `json:"changes"`
	Diagnostics string                 `json:"diagnostics,omitempty"`
	// UndoOp and UndoStatus are what the undo of a failed or cancelled operation did to it.
	UndoOp     string     `json:"undo_op,omitempty"`
	UndoStatus string     `json:"undo_status,omitempty"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

// Detail is an operation with its steps and resources.
type Detail struct {
	Operation
	Steps     []Step     `json:"steps"`
	Resources []Resource `json:"resources"`
	// Timing is where its time went: queue, steps, engine, approval.
	Timing Timing `json:"timing"`
	// Policy is the check of the operation's plan against its landing zone's policies; nil
	// when nothing was checked.
	Policy *policy.Check `json:"policy,omitempty"`
}

func operationFromRow(r dbgen.ListOperationsRow) Operation {
	o := Operation{ID: r.ID, DeploymentID: r.DeploymentID, Deployment: r.DeploymentName, Kind: Kind(r.Kind), Status: Status(r.Status),
		RequestedBy: r.RequestedByEmail, Error: r.Error, LogTruncated: r.LogTruncated, CreatedAt: r.CreatedAt,
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Changes: map[string]int{}, Parameters: map[string]any{},
		CancelRequested: r.CancelRequestedAt != nil, Refresh: r.Refresh, Outcome: outcomeOf(r)}
	if r.TargetVersion.Valid {
		o.Version = int(r.TargetVersion.Int32)
	}
	if r.SourceCommit != "" {
		o.Source = &Source{Ref: r.SourceRef, Commit: r.SourceCommit}
	}
	if r.ExitCode.Valid {
		code := int(r.ExitCode.Int32)
		o.ExitCode = &code
	}
	_ = json.Unmarshal(r.Changes, &o.Changes)
	_ = json.Unmarshal(r.Parameters, &o.Parameters)
	return o
}
