package access

import (
	"testing"

	"github.com/google/uuid"
)

func TestGrants_HigherRolesHoldLowerRolesPermissions(t *testing.T) {
	cases := []struct {
		role Role
		perm Permission
		want bool
	}{
		{ReadOnly, ComponentDefinitionRead, true},
		{ReadOnly, ComponentDeploy, false},
		{User, ComponentDeploy, true},
		{User, ComponentDestroy, false},
		{TenantAdmin, ComponentDestroy, true},
		{TenantAdmin, TenantMemberManage, true},
		{TenantAdmin, ComponentDefinitionPublish, false},
		{ProviderAdmin, ComponentDefinitionPublish, true},
	}
	for _, c := range cases {
		if got := c.role.Grants(c.perm); got != c.want {
			t.Errorf("%s grants %s = %v, want %v", c.role, c.perm, got, c.want)
		}
	}
}

func TestPrincipal_CanIsPerTenant(t *testing.T) {
	a, b := uuid.New(), uuid.New()
	p := Principal{Roles: map[uuid.UUID]Role{a: TenantAdmin, b: ReadOnly}}
	if !p.Can(TenantMemberManage, a) || p.Can(TenantMemberManage, b) {
		t.Fatal("a role in one tenant must not carry to another")
	}
	if p.Can(TenantRead, uuid.New()) {
		t.Fatal("no rights in a tenant the principal is not in")
	}
	if !(Principal{ProviderAdmin: true}).Can(TenantMemberManage, uuid.New()) {
		t.Fatal("provider admins hold every permission everywhere")
	}
}

func TestGrants_UnknownPermissionPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a misspelt permission must not silently deny")
		}
	}()
	User.Grants(Permission{"component:deplyo"})
}

func TestPrincipal_HasRoleRanksWithinOneTenant(t *testing.T) {
	a, b := uuid.New(), uuid.New()
	p := Principal{Roles: map[uuid.UUID]Role{a: TenantAdmin, b: User}}
	cases := []struct {
		role   Role
		tenant uuid.UUID
		want   bool
	}{
		{User, a, true}, {TenantAdmin, a, true}, {ProviderAdmin, a, false},
		{User, b, true}, {TenantAdmin, b, false},
		{User, uuid.New(), false},
	}
	for _, c := range cases {
		if got := p.HasRole(c.role, c.tenant); got != c.want {
			t.Errorf("HasRole(%s) = %v, want %v", c.role, got, c.want)
		}
	}
	if got := p.TenantsWithRole(TenantAdmin); len(got) != 1 || got[0] != a {
		t.Errorf("TenantsWithRole(tenant_admin) = %v, want only %s", got, a)
	}
	if !(Principal{ProviderAdmin: true}).HasRole(ProviderAdmin, uuid.New()) {
		t.Error("a provider admin holds the provider admin role everywhere")
	}
}
