package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/domain/component"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/db"
)

// SlotDiff sorts the slots of two definitions by what moving an instance from one to the other
// does to each. A slot whose component changed is both removed and added: its deployment is
// replaced.
type SlotDiff struct {
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
	// Upgraded: the component's version changed (and perhaps the wiring too).
	Upgraded []string `json:"upgraded"`
	// Updated: the same version, wired differently or waiting for other slots.
	Updated   []string `json:"updated"`
	Untouched []string `json:"untouched"`
}

// DiffSlots sorts the slots of from and to by what changes between them, each list in the
// order of to's slots (removed ones in from's).
func DiffSlots(from, to Definition) SlotDiff {
	d := SlotDiff{Added: []string{}, Removed: []string{}, Upgraded: []string{}, Updated: []string{}, Untouched: []string{}}
	for _, t := range to.Slots {
		f, ok := from.Slot(t.Name)
		switch {
		case !ok:
			d.Added = append(d.Added, t.Name)
		case f.Component != t.Component:
			d.Removed = append(d.Removed, t.Name)
			d.Added = append(d.Added, t.Name)
		case f.Version != t.Version:
			d.Upgraded = append(d.Upgraded, t.Name)
		case !sameWiring(f, t):
			d.Updated = append(d.Updated, t.Name)
		default:
			d.Untouched = append(d.Untouched, t.Name)
		}
	}
	for _, f := range from.Slots {
		if _, ok := to.Slot(f.Name); !ok {
			d.Removed = append(d.Removed, f.Name)
		}
	}
	return d
}

func sameWiring(a, b Slot) bool {
	return reflect.DeepEqual(normalWiring(a.Inputs), normalWiring(b.Inputs)) && slices.Equal(sortedCopy(a.DependsOn), sortedCopy(b.DependsOn))
}

// normalWiring drops what JSON makes of a literal's number, so a wiring read back compares
// equal to the one written.
func normalWiring(in map[string]Wiring) map[string]string {
	out := make(map[string]string, len(in))
	for k, w := range in {
		b, _ := json.Marshal(w)
		out[k] = string(b)
	}
	return out
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// Diff is what changed between two versions: of one stack, or of a fork and its parent.
type Diff struct {
	From        DiffSide    `json:"from"`
	To          DiffSide    `json:"to"`
	Parameters  NameDiff    `json:"parameters"`
	Slots       SlotChanges `json:"slots"`
	States      NameDiff    `json:"states"`
	Transitions NameDiff    `json:"transitions"`
	Operations  NameDiff    `json:"operations"`
	Summary     SlotDiff    `json:"summary"`
}

// DiffSide names one side of a diff.
type DiffSide struct {
	StackID uuid.UUID `json:"stack_id"`
	Version int       `json:"version"`
}

// NameDiff lists the names added, removed and changed.
type NameDiff struct {
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
	Changed []string `json:"changed"`
}

// SlotChanges lists the slots added and removed, and for each changed slot what changed.
type SlotChanges struct {
	Added   []string     `json:"added"`
	Removed []string     `json:"removed"`
	Changed []SlotChange `json:"changed"`
}

// SlotChange is what changed in one slot: its component or version, the wiring of each input
// whose wiring changed, and the slots it waits for.
type SlotChange struct {
	Slot      string            `json:"slot"`
	Component *Change[string]   `json:"component,omitempty"`
	Version   *Change[int]      `json:"version,omitempty"`
	Inputs    []InputChange     `json:"inputs,omitempty"`
	DependsOn *Change[[]string] `json:"depends_on,omitempty"`
}

// Change is a value before and after.
type Change[T any] struct {
	From T `json:"from"`
	To   T `json:"to"`
}

// InputChange is the wiring of one input before and after; nil where it was not wired.
type InputChange struct {
	Input string  `json:"input"`
	From  *Wiring `json:"from"`
	To    *Wiring `json:"to"`
}

// Compare is what a diff compares: From and To are versions of the stack, or with Parent set,
// From is a version of the fork's parent (0: the version forked from) and To the fork's (0:
// its latest).
type Compare struct {
	From, To int
	Parent   bool
}

// Diff compares two versions of a stack, or a fork's version with one of its parent's.
func (s *Service) Diff(ctx context.Context, actor access.Principal, id uuid.UUID, c Compare) (Diff, error) {
	q := db.Queries(s.pool)
	st, err := s.get(ctx, q, actor, id)
	if err != nil {
		return Diff{}, err
	}
	from := DiffSide{StackID: id, Version: c.From}
	to := DiffSide{StackID: id, Version: c.To}
	if c.Parent {
		if st.ForkedFrom == nil {
			return Diff{}, problem.Invalid("against", "fork", "stack %s is not a fork", st.Name)
		}
		from.StackID = st.ForkedFrom.ID
		if from.Version == 0 {
			from.Version = st.ForkedFrom.Version
		}
		if to.Version == 0 {
			to.Version = st.LatestVersion
		}
	}
	if from.Version < 1 || to.Version < 1 {
		return Diff{}, problem.Invalid("from", "required", "name the two versions to compare, from and to")
	}
	a, err := LoadVersion(ctx, q, from.StackID, from.Version)
	if errors.Is(err, pgx.ErrNoRows) {
		return Diff{}, problem.ErrNotFound
	} else if err != nil {
		return Diff{}, err
	}
	b, err := LoadVersion(ctx, q, to.StackID, to.Version)
	if errors.Is(err, pgx.ErrNoRows) {
		return Diff{}, problem.ErrNotFound
	} else if err != nil {
		return Diff{}, err
	}
	d := Compared(a, b)
	d.From, d.To = from, to
	return d, nil
}

// Compared is the structured difference between two definitions.
func Compared(a, b Definition) Diff {
	d := Diff{Summary: DiffSlots(a, b)}
	d.Parameters = diffParams(a.Parameters, b.Parameters)
	d.Slots = SlotChanges{Added: []string{}, Removed: []string{}, Changed: []SlotChange{}}
	for _, t := range b.Slots {
		f, ok := a.Slot(t.Name)
		if !ok {
			d.Slots.Added = append(d.Slots.Added, t.Name)
			continue
		}
		if c, changed := slotChange(f, t); changed {
			d.Slots.Changed = append(d.Slots.Changed, c)
		}
	}
	for _, f := range a.Slots {
		if _, ok := b.Slot(f.Name); !ok {
			d.Slots.Removed = append(d.Slots.Removed, f.Name)
		}
	}
	d.States = diffNamed(a.Machine.States, b.Machine.States, func(s State) string { return s.Name })
	d.Transitions = diffNamed(a.Machine.Transitions, b.Machine.Transitions, func(t Transition) string {
		return fmt.Sprintf("%s -%s-> %s", t.From, t.Trigger, t.To)
	})
	d.Operations = diffNamed(a.Operations, b.Operations, func(o Operation) string { return o.Name })
	return d
}

func slotChange(f, t Slot) (SlotChange, bool) {
	c := SlotChange{Slot: t.Name}
	changed := false
	if f.Component != t.Component {
		c.Component, changed = &Change[string]{f.Component.String(), t.Component.String()}, true
	}
	if f.Version != t.Version {
		c.Version, changed = &Change[int]{f.Version, t.Version}, true
	}
	fw, tw := normalWiring(f.Inputs), normalWiring(t.Inputs)
	names := map[string]bool{}
	for k := range fw {
		names[k] = true
	}
	for k := range tw {
		names[k] = true
	}
	for _, name := range sortedKeys(names) {
		if fw[name] == tw[name] {
			continue
		}
		ic := InputChange{Input: name}
		if w, ok := f.Inputs[name]; ok {
			ic.From = &w
		}
		if w, ok := t.Inputs[name]; ok {
			ic.To = &w
		}
		c.Inputs, changed = append(c.Inputs, ic), true
	}
	if !slices.Equal(sortedCopy(f.DependsOn), sortedCopy(t.DependsOn)) {
		c.DependsOn, changed = &Change[[]string]{f.DependsOn, t.DependsOn}, true
	}
	return c, changed
}

// diffParams compares two parameter schemas property by property.
func diffParams(a, b json.RawMessage) NameDiff {
	ignore := &problem.ValidationError{}
	sa, sb := component.ParseSchema("a", a, ignore), component.ParseSchema("b", b, ignore)
	props := func(s *component.Schema) map[string]json.RawMessage {
		out := map[string]json.RawMessage{}
		if s == nil {
			return out
		}
		for name, p := range s.Properties {
			raw, _ := json.Marshal(p)
			out[name] = raw
		}
		for _, r := range s.Required {
			out[r] = append(out[r], []byte(" required")...)
		}
		return out
	}
	pa, pb := props(sa), props(sb)
	d := NameDiff{Added: []string{}, Removed: []string{}, Changed: []string{}}
	for _, name := range sortedKeys(pb) {
		old, ok := pa[name]
		switch {
		case !ok:
			d.Added = append(d.Added, name)
		case !bytes.Equal(old, pb[name]):
			d.Changed = append(d.Changed, name)
		}
	}
	for _, name := range sortedKeys(pa) {
		if _, ok := pb[name]; !ok {
			d.Removed = append(d.Removed, name)
		}
	}
	return d
}

// diffNamed compares two lists of things known by a key: added, removed, and changed where
// the key is kept but what it holds is not.
func diffNamed[T any](a, b []T, key func(T) string) NameDiff {
	d := NameDiff{Added: []string{}, Removed: []string{}, Changed: []string{}}
	index := func(list []T) map[string]string {
		out := map[string]string{}
		for _, x := range list {
			raw, _ := json.Marshal(x)
			out[key(x)] = string(raw)
		}
		return out
	}
	ia, ib := index(a), index(b)
	for _, x := range b {
		k := key(x)
		old, ok := ia[k]
		switch {
		case !ok:
			d.Added = append(d.Added, k)
		case old != ib[k]:
			d.Changed = append(d.Changed, k)
		}
	}
	for _, x := range a {
		if _, ok := ib[key(x)]; !ok {
			d.Removed = append(d.Removed, key(x))
		}
	}
	return d
}
