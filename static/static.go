// Package static holds the stylesheets, scripts and vendored front-end packages that Nimbus
// serves itself, so that the UI works with no network.
package static

import "embed"

// FS holds css/, js/, vendor/ and the favicon (the last filled from npm by the assets task).
//
//go:embed all:css all:js all:vendor favicon.svg
var FS embed.FS
