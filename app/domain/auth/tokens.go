package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Scope is how much of its user's access a token carries.
type Scope string

// The scopes of a token.
const (
	// ScopeFull acts as its user: whatever they may do.
	ScopeFull Scope = "full"
	// ScopeReadOnly acts as its user for safe requests (GET, HEAD) alone.
	ScopeReadOnly Scope = "read_only"
	// ScopeTenant acts as its user within one tenant alone, with the role held there.
	ScopeTenant Scope = "tenant"
)

// Label is the scope as people read it.
func (s Scope) Label() string {
	switch s {
	case ScopeReadOnly:
		return "Read-only"
	case ScopeTenant:
		return "One tenant"
	}
	return "Full"
}

// Token lifetimes: every token expires, by default after DefaultTokenTTL, at most a year (and
// a day, so that a date a year from today is allowed) after it is made.
const (
	DefaultTokenTTL = 90 * 24 * time.Hour
	MaxTokenTTL     = 366 * 24 * time.Hour
)

// Token is an API token as its owner sees it: never its secret, nor what the secret hashes to.
type Token struct {
	ID         uuid.UUID  `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	Scope      Scope      `json:"scope"`
	TenantID   *uuid.UUID `json:"tenant_id,omitempty"`
	TenantName string     `json:"tenant_name,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	ExpiresAt  time.Time  `json:"expires_at"`
	// ExpiryAssigned says the expiry was given when tokens came to need one, not by the owner.
	ExpiryAssigned bool `json:"expiry_assigned"`
}

// Expired reports whether the token is past its expiry.
func (t Token) Expired() bool { return !time.Now().Before(t.ExpiresAt) }

func tokenFrom(t dbgen.ApiToken, tenantName string) Token {
	out := Token{ID: t.ID, Name: t.Name, Prefix: t.Prefix, Scope: Scope(t.Scope), TenantName: tenantName, CreatedAt: t.CreatedAt,
		LastUsedAt: t.LastUsedAt, ExpiresAt: t.ExpiresAt, ExpiryAssigned: t.ExpiryAssigned}
	if t.TenantID.Valid {
		out.TenantID = &t.TenantID.UUID
	}
	return out
}

// NewToken is a token just created: Secret is shown once and never stored.
type NewToken struct {
	Token
	Secret string `json:"token"`
}

// TokenSpec is what a token is made with. A zero ExpiresAt is DefaultTokenTTL from now, an
// empty Scope is ScopeFull; Tenant is the tenant of ScopeTenant, one the user holds a role in.
type TokenSpec struct {
	Name      string
	ExpiresAt time.Time
	Scope     Scope
	Tenant    uuid.UUID
}

// ListTokens returns the actor's own live tokens, expired ones too; nobody sees another
// user's tokens.
func (s *Service) ListTokens(ctx context.Context, actor access.Principal) ([]Token, error) {
	rows, err := db.Queries(s.pool).ListAPITokens(ctx, actor.UserID)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	out := make([]Token, len(rows))
	for i, r := range rows {
		out[i] = tokenFrom(r.ApiToken, r.TenantName)
	}
	return out, nil
}

// CreateToken issues a token acting as the actor, within spec's scope. A token confined to a
// tenant makes only tokens confined to the same tenant, so that it cannot widen itself.
func (s *Service) CreateToken(ctx context.Context, actor access.Principal, spec TokenSpec) (NewToken, error) {
	spec.Name = strings.TrimSpace(spec.Name)
	if spec.ExpiresAt.IsZero() {
		spec.ExpiresAt = time.Now().Add(DefaultTokenTTL)
	}
	if spec.Scope == "" {
		spec.Scope = ScopeFull
	}
	v := &problem.ValidationError{}
	switch {
	case spec.Name == "":
		v.Add("name", "required", "give the token a name, such as the pipeline that uses it")
	case utf8.RuneCountInString(spec.Name) > 100:
		v.Add("name", "max_length", "must be at most 100 characters")
	}
	switch now := time.Now(); {
	case !spec.ExpiresAt.After(now):
		v.Add("expires_at", "future", "must be in the future")
	case spec.ExpiresAt.After(now.Add(MaxTokenTTL)):
		v.Add("expires_at", "max", "must be at most a year from now")
	}
	switch spec.Scope {
	case ScopeFull, ScopeReadOnly:
		spec.Tenant = uuid.Nil
	case ScopeTenant:
		if spec.Tenant == uuid.Nil {
			v.Add("tenant_id", "required", "choose the tenant the token acts in")
		} else if _, ok := actor.Roles[spec.Tenant]; !ok {
			v.Add("tenant_id", "member", "must be a tenant you are a member of")
		}
	default:
		v.Add("scope", "one_of", "must be full, read_only or tenant")
	}
	if err := v.Err(); err != nil {
		return NewToken{}, err
	}
	if actor.Confined != uuid.Nil && (spec.Scope != ScopeTenant || spec.Tenant != actor.Confined) {
		return NewToken{}, problem.Invalid("scope", "confined", "a token confined to one tenant makes only tokens confined to the same tenant")
	}
	secret := TokenPrefix + newSecret()
	var out NewToken
	err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		tenant := uuid.NullUUID{UUID: spec.Tenant, Valid: spec.Tenant != uuid.Nil}
		tok, err := q.CreateAPIToken(ctx, dbgen.CreateAPITokenParams{
			UserID: actor.UserID, Name: spec.Name, TokenHash: hashSecret(secret), Prefix: secret[:len(TokenPrefix)+6],
			ExpiresAt: spec.ExpiresAt, Scope: string(spec.Scope), TenantID: tenant,
		})
		if err != nil {
			return err
		}
		out = NewToken{Token: tokenFrom(tok, ""), Secret: secret}
		diff := map[string]any{"name": spec.Name, "prefix": tok.Prefix, "expires_at": tok.ExpiresAt, "scope": spec.Scope}
		if tenant.Valid {
			diff["tenant_id"] = spec.Tenant
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "token.create", TargetType: "api_token", TargetID: tok.ID.String(), Diff: diff})
	})
	if err != nil {
		return NewToken{}, fmt.Errorf("create token: %w", err)
	}
	return out, nil
}

// RevokeToken ends one of the actor's tokens; another user's token is not found.
func (s *Service) RevokeToken(ctx context.Context, actor access.Principal, id uuid.UUID) error {
	return db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		tok, err := q.GetAPIToken(ctx, dbgen.GetAPITokenParams{ID: id, UserID: actor.UserID})
		if errors.Is(err, pgx.ErrNoRows) {
			return problem.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("revoke token: %w", err)
		}
		if _, err := q.RevokeAPIToken(ctx, dbgen.RevokeAPITokenParams{ID: id, UserID: actor.UserID}); err != nil {
			return fmt.Errorf("revoke token: %w", err)
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "token.revoke", TargetType: "api_token", TargetID: id.String(), Diff: map[string]any{"name": tok.Name},
		})
	})
}

// IssueToken creates a token for the user with email, for operators at the command line.
func (s *Service) IssueToken(ctx context.Context, email string, spec TokenSpec) (NewToken, error) {
	q := db.Queries(s.pool)
	u, err := q.GetUserByEmail(ctx, strings.TrimSpace(email))
	if errors.Is(err, pgx.ErrNoRows) {
		return NewToken{}, problem.Invalid("email", "exists", "no user has the email %q", email)
	}
	if err != nil {
		return NewToken{}, err
	}
	p, err := principal(ctx, q, u)
	if err != nil {
		return NewToken{}, err
	}
	return s.CreateToken(ctx, p, spec)
}

// ExpiresIn is the expiry of a token that lasts days from now, for the forms and the API that
// ask in days; field names the input.
func ExpiresIn(field string, days int) (time.Time, error) {
	if days < 1 || days > 365 {
		return time.Time{}, problem.Invalid(field, "range", "must be from 1 to 365 days")
	}
	return time.Now().Add(time.Duration(days) * 24 * time.Hour), nil
}

// ExpiresOn is the expiry of a token given as a date (2027-01-31, the start of that day in
// UTC) or a time (RFC 3339); field names the input.
func ExpiresOn(field, s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, problem.Invalid(field, "date", "must be a date such as 2027-01-31")
}
