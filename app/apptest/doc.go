// Package apptest is the one harness of Nimbus's tests: it is imported by tests only.
//
// A World is two tenants with people of each role and two components, on a database of the
// test's own, with each domain's service built on it; fixtures beyond those (a deployment, a
// stack instance, a landing zone...) are built on first use. Start starts a server as
// production does, from server.Deps with the job client working server.Workers, on the file or
// the S3 backend; a Site is a server over a world. One helper, Do, talks HTTP to it: JSON API
// calls (Server.Call), form posts (Server.Submit, Browser), raw bodies (Server.Send), signing
// in (Browser.SignIn) or acting through a principal's token (Site.Token). The server's log is
// kept in Server.Logs.
//
// Each domain's integration tests sit beside the domain, in its external test package, with a
// TestMain of dbtest.Main(s3test.Around(m)); each runs the authorization cases of its
// data-access methods with RunAuthz, and this package's tests fail when a method has none.
package apptest
