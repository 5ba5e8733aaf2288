// Package views holds the HTML every domain shares, as templ components: the layout, the page
// frame and small widgets. Each domain keeps its own pages beside it; views know no domain and
// take plain data, never reaching into the database.
package views

import "fmt"

// Page is the frame every page shares.
type Page struct {
	Title  string
	Path   string
	CSRF   string
	Flash  []Flash
	Viewer *Viewer
	// Crumbs lead from the top of the site to the page's parent; the page itself ends the
	// trail with its title. None on top-level pages.
	Crumbs []Crumb
}

// Crumb is one step of the trail above a page: a list or parent it belongs to.
type Crumb struct {
	Label string
	URL   string
}

// Under is the page with the trail of parents that lead to it.
func (p Page) Under(crumbs ...Crumb) Page {
	p.Crumbs = crumbs
	return p
}

// Viewer is the signed-in user as the navigation needs to know them.
type Viewer struct {
	Email         string
	ProviderAdmin bool
	SeeUsers      bool
	SeeAudit      bool
	SeeSystem     bool
	Tenants       int
	// Approvals is how many requests for approval wait for the viewer's decision.
	Approvals int
	// Unread is how many of the viewer's notifications they have not read.
	Unread int
}

// Flash is a one-time message shown at the top of the next page.
type Flash struct {
	Kind    string
	Message string
}

// Errors maps form fields to the message shown beside each.
type Errors map[string]string

// Pager links to neighbouring pages of a listing; an empty URL hides the link.
type Pager struct {
	PrevURL string
	NextURL string
	Label   string
}

func active(page Page, prefix string) string {
	if prefix == "/" && page.Path == "/" || prefix != "/" && len(page.Path) >= len(prefix) && page.Path[:len(prefix)] == prefix {
		return "page"
	}
	return "false"
}

func title(page Page) string {
	if page.Title == "" {
		return "Nimbus"
	}
	return fmt.Sprintf("%s · Nimbus", page.Title)
}
