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

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Sign-in throttling, counted per (email, client address) and per client address. Never per
// email alone: that would let anyone lock an account's owner out by failing on purpose.
//
// An attempt is written to login_failures before its password is checked, then the limits are
// counted including it, and the row is deleted again unless the password turns out wrong. So
// the table holds failures plus the attempts still in flight, and parallel guesses cannot all
// slip under a limit: each attempt counts every one written before it. The write commits on
// its own, outside any transaction, so that the others see it at once.
const (
	failureWindow  = 15 * time.Minute
	maxFailsByPair = 5
	maxFailsByIP   = 30
)

// maxHashing is how many argon2 computations may run at once. Each holds 19 MiB, so without a
// cap a flood of unauthenticated sign-ins could exhaust memory; beyond it, sign-ins queue.
const maxHashing = 4

// Session is a signed-in browser: the secret goes in its cookie, only its hash is stored.
type Session struct {
	ID      uuid.UUID
	Secret  string
	CSRF    string
	Expires time.Time
	// EnrolOnly says the session may only set up a second factor (and sign out): it is a
	// provider admin's, whom the operator requires to have one, opened before they had it.
	EnrolOnly bool
}

// SignIn is how a right password ends: a session, or, for a user with a second factor, the
// binding of a sign-in waiting for it, to keep in the browser's cookie. No session is open
// until that second step succeeds (Factors.Finish).
type SignIn struct {
	Session    Session
	SecondStep string
}

// DefaultSessionMaxAge is how long a session lasts after sign-in, however much it is used,
// unless MaxAge says otherwise.
const DefaultSessionMaxAge = 7 * 24 * time.Hour

// Service signs users in and resolves sessions and tokens to principals.
type Service struct {
	pool       *pgxpool.Pool
	log        *slog.Logger
	sessionTTL time.Duration
	maxAge     time.Duration
	hashing    chan struct{} // a semaphore of maxHashing slots
	// adminsNeedFactor says the operator requires provider admins who sign in with a password
	// to have a second factor.
	adminsNeedFactor bool
}

// NewService returns a Service; sessions expire after ttl without use, and
// DefaultSessionMaxAge after sign-in.
func NewService(pool *pgxpool.Pool, log *slog.Logger, ttl time.Duration) *Service {
	return &Service{pool: pool, log: log, sessionTTL: ttl, maxAge: DefaultSessionMaxAge, hashing: make(chan struct{}, maxHashing)}
}

// MaxAge sets how long a session lasts after sign-in however much it is used, so that a
// stolen cookie kept busy still stops working; zero keeps the default.
func (s *Service) MaxAge(d time.Duration) *Service {
	if d > 0 {
		s.maxAge = d
	}
	return s
}

// RequireSecondFactorForAdmins makes provider admins who sign in with a password set up a
// second factor before they can do anything else, when on.
func (s *Service) RequireSecondFactorForAdmins(on bool) *Service {
	s.adminsNeedFactor = on
	return s
}

// expiry is when a session started at created and used now ends if not used again.
func (s *Service) expiry(created time.Time) time.Time {
	return minTime(time.Now().Add(s.sessionTTL), created.Add(s.maxAge))
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Login checks email and password and opens a session, or, for a user with a second factor,
// begins the sign-in's second step. Wrong credentials and unknown emails get the same answer;
// repeated failures are throttled per email and client address, and per client address.
func (s *Service) Login(ctx context.Context, email, password, clientIP string) (SignIn, error) {
	email = strings.TrimSpace(email)
	v := &problem.ValidationError{}
	if email == "" {
		v.Add("email", "required", "enter your email")
	}
	if password == "" {
		v.Add("password", "required", "enter your password")
	}
	if err := v.Err(); err != nil {
		return SignIn{}, err
	}
	if err := localLogin(ctx, db.Queries(s.pool)); err != nil {
		return SignIn{}, err
	}
	if err := s.startAttempt(ctx, email, clientIP); err != nil {
		return SignIn{}, err
	}

	q := db.Queries(s.pool)
	user, err := q.GetUserByEmail(ctx, email)
	found := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return SignIn{}, fmt.Errorf("login: %w", err)
	}
	hash := user.PasswordHash
	if !found {
		hash = dummyHash()
	}
	ok, err := s.verifyPassword(ctx, hash, password)
	if err != nil {
		return SignIn{}, fmt.Errorf("login: %w", err)
	}
	if !ok || !found {
		// The attempt stays recorded as a failure. Whoever typed the email is not known to be
		// its owner: the actor stays anonymous.
		err := audit.Record(ctx, q, audit.Anonymous, audit.Event{
			Action: "auth.login_failed", TargetType: "user", TargetID: email, Diff: map[string]any{"client_ip": clientIP},
		})
		if err != nil {
			return SignIn{}, fmt.Errorf("login: %w", err)
		}
		return SignIn{}, problem.Invalid("password", "credentials", "the email or password is wrong")
	}
	if user.DisabledAt != nil {
		// Said only to whoever knows the password: it tells nobody else the account exists.
		return SignIn{}, problem.Invalid("email", "disabled", "this account is disabled: a provider admin can enable it")
	}
	factor, err := q.TOTPEnabled(ctx, user.ID)
	if err != nil {
		return SignIn{}, fmt.Errorf("login: %w", err)
	}
	if factor {
		// The attempt stays counted until the second step succeeds: whoever knows the password
		// without the phone gets five sign-ins of five codes each per window, not endless ones.
		return s.startSecondStep(ctx, q, user.ID)
	}
	if err := q.ClearLoginAttempts(ctx, dbgen.ClearLoginAttemptsParams{Email: email, ClientIp: clientIP}); err != nil {
		return SignIn{}, fmt.Errorf("login: %w", err)
	}
	p, err := principal(ctx, q, user)
	if err != nil {
		return SignIn{}, err
	}
	enrolOnly := s.adminsNeedFactor && user.IsProviderAdmin
	var sess Session
	err = db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		if sess, err = s.openSession(ctx, q, user.ID, enrolOnly); err != nil {
			return err
		}
		diff := map[string]any{"client_ip": clientIP}
		if enrolOnly {
			diff["enrol_only"] = true
		}
		return audit.Record(ctx, q, p, audit.Event{Action: "auth.login", TargetType: "user", TargetID: user.ID.String(), Diff: diff})
	})
	if err != nil {
		return SignIn{}, fmt.Errorf("login: %w", err)
	}
	return SignIn{Session: sess}, nil
}

// startSecondStep keeps a sign-in whose password was right until its second factor comes,
// bound to a secret for the browser's cookie.
func (s *Service) startSecondStep(ctx context.Context, q *dbgen.Queries, userID uuid.UUID) (SignIn, error) {
	if _, err := q.DeleteExpiredSecondFactorLogins(ctx); err != nil {
		return SignIn{}, fmt.Errorf("login: %w", err)
	}
	binding := newSecret()
	err := q.StartSecondFactorLogin(ctx, dbgen.StartSecondFactorLoginParams{BindingHash: hashSecret(binding), UserID: userID, ExpiresAt: time.Now().Add(secondStepTTL)})
	if err != nil {
		return SignIn{}, fmt.Errorf("login: %w", err)
	}
	return SignIn{SecondStep: binding}, nil
}

// localLogin refuses password sign-in when the identity provider's settings turn it off.
func localLogin(ctx context.Context, q *dbgen.Queries) error {
	idp, err := q.GetIdentityProvider(ctx)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("login: %w", err)
	case !idp.LocalLogin:
		return problem.Invalid("identity_provider", "local_login", "sign-in with a password is turned off here: sign in with %s", idp.Name)
	}
	return nil
}

// openSession opens a session for the user, in the caller's transaction; enrolOnly limits it to
// setting up a second factor.
func (s *Service) openSession(ctx context.Context, q *dbgen.Queries, userID uuid.UUID, enrolOnly bool) (Session, error) {
	sess := Session{Secret: newSecret(), CSRF: newSecret(), Expires: s.expiry(time.Now()), EnrolOnly: enrolOnly}
	row, err := q.CreateSession(ctx, dbgen.CreateSessionParams{
		TokenHash: hashSecret(sess.Secret), UserID: userID, CsrfToken: sess.CSRF, ExpiresAt: sess.Expires, EnrolOnly: enrolOnly,
	})
	if err != nil {
		return Session{}, fmt.Errorf("open a session: %w", err)
	}
	sess.ID = row.ID
	return sess, nil
}

// startAttempt records a sign-in attempt and refuses it, forgetting it again, when the pair or
// the address is over its limit.
func (s *Service) startAttempt(ctx context.Context, email, clientIP string) error {
	q := db.Queries(s.pool)
	id, err := q.RecordLoginAttempt(ctx, dbgen.RecordLoginAttemptParams{Email: email, ClientIp: clientIP})
	if err != nil {
		return fmt.Errorf("login: %w", err)
	}
	n, err := q.CountLoginAttempts(ctx, dbgen.CountLoginAttemptsParams{Email: email, ClientIp: clientIP, Since: time.Now().Add(-failureWindow)})
	if err != nil {
		return fmt.Errorf("login: %w", err)
	}
	if n.ByPair <= maxFailsByPair && n.ByIp <= maxFailsByIP {
		return nil
	}
	// A refused attempt is not a failure: forgetting it keeps the block from outlasting the
	// window for whoever keeps retrying.
	if err := q.ForgetLoginAttempt(ctx, id); err != nil {
		return fmt.Errorf("login: %w", err)
	}
	return &problem.TooManyRequests{
		Message:    "too many failed sign-ins; wait a few minutes and try again",
		RetryAfter: int(failureWindow.Seconds() / 3),
	}
}

// verifyPassword is VerifyPassword once one of the maxHashing slots is free. A caller that
// gives up waiting leaves its attempt counted as a failure, as an unchecked guess should be.
func (s *Service) verifyPassword(ctx context.Context, hash, password string) (bool, error) {
	select {
	case s.hashing <- struct{}{}:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	defer func() { <-s.hashing }()
	return VerifyPassword(hash, password), nil
}

// SessionPrincipal resolves a session cookie's secret. Use extends the session, up to its
// maximum age, written at most once a minute so that page loads do not each cost a write.
func (s *Service) SessionPrincipal(ctx context.Context, secret string) (access.Principal, Session, error) {
	return s.sessionPrincipal(ctx, secret, true)
}

func (s *Service) sessionPrincipal(ctx context.Context, secret string, use bool) (access.Principal, Session, error) {
	q := db.Queries(s.pool)
	row, err := q.GetSessionByHash(ctx, dbgen.GetSessionByHashParams{TokenHash: hashSecret(secret), MaxAgeSecs: s.maxAge.Seconds()})
	if errors.Is(err, pgx.ErrNoRows) {
		return access.Principal{}, Session{}, problem.ErrUnauthenticated
	}
	if err != nil {
		return access.Principal{}, Session{}, fmt.Errorf("session: %w", err)
	}
	sess := Session{ID: row.SessionID, CSRF: row.CsrfToken, Expires: row.ExpiresAt, EnrolOnly: row.EnrolOnly}
	if use && time.Since(row.LastSeenAt) > time.Minute {
		sess.Expires = s.expiry(row.CreatedAt)
		if err := q.TouchSession(ctx, dbgen.TouchSessionParams{ID: row.SessionID, ExpiresAt: sess.Expires}); err != nil {
			return access.Principal{}, Session{}, fmt.Errorf("session: %w", err)
		}
	}
	return principalWith(row.User, row.RoleTenants, row.RoleNames), sess, nil
}

// TokenPrincipal resolves an API token to whom it acts as, within its scope. An expired token
// is refused saying when it expired.
func (s *Service) TokenPrincipal(ctx context.Context, token string) (access.Principal, error) {
	p, _, err := s.tokenPrincipal(ctx, token)
	return p, err
}

// tokenPrincipal is TokenPrincipal with the token's scope, which the request's method must fit.
func (s *Service) tokenPrincipal(ctx context.Context, token string) (access.Principal, Scope, error) {
	if !strings.HasPrefix(token, TokenPrefix) {
		return access.Principal{}, "", problem.ErrUnauthenticated
	}
	q := db.Queries(s.pool)
	row, err := q.GetAPITokenByHash(ctx, hashSecret(token))
	if errors.Is(err, pgx.ErrNoRows) {
		return access.Principal{}, "", problem.ErrUnauthenticated
	}
	if err != nil {
		return access.Principal{}, "", fmt.Errorf("token: %w", err)
	}
	if !time.Now().Before(row.ExpiresAt) {
		return access.Principal{}, "", &problem.Unauthenticated{Message: fmt.Sprintf(
			"this API token expired at %s: make a new one on the tokens page", row.ExpiresAt.UTC().Format(time.RFC3339))}
	}
	if row.LastUsedAt == nil || time.Since(*row.LastUsedAt) > time.Minute {
		if err := q.TouchAPIToken(ctx, row.TokenID); err != nil {
			return access.Principal{}, "", fmt.Errorf("token: %w", err)
		}
	}
	p := principalWith(row.User, row.RoleTenants, row.RoleNames)
	scope := Scope(row.Scope)
	if scope == ScopeTenant {
		p = confine(p, row.TenantID.UUID)
	}
	return p, scope, nil
}

// confine is p acting within tenant alone, with the role p holds there now (none, when p no
// longer belongs to it): a provider admin's tenant token is no provider admin.
func confine(p access.Principal, tenant uuid.UUID) access.Principal {
	out := access.Principal{UserID: p.UserID, Email: p.Email, Roles: map[uuid.UUID]access.Role{}, Confined: tenant}
	if r, ok := p.Roles[tenant]; ok {
		out.Roles[tenant] = r
	}
	return out
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

// principal loads the principal of user u: the provider-admin flag and the role per tenant,
// the higher of their membership's and of any elevation in force. It is loaded afresh for
// every request, so an elevation that ends stops giving its role at once.
func principal(ctx context.Context, q *dbgen.Queries, u dbgen.User) (access.Principal, error) {
	rows, err := q.RolesOfUser(ctx, u.ID)
	if err != nil {
		return access.Principal{}, fmt.Errorf("load roles of %s: %w", u.Email, err)
	}
	tenants, roles := make([]uuid.UUID, len(rows)), make([]string, len(rows))
	for i, r := range rows {
		tenants[i], roles[i] = r.TenantID, r.Role
	}
	return principalWith(u, tenants, roles), nil
}

// principalWith is u as a principal holding roles[i] in tenants[i].
func principalWith(u dbgen.User, tenants []uuid.UUID, roles []string) access.Principal {
	p := access.Principal{UserID: u.ID, Email: u.Email, ProviderAdmin: u.IsProviderAdmin, Roles: make(map[uuid.UUID]access.Role, len(tenants))}
	for i, t := range tenants {
		// An elevation adds to a role, never lowers one.
		if role := access.Role(roles[i]); role.Outranks(p.Roles[t]) {
			p.Roles[t] = role
		}
	}
	return p
}

// Requester is whom work done in the background for user by (a graph's steps, a stack
// instance's run) is requested and audited as: that user with the roles they hold now, or the
// system when by is not set or the user is gone. Their permission was checked when they asked.
func Requester(ctx context.Context, q *dbgen.Queries, by uuid.NullUUID) (access.Principal, error) {
	if !by.Valid {
		return audit.System, nil
	}
	u, err := q.GetUser(ctx, by.UUID)
	if errors.Is(err, pgx.ErrNoRows) {
		return audit.System, nil
	}
	if err != nil {
		return access.Principal{}, fmt.Errorf("load user %s: %w", by.UUID, err)
	}
	return principal(ctx, q, u)
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
