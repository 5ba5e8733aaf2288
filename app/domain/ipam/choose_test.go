package ipam

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
)

func TestChoose_KeepsWhatLiesWhereTheRequestDraws(t *testing.T) {
	pool, a, b := uuid.New(), uuid.New(), uuid.New()
	inUse, moving := uuid.New(), uuid.New()
	for _, c := range []struct {
		name string
		held []holding
		want place
		got  choice
	}{
		{"nothing held: a new one", nil, place{pool, a}, choice{}},
		{"in use where it draws: kept", []holding{{id: inUse, at: place{pool, a}}}, place{pool, a}, choice{keep: inUse}},
		{"in use elsewhere: a new one replaces it", []holding{{id: inUse, at: place{pool, a}}}, place{pool, b}, choice{replace: inUse}},
		{"back to the pool: a new one replaces it", []holding{{id: inUse, at: place{pool, a}}}, place{pool: pool}, choice{replace: inUse}},
		{"a move there already: kept", []holding{{id: inUse, at: place{pool, a}}, {id: moving, at: place{pool, b}, moving: true}},
			place{pool, b}, choice{keep: moving}},
		{"a move elsewhere, staying: the move dropped", []holding{{id: inUse, at: place{pool, a}}, {id: moving, at: place{pool, b}, moving: true}},
			place{pool, a}, choice{keep: inUse, drop: []uuid.UUID{moving}}},
		{"a move elsewhere, going on: dropped and replaced", []holding{{id: inUse, at: place{pool, a}}, {id: moving, at: place{pool, b}, moving: true}},
			place{pool: pool}, choice{replace: inUse, drop: []uuid.UUID{moving}}},
	} {
		if got := choose(c.held, c.want); fmt.Sprint(got) != fmt.Sprint(c.got) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.got)
		}
	}
}
