// Package access says who may do what: the roles, the permissions each role grants, and the
// principal a request acts as. The permission table is the one place roles map to rights.
package access

import (
	"fmt"

	"github.com/google/uuid"
)

// Role is a user's standing in one tenant, or provider admin across all of them.
type Role string

// The roles, from least to most privileged.
const (
	ReadOnly      Role = "read_only"
	User          Role = "user"
	TenantAdmin   Role = "tenant_admin"
	ProviderAdmin Role = "provider_admin"
)

// TenantRoles are the roles a membership may carry; provider admin is global, not a membership.
var TenantRoles = []Role{ReadOnly, User, TenantAdmin}

func (r Role) rank() int {
	switch r {
	case ReadOnly:
		return 1
	case User:
		return 2
	case TenantAdmin:
		return 3
	case ProviderAdmin:
		return 4
	}
	return 0
}

// Outranks reports whether r is a more privileged role than other.
func (r Role) Outranks(other Role) bool { return r.rank() > other.rank() }

// Valid reports whether r is a role a membership may have.
func (r Role) Valid() bool { return r == ReadOnly || r == User || r == TenantAdmin }

// Label is the role as people read it.
func (r Role) Label() string {
	switch r {
	case ReadOnly:
		return "Read-only"
	case User:
		return "User"
	case TenantAdmin:
		return "Tenant admin"
	case ProviderAdmin:
		return "Provider admin"
	}
	return string(r)
}

// Permission is a right to do one kind of thing, named as in the requirements. Its name is
// out of reach: code names a permission by the variables below, so that a misspelt one fails
// to compile.
type Permission struct{ name string }

func (p Permission) String() string { return p.name }

// The permissions.
var (
	TenantRead         = Permission{"tenant:read"}
	TenantCreate       = Permission{"tenant:create"}
	TenantMemberRead   = Permission{"tenant:member:read"}
	TenantMemberManage = Permission{"tenant:member:manage"}
	UserRead           = Permission{"user:read"}
	UserCreate         = Permission{"user:create"}
	AuditRead          = Permission{"audit:read"}
	SystemRead         = Permission{"system:read"}
	JobsManage         = Permission{"jobs:manage"}
	EnvironmentRead    = Permission{"environment:read"}
	EnvironmentManage  = Permission{"environment:manage"}

	ComponentDefinitionRead    = Permission{"component:definition:read"}
	ComponentDefinitionCreate  = Permission{"component:definition:create"}
	ComponentDefinitionUpdate  = Permission{"component:definition:update"}
	ComponentDefinitionDelete  = Permission{"component:definition:delete"}
	ComponentDefinitionPublish = Permission{"component:definition:publish"}
	ComponentGovernanceManage  = Permission{"component:governance:manage"}
	ComponentGovernanceNarrow  = Permission{"component:governance:narrow"}
	ComponentDeploy            = Permission{"component:deploy"}
	ComponentPreview           = Permission{"component:preview"}
	ComponentDestroy           = Permission{"component:destroy"}
	ComponentUpgrade           = Permission{"component:upgrade"}
	ResolverConfigRead         = Permission{"resolver:config:read"}
	ResolverConfigManage       = Permission{"resolver:config:manage"}
	LandingZoneManage          = Permission{"landingzone:manage"}
	StackDefinitionRead        = Permission{"stack:definition:read"}
	StackDefinitionCreate      = Permission{"stack:definition:create"}
	StackDefinitionUpdate      = Permission{"stack:definition:update"}
	StackDefinitionPublish     = Permission{"stack:definition:publish"}
	StackInstanceDeploy        = Permission{"stack:instance:deploy"}
	StackInstanceDestroy       = Permission{"stack:instance:destroy"}
	StackInstanceUpgrade       = Permission{"stack:instance:upgrade"}
	StackInstanceDay2          = Permission{"stack:instance:day2"}
	EventsSourceManage         = Permission{"events:source:manage"}
	EventsRulesManage          = Permission{"events:rules:manage"}
	EventsLogRead              = Permission{"events:log:read"}
	ApprovalRead               = Permission{"approval:read"}
	ApprovalDecide             = Permission{"approval:decide"}
	ApprovalPolicyManage       = Permission{"approval:policy:manage"}
	InventoryRead              = Permission{"inventory:read"}
)

// permissions maps each permission onto the least role that holds it: a role holds every
// permission of the roles below it. Later features add theirs here.
var permissions = map[Permission]Role{
	TenantRead:         ReadOnly,
	TenantCreate:       ProviderAdmin,
	TenantMemberRead:   ReadOnly,
	TenantMemberManage: TenantAdmin,
	UserRead:           TenantAdmin,
	UserCreate:         ProviderAdmin,
	AuditRead:          TenantAdmin,
	SystemRead:         ProviderAdmin,
	JobsManage:         ProviderAdmin,
	EnvironmentRead:    ReadOnly,
	EnvironmentManage:  TenantAdmin,

	ComponentDefinitionRead:    ReadOnly,
	ComponentDefinitionCreate:  TenantAdmin,
	ComponentDefinitionUpdate:  TenantAdmin,
	ComponentDefinitionDelete:  TenantAdmin,
	ComponentDefinitionPublish: ProviderAdmin,
	ComponentGovernanceManage:  ProviderAdmin,
	ComponentGovernanceNarrow:  TenantAdmin, // a tenant's own rule, within the provider's
	ComponentDeploy:            User,
	ComponentPreview:           User,
	ComponentDestroy:           TenantAdmin,
	ComponentUpgrade:           TenantAdmin,
	ResolverConfigRead:         ReadOnly,
	ResolverConfigManage:       ProviderAdmin,
	LandingZoneManage:          ProviderAdmin,
	StackDefinitionRead:        ReadOnly,
	StackDefinitionCreate:      TenantAdmin,
	StackDefinitionUpdate:      TenantAdmin,
	StackDefinitionPublish:     ProviderAdmin,
	StackInstanceDeploy:        User,
	StackInstanceDestroy:       TenantAdmin,
	StackInstanceUpgrade:       TenantAdmin,
	StackInstanceDay2:          User,
	EventsSourceManage:         ProviderAdmin,
	EventsRulesManage:          TenantAdmin,
	EventsLogRead:              ReadOnly,
	ApprovalRead:               ReadOnly,
	ApprovalDecide:             User, // and the role the request asks for
	ApprovalPolicyManage:       ProviderAdmin,
	InventoryRead:              ReadOnly,
}

// Grants reports whether role r holds permission p.
func (r Role) Grants(p Permission) bool {
	least, ok := permissions[p]
	if !ok {
		panic(fmt.Sprintf("access: unknown permission %q", p.name))
	}
	return r.rank() >= least.rank()
}

// Principal is who a request acts as: a signed-in user or the owner of an API token.
type Principal struct {
	UserID        uuid.UUID
	Email         string
	ProviderAdmin bool
	// Roles maps each tenant the user belongs to onto the role held there.
	Roles map[uuid.UUID]Role
	// Confined is the one tenant a tenant-scoped API token acts in; Roles then holds that
	// tenant alone and ProviderAdmin is false. Nil for any other principal.
	Confined uuid.UUID
}

// Can reports whether the principal holds p within tenant.
func (p Principal) Can(perm Permission, tenant uuid.UUID) bool {
	if p.ProviderAdmin {
		return true
	}
	r, ok := p.Roles[tenant]
	return ok && r.Grants(perm)
}

// HasRole reports whether the principal holds role r, or a higher one, within tenant. Only
// provider admins hold ProviderAdmin.
func (p Principal) HasRole(r Role, tenant uuid.UUID) bool {
	if p.ProviderAdmin {
		return true
	}
	held, ok := p.Roles[tenant]
	return ok && held.rank() >= r.rank()
}

// TenantsWithRole lists the tenants in which the principal holds role r or a higher one.
func (p Principal) TenantsWithRole(r Role) []uuid.UUID {
	var out []uuid.UUID
	for t, held := range p.Roles {
		if held.rank() >= r.rank() {
			out = append(out, t)
		}
	}
	return out
}

// CanSomewhere reports whether the principal holds perm in at least one tenant.
func (p Principal) CanSomewhere(perm Permission) bool {
	return p.ProviderAdmin || len(p.TenantsWith(perm)) > 0
}

// TenantsWith lists the tenants in which the principal holds perm.
func (p Principal) TenantsWith(perm Permission) []uuid.UUID {
	var out []uuid.UUID
	for t, r := range p.Roles {
		if r.Grants(perm) {
			out = append(out, t)
		}
	}
	return out
}

// Member reports whether the principal may see tenant at all.
func (p Principal) Member(tenant uuid.UUID) bool {
	_, ok := p.Roles[tenant]
	return p.ProviderAdmin || ok
}
