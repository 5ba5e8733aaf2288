package lifecycle

// ZoneStatus is where a landing zone is in its life: a draft is set up, a published zone takes
// environments, a retired one takes none again. Other domains read it (a cluster's kubeconfig,
// IPAM, resolvers, environments), so it lives here rather than with the zone.
type ZoneStatus string

// The statuses of a landing zone.
const (
	ZoneDraft     ZoneStatus = "draft"
	ZonePublished ZoneStatus = "published"
	ZoneRetired   ZoneStatus = "retired"
)

// Zones is a landing zone's life.
var Zones = Machine[ZoneStatus]{
	Name: "landing zone", Table: "landing_zones", Column: "status", Writer: "app/orchestration/landingzone/transition.go", Start: ZoneDraft,
	Moves: map[ZoneStatus][]ZoneStatus{
		ZoneDraft:     {ZonePublished},
		ZonePublished: {ZoneRetired},
	},
}
