package saga

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Kind names what err is in a word or two, for what may leave the machine, such as a span's
// status sent to a collector: never its message, which may carry what a tenant typed. It is a
// context's end or a run's timeout by name, or else the type of the deepest error in err's chain
// that is more than words (a provider's, the database's, the engine's), or "error".
func Kind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrTimedOut):
		return "timed out"
	case errors.Is(err, ErrCancelled), errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline exceeded"
	}
	kind := "error"
	for next := []error{err}; len(next) > 0; {
		e := next[0]
		next = next[1:]
		if name := strings.TrimPrefix(fmt.Sprintf("%T", e), "*"); !words[name] {
			kind = name
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			if inner := u.Unwrap(); inner != nil {
				next = append(next, inner)
			}
		case interface{ Unwrap() []error }:
			next = append(next, u.Unwrap()...)
		}
	}
	return kind
}

// words are the types of errors that say nothing but their message, or wrap another.
var words = map[string]bool{"fmt.wrapError": true, "fmt.wrapErrors": true, "errors.errorString": true, "errors.joinError": true,
	"saga.transient": true}
