// Package notification tells people what Nimbus did that concerns them: an inbox per person,
// filled by a reaction to Nimbus's own events as they are routed, and each person's choice of
// what reaches them.
package notification

// Kind is a sort of notification: the type of the event that makes it.
type Kind struct {
	Type  string
	Label string
	// On says whether the kind reaches a person who never said otherwise.
	On bool
}

// Kinds are the notifications Nimbus makes, in the order the preferences page lists them.
var Kinds = []Kind{
	{Type: "approval.requested", Label: "An approval waits for my decision", On: true},
	{Type: "approval.decided", Label: "My request was approved or rejected", On: true},
	{Type: "deployment.failed", Label: "My operation failed", On: true},
	{Type: "deployment.succeeded", Label: "My operation succeeded", On: false},
	{Type: "environment.expiring", Label: "An environment of mine is about to expire", On: true},
	{Type: "environment.expired", Label: "An environment of mine expired", On: true},
	{Type: "drift.detected", Label: "Drift was found on my deployment", On: true},
	{Type: "subscription.disabled", Label: "A subscription of my tenant was turned off", On: true},
	{Type: "elevation.granted", Label: "I was granted an elevated role", On: true},
	{Type: "elevation.ended", Label: "My elevated role ended", On: true},
	{Type: "backup.failed", Label: "A scheduled backup failed (provider admins)", On: true},
}

// onByDefault lists the kinds that reach a person who never said otherwise.
func onByDefault() []string {
	var out []string
	for _, k := range Kinds {
		if k.On {
			out = append(out, k.Type)
		}
	}
	return out
}

// kindOf is the kind of an event type; ok is false for a type that notifies nobody.
func kindOf(typ string) (Kind, bool) {
	for _, k := range Kinds {
		if k.Type == typ {
			return k, true
		}
	}
	return Kind{}, false
}
