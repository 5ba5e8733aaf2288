package component

import "testing"

func TestPushedBranch_OnlyAPushOrAnOpenPullRequestNamesOne(t *testing.T) {
	for body, want := range map[string]string{
		`{"ref":"refs/heads/feature/x"}`:                                                               "feature/x",
		`{"ref":"refs/tags/v1.0.0"}`:                                                                   "",
		`{"ref":"refs/heads/a..b"}`:                                                                    "",
		`{"action":"synchronize","pull_request":{"head":{"ref":"fix"}}}`:                               "fix",
		`{"action":"synchronized","pull_request":{"head":{"ref":"fix"}}}`:                              "fix", // Gitea
		`{"action":"closed","pull_request":{"head":{"ref":"fix"}}}`:                                    "",
		`{"object_kind":"merge_request","object_attributes":{"source_branch":"mr","action":"update"}}`: "mr",
		`{"object_kind":"merge_request","object_attributes":{"source_branch":"mr","action":"merge"}}`:  "",
		`{"object_kind":"push","ref":"refs/heads/main"}`:                                               "main",
		`not json`: "",
	} {
		if got := pushedBranch([]byte(body)); got != want {
			t.Errorf("%s names %q, want %q", body, got, want)
		}
	}
}
