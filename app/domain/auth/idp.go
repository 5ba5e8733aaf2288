package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/kernel/secrets"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// IdentityProvider is the OpenID Connect provider people may sign in with, as provider admins
// see it: never its client secret, only that it is set.
type IdentityProvider struct {
	Name        string    `json:"name"`
	Issuer      string    `json:"issuer"`
	ClientID    string    `json:"client_id"`
	Scopes      []string  `json:"scopes"`
	GroupsClaim string    `json:"groups_claim"`
	Mappings    []Mapping `json:"mappings"`
	LocalLogin  bool      `json:"local_login"`
	EndSession  string    `json:"end_session_endpoint,omitempty"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Mapping gives whoever carries Claim among their groups Role: in Tenant, or provider admin
// (no tenant).
type Mapping struct {
	Claim    string      `json:"claim"`
	Role     access.Role `json:"role"`
	TenantID uuid.UUID   `json:"tenant_id,omitzero"`
	Tenant   string      `json:"tenant,omitempty"`
}

// NewIdentityProvider is what a provider admin gives: the settings form's fields as typed.
// An empty ClientSecret keeps the one already sealed.
type NewIdentityProvider struct {
	Name         string
	Issuer       string
	ClientID     string
	ClientSecret string
	Scopes       string // space-separated
	GroupsClaim  string
	Mappings     string // one "claim = role [tenant]" a line
	LocalLogin   bool
}

// MappingsText writes mappings as the settings form takes them.
func MappingsText(ms []Mapping) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.Claim + " = " + string(m.Role))
		if m.Tenant != "" {
			b.WriteString(" " + m.Tenant)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// discovery is what Nimbus reads of a provider's discovery document.
type discovery struct {
	Issuer     string `json:"issuer"`
	AuthURL    string `json:"authorization_endpoint"`
	TokenURL   string `json:"token_endpoint"`
	JWKSURL    string `json:"jwks_uri"`
	EndSession string `json:"end_session_endpoint"`
}

// sealedFor binds the sealed client secret to its place: copied elsewhere, it does not open.
var sealedFor = []byte("identity_provider.client_secret")

// checkTimeout bounds asking a provider for its discovery document.
const checkTimeout = 10 * time.Second

// SSO signs people in through the OpenID Connect identity provider provider admins configure.
type SSO struct {
	auth   *Service
	keys   *secrets.Keyring
	client *http.Client
	now    func() time.Time
}

// NewSSO returns the single sign-on of svc; keys seals the client secret.
func NewSSO(svc *Service, keys *secrets.Keyring) *SSO {
	return &SSO{auth: svc, keys: keys, client: &http.Client{Timeout: checkTimeout}, now: time.Now}
}

// Provider returns the identity provider, or nil when none is configured. Provider admins only.
func (s *SSO) Provider(ctx context.Context, actor access.Principal) (*IdentityProvider, error) {
	if !actor.ProviderAdmin {
		return nil, problem.ErrNotFound
	}
	p, _, err := s.load(ctx, db.Queries(s.auth.pool))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &p, nil
}

func (s *SSO) load(ctx context.Context, q *dbgen.Queries) (IdentityProvider, dbgen.IdentityProvider, error) {
	row, err := q.GetIdentityProvider(ctx)
	if err != nil {
		return IdentityProvider{}, row, err
	}
	ms, err := q.ListIdentityProviderMappings(ctx)
	if err != nil {
		return IdentityProvider{}, row, fmt.Errorf("load the identity provider's mappings: %w", err)
	}
	p := IdentityProvider{Name: row.Name, Issuer: row.Issuer, ClientID: row.ClientID, Scopes: row.Scopes, GroupsClaim: row.GroupsClaim,
		LocalLogin: row.LocalLogin, EndSession: row.EndSessionEndpoint, UpdatedAt: row.UpdatedAt, Mappings: make([]Mapping, len(ms))}
	for i, m := range ms {
		p.Mappings[i] = Mapping{Claim: m.Claim, Role: access.Role(m.Role), TenantID: m.TenantID.UUID, Tenant: m.TenantName}
	}
	return p, row, nil
}

// Set configures the identity provider, replacing the one there was, once its discovery
// document names the same issuer. Provider admins only.
func (s *SSO) Set(ctx context.Context, actor access.Principal, in NewIdentityProvider) (IdentityProvider, error) {
	if !actor.ProviderAdmin {
		return IdentityProvider{}, problem.ErrForbidden
	}
	q := db.Queries(s.auth.pool)
	p, mappings, err := parseProvider(ctx, q, in)
	if err != nil {
		return IdentityProvider{}, err
	}
	keyID, sealed := "", []byte(nil)
	if in.ClientSecret != "" {
		if keyID, sealed, err = s.keys.Seal([]byte(strings.TrimSpace(in.ClientSecret)), sealedFor); err != nil {
			return IdentityProvider{}, fmt.Errorf("seal the client secret: %w", err)
		}
	} else if row, err := q.GetIdentityProvider(ctx); err == nil {
		keyID, sealed = row.SecretKeyID, row.ClientSecret
	} else if errors.Is(err, pgx.ErrNoRows) {
		return IdentityProvider{}, problem.Invalid("client_secret", "required", "give the client secret the identity provider issued for Nimbus")
	} else {
		return IdentityProvider{}, err
	}
	// Asked before the transaction: a slow or absent provider must not hold a connection.
	d, err := s.discover(ctx, p.Issuer)
	if err != nil {
		return IdentityProvider{}, err
	}
	err = db.Tx(ctx, s.auth.pool, func(q *dbgen.Queries) error {
		_, err := q.SetIdentityProvider(ctx, dbgen.SetIdentityProviderParams{Name: p.Name, Issuer: p.Issuer, ClientID: p.ClientID,
			ClientSecret: sealed, SecretKeyID: keyID, Scopes: p.Scopes, GroupsClaim: p.GroupsClaim, LocalLogin: p.LocalLogin,
			AuthorizationEndpoint: d.AuthURL, TokenEndpoint: d.TokenURL, JwksUri: d.JWKSURL, EndSessionEndpoint: d.EndSession,
			SetBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil}})
		if err != nil {
			return err
		}
		if err := q.ClearIdentityProviderMappings(ctx); err != nil {
			return err
		}
		for _, m := range mappings {
			if err := q.AddIdentityProviderMapping(ctx, dbgen.AddIdentityProviderMappingParams{Claim: m.Claim, Role: string(m.Role),
				TenantID: uuid.NullUUID{UUID: m.TenantID, Valid: m.TenantID != uuid.Nil}}); err != nil {
				return err
			}
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "identity_provider.set", TargetType: "identity_provider", TargetID: p.Issuer,
			Diff: map[string]any{"name": p.Name, "client_id": p.ClientID, "scopes": p.Scopes, "groups_claim": p.GroupsClaim,
				"local_login": p.LocalLogin, "mappings": MappingsText(mappings), "client_secret_changed": in.ClientSecret != ""}})
	})
	if err != nil {
		return IdentityProvider{}, fmt.Errorf("set the identity provider: %w", err)
	}
	out, _, err := s.load(ctx, q)
	return out, err
}

// Remove forgets the identity provider: people sign in with their password again. Users made
// by it stay, and sign in again once a provider with the same issuer is configured. Provider
// admins only.
func (s *SSO) Remove(ctx context.Context, actor access.Principal) error {
	if !actor.ProviderAdmin {
		return problem.ErrForbidden
	}
	return db.Tx(ctx, s.auth.pool, func(q *dbgen.Queries) error {
		row, err := q.GetIdentityProvider(ctx)
		if errors.Is(err, pgx.ErrNoRows) {
			return problem.ErrNotFound
		}
		if err != nil {
			return err
		}
		if _, err := q.RemoveIdentityProvider(ctx); err != nil {
			return err
		}
		if err := q.ClearIdentityProviderMappings(ctx); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "identity_provider.remove", TargetType: "identity_provider", TargetID: row.Issuer})
	})
}

// parseProvider checks what a provider admin gave, naming each field that is wrong.
func parseProvider(ctx context.Context, q *dbgen.Queries, in NewIdentityProvider) (IdentityProvider, []Mapping, error) {
	p := IdentityProvider{Name: strings.TrimSpace(in.Name), Issuer: strings.TrimSpace(in.Issuer), ClientID: strings.TrimSpace(in.ClientID),
		Scopes: strings.Fields(in.Scopes), GroupsClaim: strings.TrimSpace(in.GroupsClaim), LocalLogin: in.LocalLogin}
	v := &problem.ValidationError{}
	switch {
	case p.Name == "":
		v.Add("name", "required", "give the name people know the provider by, shown as \"Sign in with …\"")
	case utf8.RuneCountInString(p.Name) > 60:
		v.Add("name", "max_length", "must be at most 60 characters")
	}
	if msg := issuerRule(p.Issuer); msg != "" {
		v.Add("issuer", "url", "%s", msg)
	}
	switch {
	case p.ClientID == "":
		v.Add("client_id", "required", "give the client id the identity provider issued for Nimbus")
	case len(p.ClientID) > 255:
		v.Add("client_id", "max_length", "must be at most 255 characters")
	}
	if len(p.Scopes) == 0 {
		p.Scopes = []string{"openid", "email", "profile"}
	}
	if !slices.Contains(p.Scopes, "openid") {
		v.Add("scopes", "openid", "must include openid: without it the provider sends no ID token")
	}
	if p.GroupsClaim == "" {
		v.Add("groups_claim", "required", "name the ID token's claim that lists the user's groups, such as groups")
	}
	mappings, err := parseMappings(ctx, q, in.Mappings)
	if err != nil {
		var ve *problem.ValidationError
		if !errors.As(err, &ve) {
			return p, nil, err
		}
		v.Fields = append(v.Fields, ve.Fields...)
	}
	if !p.LocalLogin && !slices.ContainsFunc(mappings, func(m Mapping) bool { return m.Role == access.ProviderAdmin }) {
		v.Add("local_login", "provider_admin", "password sign-in can be turned off only when a mapping makes someone provider admin: otherwise nobody could manage Nimbus")
	}
	return p, mappings, v.Err()
}

// issuerRule says what is wrong with an issuer URL, or nothing. OpenID Connect asks for
// https; plain http is taken only for a provider on this machine.
func issuerRule(issuer string) string {
	u, err := url.Parse(issuer)
	if issuer == "" || err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "must be the provider's issuer URL, such as https://keycloak.example/realms/acme"
	}
	switch u.Scheme {
	case "https":
		return ""
	case "http":
		if ip := net.ParseIP(u.Hostname()); u.Hostname() == "localhost" || (ip != nil && ip.IsLoopback()) {
			return ""
		}
	}
	return "must start with https:// (plain http only for a provider on this machine)"
}

// parseMappings reads the mappings, one "claim = role [tenant]" a line, naming the line that is
// wrong.
func parseMappings(ctx context.Context, q *dbgen.Queries, text string) ([]Mapping, error) {
	v := &problem.ValidationError{}
	var out []Mapping
	seen := map[[2]string]bool{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		claim, rest, ok := strings.Cut(line, "=")
		claim = strings.TrimSpace(claim)
		role, tenant, _ := strings.Cut(strings.TrimSpace(rest), " ")
		m := Mapping{Claim: claim, Role: access.Role(role), Tenant: strings.TrimSpace(tenant)}
		switch {
		case !ok || claim == "":
			v.Add("mappings", "line", "line %d: write a group, =, a role and, for a tenant role, the tenant: acme-admins = tenant_admin acme", i+1)
			continue
		case m.Role == access.ProviderAdmin && m.Tenant != "":
			v.Add("mappings", "line", "line %d: provider_admin holds across every tenant: name no tenant", i+1)
			continue
		case m.Role != access.ProviderAdmin && !m.Role.Valid():
			v.Add("mappings", "line", "line %d: %q is no role: use read_only, user, tenant_admin or provider_admin", i+1, role)
			continue
		case m.Role != access.ProviderAdmin && m.Tenant == "":
			v.Add("mappings", "line", "line %d: name the tenant where %s is given: %s = %s acme", i+1, role, claim, role)
			continue
		}
		if m.Tenant != "" {
			t, err := q.GetTenantByName(ctx, m.Tenant)
			if errors.Is(err, pgx.ErrNoRows) {
				v.Add("mappings", "line", "line %d: no tenant is named %q", i+1, m.Tenant)
				continue
			}
			if err != nil {
				return nil, err
			}
			m.TenantID, m.Tenant = t.ID, t.Name
		}
		key := [2]string{claim, m.TenantID.String()}
		if seen[key] {
			v.Add("mappings", "line", "line %d: %s is mapped twice for the same tenant: keep one line", i+1, claim)
			continue
		}
		seen[key] = true
		out = append(out, m)
	}
	return out, v.Err()
}

// discover reads the issuer's discovery document and checks that it names the same issuer.
func (s *SSO) discover(ctx context.Context, issuer string) (discovery, error) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	where := strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, where, nil)
	if err != nil {
		return discovery{}, problem.Invalid("issuer", "url", "must be the provider's issuer URL: %v", err)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return discovery{}, problem.Invalid("issuer", "reachable", "Nimbus could not fetch the discovery document at %s: %v", where, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return discovery{}, problem.Invalid("issuer", "discovery", "the discovery document at %s answered HTTP %d: is this the issuer URL?", where, resp.StatusCode)
	}
	var d discovery
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&d); err != nil {
		return discovery{}, problem.Invalid("issuer", "discovery", "%s is no OpenID discovery document: %v", where, err)
	}
	switch {
	case d.Issuer != issuer:
		return discovery{}, problem.Invalid("issuer", "discovery", "the provider's discovery document names the issuer %q, not %q: give the issuer exactly as the provider names it", d.Issuer, issuer)
	case d.AuthURL == "" || d.TokenURL == "" || d.JWKSURL == "":
		return discovery{}, problem.Invalid("issuer", "discovery", "the discovery document at %s names no authorization endpoint, token endpoint or key set", where)
	}
	return d, nil
}
