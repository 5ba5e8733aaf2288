package landingzone

import (
	"context"

	"nimbus/app/kernel/lifecycle"
	"nimbus/db/dbgen"
)

// This file holds the moves of a landing zone's status (lifecycle.Zones): the only code that
// writes it.

// create records a new landing zone, a draft.
func create(ctx context.Context, q *dbgen.Queries, p dbgen.CreateLandingZoneParams) (dbgen.LandingZone, error) {
	return q.CreateLandingZone(ctx, p)
}

// move changes the status of z, locked in the caller's transaction, refusing a move its
// status does not allow.
func move(ctx context.Context, q *dbgen.Queries, z dbgen.LandingZone, to lifecycle.ZoneStatus) error {
	if err := lifecycle.Zones.Check("landing zone "+z.Name, lifecycle.ZoneStatus(z.Status), to); err != nil {
		return err
	}
	return q.SetLandingZoneStatus(ctx, dbgen.SetLandingZoneStatusParams{ID: z.ID, Status: string(to)})
}
