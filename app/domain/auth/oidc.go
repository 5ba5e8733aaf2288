package auth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"golang.org/x/oauth2"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// loginTTL is how long a person has at the identity provider before the sign-in they began
// expires.
const loginTTL = 10 * time.Minute

// Offer is how the sign-in page offers single sign-on: Name is empty when no identity provider
// is configured, and then local sign-in is always on.
type Offer struct {
	Name       string
	LocalLogin bool
}

// Offer says what the sign-in page offers.
func (s *SSO) Offer(ctx context.Context) (Offer, error) {
	row, err := db.Queries(s.auth.pool).GetIdentityProvider(ctx)
	if errors.Is(err, pgx.ErrNoRows) {
		return Offer{LocalLogin: true}, nil
	}
	if err != nil {
		return Offer{}, fmt.Errorf("load the identity provider: %w", err)
	}
	return Offer{Name: row.Name, LocalLogin: row.LocalLogin}, nil
}

// Begin starts a sign-in at the identity provider: it returns where to send the browser and the
// binding to keep in the browser's cookie until it comes back to callback.
func (s *SSO) Begin(ctx context.Context, callback, next string) (to, binding string, err error) {
	q := db.Queries(s.auth.pool)
	row, err := q.GetIdentityProvider(ctx)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", problem.ErrNotFound
	}
	if err != nil {
		return "", "", fmt.Errorf("begin sign-in: %w", err)
	}
	cfg, err := s.oauth(row, callback)
	if err != nil {
		return "", "", err
	}
	if _, err := q.DeleteExpiredOIDCLogins(ctx); err != nil {
		return "", "", fmt.Errorf("begin sign-in: %w", err)
	}
	state, nonce, verifier := newSecret(), newSecret(), oauth2.GenerateVerifier()
	binding = newSecret()
	keyID, sealed, err := s.keys.Seal([]byte(verifier), verifierSealedFor)
	if err != nil {
		return "", "", fmt.Errorf("begin sign-in: %w", err)
	}
	err = q.StartOIDCLogin(ctx, dbgen.StartOIDCLoginParams{StateHash: hashSecret(state), BindingHash: hashSecret(binding), Nonce: nonce,
		Verifier: sealed, VerifierKeyID: keyID, Next: safeNext(next), ExpiresAt: s.now().Add(loginTTL)})
	if err != nil {
		return "", "", fmt.Errorf("begin sign-in: %w", err)
	}
	return cfg.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), binding, nil
}

// verifierSealedFor binds a sign-in's sealed PKCE verifier to its place.
var verifierSealedFor = []byte("oidc_logins.verifier")

func (s *SSO) oauth(row dbgen.IdentityProvider, callback string) (*oauth2.Config, error) {
	secret, err := s.keys.Open(row.SecretKeyID, row.ClientSecret, sealedFor)
	if err != nil {
		return nil, fmt.Errorf("open the identity provider's client secret: %w", err)
	}
	return &oauth2.Config{ClientID: row.ClientID, ClientSecret: string(secret), RedirectURL: callback, Scopes: row.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: row.AuthorizationEndpoint, TokenURL: row.TokenEndpoint}}, nil
}

// Callback is what the identity provider sent the browser back with, and the browser's binding.
type Callback struct {
	Query    url.Values // state and code, or error and error_description
	Binding  string
	ClientIP string
}

// Finish completes a sign-in the identity provider sent back to callback: the ID token is
// verified (issuer, audience, expiry, signature, nonce), the user is found by the provider's
// subject or made on first sign-in, their memberships are set from the mappings, and a session
// opens. It returns where to go next. Every refusal is audited and names field
// "identity_provider".
func (s *SSO) Finish(ctx context.Context, callback string, in Callback) (Session, string, error) {
	q := db.Queries(s.auth.pool)
	row, err := q.GetIdentityProvider(ctx)
	if errors.Is(err, pgx.ErrNoRows) {
		return Session{}, "", problem.ErrNotFound
	}
	if err != nil {
		return Session{}, "", fmt.Errorf("finish sign-in: %w", err)
	}
	refuse := func(rule, format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		err := audit.Record(ctx, q, audit.Anonymous, audit.Event{Action: "auth.sso_refused", TargetType: "identity_provider", TargetID: row.Issuer,
			Diff: map[string]any{"rule": rule, "reason": msg, "client_ip": in.ClientIP}})
		if err != nil {
			return fmt.Errorf("finish sign-in: %w", err)
		}
		return problem.Invalid("identity_provider", rule, "%s", msg)
	}
	state := in.Query.Get("state")
	if state == "" {
		return Session{}, "", refuse("state", "the identity provider sent the browser back without a state: start the sign-in again")
	}
	// Taken whatever comes next: a state is good for one try.
	login, err := q.TakeOIDCLogin(ctx, hashSecret(state))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Session{}, "", refuse("state", "this sign-in was already used or never begun here: start the sign-in again")
	case err != nil:
		return Session{}, "", fmt.Errorf("finish sign-in: %w", err)
	case in.Binding == "" || !slices.Equal(hashSecret(in.Binding), login.BindingHash):
		return Session{}, "", refuse("state", "this sign-in was begun in another browser: start the sign-in again here")
	case !s.now().Before(login.ExpiresAt):
		return Session{}, "", refuse("state", "this sign-in took longer than %s and has expired: start the sign-in again", loginTTL)
	}
	if e := in.Query.Get("error"); e != "" {
		return Session{}, "", refuse("provider", "the identity provider refused the sign-in: %s %s", e, in.Query.Get("error_description"))
	}
	cfg, err := s.oauth(row, callback)
	if err != nil {
		return Session{}, "", err
	}
	ctx = oidc.ClientContext(ctx, s.client)
	verifier, err := s.keys.Open(login.VerifierKeyID, login.Verifier, verifierSealedFor)
	if err != nil {
		return Session{}, "", fmt.Errorf("open the sign-in's PKCE verifier: %w", err)
	}
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, s.client), in.Query.Get("code"), oauth2.VerifierOption(string(verifier)))
	if err != nil {
		return Session{}, "", refuse("code", "the identity provider did not take the sign-in's code: %v", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Session{}, "", refuse("id_token", "the identity provider sent no ID token: is openid among the scopes?")
	}
	provider := (&oidc.ProviderConfig{IssuerURL: row.Issuer, AuthURL: row.AuthorizationEndpoint, TokenURL: row.TokenEndpoint, JWKSURL: row.JwksUri}).NewProvider(ctx)
	idt, err := provider.VerifierContext(ctx, &oidc.Config{ClientID: row.ClientID, Now: s.now}).Verify(ctx, raw)
	var expired *oidc.TokenExpiredError
	switch {
	case errors.As(err, &expired):
		return Session{}, "", refuse("expired", "the identity provider's ID token expired at %s: sign in again, and if this keeps happening, compare the clocks of Nimbus and the provider",
			expired.Expiry.UTC().Format(time.RFC3339))
	case err != nil && strings.Contains(err.Error(), "expected audience"):
		return Session{}, "", refuse("audience", "the identity provider's ID token is meant for another client, not %q: check the client id", row.ClientID)
	case err != nil:
		return Session{}, "", refuse("id_token", "the identity provider's ID token did not verify: %v", err)
	case idt.Nonce != login.Nonce:
		return Session{}, "", refuse("nonce", "the ID token's nonce is not the one this sign-in sent: start the sign-in again")
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return Session{}, "", refuse("id_token", "the ID token's claims do not read: %v", err)
	}
	email, _ := claims["email"].(string)
	who := identity{issuer: row.Issuer, subject: idt.Subject, email: strings.TrimSpace(email), groups: groups(claims[row.GroupsClaim])}
	sess, err := s.signIn(ctx, who, in.ClientIP, refuse)
	if err != nil {
		return Session{}, "", err
	}
	return sess, login.Next, nil
}

// identity is who the identity provider says signed in.
type identity struct {
	issuer, subject, email string
	groups                 []string
}

// groups reads a groups claim: a list of strings, or one string.
func groups(v any) []string {
	switch g := v.(type) {
	case string:
		return []string{g}
	case []any:
		var out []string
		for _, e := range g {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// signIn finds or makes the user of who, sets their memberships from the mappings and opens a
// session, all in one transaction.
func (s *SSO) signIn(ctx context.Context, who identity, clientIP string, refuse func(rule, format string, args ...any) error) (Session, error) {
	q := db.Queries(s.auth.pool)
	u, err := q.GetUserIdentity(ctx, dbgen.GetUserIdentityParams{Issuer: who.issuer, Subject: who.subject})
	known := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return Session{}, fmt.Errorf("finish sign-in: %w", err)
	}
	switch {
	case known && u.DisabledAt != nil:
		return Session{}, refuse("disabled", "your Nimbus account is disabled: a provider admin can enable it")
	case !known && CheckEmail("email", who.email) != nil:
		return Session{}, refuse("email", "the identity provider sent no usable email for you: add the email scope, or give your account an email there")
	case !known:
		if _, err := q.GetUserByEmail(ctx, who.email); err == nil {
			// Never joined by email alone: whoever holds this email at the provider is not
			// thereby the owner of the local account.
			return Session{}, refuse("email", "a Nimbus account with the email %s already exists and signs in with its password: sign in with it, or ask a provider admin", who.email)
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return Session{}, fmt.Errorf("finish sign-in: %w", err)
		}
	}
	var sess Session
	err = db.Tx(ctx, s.auth.pool, func(q *dbgen.Queries) error {
		if !known {
			// No password: this user signs in through the provider only.
			if u, err = q.CreateUser(ctx, dbgen.CreateUserParams{Email: who.email}); err != nil {
				return err
			}
			if err := q.AddUserIdentity(ctx, dbgen.AddUserIdentityParams{Issuer: who.issuer, Subject: who.subject, UserID: u.ID}); err != nil {
				return err
			}
		}
		changes, lost, err := applyMappings(ctx, q, u, who.groups)
		if err != nil {
			return err
		}
		if lost {
			// Whatever the user signed in with before acted with the role they lost.
			if err := q.EndUserSessions(ctx, dbgen.EndUserSessionsParams{UserID: u.ID, Keep: uuid.Nil}); err != nil {
				return err
			}
			if err := q.RevokeUserTokens(ctx, u.ID); err != nil {
				return err
			}
		}
		if u, err = q.GetUser(ctx, u.ID); err != nil {
			return err
		}
		p, err := principal(ctx, q, u)
		if err != nil {
			return err
		}
		if !known {
			if err := audit.Record(ctx, q, p, audit.Event{Action: "user.create", TargetType: "user", TargetID: u.ID.String(),
				Diff: map[string]any{"email": u.Email, "issuer": who.issuer, "subject": who.subject}}); err != nil {
				return err
			}
		}
		if len(changes) > 0 {
			if err := audit.Record(ctx, q, p, audit.Event{Action: "auth.sso_mapping", TargetType: "user", TargetID: u.ID.String(),
				Diff: map[string]any{"groups": who.groups, "changes": changes, "sessions_ended": lost}}); err != nil {
				return err
			}
		}
		if sess, err = s.auth.openSession(ctx, q, u.ID, false); err != nil {
			return err
		}
		return audit.Record(ctx, q, p, audit.Event{Action: "auth.login", TargetType: "user", TargetID: u.ID.String(),
			Diff: map[string]any{"client_ip": clientIP, "via": "identity_provider", "issuer": who.issuer}})
	})
	if err != nil {
		return Session{}, fmt.Errorf("finish sign-in: %w", err)
	}
	return sess, nil
}

// applyMappings sets u's roles from the mappings that groups match. The mappings govern what
// they name: the tenants they name, and provider admin when one gives it; other memberships
// stay as tenant admins set them. It returns the changes made and whether any role was lost.
func applyMappings(ctx context.Context, q *dbgen.Queries, u dbgen.User, groups []string) ([]string, bool, error) {
	rows, err := q.ListIdentityProviderMappings(ctx)
	if err != nil {
		return nil, false, err
	}
	want := map[uuid.UUID]access.Role{} // governed tenants: the role given, or "" for none
	governsAdmin, admin := false, false
	for _, m := range rows {
		match := slices.Contains(groups, m.Claim)
		if access.Role(m.Role) == access.ProviderAdmin {
			governsAdmin, admin = true, admin || match
			continue
		}
		if r, seen := want[m.TenantID.UUID]; !seen || (match && access.Role(m.Role).Outranks(r)) {
			want[m.TenantID.UUID] = ""
			if match {
				want[m.TenantID.UUID] = access.Role(m.Role)
			}
		}
	}
	held, err := q.ListMembershipsOfUser(ctx, u.ID)
	if err != nil {
		return nil, false, err
	}
	has := map[uuid.UUID]access.Role{}
	for _, m := range held {
		has[m.TenantID] = access.Role(m.Role)
	}
	var changes []string
	lost := false
	for tenant, role := range want {
		before := has[tenant]
		switch {
		case role == before:
			continue
		case role == "":
			if _, err := q.DeleteMembership(ctx, dbgen.DeleteMembershipParams{TenantID: tenant, UserID: u.ID}); err != nil {
				return nil, false, err
			}
		default:
			if _, err := q.UpsertMembership(ctx, dbgen.UpsertMembershipParams{TenantID: tenant, UserID: u.ID, Role: string(role)}); err != nil {
				return nil, false, err
			}
		}
		lost = lost || before.Outranks(role)
		changes = append(changes, fmt.Sprintf("tenant %s: %s → %s", tenant, orNone(before), orNone(role)))
	}
	if governsAdmin && admin != u.IsProviderAdmin {
		if err := q.SetProviderAdmin(ctx, dbgen.SetProviderAdminParams{ID: u.ID, IsProviderAdmin: admin}); err != nil {
			return nil, false, err
		}
		lost = lost || u.IsProviderAdmin
		changes = append(changes, fmt.Sprintf("provider admin: %t → %t", u.IsProviderAdmin, admin))
	}
	slices.Sort(changes)
	return changes, lost, nil
}

func orNone(r access.Role) string {
	if r == "" {
		return "none"
	}
	return string(r)
}

// EndSession is where to send a user signing out so that the identity provider ends its session
// too, coming back to back: empty when the user did not come through the provider or the
// provider names no end-session endpoint.
func (s *SSO) EndSession(ctx context.Context, userID uuid.UUID, back string) (string, error) {
	q := db.Queries(s.auth.pool)
	row, err := q.GetIdentityProvider(ctx)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && row.EndSessionEndpoint == "") {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("sign out: %w", err)
	}
	federated, err := q.UserHasIdentity(ctx, userID)
	if err != nil || !federated {
		return "", err
	}
	u, err := url.Parse(row.EndSessionEndpoint)
	if err != nil {
		return "", nil // a provider's malformed endpoint must not keep anyone signed in here
	}
	v := u.Query()
	v.Set("client_id", row.ClientID)
	v.Set("post_logout_redirect_uri", back)
	u.RawQuery = v.Encode()
	return u.String(), nil
}
