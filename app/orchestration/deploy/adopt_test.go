package deploy

import (
	"testing"

	"nimbus/app/domain/inventory"
)

// An adoption takes the program's one top-level resource of the found resource's type, by the
// name its URN carries; a program with none, or several, cannot say which it would become.
func TestAdopted_TakesTheProgramsOneResourceOfTheType(t *testing.T) {
	found := inventory.Found{Type: "simcloud:index:Machine", ProviderID: "m-1"}
	for _, tc := range []struct {
		name, code, want string
	}{
		{"by its key", "resources:\n  disk:\n    type: simcloud:index:Disk\n  box:\n    type: simcloud:index:Machine\n", "box"},
		{"by the name it gives", "resources:\n  box:\n    type: simcloud:index:Machine\n    name: web-box\n", "web-box"},
		{"none", "resources:\n  disk:\n    type: simcloud:index:Disk\n", ""},
		{"two", "resources:\n  a:\n    type: simcloud:index:Machine\n  b:\n    type: simcloud:index:Machine\n", ""},
		{"under a parent", "resources:\n  a:\n    type: simcloud:index:Machine\n    options:\n      parent: ${p}\n", ""},
		{"not YAML", "resources: [", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := adopted(tc.code, found)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("adopted %v, want a refusal", a)
				}
				return
			}
			if err != nil || a.Name != tc.want || a.ID != "m-1" || a.Type != found.Type {
				t.Fatalf("adopted %v, %v; want %s", a, err, tc.want)
			}
		})
	}
}
