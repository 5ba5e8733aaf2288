// Package problem holds the errors a user can cause or meet, as values that the HTTP layer maps
// to a status and a message in one place.
package problem

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel problems; wrap them with context, test with errors.Is.
var (
	// ErrNotFound is returned for a missing object and for one the actor may not see, so that a
	// foreign ID reveals nothing.
	ErrNotFound = errors.New("not found")
	// ErrForbidden is returned when the actor may see the object but not do this to it.
	ErrForbidden = errors.New("you do not have permission to do this")
	// ErrUnauthenticated is returned when no valid session or token came with the request.
	ErrUnauthenticated = errors.New("sign in required")
)

// FieldError says which input broke which rule; for errors inside code, also where. Field is a
// path, its parts joined with dots ("parameters.cores"); Message is the rule's words, which a
// place that tells of the refusal quotes whole inside a sentence of its own, never edits.
type FieldError struct {
	Field   string `json:"field"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
}

// ValidationError lists the inputs that broke a rule; nothing was written.
type ValidationError struct {
	Fields []FieldError
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Field + ": " + f.Message
	}
	return "invalid input: " + strings.Join(parts, "; ")
}

// Add records that field broke rule, with a message in plain words.
func (e *ValidationError) Add(field, rule, format string, args ...any) {
	e.Fields = append(e.Fields, FieldError{Field: field, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

// Err returns e when it holds a problem and nil otherwise, for `return v.Err()`.
func (e *ValidationError) Err() error {
	if e == nil || len(e.Fields) == 0 {
		return nil
	}
	return e
}

// AddAt records a problem at a line and column of field's text, such as a program.
func (e *ValidationError) AddAt(field string, line, column int, rule, format string, args ...any) {
	e.Fields = append(e.Fields, FieldError{Field: field, Rule: rule, Message: fmt.Sprintf(format, args...), Line: line, Column: column})
}

// Invalid is a one-field ValidationError.
func Invalid(field, rule, format string, args ...any) error {
	v := &ValidationError{}
	v.Add(field, rule, format, args...)
	return v
}

// Denied is returned when a rule forbids the action outright, such as deploying a component
// that governance denies to the tenant. Unlike ErrForbidden it carries its reason, which names
// the rule and who set it; errors.Is(err, ErrForbidden) still holds.
type Denied struct{ Message string }

func (e *Denied) Error() string { return e.Message }

// Is makes a Denied count as ErrForbidden for callers that only ask whether it was forbidden.
func (e *Denied) Is(target error) bool { return target == ErrForbidden }

// Unauthenticated is a credential refused with a reason its holder can act on, such as an API
// token that expired; errors.Is(err, ErrUnauthenticated) still holds.
type Unauthenticated struct{ Message string }

func (e *Unauthenticated) Error() string { return e.Message }

// Is makes an Unauthenticated count as ErrUnauthenticated.
func (e *Unauthenticated) Is(target error) bool { return target == ErrUnauthenticated }

// Unavailable is returned when Nimbus cannot serve for a moment, such as while its database
// is restarting; RetryAfter is in seconds.
type Unavailable struct {
	Message    string
	RetryAfter int
}

func (e *Unavailable) Error() string { return e.Message }

// TooManyRequests is returned when a rate limit holds; RetryAfter is in seconds.
type TooManyRequests struct {
	Message    string
	RetryAfter int
}

func (e *TooManyRequests) Error() string { return e.Message }

// Within says where a field's path lies under parent: the rest of the path ("cores" for
// "parameters.cores" under "parameters"; "" for parent itself), and whether it lies there at
// all.
func Within(field, parent string) (rest string, ok bool) {
	if field == parent {
		return "", true
	}
	if rest, ok := strings.CutPrefix(field, parent+"."); ok {
		return rest, true
	}
	return "", false
}

// FieldOf returns the first field a validation error names, or "" for any other error.
func FieldOf(err error) string {
	var v *ValidationError
	if errors.As(err, &v) && len(v.Fields) > 0 {
		return v.Fields[0].Field
	}
	return ""
}

// Refusal reports whether err is a rule saying no — a field that breaks a rule, or an action a
// rule denies — which trying again would only repeat: work in the background that meets one
// stops and says why, rather than being retried.
func Refusal(err error) bool {
	return err != nil && (FieldOf(err) != "" || errors.Is(err, ErrForbidden))
}
