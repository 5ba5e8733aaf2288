package auth

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"image/png"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/kernel/secrets"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

const (
	// secondStepTTL is how long a person has, after a right password, to give their second
	// factor before they must type the password again.
	secondStepTTL = 5 * time.Minute
	// maxSecondStepTries is how many codes one sign-in may try: then it ends, and a guesser must
	// get past the password (and its throttle) again for five more.
	maxSecondStepTries = 5
	recoveryCodeCount  = 10
	totpPeriod         = 30 * time.Second
)

// totpOpts are what every authenticator app does by default: six digits, SHA-1, 30 seconds.
var totpOpts = totp.ValidateOpts{Period: uint(totpPeriod.Seconds()), Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}

// totpSealedFor binds a sealed TOTP secret to its place.
var totpSealedFor = []byte("user_totp.secret")

// Factors keeps the second factors of local accounts and takes the second step of their
// sign-ins. Users of the identity provider have none here: their provider asks for its own.
type Factors struct {
	auth *Service
	keys *secrets.Keyring
	now  func() time.Time
}

// NewFactors returns the second factors of svc's users; keys seals their TOTP secrets.
func NewFactors(svc *Service, keys *secrets.Keyring) *Factors {
	return &Factors{auth: svc, keys: keys, now: time.Now}
}

// FactorStatus is what the account page says of the viewer's second factor.
type FactorStatus struct {
	// Federated says the user has no password: they sign in through the identity provider,
	// which owns their second factor.
	Federated    bool
	Enabled      bool
	RecoveryLeft int
	// Pending is an enrolment begun and not yet confirmed with a code.
	Pending *Enrolment
	// Required says the operator requires a second factor of provider admins, and the user is one.
	Required bool
}

// Enrolment is a new TOTP secret, as the user copies it into an authenticator app.
type Enrolment struct {
	Secret string // base32, to type in
	URL    string // otpauth://, what the QR code holds
	QR     string // the QR code, a data: URL of a PNG
}

// Status says whether the actor's second factor is on, and the enrolment they began if not.
func (f *Factors) Status(ctx context.Context, actor access.Principal) (FactorStatus, error) {
	q := db.Queries(f.auth.pool)
	u, err := f.user(ctx, q, actor)
	if err != nil {
		return FactorStatus{}, err
	}
	st := FactorStatus{Federated: u.PasswordHash == "", Required: f.auth.adminsNeedFactor && u.IsProviderAdmin}
	row, err := q.GetTOTP(ctx, u.ID)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return st, nil
	case err != nil:
		return FactorStatus{}, fmt.Errorf("load second factor: %w", err)
	case row.EnabledAt != nil:
		n, err := q.CountRecoveryCodes(ctx, u.ID)
		if err != nil {
			return FactorStatus{}, fmt.Errorf("load second factor: %w", err)
		}
		st.Enabled, st.RecoveryLeft = true, int(n)
		return st, nil
	}
	raw, err := f.keys.Open(row.SecretKeyID, row.Secret, totpSealedFor)
	if err != nil {
		return FactorStatus{}, fmt.Errorf("open the TOTP secret: %w", err)
	}
	e, err := enrolment(u.Email, raw)
	if err != nil {
		return FactorStatus{}, err
	}
	st.Pending = &e
	return st, nil
}

// user is the actor's own account row.
func (f *Factors) user(ctx context.Context, q *dbgen.Queries, actor access.Principal) (dbgen.User, error) {
	if actor.UserID == uuid.Nil {
		return dbgen.User{}, problem.ErrForbidden
	}
	u, err := q.GetUser(ctx, actor.UserID)
	if errors.Is(err, pgx.ErrNoRows) {
		return dbgen.User{}, problem.ErrForbidden
	}
	if err != nil {
		return dbgen.User{}, fmt.Errorf("load user: %w", err)
	}
	return u, nil
}

// enrolment shows secret raw as an authenticator app takes it.
func enrolment(email string, raw []byte) (Enrolment, error) {
	key, err := totp.Generate(totp.GenerateOpts{Issuer: "Nimbus", AccountName: email, Secret: raw,
		Period: totpOpts.Period, Digits: totpOpts.Digits, Algorithm: totpOpts.Algorithm})
	if err != nil {
		return Enrolment{}, fmt.Errorf("make the TOTP key: %w", err)
	}
	img, err := key.Image(240, 240)
	if err != nil {
		return Enrolment{}, fmt.Errorf("draw the QR code: %w", err)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return Enrolment{}, fmt.Errorf("draw the QR code: %w", err)
	}
	return Enrolment{Secret: key.Secret(), URL: key.URL(), QR: "data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes())}, nil
}

// Begin makes a new TOTP secret for the actor, sealed, that turns on once they confirm a code
// from it. One begun before and not confirmed is replaced.
func (f *Factors) Begin(ctx context.Context, actor access.Principal) (Enrolment, error) {
	q := db.Queries(f.auth.pool)
	u, err := f.user(ctx, q, actor)
	if err != nil {
		return Enrolment{}, err
	}
	if u.PasswordHash == "" {
		return Enrolment{}, problem.Invalid("second_factor", "identity_provider", "you sign in through the identity provider, which asks for your second factor itself")
	}
	raw := make([]byte, 20) // 160 bits, as RFC 4226 recommends
	_, _ = rand.Read(raw)
	keyID, sealed, err := f.keys.Seal(raw, totpSealedFor)
	if err != nil {
		return Enrolment{}, fmt.Errorf("seal the TOTP secret: %w", err)
	}
	n, err := q.StartTOTP(ctx, dbgen.StartTOTPParams{UserID: u.ID, Secret: sealed, SecretKeyID: keyID})
	if err != nil {
		return Enrolment{}, fmt.Errorf("begin second factor: %w", err)
	}
	if n == 0 {
		return Enrolment{}, problem.Invalid("second_factor", "enabled", "your second factor is already on: turn it off first to set up another")
	}
	return enrolment(u.Email, raw)
}

// Confirm turns the actor's enrolment on once code is a current code of it, and returns their
// recovery codes: shown this once, kept only as hashes.
func (f *Factors) Confirm(ctx context.Context, actor access.Principal, code, clientIP string) ([]string, error) {
	q := db.Queries(f.auth.pool)
	u, err := f.user(ctx, q, actor)
	if err != nil {
		return nil, err
	}
	row, err := q.GetTOTP(ctx, u.ID)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && row.EnabledAt != nil) {
		return nil, problem.Invalid("code", "enrolment", "there is no second factor being set up: begin again")
	}
	if err != nil {
		return nil, fmt.Errorf("confirm second factor: %w", err)
	}
	var codes []string
	err = f.withCode(ctx, u.ID, code, totpOnly, clientIP, "enrol", func(q *dbgen.Queries) error {
		if err := q.EnableTOTP(ctx, u.ID); err != nil {
			return err
		}
		if codes, err = newRecoveryCodes(ctx, q, u.ID); err != nil {
			return err
		}
		if err := q.EndEnrolOnlySessions(ctx, u.ID); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "user.second_factor_enrol", TargetType: "user", TargetID: u.ID.String(),
			Diff: map[string]any{"factor": "totp"}})
	})
	return codes, err
}

// Disable turns the actor's second factor off, given a current code or a recovery code. A
// provider admin whom the operator requires to have one cannot.
func (f *Factors) Disable(ctx context.Context, actor access.Principal, code, clientIP string) error {
	q := db.Queries(f.auth.pool)
	u, err := f.user(ctx, q, actor)
	if err != nil {
		return err
	}
	if on, err := q.TOTPEnabled(ctx, u.ID); err != nil {
		return fmt.Errorf("turn off second factor: %w", err)
	} else if !on {
		return problem.Invalid("second_factor", "enabled", "your second factor is not on")
	}
	if f.auth.adminsNeedFactor && u.IsProviderAdmin {
		return problem.Invalid("second_factor", "required", "the operator requires provider admins to have a second factor: it cannot be turned off (for a new phone, set it up again after another provider admin resets it)")
	}
	return f.withCode(ctx, u.ID, code, totpOrRecovery, clientIP, "disable", func(q *dbgen.Queries) error {
		if _, err := ClearSecondFactor(ctx, q, u.ID); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "user.second_factor_disable", TargetType: "user", TargetID: u.ID.String()})
	})
}

// RegenerateRecovery replaces the actor's recovery codes, given a current code, and returns the
// new ones: shown this once.
func (f *Factors) RegenerateRecovery(ctx context.Context, actor access.Principal, code, clientIP string) ([]string, error) {
	q := db.Queries(f.auth.pool)
	u, err := f.user(ctx, q, actor)
	if err != nil {
		return nil, err
	}
	if on, err := q.TOTPEnabled(ctx, u.ID); err != nil {
		return nil, fmt.Errorf("new recovery codes: %w", err)
	} else if !on {
		return nil, problem.Invalid("second_factor", "enabled", "your second factor is not on")
	}
	var codes []string
	err = f.withCode(ctx, u.ID, code, totpOnly, clientIP, "recovery_codes", func(q *dbgen.Queries) error {
		if err := q.DeleteRecoveryCodes(ctx, u.ID); err != nil {
			return err
		}
		if codes, err = newRecoveryCodes(ctx, q, u.ID); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "user.recovery_codes_regenerate", TargetType: "user", TargetID: u.ID.String()})
	})
	return codes, err
}

// ClearSecondFactor removes user's second factor, its recovery codes, security keys and the sign-ins waiting
// for it, in the caller's transaction, and says whether there was one: for the user turning it
// off, and for a provider admin resetting a lost one (user.Service.ResetSecondFactor).
func ClearSecondFactor(ctx context.Context, q *dbgen.Queries, userID uuid.UUID) (bool, error) {
	n, err := q.DeleteTOTP(ctx, userID)
	if err != nil {
		return false, err
	}
	if err := q.DeleteRecoveryCodes(ctx, userID); err != nil {
		return false, err
	}
	if err := q.DeleteSecurityKeys(ctx, userID); err != nil {
		return false, err
	}
	return n > 0, q.EndUserSecondFactorLogins(ctx, userID)
}

// SecondStep is the second step of a sign-in: the browser's binding and the code typed.
type SecondStep struct {
	Binding  string
	Code     string // a TOTP code, or a recovery code
	ClientIP string
}

// Finish takes the second step of a sign-in whose password was right, and opens its session.
// A wrong code names field "code" and may be tried again, up to maxSecondStepTries; a sign-in
// that is unknown, expired or out of tries names field "sign_in": the password must be given
// again.
func (f *Factors) Finish(ctx context.Context, in SecondStep) (Session, error) {
	q := db.Queries(f.auth.pool)
	restart := problem.Invalid("sign_in", "expired", "this sign-in has expired or had too many wrong codes: sign in again")
	if in.Binding == "" {
		return Session{}, restart
	}
	binding := hashSecret(in.Binding)
	// Counted on its own, before the code is checked, so that the count holds whatever comes.
	try, err := q.TrySecondFactorLogin(ctx, dbgen.TrySecondFactorLoginParams{BindingHash: binding, MaxAttempts: maxSecondStepTries, Now: f.now()})
	if errors.Is(err, pgx.ErrNoRows) {
		if err := q.EndSecondFactorLogin(ctx, binding); err != nil {
			return Session{}, fmt.Errorf("second step: %w", err)
		}
		return Session{}, restart
	}
	if err != nil {
		return Session{}, fmt.Errorf("second step: %w", err)
	}
	var sess Session
	err = f.withCode(ctx, try.UserID, in.Code, totpOrRecovery, in.ClientIP, "sign_in", func(q *dbgen.Queries) error {
		via := "password+totp"
		if !isTOTPCode(in.Code) {
			via = "password+recovery_code"
		}
		sess, err = f.completeSignIn(ctx, q, try.UserID, in, via)
		return err
	})
	if problem.FieldOf(err) == "code" && try.Attempts >= maxSecondStepTries {
		if err := q.EndSecondFactorLogin(ctx, binding); err != nil {
			return Session{}, fmt.Errorf("second step: %w", err)
		}
		return Session{}, restart
	}
	return sess, err
}

// completeSignIn ends the sign-in in that took its second step by via and opens its session,
// in the caller's transaction. The pair's sign-in failures are cleared only now: whoever knows
// the password without the second factor stays throttled.
func (f *Factors) completeSignIn(ctx context.Context, q *dbgen.Queries, userID uuid.UUID, in SecondStep, via string) (Session, error) {
	if err := q.EndSecondFactorLogin(ctx, hashSecret(in.Binding)); err != nil {
		return Session{}, err
	}
	u, err := q.GetUser(ctx, userID)
	if err != nil {
		return Session{}, err
	}
	if u.DisabledAt != nil || u.DeletedAt != nil {
		return Session{}, problem.Invalid("sign_in", "disabled", "this account is disabled: a provider admin can enable it")
	}
	if err := q.ClearLoginAttempts(ctx, dbgen.ClearLoginAttemptsParams{Email: u.Email, ClientIp: in.ClientIP}); err != nil {
		return Session{}, err
	}
	p, err := principal(ctx, q, u)
	if err != nil {
		return Session{}, err
	}
	sess, err := f.auth.openSession(ctx, q, u.ID, false)
	if err != nil {
		return Session{}, err
	}
	if via == "password+recovery_code" {
		if err := audit.Record(ctx, q, p, audit.Event{Action: "auth.recovery_code_used", TargetType: "user", TargetID: u.ID.String(),
			Diff: map[string]any{"client_ip": in.ClientIP}}); err != nil {
			return Session{}, err
		}
	}
	return sess, audit.Record(ctx, q, p, audit.Event{Action: "auth.login", TargetType: "user", TargetID: u.ID.String(),
		Diff: map[string]any{"client_ip": in.ClientIP, "via": via}})
}

// Which codes a check takes.
type codeKinds int

const (
	totpOnly codeKinds = iota
	totpOrRecovery
)

// withCode runs do in one transaction with taking code of user's second factor: a TOTP code
// of a time step later than any taken before (so none is used twice), or an unused recovery
// code, which is used up. A refused code is audited with why (never the code) as purpose, and
// answered naming field "code".
func (f *Factors) withCode(ctx context.Context, userID uuid.UUID, code string, kinds codeKinds, clientIP, purpose string, do func(q *dbgen.Queries) error) error {
	code = strings.TrimSpace(code)
	var refused *problem.ValidationError
	err := db.Tx(ctx, f.auth.pool, func(q *dbgen.Queries) error {
		rule, msg, err := f.take(ctx, q, userID, code, kinds)
		if err != nil {
			return err
		}
		if rule != "" {
			refused = &problem.ValidationError{}
			refused.Add("code", rule, "%s", msg)
			return refused
		}
		return do(q)
	})
	if refused == nil || !errors.Is(err, refused) {
		return err
	}
	q := db.Queries(f.auth.pool)
	if err := audit.Record(ctx, q, audit.Anonymous, audit.Event{Action: "auth.second_factor_refused", TargetType: "user", TargetID: userID.String(),
		Diff: map[string]any{"rule": refused.Fields[0].Rule, "purpose": purpose, "client_ip": clientIP}}); err != nil {
		return fmt.Errorf("record a refused code: %w", err)
	}
	return refused
}

// take takes code, or says which rule it broke and how, in words for the user.
func (f *Factors) take(ctx context.Context, q *dbgen.Queries, userID uuid.UUID, code string, kinds codeKinds) (rule, msg string, err error) {
	switch {
	case code == "":
		return "required", "enter the 6-digit code from your authenticator app", nil
	case !isTOTPCode(code) && kinds == totpOnly:
		return "totp", "enter the 6-digit code your authenticator app shows now (not a recovery code)", nil
	case !isTOTPCode(code):
		n, err := q.UseRecoveryCode(ctx, dbgen.UseRecoveryCodeParams{UserID: userID, CodeHash: hashRecoveryCode(code)})
		if err != nil || n == 1 {
			return "", "", err
		}
		return "recovery", "is not one of your unused recovery codes", nil
	}
	row, err := q.GetTOTP(ctx, userID)
	if err != nil {
		return "", "", fmt.Errorf("load second factor: %w", err)
	}
	raw, err := f.keys.Open(row.SecretKeyID, row.Secret, totpSealedFor)
	if err != nil {
		return "", "", fmt.Errorf("open the TOTP secret: %w", err)
	}
	step, ok := codeStep(b32.EncodeToString(raw), code, f.now())
	if !ok {
		return "totp", "is not the code your authenticator app shows now: check that its clock is right", nil
	}
	n, err := q.TakeTOTPStep(ctx, dbgen.TakeTOTPStepParams{UserID: userID, Step: int64(step)})
	if err != nil || n == 1 {
		return "", "", err
	}
	return "replay", "was used already: wait for the next code", nil
}

// isTOTPCode says whether code has the form of a TOTP code rather than a recovery code.
func isTOTPCode(code string) bool {
	if len(code) != 6 {
		return false
	}
	for _, r := range code {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// codeStep returns the time step whose code code is, from one step before at to one after (a
// phone's clock drifts, and a code typed as it changes is a step old), and whether there is one.
func codeStep(secret, code string, at time.Time) (uint64, bool) {
	for _, d := range []time.Duration{-totpPeriod, 0, totpPeriod} {
		t := at.Add(d)
		want, err := totp.GenerateCodeCustom(secret, t, totpOpts)
		if err == nil && subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 {
			return uint64(t.Unix()) / uint64(totpPeriod.Seconds()), true
		}
	}
	return 0, false
}

// newRecoveryCodes replaces user's recovery codes with recoveryCodeCount new ones, in the
// caller's transaction, and returns them.
func newRecoveryCodes(ctx context.Context, q *dbgen.Queries, userID uuid.UUID) ([]string, error) {
	codes := make([]string, recoveryCodeCount)
	for i := range codes {
		b := make([]byte, 10) // 80 bits: beyond guessing, even from a stolen hash
		_, _ = rand.Read(b)
		s := strings.ToLower(b32.EncodeToString(b))
		codes[i] = s[0:4] + "-" + s[4:8] + "-" + s[8:12] + "-" + s[12:16]
		if err := q.AddRecoveryCode(ctx, dbgen.AddRecoveryCodeParams{UserID: userID, CodeHash: hashRecoveryCode(codes[i])}); err != nil {
			return nil, err
		}
	}
	return codes, nil
}

// hashRecoveryCode is what the database keeps of a recovery code, however it was typed: case,
// dashes and spaces do not matter. With 80 bits of entropy a plain SHA-256 is enough.
func hashRecoveryCode(code string) []byte {
	code = strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' {
			return -1
		}
		return r
	}, strings.ToLower(code))
	return hashSecret(code)
}
