package dbtest

import "runtime/debug"

func riverVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, m := range info.Deps {
		if m.Path == "github.com/riverqueue/river" {
			return m.Version
		}
	}
	return ""
}
