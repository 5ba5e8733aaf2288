package auth_test

import (
	"bytes"
	"context"
	"encoding/base32"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"nimbus/app/apptest"
	"nimbus/app/domain/auth"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
)

// clockAt is a fixed time in the middle of a TOTP step, so that a step a test counts on does
// not change under it.
var clockAt = time.Now().Truncate(30 * time.Second).Add(15 * time.Second)

// factorsAt returns w's second factors reading the time as at.
func factorsAt(w *apptest.World, at time.Time) *auth.Factors {
	f := auth.NewFactors(w.Auth, w.Keys)
	f.SetClock(func() time.Time { return at })
	return f
}

// code is the TOTP code of secret at d from clockAt.
func code(t testing.TB, secret string, d time.Duration) string {
	t.Helper()
	c, err := totp.GenerateCode(secret, clockAt.Add(d))
	apptest.Must(t, err)
	return c
}

// enrol turns on p's second factor and returns its secret and recovery codes. It confirms with
// the code of the step before clockAt's, so that a test may use clockAt's own.
func enrol(t testing.TB, f *auth.Factors, p access.Principal) (string, []string) {
	t.Helper()
	ctx := context.Background()
	e, err := f.Begin(ctx, p)
	apptest.Must(t, err)
	codes, err := f.Confirm(ctx, p, code(t, e.Secret, -30*time.Second), "192.0.2.1")
	apptest.Must(t, err)
	return e.Secret, codes
}

func wantRule(t *testing.T, err error, field, rule string) {
	t.Helper()
	var v *problem.ValidationError
	if !errors.As(err, &v) || len(v.Fields) != 1 || v.Fields[0].Field != field || v.Fields[0].Rule != rule {
		t.Fatalf("got %v, want a refusal of %s by rule %s", err, field, rule)
	}
}

func TestFactors_CodeWindowAndReplay(t *testing.T) {
	w := apptest.NewWorld(t)
	f := factorsAt(w, clockAt)
	secret, _ := enrol(t, f, w.UserA) // took the step before clockAt's
	ctx := context.Background()
	regenerate := func(c string) error {
		_, err := f.RegenerateRecovery(ctx, w.UserA, c, "192.0.2.1")
		return err
	}
	// Two steps either side is outside the window a drifting clock is allowed.
	wantRule(t, regenerate(code(t, secret, -60*time.Second)), "code", "totp")
	wantRule(t, regenerate(code(t, secret, 60*time.Second)), "code", "totp")
	wantRule(t, regenerate("12345a"), "code", "totp")
	wantRule(t, regenerate(""), "code", "required")
	apptest.Must(t, regenerate(code(t, secret, 0)))
	// The same code again, or the step before it, is a replay.
	wantRule(t, regenerate(code(t, secret, 0)), "code", "replay")
	wantRule(t, regenerate(code(t, secret, -30*time.Second)), "code", "replay")
	// A step ahead is within the window, and later than any taken.
	apptest.Must(t, regenerate(code(t, secret, 30*time.Second)))
}

// signIn gives the password of who and returns the binding of the second step it begins.
func signIn(t *testing.T, w *apptest.World, who string) string {
	t.Helper()
	in, err := w.Auth.Login(context.Background(), who, "long enough password", "192.0.2.7")
	apptest.Must(t, err)
	if in.SecondStep == "" || in.Session.Secret != "" {
		t.Fatalf("a right password of a user with a second factor gave %+v, want a second step and no session", in)
	}
	return in.SecondStep
}

func TestFactors_SignInOpensNoSessionBeforeTheSecondStep(t *testing.T) {
	w := apptest.NewWorld(t)
	f := factorsAt(w, clockAt)
	secret, _ := enrol(t, f, w.UserA)
	ctx := context.Background()
	count := func() int {
		var n int
		apptest.Must(t, w.Pool.QueryRow(ctx, "SELECT count(*) FROM sessions WHERE user_id = $1", w.UserA.UserID).Scan(&n))
		return n
	}
	binding := signIn(t, w, w.UserA.Email)
	if n := count(); n != 0 {
		t.Fatalf("%d sessions open after the password alone", n)
	}
	_, err := f.Finish(ctx, auth.SecondStep{Binding: "another browser's", Code: code(t, secret, 0)})
	wantRule(t, err, "sign_in", "expired")
	sess, err := f.Finish(ctx, auth.SecondStep{Binding: binding, Code: code(t, secret, 0), ClientIP: "192.0.2.7"})
	apptest.Must(t, err)
	p, _, err := w.Auth.SessionPrincipal(ctx, sess.Secret)
	apptest.Must(t, err)
	if p.UserID != w.UserA.UserID || count() != 1 {
		t.Fatalf("the second step signed in as %v with %d sessions", p.Email, count())
	}
	// The sign-in is over: its binding opens nothing more.
	_, err = f.Finish(ctx, auth.SecondStep{Binding: binding, Code: code(t, secret, 30*time.Second)})
	wantRule(t, err, "sign_in", "expired")
}

func TestFactors_RecoveryCodeSignsInOnce(t *testing.T) {
	w := apptest.NewWorld(t)
	f := factorsAt(w, clockAt)
	_, codes := enrol(t, f, w.UserA)
	if len(codes) != 10 {
		t.Fatalf("%d recovery codes, want 10", len(codes))
	}
	ctx := context.Background()
	// However it is typed: upper case, without dashes.
	typed := strings.ToUpper(strings.ReplaceAll(codes[3], "-", ""))
	_, err := f.Finish(ctx, auth.SecondStep{Binding: signIn(t, w, w.UserA.Email), Code: typed})
	apptest.Must(t, err)
	_, err = f.Finish(ctx, auth.SecondStep{Binding: signIn(t, w, w.UserA.Email), Code: codes[3]})
	wantRule(t, err, "code", "recovery")
	st, err := f.Status(ctx, w.UserA)
	apptest.Must(t, err)
	if st.RecoveryLeft != 9 {
		t.Errorf("%d recovery codes left, want 9", st.RecoveryLeft)
	}
	if got := actions(t, w); !strings.Contains(got, "auth.recovery_code_used") || !strings.Contains(got, "auth.second_factor_refused") {
		t.Errorf("audit log: %s", got)
	}
}

func TestFactors_FiveWrongCodesEndTheSignIn(t *testing.T) {
	w := apptest.NewWorld(t)
	f := factorsAt(w, clockAt)
	secret, _ := enrol(t, f, w.UserA)
	ctx := context.Background()
	binding := signIn(t, w, w.UserA.Email)
	wrong := code(t, secret, 90*time.Second)
	for range 4 {
		_, err := f.Finish(ctx, auth.SecondStep{Binding: binding, Code: wrong})
		wantRule(t, err, "code", "totp")
	}
	_, err := f.Finish(ctx, auth.SecondStep{Binding: binding, Code: wrong})
	wantRule(t, err, "sign_in", "expired")
	// Out of tries, the right code does not sign in either: the password must come again.
	_, err = f.Finish(ctx, auth.SecondStep{Binding: binding, Code: code(t, secret, 0)})
	wantRule(t, err, "sign_in", "expired")
	if got := actions(t, w); strings.Count(got, "auth.second_factor_refused") != 5 || strings.Contains(auditDiffs(t, w), wrong) {
		t.Errorf("want five refusals audited without the code: %s / %s", got, auditDiffs(t, w))
	}
	// A new sign-in has five tries again.
	_, err = f.Finish(ctx, auth.SecondStep{Binding: signIn(t, w, w.UserA.Email), Code: code(t, secret, 0)})
	apptest.Must(t, err)
}

func TestFactors_UnfinishedSecondStepsCountTowardTheSignInThrottle(t *testing.T) {
	w := apptest.NewWorld(t)
	f := factorsAt(w, clockAt)
	secret, _ := enrol(t, f, w.UserA)
	ctx := context.Background()
	// Each right password begins a second step with five tries; the sign-ins themselves are
	// throttled like wrong passwords until one of them is finished.
	for range 5 {
		signIn(t, w, w.UserA.Email)
	}
	_, err := w.Auth.Login(ctx, w.UserA.Email, "long enough password", "192.0.2.7")
	var limited *problem.TooManyRequests
	if !errors.As(err, &limited) {
		t.Fatalf("the sixth sign-in with the password alone: %v, want it throttled", err)
	}
	// From another address, finishing one clears that address's count.
	in, err := w.Auth.Login(ctx, w.UserA.Email, "long enough password", "192.0.2.8")
	apptest.Must(t, err)
	_, err = f.Finish(ctx, auth.SecondStep{Binding: in.SecondStep, Code: code(t, secret, 0), ClientIP: "192.0.2.8"})
	apptest.Must(t, err)
	for range 5 {
		in, err := w.Auth.Login(ctx, w.UserA.Email, "long enough password", "192.0.2.8")
		apptest.Must(t, err)
		if in.SecondStep == "" {
			t.Fatal("no second step")
		}
	}
}

func TestFactors_PendingSignInExpires(t *testing.T) {
	w := apptest.NewWorld(t)
	secret, _ := enrol(t, factorsAt(w, clockAt), w.UserA)
	binding := signIn(t, w, w.UserA.Email)
	later := time.Now().Add(6 * time.Minute)
	c, err := totp.GenerateCode(secret, later)
	apptest.Must(t, err)
	_, err = factorsAt(w, later).Finish(context.Background(), auth.SecondStep{Binding: binding, Code: c})
	wantRule(t, err, "sign_in", "expired")
}

func TestFactors_SecretAndRecoveryCodesAreNotStoredInPlaintext(t *testing.T) {
	w := apptest.NewWorld(t)
	f := factorsAt(w, clockAt)
	ctx := context.Background()
	e, err := f.Begin(ctx, w.UserA)
	apptest.Must(t, err)
	raw, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(e.Secret)
	apptest.Must(t, err)
	codes, err := f.Confirm(ctx, w.UserA, code(t, e.Secret, 0), "192.0.2.1")
	apptest.Must(t, err)
	var sealed []byte
	apptest.Must(t, w.Pool.QueryRow(ctx, "SELECT secret FROM user_totp WHERE user_id = $1", w.UserA.UserID).Scan(&sealed))
	if bytes.Contains(sealed, raw) || bytes.Contains(sealed, []byte(e.Secret)) {
		t.Fatal("the TOTP secret is stored in plaintext")
	}
	var dump string
	apptest.Must(t, w.Pool.QueryRow(ctx, `SELECT (SELECT string_agg(encode(code_hash, 'escape'), ' ') FROM recovery_codes) || (SELECT string_agg(diff::text, ' ') FROM audit_events)`).Scan(&dump))
	for _, c := range append(codes, e.Secret) {
		if strings.Contains(dump, c) || strings.Contains(dump, strings.ReplaceAll(c, "-", "")) {
			t.Fatalf("%s is stored in plaintext", c)
		}
	}
}

func TestFactors_TurnOffNeedsACode(t *testing.T) {
	w := apptest.NewWorld(t)
	f := factorsAt(w, clockAt)
	_, codes := enrol(t, f, w.UserA)
	ctx := context.Background()
	wantRule(t, f.Disable(ctx, w.UserA, "", "192.0.2.1"), "code", "required")
	wantRule(t, f.Disable(ctx, w.UserA, "aaaa-bbbb-cccc-dddd", "192.0.2.1"), "code", "recovery")
	apptest.Must(t, f.Disable(ctx, w.UserA, codes[0], "192.0.2.1"))
	in, err := w.Auth.Login(ctx, w.UserA.Email, "long enough password", "192.0.2.1")
	apptest.Must(t, err)
	if in.Session.Secret == "" {
		t.Fatal("with the second factor off, the password alone does not sign in")
	}
}

func TestFactors_RequiredOfProviderAdmins(t *testing.T) {
	w := apptest.NewWorld(t)
	svc := auth.NewService(w.Pool, slog.New(slog.DiscardHandler), time.Hour).RequireSecondFactorForAdmins(true)
	f := auth.NewFactors(svc, w.Keys)
	f.SetClock(func() time.Time { return clockAt })
	ctx := context.Background()
	in, err := svc.Login(ctx, "root@example.com", "correct horse battery", "192.0.2.1")
	apptest.Must(t, err)
	if !in.Session.EnrolOnly {
		t.Fatal("a provider admin without a second factor got a full session")
	}
	// Others are not asked.
	if in, err := svc.Login(ctx, w.UserA.Email, "long enough password", "192.0.2.1"); err != nil || in.Session.EnrolOnly {
		t.Fatalf("a tenant user's session is enrol-only: %v", err)
	}
	_, codes := enrol(t, f, w.Admin)
	if _, sess, err := svc.SessionPrincipal(ctx, in.Session.Secret); err != nil || sess.EnrolOnly {
		t.Fatalf("once enrolled, the session is still enrol-only: %v", err)
	}
	wantRule(t, f.Disable(ctx, w.Admin, codes[0], "192.0.2.1"), "second_factor", "required")
}

func actions(t *testing.T, w *apptest.World) string {
	t.Helper()
	var s string
	apptest.Must(t, w.Pool.QueryRow(context.Background(), "SELECT coalesce(string_agg(action, ' ' ORDER BY id), '') FROM audit_events").Scan(&s))
	return s
}

func auditDiffs(t *testing.T, w *apptest.World) string {
	t.Helper()
	var s string
	apptest.Must(t, w.Pool.QueryRow(context.Background(), "SELECT coalesce(string_agg(diff::text, ' '), '') FROM audit_events").Scan(&s))
	return s
}

// addKey registers a software security key of p's, whose second factor is on.
func addKey(t testing.TB, f *auth.Factors, p access.Principal) *softKey {
	t.Helper()
	ctx := context.Background()
	k := newSoftKey(t)
	opts, err := f.BeginKey(ctx, p, keyOrigin)
	apptest.Must(t, err)
	apptest.Must(t, f.FinishKey(ctx, p, keyOrigin, "soft key", k.create(t, opts)))
	return k
}

func TestSecurityKey_SignsInOnceAndRefusesAClone(t *testing.T) {
	w := apptest.NewWorld(t)
	f := factorsAt(w, clockAt)
	ctx := context.Background()
	_, err := f.BeginKey(ctx, w.UserA, keyOrigin)
	wantRule(t, err, "security_key", "totp")
	_, codes := enrol(t, f, w.UserA)
	k := addKey(t, f, w.UserA)

	binding := signIn(t, w, w.UserA.Email)
	opts, err := f.BeginKeySignIn(ctx, binding, keyOrigin)
	apptest.Must(t, err)
	signed := k.get(t, opts)
	// From another site, the same answer does not verify: keys are bound to their origin.
	_, err = auth.NewFactors(w.Auth, w.Keys).FinishKeySignIn(ctx, auth.SecondStep{Binding: binding}, "https://evil.test", post(signed))
	wantRule(t, err, "security_key", "assertion")
	opts, err = f.BeginKeySignIn(ctx, binding, keyOrigin)
	apptest.Must(t, err)
	signed = k.get(t, opts)
	sess, err := f.FinishKeySignIn(ctx, auth.SecondStep{Binding: binding}, keyOrigin, post(signed))
	apptest.Must(t, err)
	if p, _, err := w.Auth.SessionPrincipal(ctx, sess.Secret); err != nil || p.UserID != w.UserA.UserID {
		t.Fatalf("the key signed in as %v: %v", p.Email, err)
	}
	// The same answer again: its challenge was taken.
	binding = signIn(t, w, w.UserA.Email)
	_, err = f.FinishKeySignIn(ctx, auth.SecondStep{Binding: binding}, keyOrigin, post(signed))
	wantRule(t, err, "security_key", "ceremony")

	// A copy of the key, whose count has not moved on, is refused.
	k.count = 0
	opts, err = f.BeginKeySignIn(ctx, binding, keyOrigin)
	apptest.Must(t, err)
	_, err = f.FinishKeySignIn(ctx, auth.SecondStep{Binding: binding}, keyOrigin, post(k.get(t, opts)))
	wantRule(t, err, "security_key", "clone")
	if got := actions(t, w); strings.Count(got, "auth.second_factor_refused") != 3 || !strings.Contains(got, "user.security_key_add") {
		t.Errorf("audit log: %s", got)
	}

	// Turning the app off removes the keys with it.
	apptest.Must(t, f.Disable(ctx, w.UserA, codes[0], "192.0.2.1"))
	if keys, err := f.Keys(ctx, w.UserA); err != nil || len(keys) != 0 {
		t.Errorf("with the second factor off, the keys are %v (%v)", keys, err)
	}
}
