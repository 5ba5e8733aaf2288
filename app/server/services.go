package server

import (
	"nimbus/app/domain/auth"
	"nimbus/app/domain/cluster"
	"nimbus/app/domain/component"
	"nimbus/app/domain/elevation"
	"nimbus/app/domain/governance"
	"nimbus/app/domain/inventory"
	"nimbus/app/domain/ipam"
	"nimbus/app/domain/notification"
	"nimbus/app/domain/policy"
	"nimbus/app/domain/proxmox"
	"nimbus/app/domain/resolver"
	"nimbus/app/domain/stack"
	"nimbus/app/domain/tenant"
	"nimbus/app/domain/user"
	"nimbus/app/orchestration/approval"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/orchestration/drift"
	"nimbus/app/orchestration/environment"
	"nimbus/app/orchestration/event"
	"nimbus/app/orchestration/instance"
	"nimbus/app/orchestration/landingzone"
	"nimbus/app/orchestration/poller"
	"nimbus/app/orchestration/provision"
	"nimbus/app/platform/audit"
	"nimbus/app/platform/pulumix"
	"nimbus/jobs"
)

// Services are Nimbus's services, each built once from Deps: the server's pages and API use
// them, and so do the tests' harness, so that a test reaches a domain as a request does.
type Services struct {
	Auth         *auth.Service
	SSO          *auth.SSO
	Factors      *auth.Factors
	Tenants      *tenant.Service
	Users        *user.Service
	Elevations   *elevation.Service
	Audit        *audit.Service
	Components   *component.Service
	Stacks       *stack.Service
	Governance   *governance.Service
	Policies     *policy.Service
	Resolvers    *resolver.Service
	Pools        *ipam.Service
	Clusters     *cluster.Service
	Proxmox      *proxmox.Service
	Environments *environment.Service
	Lifecycle    *environment.Lifecycle
	Zones        *landingzone.Service
	Deployments  *deploy.Service
	Drift        *drift.Service
	Instances    *instance.Service
	Provisions   *provision.Service
	Approvals    *approval.Service
	Events       *event.Service
	Notices      *notification.Service
	Mail         *notification.MailService
	Inventory    *inventory.Service
}

// Build builds the services. Their jobs are queued with d.Jobs; d.Toolchain says what the
// engine can run (the toolchain in d.Info.PulumiDir when nil).
func Build(d Deps) *Services {
	queue := jobs.NewInserter(d.Jobs)
	toolchain := d.Toolchain
	if toolchain == nil {
		toolchain = pulumix.Local{Dir: d.Info.PulumiDir, Enabled: d.Info.Languages}
	}
	s := &Services{
		Auth:         auth.NewService(d.Pool, d.Log, d.SessionTTL).MaxAge(d.SessionMaxAge).RequireSecondFactorForAdmins(d.Info.SecondFactorForAdmins),
		Users:        user.NewService(d.Pool),
		Elevations:   elevation.NewService(d.Pool, queue),
		Audit:        audit.NewService(d.Pool),
		Components:   component.NewService(d.Pool, toolchain, queue).LimitCheckRequests(d.ChecksPerMinute).Linking(d.Keys, d.Git),
		Stacks:       stack.NewService(d.Pool),
		Governance:   governance.NewService(d.Pool),
		Policies:     policy.NewService(d.Pool),
		Resolvers:    resolver.NewService(d.Pool),
		Pools:        ipam.NewService(d.Pool),
		Clusters:     cluster.NewService(d.Pool, d.Keys),
		Proxmox:      proxmox.NewService(d.Pool, d.Keys),
		Environments: environment.NewService(d.Pool),
		Deployments:  deploys(d.Pool, d.Keys, queue, d.Runner, d.Objects, d.OperationsPerTenant),
		Drift:        drift.NewService(d.Pool),
		Approvals:    approval.NewService(d.Pool, queue),
		Events:       event.NewService(d.Pool, d.Keys).CheckingConfig(poller.Check).AllowingPrivate(d.WebhooksPrivate),
		Notices:      notification.NewService(d.Pool),
		Mail:         notification.NewMailService(d.Pool, d.Keys),
		Inventory:    inventory.NewService(d.Pool),
	}
	s.Instances = instance.NewService(d.Pool, s.Deployments, d.Keys, queue)
	s.Provisions = provision.NewService(d.Pool, d.Keys, s.Stacks, s.Instances)
	s.Tenants = tenant.NewService(d.Pool).WithNamespaces(s.Provisions)
	s.Lifecycle = environment.NewLifecycle(d.Pool, s.Deployments, queue)
	// Zones ask the toolchain on disk, whatever d.Toolchain stands in for: a Kubernetes zone
	// waits for its provider's build.
	s.Zones = landingzone.NewService(d.Pool, s.Lifecycle, pulumix.Local{Dir: d.Info.PulumiDir})
	s.SSO = auth.NewSSO(s.Auth, d.Keys)
	s.Factors = auth.NewFactors(s.Auth, d.Keys)
	return s
}
