// Package e2e drives the real Nimbus server with a headless Chromium, the way people use it:
// signing in, filling forms, following redirects. Run it with `go test ./e2e/`; it needs
// Chromium on PATH (`go tool task system-packages` installs it). NIMBUS_SCREENSHOTS=1 writes
// screenshots to e2e/testdata/screenshots, NIMBUS_SCREENSHOTS=<dir> to another directory.
package e2e
