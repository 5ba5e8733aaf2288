package apptest

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/domain/policy"
	"nimbus/app/orchestration/landingzone"
)

// PolicyZone is a draft landing zone with one policy.
func (w *World) PolicyZone(t *testing.T) (zone uuid.UUID, p policy.Policy) {
	type made struct {
		zone uuid.UUID
		p    policy.Policy
	}
	m := Fixture(w, "policyZone", func() made {
		z, err := w.Zones.Create(context.Background(), w.Admin, landingzone.NewZone{Name: "policed", Provider: "simcloud"})
		Must(t, err)
		p, err := policy.NewService(w.Pool).Create(context.Background(), w.Admin, z.ID, NewPolicy("small"))
		Must(t, err)
		return made{z.ID, p}
	})
	return m.zone, m.p
}

// NewPolicy is a mandatory policy named name that refuses machines of more than 2 cores.
func NewPolicy(name string) policy.Input {
	return policy.Input{Name: name, Message: "machines have at most 2 cores", Level: policy.Mandatory,
		Expression: `resource.type != "simcloud:index:Machine" || resource.inputs.cores <= 2`}
}
