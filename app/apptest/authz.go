package apptest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"nimbus/app/domain/user"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
)

// Actor names one of the world's people, so that a case can say whom a method refuses and
// whom it serves.
type Actor int

// The world's people, as actors.
const (
	ProviderAdmin Actor = iota
	AdminA              // tenant admin of A
	UserA               // user of A
	ReaderA             // read-only member of A
	AdminB              // tenant admin of B
	Stranger            // a user of no tenant
)

func (a Actor) String() string {
	return [...]string{"the provider admin", "A's admin", "A's user", "A's reader", "B's admin", "a user of no tenant"}[a]
}

// as is the principal the actor acts as.
func (w *World) as(t *testing.T, a Actor) access.Principal {
	t.Helper()
	switch a {
	case ProviderAdmin:
		return w.Admin
	case AdminA:
		return w.AdminA
	case UserA:
		return w.UserA
	case ReaderA:
		return w.ReaderA
	case AdminB:
		return w.AdminB
	case Stranger:
		return Fixture(w, "stranger", func() access.Principal {
			ctx := context.Background()
			_, err := w.Users.Create(ctx, w.Admin, user.NewUser{Email: "stranger@example.com", Password: "long enough password"})
			Must(t, err)
			return w.Principal(t, "stranger@example.com")
		})
	}
	t.Fatalf("no actor %d", a)
	return access.Principal{}
}

// AuthzCase is the authorization test of one data-access method: the same call, made as each
// actor the method must refuse and then as each actor it must serve. A method that refused
// everyone would fail its served actors; one that served everyone, its refused ones.
type AuthzCase struct {
	Refused []Refusal
	Served  []Actor
	// Open says why the method refuses nobody, for the few that every signed-in user may call;
	// a case refuses someone otherwise.
	Open string
	// Call calls the method as p, on the world's fixtures, and checks what a served call
	// returned. A list answers ErrHidden when p is not shown what the case looks for; a call
	// that answers without doing anything, ErrIgnored.
	Call func(t *testing.T, w *World, p access.Principal) error
	// Then checks what the served calls left behind, and refusals the one call cannot make:
	// other arguments, other states.
	Then func(t *testing.T, w *World)
}

// Refusal is an actor a method refuses and the error it must answer: ErrNotFound for what the
// actor may not see, ErrForbidden for what they may see but not do, an invalid field where a
// method names the field it cannot find, ErrHidden for a list that leaves it out.
type Refusal struct {
	Who  Actor
	Want error
}

// The answers of a call made as an actor who was served without the call being of use to them:
// ErrHidden for a list that does not show them what the case looks for, ErrIgnored for a call
// that did nothing.
var (
	ErrHidden  = errors.New("served, without being shown it")
	ErrIgnored = errors.New("served, without anything done")
)

// Invalid is the refusal of a method that answers a validation error naming field, as one that
// creates something does when it cannot see where: "no environment with this ID that you can see".
type Invalid string

func (f Invalid) Error() string { return "a validation error on " + string(f) }

// refusedAs reports whether err is the refusal want.
func refusedAs(err, want error) bool {
	if field, ok := want.(Invalid); ok {
		return problem.FieldOf(err) == string(field)
	}
	return errors.Is(err, want)
}

// Shown answers ErrHidden unless list holds an item that is, for a list that should show it.
func Shown[T any](list []T, err error, is func(T) bool) error {
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(list, is) {
		return ErrHidden
	}
	return nil
}

// Run makes the case's call as each refused actor, then as each served one, and checks what
// the served calls left.
func (c AuthzCase) Run(t *testing.T, w *World) {
	t.Helper()
	for _, r := range c.Refused {
		if err := c.Call(t, w, w.as(t, r.Who)); !refusedAs(err, r.Want) {
			t.Errorf("%v: got %v, want %v", r.Who, err, r.Want)
		}
	}
	for _, who := range c.Served {
		if err := c.Call(t, w, w.as(t, who)); err != nil {
			t.Errorf("%v is not served: %v", who, err)
		}
	}
	if c.Then != nil && !t.Failed() {
		c.Then(t, w)
	}
}

// Problems lists what makes a case unable to tell a method that refuses everyone, or serves
// everyone, from a correct one.
func (c AuthzCase) Problems() []string {
	var out []string
	if c.Call == nil {
		out = append(out, "it makes no call")
	}
	if len(c.Served) == 0 {
		out = append(out, "no actor is served, so a method that refused everyone would pass")
	}
	if len(c.Refused) == 0 && c.Open == "" {
		out = append(out, "no actor is refused, and open does not say why the method refuses nobody")
	}
	for _, r := range c.Refused {
		if slices.Contains(c.Served, r.Who) {
			out = append(out, fmt.Sprintf("%v is both refused and served", r.Who))
		}
		if r.Want == nil {
			out = append(out, fmt.Sprintf("%v is refused with no error", r.Who))
		}
	}
	return out
}

// WantErr fails the test unless err is want.
func WantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got error %v, want %v", err, want)
	}
}

// WantField fails the test unless err is a validation error on field.
func WantField(t *testing.T, err error, field string) {
	t.Helper()
	if problem.FieldOf(err) != field {
		t.Fatalf("got error %v, want one on %s", err, field)
	}
}

// RunAuthz runs the authorization cases of a package's data-access methods, each as a parallel
// subtest named after its method on a world of its own. A case that could not tell a correct
// method from one that refuses everyone, or serves everyone, fails (see AuthzCase.Problems).
// The meta-test in this package's tests finds every map passed here by reading the source, and
// fails when a data-access method has no case in any of them.
func RunAuthz(t *testing.T, cases ...map[string]AuthzCase) {
	all := map[string]AuthzCase{}
	for _, m := range cases {
		for name, c := range m {
			if _, twice := all[name]; twice {
				t.Errorf("%s has two authorization cases", name)
			}
			all[name] = c
		}
	}
	for _, name := range slices.Sorted(maps.Keys(all)) {
		c := all[name]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if problems := c.Problems(); len(problems) > 0 {
				t.Fatalf("the case cannot tell this method from a wrong one: %v", problems)
			}
			c.Run(t, NewWorld(t))
		})
	}
}
