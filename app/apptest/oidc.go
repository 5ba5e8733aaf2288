package apptest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/crypto"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"

	"nimbus/app/domain/auth"
)

// OpenIDProvider is a real OpenID Connect provider run for the test: zitadel's OP (the
// library's own protocol handling, signing and verification of PKCE) over its example storage,
// with users of the test's own whose groups a test changes between sign-ins. Its login page
// takes a username and the password "secret". A test can make it misbehave: tokens for another
// audience, or tokens that have already expired.
type OpenIDProvider struct {
	Issuer       string
	ClientID     string
	ClientSecret string
	users        *opUsers
	store        *opStorage
	srv          *httptest.Server
}

// NewOpenIDProvider starts a provider for the test with a confidential client for Nimbus at
// nimbus (its callback and sign-out return addresses registered).
func NewOpenIDProvider(t testing.TB, nimbus string) *OpenIDProvider {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	p := &OpenIDProvider{Issuer: issuer, ClientID: "nimbus", ClientSecret: "client-secret-of-nimbus", users: &opUsers{byID: map[string]*opUser{}}}
	client := storage.WebClient(p.ClientID, p.ClientSecret, nimbus+"/login/sso/callback")
	p.store = &opStorage{Storage: storage.NewStorageWithClients(p.users, map[string]*storage.Client{p.ClientID: client}), users: p.users, back: nimbus + "/login"}
	provider, err := op.NewProvider(&op.Config{CryptoKey: sha256.Sum256([]byte(t.Name())), CodeMethodS256: true, AuthMethodPost: true,
		DefaultLogoutRedirectURI: "/signed-out", SupportedUILocales: []language.Tag{language.English}},
		p.store, op.StaticIssuer(issuer), op.WithAllowInsecure())
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login/username", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><title>Test provider</title><form method="post" action="/login/username">
<input type="hidden" name="id" value="%s"><input name="username" id="username"><input name="password" id="password" type="password">
<button type="submit" id="submit">Sign in</button></form>`, html.EscapeString(r.URL.Query().Get("authRequestID")))
	})
	callback := op.AuthCallbackURL(provider)
	mux.HandleFunc("POST /login/username", op.NewIssuerInterceptor(provider.IssuerFromRequest).HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.FormValue("id")
		if err := p.store.CheckUsernamePassword(r.FormValue("username"), r.FormValue("password"), id); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		http.Redirect(w, r, callback(r.Context(), id), http.StatusFound)
	}))
	mux.HandleFunc("GET /signed-out", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "signed out") })
	mux.Handle("/", provider)
	mux.HandleFunc("/oauth/token", func(w http.ResponseWriter, r *http.Request) { p.token(w, r, provider) })
	srv.Config.Handler = mux
	srv.Start()
	t.Cleanup(srv.Close)
	p.srv = srv
	return p
}

// Stop closes the provider, as one that went away.
func (p *OpenIDProvider) Stop() { p.srv.Close() }

// AddUser adds a user with username (also their subject), email and groups.
func (p *OpenIDProvider) AddUser(username, email string, groups ...string) {
	p.users.mu.Lock()
	defer p.users.mu.Unlock()
	p.users.byID[username] = &opUser{User: storage.User{ID: username, Username: username, Password: "secret", Email: email, EmailVerified: true,
		PreferredLanguage: language.English}, groups: groups}
}

// SetGroups changes a user's groups, as a directory's admin would; the next token says so.
func (p *OpenIDProvider) SetGroups(username string, groups ...string) {
	p.users.mu.Lock()
	defer p.users.mu.Unlock()
	p.users.byID[username].groups = groups
}

// Misbehave makes the next ID tokens name audience alone (none: the client) and last lifetime
// (zero: ten minutes; negative: expired when issued).
func (p *OpenIDProvider) Misbehave(audience string, lifetime time.Duration) {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	p.store.audience, p.store.lifetime = audience, lifetime
}

// token answers the token endpoint as the provider does, then, when a test asked for another
// audience, signs the ID token again with the provider's own key, naming that audience: a
// token that verifies but is meant for another client.
func (p *OpenIDProvider) token(w http.ResponseWriter, r *http.Request, provider http.Handler) {
	p.store.mu.Lock()
	audience := p.store.audience
	p.store.mu.Unlock()
	if audience == "" {
		provider.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	provider.ServeHTTP(rec, r)
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != http.StatusOK {
		http.Error(w, rec.Body.String(), rec.Code)
		return
	}
	raw, _ := body["id_token"].(string)
	parts := strings.Split(raw, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[min(1, len(parts)-1)])
	var claims map[string]any
	if err == nil {
		err = json.Unmarshal(payload, &claims)
	}
	if err != nil {
		http.Error(w, "read the ID token: "+err.Error(), http.StatusInternalServerError)
		return
	}
	claims["aud"], claims["azp"], claims["client_id"] = []string{audience}, audience, audience
	key, err := p.store.SigningKey(r.Context())
	var signed string
	if err == nil {
		var signer jose.Signer
		if signer, err = op.SignerFromKey(key); err == nil {
			signed, err = crypto.Sign(claims, signer)
		}
	}
	if err != nil {
		http.Error(w, "sign the ID token: "+err.Error(), http.StatusInternalServerError)
		return
	}
	body["id_token"] = signed
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(body)
}

// Settings are a provider admin's settings for this provider, with the mappings given.
func (p *OpenIDProvider) Settings(mappings string) auth.NewIdentityProvider {
	return auth.NewIdentityProvider{Name: "Test IdP", Issuer: p.Issuer, ClientID: p.ClientID, ClientSecret: p.ClientSecret,
		Scopes: "openid email profile", GroupsClaim: "groups", Mappings: mappings, LocalLogin: true}
}

var opForm = regexp.MustCompile(`name="id" value="([^"]*)"`)

// SignIn signs b in at Nimbus through this provider as username, from the sign-in link on: it
// follows each redirect as a browser would and fills the provider's login form. It returns
// Nimbus's answer to the callback and the callback's address, to replay.
func (p *OpenIDProvider) SignIn(t testing.TB, b *Browser, username string) (Reply, string) {
	t.Helper()
	next := b.Base + "/login/sso"
	var r Reply
	for range 20 {
		req, _ := http.NewRequest("GET", next, nil)
		if strings.HasPrefix(next, p.Issuer+"/login/username") {
			r = Do(t, b.Client, req)
			m := opForm.FindSubmatch(r.Body)
			if m == nil {
				t.Fatalf("the provider's login page has no form: %s", r.Body)
			}
			form := url.Values{"id": {html.UnescapeString(string(m[1]))}, "username": {username}, "password": {"secret"}}
			req, _ = http.NewRequest("POST", p.Issuer+"/login/username", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		r = Do(t, b.Client, req)
		if strings.HasPrefix(next, b.Base+"/login/sso/callback") {
			return r, next
		}
		loc := r.Header.Get("Location")
		if loc == "" {
			t.Fatalf("%s answered %d without reaching Nimbus's callback: %s", next, r.Status, r.Body)
		}
		u, err := req.URL.Parse(loc)
		if err != nil {
			t.Fatal(err)
		}
		next = u.String()
	}
	t.Fatal("too many redirects")
	return Reply{}, ""
}

// opUser is a user of the provider and their groups.
type opUser struct {
	storage.User
	groups []string
}

// opUsers is the provider's directory.
type opUsers struct {
	mu   sync.Mutex
	byID map[string]*opUser
}

func (u *opUsers) GetUserByID(id string) *storage.User {
	u.mu.Lock()
	defer u.mu.Unlock()
	if x, ok := u.byID[id]; ok {
		copied := x.User
		return &copied
	}
	return nil
}

func (u *opUsers) GetUserByUsername(name string) *storage.User { return u.GetUserByID(name) }

func (u *opUsers) ExampleClientID() string { return "service" }

func (u *opUsers) groups(id string) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if x, ok := u.byID[id]; ok {
		return append([]string(nil), x.groups...)
	}
	return nil
}

// opStorage is the example storage with groups in the ID token, the profile claims in it too
// (as Keycloak and Entra ID put them), and the lifetime and audience a test asks for.
type opStorage struct {
	*storage.Storage
	users    *opUsers
	back     string // Nimbus's sign-in page, where sign-out at the provider returns
	mu       sync.Mutex
	audience string
	lifetime time.Duration
}

func (s *opStorage) SetUserinfoFromRequest(ctx context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, info, req, scopes); err != nil {
		return err
	}
	info.AppendClaims("groups", s.users.groups(req.GetSubject()))
	return nil
}

func (s *opStorage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return opClient{Client: c, lifetime: s.lifetime, back: s.back}, nil
}

// opClient is Nimbus's client as the provider sees it.
type opClient struct {
	op.Client
	lifetime time.Duration
	back     string
}

func (c opClient) IDTokenUserinfoClaimsAssertion() bool { return true }
func (c opClient) PostLogoutRedirectURIs() []string     { return []string{c.back} }
func (c opClient) IDTokenLifetime() time.Duration {
	if c.lifetime == 0 {
		return 10 * time.Minute
	}
	return c.lifetime
}
