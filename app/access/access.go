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

// Permission is a right to do one kind of thing, named as in the requirements.
type Permission string

// The permissions, with the least role that holds each: a role holds every permission of the
// roles below it. Later features add theirs here.
var permissions = map[Permission]Role{
	"tenant:read":          ReadOnly,
	"tenant:create":        ProviderAdmin,
	"tenant:member:read":   ReadOnly,
	"tenant:member:manage": TenantAdmin,
	"user:read":            TenantAdmin,
	"user:create":          ProviderAdmin,
	"audit:read":           TenantAdmin,
	"system:read":          ProviderAdmin,
	"jobs:manage":          ProviderAdmin,
	"environment:read":     ReadOnly,
	"environment:manage":   TenantAdmin,

	"component:definition:read":    ReadOnly,
	"component:definition:create":  TenantAdmin,
	"component:definition:update":  TenantAdmin,
	"component:definition:delete":  TenantAdmin,
	"component:definition:publish": ProviderAdmin,
	"component:governance:manage":  ProviderAdmin,
	"component:governance:narrow":  TenantAdmin, // a tenant's own rule, within the provider's
	"component:deploy":             User,
	"component:preview":            User,
	"component:destroy":            TenantAdmin,
	"component:upgrade":            TenantAdmin,
	"resolver:config:read":         ReadOnly,
	"resolver:config:manage":       ProviderAdmin,
	"landingzone:manage":           ProviderAdmin,
	"stack:definition:read":        ReadOnly,
	"stack:definition:create":      TenantAdmin,
	"stack:definition:update":      TenantAdmin,
	"stack:definition:publish":     ProviderAdmin,
	"stack:instance:deploy":        User,
	"stack:instance:destroy":       TenantAdmin,
	"stack:instance:upgrade":       TenantAdmin,
	"stack:instance:day2":          User,
	"events:source:manage":         ProviderAdmin,
	"events:rules:manage":          TenantAdmin,
	"events:log:read":              ReadOnly,
	"approval:read":                ReadOnly,
	"approval:decide":              User, // and the role the request asks for
	"approval:policy:manage":       ProviderAdmin,
}

// Grants reports whether role r holds permission p.
func (r Role) Grants(p Permission) bool {
	least, ok := permissions[p]
	if !ok {
		panic(fmt.Sprintf("access: unknown permission %q", p))
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
