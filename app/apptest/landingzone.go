package apptest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/domain/component"
	"nimbus/app/orchestration/environment"
	"nimbus/app/orchestration/landingzone"
)

// ZoneFixture is a landing zone with a template of the shared machine, and for a draft zone a
// system service.
type ZoneFixture struct {
	Zone     landingzone.Zone
	Template uuid.UUID
	Service  uuid.UUID
}

// DraftZone is a draft landing zone with a template and a system service, both of the shared
// machine.
func (w *World) DraftZone(t *testing.T) ZoneFixture {
	return Fixture(w, "draftZone", func() ZoneFixture {
		ctx := context.Background()
		z, err := w.Zones.Create(ctx, w.Admin, landingzone.NewZone{Name: "draft", Provider: "simcloud"})
		Must(t, err)
		tpl, err := w.Zones.AddTemplate(ctx, w.Admin, z.ID, landingzone.NewTemplate{Name: "basic",
			MandatoryComponents: []landingzone.MemberIn{{ComponentID: w.Shared.ID, Name: "web", Parameters: map[string]any{"name": "web"}}}})
		Must(t, err)
		svc, err := w.Zones.AddSystemService(ctx, w.Admin, z.ID, landingzone.MemberIn{ComponentID: w.Shared.ID, Name: "dns",
			Parameters: map[string]any{"name": "dns"}})
		Must(t, err)
		return ZoneFixture{Zone: z, Template: tpl.ID, Service: svc.ID}
	})
}

// Zone is a published landing zone with a template of the shared machine and no system
// services. No worker runs here: its (empty) system services are as good as deployed.
func (w *World) Zone(t *testing.T) ZoneFixture {
	return Fixture(w, "zone", func() ZoneFixture {
		ctx := context.Background()
		z, err := w.Zones.Create(ctx, w.Admin, landingzone.NewZone{Name: "zone", Provider: "simcloud"})
		Must(t, err)
		tpl, err := w.Zones.AddTemplate(ctx, w.Admin, z.ID, landingzone.NewTemplate{Name: "basic",
			MandatoryComponents: []landingzone.MemberIn{{ComponentID: w.Shared.ID, Name: "web", Parameters: map[string]any{"name": "web"}}}})
		Must(t, err)
		z, err = w.Zones.Publish(ctx, w.Admin, z.ID)
		Must(t, err)
		_, err = w.Pool.Exec(ctx, `UPDATE environments SET status = 'active' WHERE id = $1`, z.SystemEnvironmentID)
		Must(t, err)
		return ZoneFixture{Zone: z, Template: tpl.ID}
	})
}

// Zoned is tenant A's environment zoned, opened by its admin from the zone's template; it is
// provisioning, its deploy queued.
func (w *World) Zoned(t *testing.T) uuid.UUID {
	return Fixture(w, "zoned", func() uuid.UUID {
		id, err := w.Lifecycle.Open(context.Background(), w.AdminA, environment.New{TenantID: w.A.ID, Name: "zoned", TemplateID: w.Zone(t).Template})
		Must(t, err)
		return id
	})
}

// BuiltinIDs makes sure the built-in components exist and returns their IDs by name.
func BuiltinIDs(t testing.TB, s *Site) map[string]string {
	t.Helper()
	ctx := context.Background()
	if _, err := component.EnsureBuiltins(ctx, component.NewService(s.Pool, nil, nil)); err != nil {
		t.Fatal(err)
	}
	rows, err := s.Pool.Query(ctx, `SELECT name, id::text FROM components WHERE is_system`)
	Must(t, err)
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, id string
		Must(t, rows.Scan(&name, &id))
		out[name] = id
	}
	return out
}

// WaitEnvironment polls an environment until it leaves the passing states and returns it.
func (s *Site) WaitEnvironment(t *testing.T, token, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(4 * time.Minute)
	for time.Now().Before(deadline) {
		env := s.Call(t, "GET", "/api/v1/environments/"+id, token, nil).JSON(t)
		switch env["status"] {
		case "active", "failed", "decommissioned":
			return env
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("environment %s did not settle in 4 minutes", id)
	return nil
}

// WaitZoneServices polls a landing zone until its system services settle.
func (s *Site) WaitZoneServices(t testing.TB, token, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(4 * time.Minute)
	for time.Now().Before(deadline) {
		z := s.Call(t, "GET", "/api/v1/landing-zones/"+id, token, nil).JSON(t)
		switch z["system_status"] {
		case "active", "failed", "decommissioned":
			return z
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("landing zone %s's system services did not settle in 4 minutes", id)
	return nil
}

// PoolAllocations is how many addresses of the IPAM pool are allocated.
func PoolAllocations(t *testing.T, s *Site, pool string) int {
	t.Helper()
	var n int
	Must(t, s.Pool.QueryRow(context.Background(), `SELECT count(*) FROM ipam_allocations WHERE pool_id = $1`, pool).Scan(&n))
	return n
}
