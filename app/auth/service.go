// Package auth signs people in and out, keeps their sessions, issues API tokens, and turns
// either into the principal a request acts as.
package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/access"
	"nimbus/app/audit"
	"nimbus/app/problem"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Sign-in throttling: after this many failures in the window, further attempts wait.
const (
	failureWindow   = 15 * time.Minute
	maxFailsByEmail = 5
	maxFailsByIP    = 30
)

// Session is a signed-in browser: the secret goes in its cookie, only its hash is stored.
type Session struct {
	ID      uuid.UUID
	Secret  string
	CSRF    string
	Expires time.Time
}

// Service signs users in and resolves sessions and tokens to principals.
type Service struct {
	pool       *pgxpool.Pool
	log        *slog.Logger
	sessionTTL time.Duration
}

// NewService returns a Service; sessions expire after ttl without use.
func NewService(pool *pgxpool.Pool, log *slog.Logger, ttl time.Duration) *Service {
	return &Service{pool: pool, log: log, sessionTTL: ttl}
}

// Login checks email and password and opens a session. Wrong credentials and unknown emails
// get the same answer; repeated failures are throttled per email and per client address.
func (s *Service) Login(ctx context.Context, email, password, clientIP string) (Session, access.Principal, error) {
	email = strings.TrimSpace(email)
	v := &problem.ValidationError{}
	if email == "" {
		v.Add("email", "required", "enter your email")
	}
	if password == "" {
		v.Add("password", "required", "enter your password")
	}
	if err := v.Err(); err != nil {
		return Session{}, access.Principal{}, err
	}
	q := dbgen.New(s.pool)
	fails, err := q.CountRecentLoginFailures(ctx, dbgen.CountRecentLoginFailuresParams{
		Email: email, ClientIp: clientIP, Since: time.Now().Add(-failureWindow),
	})
	if err != nil {
		return Session{}, access.Principal{}, fmt.Errorf("login: %w", err)
	}
	if fails.ByEmail >= maxFailsByEmail || fails.ByIp >= maxFailsByIP {
		return Session{}, access.Principal{}, &problem.TooManyRequests{
			Message:    "too many failed sign-ins; wait a few minutes and try again",
			RetryAfter: int(failureWindow.Seconds() / 3),
		}
	}

	user, err := q.GetUserByEmail(ctx, email)
	found := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return Session{}, access.Principal{}, fmt.Errorf("login: %w", err)
	}
	hash := user.PasswordHash
	if !found {
		hash = dummyHash()
	}
	if !VerifyPassword(hash, password) || !found {
		err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
			if err := q.RecordLoginFailure(ctx, dbgen.RecordLoginFailureParams{Email: email, ClientIp: clientIP}); err != nil {
				return err
			}
			// Whoever typed the email is not known to be its owner: the actor stays anonymous.
			return audit.Record(ctx, q, audit.Anonymous, audit.Event{
				Action: "auth.login_failed", TargetType: "user", TargetID: email, Diff: map[string]any{"client_ip": clientIP},
			})
		})
		if err != nil {
			return Session{}, access.Principal{}, fmt.Errorf("login: %w", err)
		}
		return Session{}, access.Principal{}, problem.Invalid("password", "credentials", "the email or password is wrong")
	}

	p, err := Principal(ctx, q, user)
	if err != nil {
		return Session{}, access.Principal{}, err
	}
	sess := Session{Secret: newSecret(), CSRF: newSecret(), Expires: time.Now().Add(s.sessionTTL)}
	err = db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		row, err := q.CreateSession(ctx, dbgen.CreateSessionParams{
			TokenHash: hashSecret(sess.Secret), UserID: user.ID, CsrfToken: sess.CSRF, ExpiresAt: sess.Expires,
		})
		if err != nil {
			return err
		}
		sess.ID = row.ID
		if err := q.ClearLoginFailures(ctx, email); err != nil {
			return err
		}
		return audit.Record(ctx, q, p, audit.Event{
			Action: "auth.login", TargetType: "user", TargetID: user.ID.String(), Diff: map[string]any{"client_ip": clientIP},
		})
	})
	if err != nil {
		return Session{}, access.Principal{}, fmt.Errorf("login: %w", err)
	}
	return sess, p, nil
}

// SessionPrincipal resolves a session cookie's secret. Use extends the session, written at
// most once a minute so that page loads do not each cost a write.
func (s *Service) SessionPrincipal(ctx context.Context, secret string) (access.Principal, Session, error) {
	q := dbgen.New(s.pool)
	row, err := q.GetSessionByHash(ctx, hashSecret(secret))
	if errors.Is(err, pgx.ErrNoRows) {
		return access.Principal{}, Session{}, problem.ErrUnauthenticated
	}
	if err != nil {
		return access.Principal{}, Session{}, fmt.Errorf("session: %w", err)
	}
	sess := Session{ID: row.SessionID, CSRF: row.CsrfToken, Expires: row.ExpiresAt}
	if time.Since(row.LastSeenAt) > time.Minute {
		sess.Expires = time.Now().Add(s.sessionTTL)
		if err := q.TouchSession(ctx, dbgen.TouchSessionParams{ID: row.SessionID, ExpiresAt: sess.Expires}); err != nil {
			return access.Principal{}, Session{}, fmt.Errorf("session: %w", err)
		}
	}
	p, err := Principal(ctx, q, row.User)
	return p, sess, err
}

// TokenPrincipal resolves an API token.
func (s *Service) TokenPrincipal(ctx context.Context, token string) (access.Principal, error) {
	if !strings.HasPrefix(token, TokenPrefix) {
		return access.Principal{}, problem.ErrUnauthenticated
	}
	q := dbgen.New(s.pool)
	row, err := q.GetAPITokenByHash(ctx, hashSecret(token))
	if errors.Is(err, pgx.ErrNoRows) {
		return access.Principal{}, problem.ErrUnauthenticated
	}
	if err != nil {
		return access.Principal{}, fmt.Errorf("token: %w", err)
	}
	if row.LastUsedAt == nil || time.Since(*row.LastUsedAt) > time.Minute {
		if err := q.TouchAPIToken(ctx, row.TokenID); err != nil {
			return access.Principal{}, fmt.Errorf("token: %w", err)
		}
	}
	return Principal(ctx, q, row.User)
}

// Logout ends one of the actor's sessions.
func (s *Service) Logout(ctx context.Context, actor access.Principal, sessionID uuid.UUID) error {
	return db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		if err := q.DeleteSession(ctx, dbgen.DeleteSessionParams{ID: sessionID, UserID: actor.UserID}); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "auth.logout", TargetType: "user", TargetID: actor.UserID.String()})
	})
}

// Principal loads the principal of user u: the provider-admin flag and the role per tenant.
func Principal(ctx context.Context, q *dbgen.Queries, u dbgen.User) (access.Principal, error) {
	rows, err := q.ListMembershipsOfUser(ctx, u.ID)
	if err != nil {
		return access.Principal{}, fmt.Errorf("load roles of %s: %w", u.Email, err)
	}
	p := access.Principal{UserID: u.ID, Email: u.Email, ProviderAdmin: u.IsProviderAdmin, Roles: make(map[uuid.UUID]access.Role, len(rows))}
	for _, r := range rows {
		p.Roles[r.TenantID] = access.Role(r.Role)
	}
	return p, nil
}

// CheckEmail says what is wrong with an email address, naming field.
func CheckEmail(field, email string) error {
	switch {
	case email == "":
		return problem.Invalid(field, "required", "enter an email address")
	case len(email) > 254:
		return problem.Invalid(field, "max_length", "must be at most 254 characters")
	}
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email {
		return problem.Invalid(field, "email", "must be an email address such as ada@example.com")
	}
	return nil
}
