package stack

import (
	"slices"
	"testing"

	"github.com/google/uuid"
)

func TestDiffSlots_SortsEachSlotByWhatAnUpgradeDoesToIt(t *testing.T) {
	machine, disk := uuid.New(), uuid.New()
	lit := func(v any) map[string]Wiring { return map[string]Wiring{"name": {Kind: Literal, Value: v}} }
	from := Definition{Slots: []Slot{
		{Name: "db", Component: machine, Version: 1, Inputs: lit("db")},
		{Name: "web", Component: machine, Version: 1, Inputs: lit("web")},
		{Name: "cache", Component: machine, Version: 1},
		{Name: "store", Component: machine, Version: 1},
		{Name: "old", Component: machine, Version: 1},
	}}
	to := Definition{Slots: []Slot{
		{Name: "db", Component: machine, Version: 1, Inputs: lit("db")},
		{Name: "web", Component: machine, Version: 2, Inputs: lit("web")},
		{Name: "cache", Component: machine, Version: 1, DependsOn: []string{"db"}},
		{Name: "store", Component: disk, Version: 1},
		{Name: "new", Component: machine, Version: 1},
	}}
	d := DiffSlots(from, to)
	for what, got := range map[string][2][]string{
		"added":     {d.Added, {"store", "new"}},
		"removed":   {d.Removed, {"store", "old"}},
		"upgraded":  {d.Upgraded, {"web"}},
		"updated":   {d.Updated, {"cache"}},
		"untouched": {d.Untouched, {"db"}},
	} {
		if !slices.Equal(got[0], got[1]) {
			t.Errorf("%s: %v, want %v", what, got[0], got[1])
		}
	}
}
