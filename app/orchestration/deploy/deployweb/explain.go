package deployweb

import (
	"fmt"
	"strconv"
	"strings"

	"nimbus/app/kernel/outcome"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/platform/pulumix"
)

// What each step does, as the sentence saying it could not be done puts it.
var stepFailures = map[string]string{
	deploy.StepResolve: "Its inputs could not be filled in by the environment's resolvers",
	deploy.StepGovern:  "The tenant's rules do not allow it",
	deploy.StepAdopt:   "The engine could not import the resource to adopt",
	deploy.StepPreview: "The engine could not work out what would change",
	deploy.StepApprove: "It could not be put up for approval",
	deploy.StepUp:      "The engine could not make the change",
	deploy.StepRefresh: "The engine could not read the resources back",
	deploy.StepDestroy: "The engine could not delete the resources",
	deploy.StepRecord:  "What it did could not be recorded",
	deploy.StepDrift:   "The engine could not compare the resources with the cloud",
}

// What the engine does to a resource, as "could not be …" says it.
var opFailures = map[string]string{
	"create": "created", "update": "updated", "delete": "deleted", "replace": "replaced",
	"create-replacement": "replaced", "delete-replaced": "deleted", "read": "read", "refresh": "read back",
}

// explain says in a sentence why an operation did not succeed, from its outcome and the
// resource or the step that failed: what a person reads first, the engine's own words below it.
// It reads the outcome's fields; the message is shown whole where it is the only words there are
// (a refusal, a rejection), never searched.
func explain(d deploy.Detail, rows []ResourceRow) string {
	o := d.Outcome
	if d.Status != deploy.Failed && d.Status != deploy.Cancelled && d.Status != deploy.Rejected {
		return ""
	}
	undone := ""
	switch {
	case o.Undone:
		undone = "; what it had made was removed again"
	case o.RolledBack:
		undone = "; the deployment was rolled back to its previous version and parameters"
	}
	switch d.Status {
	case deploy.Cancelled:
		return "This " + string(d.Kind) + " was cancelled" + undone + "."
	case deploy.Rejected:
		return "This " + string(d.Kind) + " was rejected: " + d.Error
	}
	if o.Kind == outcome.TimedOut {
		return "It took longer than the " + o.TimedOutAfter.String() + " an operation may run" + undone + "."
	}
	for _, r := range rows {
		if pulumix.ResourceStatus(r.Status) != pulumix.ResourceFailed || strings.HasPrefix(r.Type, "pulumi:") {
			continue
		}
		verb := opFailures[r.Op]
		if verb == "" {
			verb = "changed"
		}
		s := "The " + resourceWord(r) + " could not be " + verb
		if why := cause(r.Diagnostics); why != "" {
			s += ": " + why
		}
		return s + undone + "."
	}
	if o.FailedStep == "" {
		// It ended outside its steps (a refusal before it began, its last attempt given up, a
		// restore): its message is said in words of its own.
		return d.Error
	}
	if what, ok := stepFailures[o.FailedStep]; ok {
		return what + undone + "."
	}
	return "It failed" + undone + "."
}

// resourceWord names a resource as a sentence does: "machine" for a Machine called machine,
// "machine web-1" for one called web-1.
func resourceWord(r ResourceRow) string {
	kind := strings.ToLower(r.Type[strings.LastIndex(r.Type, ":")+1:])
	if kind == "" || strings.EqualFold(kind, r.Name) {
		return r.Name
	}
	return kind + " " + r.Name
}

// cause is the reason the provider gave for a resource's failure: the last part of its first
// error, without the engine's wrapping.
func cause(diagnostics string) string {
	for _, d := range parseDiagnostics(diagnostics) {
		if d.Severity != "error" {
			continue
		}
		msg := strings.ReplaceAll(d.Message, "**", "")
		msg = strings.TrimSpace(msg[strings.LastIndex(msg, ": ")+1:])
		if msg != "" {
			return strings.TrimRight(msg, ".")
		}
	}
	return ""
}

// Diagnostic is one thing the engine said about a resource.
type Diagnostic struct {
	Resource, Severity, Message string
}

// parseDiagnostics splits what progress recorded for a resource ("severity: message" lines,
// a message running on over the lines after it) into its diagnostics.
func parseDiagnostics(text string) []Diagnostic {
	var out []Diagnostic
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		severity, msg, ok := strings.Cut(line, ": ")
		switch {
		case ok && (severity == "error" || severity == "warning" || severity == "info" || severity == "debug"):
			out = append(out, Diagnostic{Severity: severity, Message: msg})
		case len(out) > 0:
			out[len(out)-1].Message += "\n" + line
		case line != "":
			out = append(out, Diagnostic{Severity: "info", Message: line})
		}
	}
	return out
}

// DiagnosticsOf lists what the engine said about each resource, in the resources' order, for
// the Diagnostics section of a page that shows a ResourceTable.
func DiagnosticsOf(rows []ResourceRow) []Diagnostic {
	var out []Diagnostic
	for _, r := range rows {
		for _, d := range parseDiagnostics(r.Diagnostics) {
			d.Resource = r.Name
			out = append(out, d)
		}
	}
	return out
}

// diagnosticCounts says how many errors, warnings and messages there are.
func diagnosticCounts(ds []Diagnostic) string {
	n := map[string]int{}
	for _, d := range ds {
		n[d.Severity]++
	}
	var parts []string
	for _, s := range []struct{ severity, one, many string }{
		{"error", "error", "errors"}, {"warning", "warning", "warnings"}, {"info", "message", "messages"}, {"debug", "debug message", "debug messages"},
	} {
		switch c := n[s.severity]; c {
		case 0:
		case 1:
			parts = append(parts, "1 "+s.one)
		default:
			parts = append(parts, strconv.Itoa(c)+" "+s.many)
		}
	}
	return strings.Join(parts, ", ")
}

// Span is a piece of a diagnostic's text, bold where the engine marked it so.
type Span struct {
	Text string
	Bold bool
}

// spans turns the engine's **bold** markers into bold spans; an unpaired marker stays text.
func spans(s string) []Span {
	parts := strings.Split(s, "**")
	if len(parts)%2 == 0 { // an odd number of markers: the last one has no pair
		last := len(parts) - 1
		parts[last-1] += "**" + parts[last]
		parts = parts[:last]
	}
	out := make([]Span, 0, len(parts))
	for i, p := range parts {
		if p != "" {
			out = append(out, Span{Text: p, Bold: i%2 == 1})
		}
	}
	return out
}

// progressLine says how far an operation got with its resources: while it runs and once it
// succeeded, how many of the planned are done; once it failed or was cancelled, what finished,
// what failed, what was stopped part way and what its undo reversed.
func progressLine(v LiveView) string {
	ended := v.Status == string(deploy.Failed) || v.Status == string(deploy.Cancelled) || v.Status == string(deploy.Rejected)
	var s string
	if ended {
		s = fmt.Sprintf("%d of %d resources done", v.Done, v.Planned)
	} else {
		s = fmt.Sprintf("%d of %d resources (%s%%)", v.Done, v.Planned, percent(v.Done, v.Planned))
	}
	for _, c := range []struct {
		n    int
		word string
	}{{v.Failed, "failed"}, {v.Interrupted, "stopped part way"}, {v.Undone, "undone"}, {v.UndoFailed, "not undone"}} {
		if c.n > 0 {
			s += fmt.Sprintf(" · %d %s", c.n, c.word)
		}
	}
	return s
}

// What the engine did to a resource, as "… by the undo" says it.
var opDone = map[string]string{
	"create": "made again", "update": "changed back", "delete": "deleted", "replace": "replaced",
	"create-replacement": "replaced", "delete-replaced": "deleted", "same": "kept", "refresh": "read back",
}

// undoWords says what the undo did to a resource: "deleted by the undo", "undo running", or
// that its undo failed.
func undoWords(op, status string) string {
	switch pulumix.ResourceStatus(status) {
	case pulumix.ResourceDone:
		if w, ok := opDone[op]; ok {
			return w + " by the undo"
		}
		return "undone"
	case pulumix.ResourceFailed:
		return "the undo failed here"
	case pulumix.ResourceRunning:
		return "being undone"
	}
	return ""
}
