package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Security keys (WebAuthn) are a second factor beside the authenticator app, never instead of
// it: the app's recovery codes cover both, and turning the app off removes the keys too.

// ceremonyTTL is how long a browser has to answer a WebAuthn challenge.
const ceremonyTTL = 5 * time.Minute

// SecurityKey is a registered key, as its owner sees it.
type SecurityKey struct {
	Name       string
	CreatedAt  time.Time
	LastUsedAt *time.Time
}

// keyOwner is a user as go-webauthn asks about them.
type keyOwner struct {
	user  dbgen.User
	creds []webauthn.Credential
}

func (o keyOwner) WebAuthnID() []byte                         { return o.user.ID[:] }
func (o keyOwner) WebAuthnName() string                       { return o.user.Email }
func (o keyOwner) WebAuthnDisplayName() string                { return o.user.Email }
func (o keyOwner) WebAuthnCredentials() []webauthn.Credential { return o.creds }

// relyingParty is Nimbus as the browser at origin (scheme://host[:port]) knows it: keys are
// bound to the host name.
func relyingParty(origin string) (*webauthn.WebAuthn, error) {
	u, err := url.Parse(origin)
	if err != nil || u.Hostname() == "" {
		return nil, problem.Invalid("security_key", "origin", "Nimbus cannot tell which address it was reached at")
	}
	return webauthn.New(&webauthn.Config{RPID: u.Hostname(), RPDisplayName: "Nimbus", RPOrigins: []string{origin}})
}

// owner loads user u with their keys.
func owner(ctx context.Context, q *dbgen.Queries, u dbgen.User) (keyOwner, []dbgen.SecurityKey, error) {
	rows, err := q.ListSecurityKeys(ctx, u.ID)
	if err != nil {
		return keyOwner{}, nil, fmt.Errorf("load security keys: %w", err)
	}
	o := keyOwner{user: u}
	for _, r := range rows {
		var c webauthn.Credential
		if err := json.Unmarshal(r.Credential, &c); err != nil {
			return keyOwner{}, nil, fmt.Errorf("read security key %s: %w", r.ID, err)
		}
		o.creds = append(o.creds, c)
	}
	return o, rows, nil
}

// ruleOf is the rule a refusal names.
func ruleOf(err error) string {
	var v *problem.ValidationError
	if errors.As(err, &v) && len(v.Fields) > 0 {
		return v.Fields[0].Rule
	}
	return ""
}

// ceremonyKey names a ceremony in flight: registering a key for a user, or signing in with one.
func ceremonyKey(purpose, id string) []byte { return hashSecret(purpose + ":" + id) }

func (f *Factors) startCeremony(ctx context.Context, q *dbgen.Queries, key []byte, userID uuid.UUID, s *webauthn.SessionData) error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if _, err := q.DeleteExpiredCeremonies(ctx); err != nil {
		return err
	}
	return q.StartCeremony(ctx, dbgen.StartCeremonyParams{KeyHash: key, UserID: userID, Session: data, ExpiresAt: f.now().Add(ceremonyTTL)})
}

// takeCeremony takes the ceremony key names, once, if it is still in time and user's.
func (f *Factors) takeCeremony(ctx context.Context, q *dbgen.Queries, key []byte, userID uuid.UUID) (webauthn.SessionData, bool, error) {
	row, err := q.TakeCeremony(ctx, key)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && (row.UserID != userID || !f.now().Before(row.ExpiresAt))) {
		return webauthn.SessionData{}, false, nil
	}
	if err != nil {
		return webauthn.SessionData{}, false, err
	}
	var s webauthn.SessionData
	return s, true, json.Unmarshal(row.Session, &s)
}

// Keys lists the actor's security keys.
func (f *Factors) Keys(ctx context.Context, actor access.Principal) ([]SecurityKey, error) {
	rows, err := db.Queries(f.auth.pool).ListSecurityKeys(ctx, actor.UserID)
	if err != nil {
		return nil, fmt.Errorf("list security keys: %w", err)
	}
	out := make([]SecurityKey, len(rows))
	for i, r := range rows {
		out[i] = SecurityKey{Name: r.Name, CreatedAt: r.CreatedAt, LastUsedAt: r.LastUsedAt}
	}
	return out, nil
}

// BeginKey starts registering a security key of the actor's, reached at origin: the options
// for the browser's navigator.credentials.create. The authenticator app must be on.
func (f *Factors) BeginKey(ctx context.Context, actor access.Principal, origin string) (*protocol.CredentialCreation, error) {
	q := db.Queries(f.auth.pool)
	u, err := f.user(ctx, q, actor)
	if err != nil {
		return nil, err
	}
	if on, err := q.TOTPEnabled(ctx, u.ID); err != nil {
		return nil, fmt.Errorf("begin security key: %w", err)
	} else if !on {
		return nil, problem.Invalid("security_key", "totp", "turn on the authenticator app first: security keys come beside it")
	}
	rp, err := relyingParty(origin)
	if err != nil {
		return nil, err
	}
	o, _, err := owner(ctx, q, u)
	if err != nil {
		return nil, err
	}
	creation, session, err := rp.BeginRegistration(o, webauthn.WithExclusions(webauthn.Credentials(o.creds).CredentialDescriptors()))
	if err != nil {
		return nil, fmt.Errorf("begin security key: %w", err)
	}
	if err := f.startCeremony(ctx, q, ceremonyKey("register", u.ID.String()), u.ID, session); err != nil {
		return nil, fmt.Errorf("begin security key: %w", err)
	}
	return creation, nil
}

// FinishKey registers the key the browser at origin made in answer to BeginKey, under name;
// r's body is the browser's answer.
func (f *Factors) FinishKey(ctx context.Context, actor access.Principal, origin, name string, r *http.Request) error {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return problem.Invalid("name", "required", "name the key, such as \"blue YubiKey\"")
	case len(name) > 100:
		return problem.Invalid("name", "max_length", "must be at most 100 characters")
	}
	rp, err := relyingParty(origin)
	if err != nil {
		return err
	}
	return db.Tx(ctx, f.auth.pool, func(q *dbgen.Queries) error {
		u, err := f.user(ctx, q, actor)
		if err != nil {
			return err
		}
		session, ok, err := f.takeCeremony(ctx, q, ceremonyKey("register", u.ID.String()), u.ID)
		if err != nil {
			return err
		}
		if !ok {
			return problem.Invalid("security_key", "ceremony", "the key was not asked for here, or took too long: try again")
		}
		o, _, err := owner(ctx, q, u)
		if err != nil {
			return err
		}
		cred, err := rp.FinishRegistration(o, session, r)
		if err != nil {
			return problem.Invalid("security_key", "attestation", "the key's answer did not verify: %v", err)
		}
		data, err := json.Marshal(cred)
		if err != nil {
			return err
		}
		if err := q.AddSecurityKey(ctx, dbgen.AddSecurityKeyParams{UserID: u.ID, CredentialID: cred.ID, Credential: data, Name: name}); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "user.security_key_add", TargetType: "user", TargetID: u.ID.String(),
			Diff: map[string]any{"name": name}})
	})
}

// BeginKeySignIn starts the second step of a sign-in with a security key, for the browser at
// origin holding binding: the options for navigator.credentials.get.
func (f *Factors) BeginKeySignIn(ctx context.Context, binding, origin string) (*protocol.CredentialAssertion, error) {
	q := db.Queries(f.auth.pool)
	login, err := q.GetSecondFactorLogin(ctx, dbgen.GetSecondFactorLoginParams{BindingHash: hashSecret(binding), MaxAttempts: maxSecondStepTries, Now: f.now()})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, problem.Invalid("sign_in", "expired", "this sign-in has expired or had too many wrong codes: sign in again")
	}
	if err != nil {
		return nil, fmt.Errorf("begin security key sign-in: %w", err)
	}
	u, err := q.GetUser(ctx, login.UserID)
	if err != nil {
		return nil, fmt.Errorf("begin security key sign-in: %w", err)
	}
	o, _, err := owner(ctx, q, u)
	if err != nil {
		return nil, err
	}
	if len(o.creds) == 0 {
		return nil, problem.Invalid("security_key", "none", "you have no security key: enter the code from your authenticator app")
	}
	rp, err := relyingParty(origin)
	if err != nil {
		return nil, err
	}
	assertion, session, err := rp.BeginLogin(o)
	if err != nil {
		return nil, fmt.Errorf("begin security key sign-in: %w", err)
	}
	if err := f.startCeremony(ctx, q, ceremonyKey("login", binding), u.ID, session); err != nil {
		return nil, fmt.Errorf("begin security key sign-in: %w", err)
	}
	return assertion, nil
}

// FinishKeySignIn takes the browser's answer (r's body) to BeginKeySignIn and opens the
// session. It counts as one of the sign-in's tries; refusals are audited and named as Finish
// names them.
func (f *Factors) FinishKeySignIn(ctx context.Context, in SecondStep, origin string, r *http.Request) (Session, error) {
	q := db.Queries(f.auth.pool)
	restart := problem.Invalid("sign_in", "expired", "this sign-in has expired or had too many wrong codes: sign in again")
	binding := hashSecret(in.Binding)
	try, err := q.TrySecondFactorLogin(ctx, dbgen.TrySecondFactorLoginParams{BindingHash: binding, MaxAttempts: maxSecondStepTries, Now: f.now()})
	if errors.Is(err, pgx.ErrNoRows) {
		return Session{}, restart
	}
	if err != nil {
		return Session{}, fmt.Errorf("security key sign-in: %w", err)
	}
	rp, err := relyingParty(origin)
	if err != nil {
		return Session{}, err
	}
	var sess Session
	var refused error
	err = db.Tx(ctx, f.auth.pool, func(q *dbgen.Queries) error {
		u, err := q.GetUser(ctx, try.UserID)
		if err != nil {
			return err
		}
		session, ok, err := f.takeCeremony(ctx, q, ceremonyKey("login", in.Binding), u.ID)
		if err != nil {
			return err
		}
		o, _, err := owner(ctx, q, u)
		if err != nil {
			return err
		}
		var cred *webauthn.Credential
		if ok {
			cred, err = rp.FinishLogin(o, session, r)
		}
		switch {
		case !ok:
			refused = problem.Invalid("security_key", "ceremony", "the key was not asked for here, or took too long: try again")
		case err != nil:
			refused = problem.Invalid("security_key", "assertion", "the key's answer did not verify: try again, or enter the code from your authenticator app")
		case cred.Authenticator.CloneWarning:
			refused = problem.Invalid("security_key", "clone", "this key's signature count went backwards, as a copied key's does: use your authenticator app, and remove the key")
		}
		if refused != nil {
			return refused
		}
		data, err := json.Marshal(cred)
		if err != nil {
			return err
		}
		if err := q.UseSecurityKey(ctx, dbgen.UseSecurityKeyParams{UserID: u.ID, CredentialID: cred.ID, Credential: data}); err != nil {
			return err
		}
		sess, err = f.completeSignIn(ctx, q, u.ID, in, "password+security_key")
		return err
	})
	if refused == nil || !errors.Is(err, refused) {
		return sess, err
	}
	if err := audit.Record(ctx, q, audit.Anonymous, audit.Event{Action: "auth.second_factor_refused", TargetType: "user", TargetID: try.UserID.String(),
		Diff: map[string]any{"rule": ruleOf(refused), "purpose": "sign_in", "client_ip": in.ClientIP}}); err != nil {
		return Session{}, fmt.Errorf("record a refused key: %w", err)
	}
	if try.Attempts >= maxSecondStepTries {
		if err := q.EndSecondFactorLogin(ctx, binding); err != nil {
			return Session{}, fmt.Errorf("security key sign-in: %w", err)
		}
		return Session{}, restart
	}
	return Session{}, refused
}
