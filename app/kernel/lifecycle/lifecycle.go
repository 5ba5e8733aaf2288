// Package lifecycle is the one shape every lifecycle of Nimbus takes: a typed status, the moves
// allowed between statuses written down as data, and the one file that writes the status
// column. Operations, deployments, environments, landing zones, stack instances, stack runs,
// approval requests, deliveries, subscriptions, component checks, elevations and mails each
// declare a Machine; a tenant's namespace lives the life of the factory's stack instance that
// made it. The machine test holds every one of them to its table and keeps every other writer
// out.
package lifecycle

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"nimbus/app/kernel/problem"
)

// Machine is one lifecycle: the statuses of Table's Column and the moves between them. Only
// the code in Writer writes Column; it asks Check before each move, or guards its statement
// with Sources.
type Machine[S ~string] struct {
	// Name is what lives this life, in messages: "environment", "stack run".
	Name string
	// Table and Column hold the status.
	Table, Column string
	// Writer is the file, from the module's root, whose code alone writes Column.
	Writer string
	// Moves lists, for each status, those it may move to. A status with no moves out is an end.
	Moves map[S][]S
	// Start is the status a row is written with.
	Start S
}

// Allows reports whether a row may move from one status to another.
func (m Machine[S]) Allows(from, to S) bool { return slices.Contains(m.Moves[from], to) }

// Check refuses a move the machine does not allow, saying in words what name is and what it
// cannot become.
func (m Machine[S]) Check(name string, from, to S) error {
	if m.Allows(from, to) {
		return nil
	}
	return &IllegalMove{Machine: m.Name, Name: name, From: string(from), To: string(to)}
}

// Sources lists the statuses a row may reach to from, for a statement that moves a row only
// where its status still allows it.
func (m Machine[S]) Sources(to S) []S {
	var from []S
	for _, s := range slices.Sorted(maps.Keys(m.Moves)) {
		if slices.Contains(m.Moves[s], to) {
			from = append(from, s)
		}
	}
	return from
}

// SourceNames is Sources spelled as the column holds them, for a statement's parameter.
func (m Machine[S]) SourceNames(to S) []string {
	var out []string
	for _, s := range m.Sources(to) {
		out = append(out, string(s))
	}
	return out
}

// Ended reports whether s is an end: no move leads out of it.
func (m Machine[S]) Ended(s S) bool { return len(m.Moves[s]) == 0 }

// States lists every status of the machine, sorted.
func (m Machine[S]) States() []S {
	seen := map[S]bool{m.Start: true}
	for from, tos := range m.Moves {
		seen[from] = true
		for _, to := range tos {
			seen[to] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// Describe is the machine without its type, for the test that holds every machine to its
// table.
func (m Machine[S]) Describe() Description {
	d := Description{Name: m.Name, Table: m.Table, Column: m.Column, Writer: m.Writer}
	for _, s := range m.States() {
		d.States = append(d.States, string(s))
	}
	return d
}

// Description is what the machine test reads of a machine.
type Description struct {
	Name, Table, Column, Writer string
	States                      []string
}

// Described is any machine, whatever its status type.
type Described interface{ Describe() Description }

// ErrIllegalMove is what every refused move is.
var ErrIllegalMove = errors.New("illegal move")

// IllegalMove is a move a machine does not allow: Name is From and cannot become To.
type IllegalMove struct {
	Machine, Name string
	From, To      string
}

func (e *IllegalMove) Error() string {
	return fmt.Sprintf("%s is %s: it cannot become %s", e.Name, e.From, e.To)
}

// Is makes every IllegalMove an ErrIllegalMove.
func (e *IllegalMove) Is(target error) bool { return target == ErrIllegalMove }

// Unwrap is the move as a user's request meets it: the status, which does not allow it.
func (e *IllegalMove) Unwrap() error { return problem.Invalid("status", "state", "%s", e.Error()) }
