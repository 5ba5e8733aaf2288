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

// Token is an API token as its owner sees it: never its secret, nor what the secret hashes to.
type Token struct {
	ID         uuid.UUID  `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
}

func tokenFrom(t dbgen.ApiToken) Token {
	return Token{ID: t.ID, Name: t.Name, Prefix: t.Prefix, CreatedAt: t.CreatedAt, LastUsedAt: t.LastUsedAt, ExpiresAt: t.ExpiresAt}
}

// NewToken is a token just created: Secret is shown once and never stored.
type NewToken struct {
	Token
	Secret string `json:"token"`
}

// ListTokens returns the actor's own live tokens; nobody sees another user's tokens.
func (s *Service) ListTokens(ctx context.Context, actor access.Principal) ([]Token, error) {
	rows, err := dbgen.New(s.pool).ListAPITokens(ctx, actor.UserID)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	out := make([]Token, len(rows))
	for i, r := range rows {
		out[i] = tokenFrom(r)
	}
	return out, nil
}

// CreateToken issues a token acting as the actor. ttl zero means it never expires.
func (s *Service) CreateToken(ctx context.Context, actor access.Principal, name string, ttl time.Duration) (NewToken, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return NewToken{}, problem.Invalid("name", "required", "give the token a name, such as the pipeline that uses it")
	case utf8.RuneCountInString(name) > 100:
		return NewToken{}, problem.Invalid("name", "max_length", "must be at most 100 characters")
	case ttl < 0:
		return NewToken{}, problem.Invalid("expires_in_days", "min", "must not be negative")
	}
	secret := TokenPrefix + newSecret()
	var expires *time.Time
	if ttl > 0 {
		t := time.Now().Add(ttl)
		expires = &t
	}
	var out NewToken
	err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		tok, err := q.CreateAPIToken(ctx, dbgen.CreateAPITokenParams{
			UserID: actor.UserID, Name: name, TokenHash: hashSecret(secret), Prefix: secret[:len(TokenPrefix)+6], ExpiresAt: expires,
		})
		if err != nil {
			return err
		}
		out = NewToken{Token: tokenFrom(tok), Secret: secret}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "token.create", TargetType: "api_token", TargetID: tok.ID.String(),
			Diff: map[string]any{"name": name, "prefix": tok.Prefix, "expires_at": expires},
		})
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
func (s *Service) IssueToken(ctx context.Context, email, name string, ttl time.Duration) (NewToken, error) {
	q := dbgen.New(s.pool)
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
	return s.CreateToken(ctx, p, name, ttl)
}
